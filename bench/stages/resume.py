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
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.result_schema import RESULT_FILE
from bench.core.results import cell_dir
from bench.core.settings import RunSettings

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


def why_rerun(recorded: dict, here: dict) -> str:
    """Why a finished cell's key differs from this run's, as far as the two environments tell: the platform
    fields of the key that differ, and the commit where it differs (the code and settings are in the key as
    a digest only, so another commit may or may not be why)."""
    changed = [f"{name} {_recorded(recorded, path)} there, {_recorded(here, path)} here" for name, path in _PLATFORM
               if _recorded(recorded, path) != _recorded(here, path)]
    commits = [str(_recorded(env, ("git", "commit")) or "unknown")[:7] for env in (recorded, here)]
    if commits[0] != commits[1]:
        changed.append(f"commit {commits[0]} there, {commits[1]} here: its code or settings may differ too")
    return "; ".join(changed) if changed else "its code or settings differ from this run's"


def _finished(folder: Path) -> dict | None:
    """A cell folder's result.json as recorded (its key and environment), or None: only what is said here
    is read; whether the cell is whole, and so skipped, is bench.stages.pipeline.run's to decide."""
    try:
        record = json.loads((folder / RESULT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and isinstance(record.get("environment"), dict) else None


def announce(settings: RunSettings, threads: int | None, refuse: str | None = None) -> None:
    """Print, before any work, the finished cells of this run whose key is not the one it would give them
    (they are run again), grouped by why, and where the folder's cells of the seeds and sources it runs were
    made on another kind of CPU than this one. ``threads``: each cell's torch threads, which are in its key
    (None: this process's). ``refuse``: the command, which then stops (BenchError) instead, naming both: a
    comparison grown seed by seed (bench compare --until-decided) must neither replace the cells its earlier
    looks read nor pair new ones through a teacher that is not bit-identical to their own."""
    import torch

    from bench.core.cache import Cache
    from bench.core.distributed import is_main_process
    from bench.core.env import environment
    from bench.stages.context import RunContext
    from bench.stages.pipeline import cell_folders, checked_method, run_slug

    if not is_main_process():
        return
    before = torch.get_num_threads()
    torch.set_num_threads(threads or before)
    try:
        method = checked_method(settings)
        ctx = RunContext(settings, method, Cache(settings.cache_dir))
        folders = cell_folders(settings, method)
        here, todo, stale = environment(), set(), {}
        for (seed, source), folder in folders.items():
            done = None if settings.force else _finished(folder)
            if done is not None and done.get("cell_key") == ctx.cell_key(source, seed):
                continue   # reused as it is
            todo.add((seed, source))
            if done is not None:
                stale.setdefault(why_rerun(done["environment"], here), []).append(f"seed {seed} {source}")
    finally:
        torch.set_num_threads(before)
    group = settings.out / settings.protocol.name / settings.models.name
    said = []
    for why, cells in stale.items():
        more = f" and {len(cells) - SHOWN} more" if len(cells) > SHOWN else ""
        said.append(("[rerun]", f"{len(cells)} finished cell(s) of {run_slug(settings, method)} in {group} have another "
                                f"key ({why}), so they are run again and replaced: {', '.join(cells[:SHOWN])}{more}"))
    kernels = _recorded(here, ("cpu", "torch_capability"))
    runs = [run.name for run in group.iterdir() if run.is_dir()] if group.is_dir() else []
    made = (_finished(cell_dir(settings.out, settings.protocol.name, settings.models.name, run, *cell))
            for cell in todo for run in runs)   # the same cell of every run in the folder
    other = sorted({str(kind) for cell in made if cell is not None
                    and (kind := _recorded(cell["environment"], ("cpu", "torch_capability"))) not in (None, kernels)})
    if other:
        said.append(("[warning]", f"cells in {group} of the seeds and sources this run adds were made with "
                                  f"{', '.join(other)} CPU kernels, this machine's torch uses {kernels}: where the teacher "
                                  "cache does not hold their teacher, it is trained again here with labels that differ in "
                                  "their last bits, so the cells this run adds do not pair bit-exactly with those (bench "
                                  "validate warns: cells of the same teacher record different labels). Run them on a "
                                  "machine of the same kind, or with its teacher cache (--cache-dir)"))
    if refuse and said:
        raise BenchError(f"{refuse} adds seeds to the cells its looks have read, so it does not replace them or pair new "
                         f"ones through another teacher: {'; '.join(text for _, text in said)}. Resume with the packages "
                         "and on the kind of CPU the cells record (extra-seeds/README.md), or run those seeds with bench "
                         "run, which goes on after saying this, then compare")
    for tag, text in said:
        print(f"{tag} {text}", file=sys.stderr)
