"""What a run says before it works on a results folder that already holds cells: which finished cells it
will run again, and why, and whether the cells it adds can pair bit-exactly with the ones there.

A finished cell is reused only when its key matches (``RunContext.cell_key``: code, settings, and the
torch and transformers builds, device and thread count that its floats depend on); otherwise the run
replaces it. Without a word, an upgraded ``transformers`` would silently retrain a comparison's baseline.

The CPU's kernels (``torch.backends.cpu.get_cpu_capability()``: AVX512, AVX2, ...) are not in the key,
so that a teacher cache shared by machines of both kinds serves them all with one teacher. But a teacher
trained again, where the cache does not hold it, gives labels that differ in their last bits on another
kind of CPU. Cells run here then pair with the folder's cells of the same seed and source through a
teacher that is not bit-identical to theirs, and ``bench validate`` warns that cells of the same teacher
record different labels. Measured: docs/reliability.md, "CPU kernels".

``bench run`` and ``bench sweep`` say both and go on (``announce``). ``bench compare --until-decided`` stops
instead (``refuse_to_mix``): its earlier looks read those cells, and its pairs must share one teacher.
"""
from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.result_schema import RESULT_FILE
from bench.core.results import cell_dir
from bench.core.settings import RunSettings
from bench.core.versions import DIGEST_SCHEME

SHOWN = 12   # cells named per [rerun] line
# recorded in a cell's environment (bench.core.env.environment) and part of its key (platform_version)
_PLATFORM = (("torch", ("packages", "torch")), ("transformers", ("packages", "transformers")),
             ("device", ("device",)), ("torch threads", ("torch_threads",)))


def _recorded(environment: dict, path: tuple[str, ...]) -> object:
    for part in path:
        environment = environment.get(part) if isinstance(environment, dict) else None
    if path == ("device",) and isinstance(environment, str):   # the key names a GPU model, the record its count too
        environment = re.sub(r" x[0-9]+$", "", environment)
    return environment


def why_rerun(recorded: dict, here: dict, scheme: int = DIGEST_SCHEME) -> str:
    """Why a finished cell's key differs from this run's, as far as the two environments tell: the platform
    fields of the key that differ, and the commit where it differs (the code and settings are in the key as
    a digest only, so another commit may or may not be why). ``scheme``: the code digest scheme the cell's key
    was made under (``digest_scheme``); another than this run's changes every key, whatever the code."""
    changed = [f"code digest scheme {scheme} there, {DIGEST_SCHEME} here: every key made under scheme {scheme} "
               "changed once"] if scheme != DIGEST_SCHEME else []
    changed += [f"{name} {_recorded(recorded, path)} there, {_recorded(here, path)} here" for name, path in _PLATFORM
                if _recorded(recorded, path) != _recorded(here, path)]
    commits = [str(_recorded(env, ("git", "commit")) or "unknown")[:7] for env in (recorded, here)]
    if commits[0] != commits[1]:
        changed.append(f"commit {commits[0]} there, {commits[1]} here: its code or settings may differ too")
    return "; ".join(changed) if changed else "its code or settings differ from this run's"


def digest_scheme(record: dict) -> int:
    """The code digest scheme a finished cell's key was made under, from its method's recorded origin
    (methods.method_origin): a method with a source file records it beside its code digest since scheme 2,
    so one with a file's sha256 and no scheme was keyed by raw source text (1)."""
    method = record.get("method")
    origin = method.get("origin") if isinstance(method, dict) else None
    if not isinstance(origin, dict):
        return DIGEST_SCHEME
    scheme = origin.get("digest_scheme")
    if isinstance(scheme, int):
        return scheme
    return 1 if "sha256" in origin else DIGEST_SCHEME   # no source file: nothing says which


def _finished(folder: Path) -> dict | None:
    """A cell folder's result.json as recorded (its key and environment), or None: only what is said here
    is read; whether the cell is whole, and so skipped, is bench.stages.pipeline.run's to decide."""
    try:
        record = json.loads((folder / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("environment"), dict) else None


@dataclass(frozen=True)
class Finding:
    """What a run over a folder would do to its cells: run finished ones again (``rerun``: their key differs,
    ``why``), or add cells beside ones made with other CPU kernels (``kernels``: ``why`` names both kinds)."""
    kind: str
    run: str
    group: Path
    why: str
    cells: tuple[str, ...]   # "seed S SOURCE"

    def named(self) -> str:
        more = f" and {len(self.cells) - SHOWN} more" if len(self.cells) > SHOWN else ""
        return ", ".join(self.cells[:SHOWN]) + more


def findings(settings: RunSettings, threads: int | None) -> list[Finding]:
    """The finished cells of this run whose key is not the one it would give them, grouped by why, and the
    cells of the seeds and sources it runs that the folder holds from another kind of CPU than this one (any
    run's). ``threads``: each cell's torch threads, which are in its key (None: this process's)."""
    import torch

    from bench.core.cache import Cache
    from bench.core.env import environment
    from bench.stages.context import RunContext
    from bench.stages.pipeline import cell_folders, checked_method, run_slug

    before = torch.get_num_threads()
    torch.set_num_threads(threads or before)
    try:
        method = checked_method(settings)
        ctx = RunContext(settings, method, Cache(settings.cache_dir))
        folders = cell_folders(settings, method)
        here, todo, stale = environment(), [], {}
        for (seed, source), folder in folders.items():
            done = None if settings.force else _finished(folder)
            if done is not None and done.get("cell_key") == ctx.cell_key(source, seed):
                continue   # reused as it is
            todo.append((seed, source))
            if done is not None:
                stale.setdefault(why_rerun(done["environment"], here, digest_scheme(done)), []).append(
                    f"seed {seed} {source}")
    finally:
        torch.set_num_threads(before)
    name = run_slug(settings, method)
    group = settings.out / settings.protocol.name / settings.models.name
    found = [Finding("rerun", name, group, why, tuple(cells)) for why, cells in stale.items()]
    kernels = _recorded(here, ("cpu", "torch_capability"))
    runs = [run.name for run in group.iterdir() if run.is_dir()] if group.is_dir() else []
    other: dict[tuple[int, str], set[str]] = {}
    for cell in todo:   # the same cell of every run in the folder
        for run in runs:
            made = _finished(cell_dir(settings.out, settings.protocol.name, settings.models.name, run, *cell))
            kind = _recorded(made["environment"], ("cpu", "torch_capability")) if made else None
            if kind not in (None, kernels):
                other.setdefault(cell, set()).add(str(kind))
    if other:
        kinds = ", ".join(sorted(set().union(*other.values())))
        found.append(Finding("kernels", name, group, f"{kinds} CPU kernels there, {kernels} here",
                             tuple(f"seed {seed} {source}" for seed, source in sorted(other))))
    return found


def announce(settings: RunSettings, threads: int | None) -> None:
    """Print, before any work, what ``findings`` says: the finished cells that are run again and replaced,
    and a warning where the cells added do not pair bit-exactly with the folder's."""
    from bench.core.distributed import is_main_process

    if not is_main_process():
        return
    for found in findings(settings, threads):
        if found.kind == "rerun":
            print(f"[rerun] {len(found.cells)} finished cell(s) of {found.run} in {found.group} have another key "
                  f"({found.why}), so they are run again and replaced: {found.named()}", file=sys.stderr)
        else:
            print(f"[warning] cells in {found.group} of the seeds and sources this run adds were made with other CPU "
                  f"kernels ({found.why}: {found.named()}): where the teacher cache does not hold their teacher, it is "
                  "trained again here with labels that differ in their last bits, so the cells this run adds do not "
                  "pair bit-exactly with those (bench validate warns: cells of the same teacher record different "
                  "labels). Run them on a machine of the same kind, or with its teacher cache (--cache-dir)",
                  file=sys.stderr)


def refuse_to_mix(command: str, found: list[Finding]) -> None:
    """Stop ``command``, which grows a comparison on cells its earlier looks have read (bench compare
    --until-decided), where it would replace any of them or pair new cells with them through a teacher that is
    not bit-identical to theirs; each problem is named with its fix."""
    if not found:
        return
    said, fixes, kernels = [], [], {}   # kernels: (why, cells) -> the sides that meet those cells
    for each in found:
        if each.kind == "rerun":
            said.append(f"{len(each.cells)} finished cell(s) of {each.run} have another key than this run would give "
                        f"them ({each.why}): {each.named()}")
        else:   # the sides of a comparison meet the same cells: named once, with every side that meets them
            kernels.setdefault((each.why, each.cells), []).append(each)
    for (why, _), sides in kernels.items():
        said.append(f"the folder's cells of the next seeds of {', '.join(side.run for side in sides)} were made with "
                    f"other CPU kernels ({why}), so their teachers would be trained again with labels that differ in "
                    f"their last bits: {sides[0].named()}")
    if any(each.kind == "rerun" for each in found):
        fixes.append("resume from the commit, packages (pip install transformers==VERSION) and torch threads (--jobs, "
                     "OMP_NUM_THREADS) that the cells record (environment in result.json)")
    if kernels:
        fixes.append("grow it on a machine whose torch uses the kernels they record; here, a comparison grows only "
                     "where its next seeds are new to the folder (or in another --out)")
    raise BenchError(f"{command} grows a comparison on the cells its looks have read, so it stops here with nothing "
                     f"run: {'; '.join(said)}. To go on, {', and '.join(fixes)}")
