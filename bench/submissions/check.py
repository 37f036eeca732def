"""Reading and checking one submission folder (``validate_submission``): its inventory of files, its
JSON and scores files, its protocol and model pair against the registries, its commands, and every
cell's numbers recomputed from the per-pair scores (and, on a protocol with best-of-N candidate sets,
its BoN numbers from the per-candidate scores). It only reads JSON and gzip'd CSV, with the size
limits checked before anything is read; nothing of a submission is imported or run. A scores file
is streamed a line at a time and read only as far as its cell's declared pairs, and problems are
kept up to a bound per file, so what validation holds is bounded (limits.py says how far)."""
from __future__ import annotations

import functools
import os
import stat
import time
from pathlib import Path
from typing import Any, Mapping

import bench.submissions.limits as limits
import bench.submissions.reference as reference_teacher
from bench.core.errors import UnknownNameError
from bench.core.result_schema import (
    CANDIDATES_FILE,
    EXTERNAL_NOTE,
    METHOD_SOURCE_FILE,
    RESULT_FILE,
    SCORES_FILE,
)
from bench.core.results import params_slug
from bench.core.specs import ModelPairSpec, ProtocolSpec, to_plain
from bench.core.store import CELLS, STORE_FILES
from bench.submissions.cell_checks import check_cell, check_method_source, close
from bench.submissions.commands import method_option
from bench.submissions.fields import (
    check_commands,
    check_name,
    read_json,
)
from bench.submissions.limits import (
    CELL_FILE_RE,
    NAME_RE,
    PARAM_KEY_RE,
    REFERENCES,
    REGENERATE,
    SUBMISSION_FILE,
    Validation,
    _Stop,
    cell_folder,
)
from bench.submissions.schema import SubmissionFile, code_version, submission_intervals, submission_summary


# --- reading one submission -------------------------------------------------------------------------------
def _inventory(v: Validation) -> dict[str, int]:
    """Every file of the submission with its size; refuses links, foreign files and oversize folders."""
    folder, files, total = v.folder, {}, 0
    if folder.is_symlink() or not folder.is_dir():
        v.error(str(folder), "", "is not a folder", "point to a submission folder (it holds submission.json)")
        raise _Stop
    for root, dirs, names in os.walk(folder, followlinks=False):
        for name in [*dirs, *names]:
            path = Path(root, name)
            rel = path.relative_to(folder).as_posix()
            if path.is_symlink():
                v.error(rel, "", "is a symbolic link", "replace it with the file itself")
                continue
            if name in dirs:
                continue
            if not stat.S_ISREG(path.lstat().st_mode):  # a FIFO or device would block or never end
                v.error(rel, "", "is not a regular file", "replace it with the file itself")
                continue
            files[rel] = path.lstat().st_size
            total += files[rel]
            if total > limits.MAX_SUBMISSION_BYTES or len(files) > limits.MAX_FILES:
                v.error(".", "", f"more than {limits.MAX_SUBMISSION_BYTES} bytes or {limits.MAX_FILES} files",
                        "a submission holds only submission.json and its cells' result.json, scores.csv.gz and "
                        "(a protocol with candidate sets) candidates.csv.gz")
                raise _Stop
        dirs[:] = [d for d in dirs if not Path(root, d).is_symlink()]
    for rel in files:
        if rel not in (SUBMISSION_FILE, METHOD_SOURCE_FILE, *STORE_FILES) and not CELL_FILE_RE.fullmatch(rel):
            v.error(rel, "", "is not part of a submission (it is never read or run)",
                    "remove it: a submission holds only submission.json, its cells (the store's "
                    f"{', '.join(STORE_FILES)}, or folders cells/seed<N>/<source>/{{result.json,scores.csv.gz}} (and "
                    f"{CANDIDATES_FILE} on a protocol with candidate sets; naive's replicates under cells/replicate<R>/)) "
                    f"and, for a method that is not built in, {METHOD_SOURCE_FILE}")
    if SUBMISSION_FILE not in files:
        v.error(SUBMISSION_FILE, "", "is missing", REGENERATE)
        raise _Stop
    return files


def _open_store(v: Validation, files: dict[str, int]) -> dict[str, int]:
    """A submission kept as a store (bench.core.store): its tables read, within the limits on what they decompress to,
    and its cells listed as the files they were (``files`` gets ``cells/seed<N>/<source>/<file>`` for each, with
    result.json's size), so that every check of a cell reads the same whichever way it is kept."""
    import pyarrow.parquet as pq

    from bench.core.store import StoreError, load_store

    held = [name for name in STORE_FILES if name in files]
    if not held:
        return files
    if len(held) < len(STORE_FILES):
        v.error(".", "", f"holds {', '.join(held)} but not {', '.join(sorted(set(STORE_FILES) - set(held)))}: a store "
                "is its three tables", REGENERATE)
        raise _Stop
    if any(CELL_FILE_RE.fullmatch(rel) for rel in files):
        v.error(".", "", "holds both a store and cell folders (cells/...): a submission keeps its cells one way",
                "remove the cell folders, or " + REGENERATE)
        raise _Stop
    try:   # the tables' own metadata says what they decompress to: checked before they are read
        metadata = [pq.read_metadata(v.folder / name) for name in STORE_FILES]
        inflated = sum(m.row_group(g).total_byte_size for m in metadata for g in range(m.num_row_groups))
    except Exception as error:   # pyarrow raises its own kinds for a file that is not Parquet
        v.error(".", "", f"a store table is not readable Parquet ({type(error).__name__}: {str(error)[:200]})",
                REGENERATE)
        raise _Stop from None
    if inflated > limits.MAX_STORE_INFLATED_BYTES:
        v.error(".", "", f"its tables decompress to {inflated} bytes, over the limit of "
                f"{limits.MAX_STORE_INFLATED_BYTES}", "a submission of a registered protocol takes a few MB; " + REGENERATE)
        raise _Stop
    try:
        store = load_store(v.folder)
    except StoreError as error:
        v.error(".", "", str(error).replace(str(v.folder.resolve()), "").lstrip("/"), REGENERATE)
        raise _Stop from None
    listed = dict(files)
    for i, path in enumerate(store.paths):
        if store.refs[i] is not None:
            v.error(CELLS, "ref", f"cell {path[:100]!r} is kept in another store ({str(store.refs[i][0])[:100]}): a "
                    "submission holds its own cells", REGENERATE)
            raise _Stop
        names = {RESULT_FILE: len(store.results[i] or b""), SCORES_FILE: 0}
        if store.sha256["candidates"][i] is not None:
            names[CANDIDATES_FILE] = 0
        for name, size in names.items():
            rel = f"{path}/{name}"
            if rel in listed or not CELL_FILE_RE.fullmatch(rel):
                v.error(CELLS, "path", f"{path[:100]!r} is not a cell folder of a submission (cells/seed<N>/<source>), "
                        "or is given twice", REGENERATE)
                raise _Stop
            listed[rel] = size
    v.store = store
    return listed


def _resolve(name: str, override: Mapping | None, registry) -> Any:
    if override and name in override:
        return override[name]
    return registry.get(name) if name in registry else None


def _check_protocol(v: Validation, meta: dict, protocols: Mapping[str, ProtocolSpec] | None) -> ProtocolSpec:
    from bench.core.protocols import archived_note, protocol_hash, protocol_named, replaced_by

    ref = meta["protocol"]
    try:
        protocol = protocol_named(ref["name"], protocols)
    except UnknownNameError as error:
        v.error(SUBMISSION_FILE, "protocol.name", f"protocol {ref['name']!r} is not registered here: {str(error)[:400]}",
                "submit results of a registered protocol, or of one capped by bench run --cap-train/--cap-test/"
                "--cap-length")
        raise _Stop
    if ref["version"] != protocol.version:
        v.error(SUBMISSION_FILE, "protocol.version", f"is {ref['version']!r}; {protocol.name} is at "
                f"{protocol.version!r} here", "rerun on the current protocol and submit again")
    if ref.get("candidates") != protocol.candidates:
        v.error(SUBMISSION_FILE, "protocol.candidates", f"is {ref.get('candidates')!r}; {protocol.name} scores "
                f"{protocol.candidates!r} candidates per best-of-N set here", "rerun on the current protocol and submit "
                "again")
    if ref["hash"] != protocol_hash(protocol):
        v.error(SUBMISSION_FILE, "protocol.hash", f"foreign protocol hash {ref['hash']!r}: {protocol.name} "
                f"v{protocol.version} hashes to {protocol_hash(protocol)!r} here, so the results were made with "
                "different data or settings", "rerun with this version of shiftbench and submit again")
    if successor := replaced_by(protocol.name):
        v.warn(SUBMISSION_FILE, "protocol.name", str(archived_note(protocol.name)),
               f"for the current board, run on {successor} (bench run --protocol {successor}) and submit that")
    return protocol


def _plain_models(models: dict) -> dict:
    """A recorded model pair as its spec: the run records the resolved revision (weights sha256 or
    hub commit) where the spec has the requested one."""
    def spec(model: Any) -> Any:
        if isinstance(model, dict) and isinstance(model.get("revision"), dict):
            return {**model, "revision": model["revision"].get("requested_revision")}
        return model
    return {k: spec(v) if k in ("weak", "strong") else v for k, v in models.items()}


@functools.cache
def _hints(cls: type) -> dict:
    """A spec class's type hints, resolved once (every cell of every submission is checked against the same few)."""
    import typing

    return typing.get_type_hints(cls)


def _with_defaults(cls: type, recorded: dict) -> dict:
    """A recorded spec with the fields it predates filled in with their defaults, so that a field added
    to a spec later (with a default that keeps old behaviour) does not make older submissions differ."""
    import dataclasses

    hints = _hints(cls)
    filled = dict(recorded)
    for f in dataclasses.fields(cls):
        if f.name not in filled:
            if f.default is not dataclasses.MISSING:
                filled[f.name] = to_plain(f.default)
            elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
                filled[f.name] = to_plain(f.default_factory())  # type: ignore[misc]
        elif dataclasses.is_dataclass(hints.get(f.name)) and isinstance(filled[f.name], dict):
            filled[f.name] = _with_defaults(hints[f.name], filled[f.name])
    return filled


def _early_stopped(models: dict, model_pairs: Mapping[str, ModelPairSpec] | None) -> ModelPairSpec | None:
    """A registered pair whose students were early-stopped (``bench run --early-stopping``: ``tiny+early-stop``,
    bench.core.specs.ModelPairSpec.early_stopped), rebuilt from the recorded setting so that its settings are
    checked as the registered pair's own are (a name that does not match the setting differs in ``name``)."""
    from bench.core.errors import BenchError
    from bench.core.protocols import MODEL_PAIRS
    from bench.core.specs import EarlyStopping

    base, marked, _ = str(models.get("name")).partition("+")
    stopping = (models.get("student_train") or {}).get("early_stopping")
    pair = _resolve(base, model_pairs, MODEL_PAIRS) if marked else None
    if pair is None or not isinstance(stopping, dict):
        return None
    try:
        return pair.early_stopped(EarlyStopping(**stopping))
    except (TypeError, BenchError):   # a setting this version does not know: not checkable, as an unknown pair
        return None


def _check_models(v: Validation, meta: dict, model_pairs: Mapping[str, ModelPairSpec] | None) -> None:
    from bench.core.protocols import MODEL_PAIRS

    models = meta["models"]
    check_name(v, SUBMISSION_FILE, "models.name", models.get("name"))
    spec = _resolve(models.get("name"), model_pairs, MODEL_PAIRS) or _early_stopped(models, model_pairs)
    if spec is None:
        v.warn(SUBMISSION_FILE, "models.name", f"model pair {models.get('name')!r} is not registered here, so its "
               "settings cannot be checked", "register the pair, or submit results of a registered one")
        return
    recorded, registered = _with_defaults(ModelPairSpec, _plain_models(models)), to_plain(spec)
    differing = sorted(k for k in set(recorded) | set(registered) if recorded.get(k) != registered.get(k))
    if differing:
        v.error(SUBMISSION_FILE, "models", f"model pair {spec.name!r} differs from the registered one in: "
                f"{', '.join(differing)}", "rerun with the registered model pair and submit again")


def _in_time(v: Validation, started: float, budget: float | None, doing: str) -> None:
    """Stop (an error, not a hang) once validation has run ``budget`` seconds: the leaderboard checks
    uploads in its own process. Checked between cells, so one cell's time is bounded by its rows."""
    elapsed = time.monotonic() - started
    if budget is not None and elapsed > budget:
        v.error(".", "", f"validation stopped after {elapsed:.0f} s, before {doing}: an upload is checked within "
                f"{budget:.0f} s, and a submission of a registered protocol takes seconds",
                "run `bench validate FOLDER` on your machine, which has no time limit, and fix what it reports")
        raise _Stop


def _reference(v: Validation, protocol: ProtocolSpec, models: str, references: Path | None
               ) -> reference_teacher.Reference | None:
    """What a submission's test pairs and teacher are checked against (bench.submissions.reference): the
    committed reference of its protocol x model pair, else its generated test splits, else nothing."""
    try:
        found = reference_teacher.committed(protocol, models, references)
    except ValueError as error:   # a reference of another protocol version or format
        v.error(SUBMISSION_FILE, "protocol", str(error), "update shiftbench, or rebuild the reference")
        return None
    return found or reference_teacher.generated(protocol)


def _check(v: Validation, protocols, model_pairs, budget: float | None = None,
           references: Path | None = REFERENCES) -> None:
    started = time.monotonic()
    files = _open_store(v, _inventory(v))
    parsed = read_json(v, v.folder, SUBMISSION_FILE, SubmissionFile)
    meta = parsed.model_dump() if parsed is not None else None
    if meta is not None:   # as the cells record it: a protocol's optional fields only when set
        meta["protocol"] = parsed.protocol.model_dump(exclude_none=True)
    v.submission = meta
    for fld, name in (("method.name", meta["method"]["name"]), ("protocol.name", meta["protocol"]["name"]),
                      ("slug", meta["slug"])):
        check_name(v, SUBMISSION_FILE, fld, name)
    check_commands(v, SUBMISSION_FILE, [("command", meta["command"]),
                                         *((f"run_commands.{i}", c) for i, c in enumerate(meta["run_commands"]))])
    for key, value in meta["method"]["params"].items():
        if not PARAM_KEY_RE.fullmatch(key):
            v.error(SUBMISSION_FILE, f"method.params.{key}", "is not a plain parameter name", "use a plain name")
        if isinstance(value, str) and not NAME_RE.fullmatch(value or "x"):
            v.error(SUBMISSION_FILE, f"method.params.{key}", f"value {value!r} is not a plain value", "use a plain value")
    if meta["slug"] != params_slug(meta["method"]["name"], meta["method"]["params"]):
        v.error(SUBMISSION_FILE, "slug", f"is {meta['slug']!r}, the method and params give "
                f"{params_slug(meta['method']['name'], meta['method']['params'])!r}", REGENERATE)
    if meta.get("external") is not None and meta["external"] != EXTERNAL_NOTE:
        v.error(SUBMISSION_FILE, "external", f"is {meta['external'][:80]!r}; a submission of students trained outside "
                f"the harness is marked {EXTERNAL_NOTE!r}", REGENERATE)
    protocol = _check_protocol(v, meta, protocols)
    _check_models(v, meta, model_pairs)
    reference = _reference(v, protocol, meta["models"]["name"], references)

    held: dict[tuple[int, int, str], dict] = {}   # (replicate, seed, source): r = 0 the method's own run, r > 0
    for i, ref in enumerate(meta["cells"]):      # naive's replicate r of it (CellRef.replicate)
        key = (ref["replicate"], ref["seed"], ref["source"])
        if key in held:
            v.error(SUBMISSION_FILE, f"cells.{i}", f"seed {key[1]}, source {key[2]}"
                    f"{f', replicate {key[0]}' if key[0] else ''} is listed twice", REGENERATE)
        elif key[1] not in protocol.seed_order or key[2] not in protocol.sources:
            v.error(SUBMISSION_FILE, f"cells.{i}", f"seed {key[1]}, source {key[2]!r} is not a cell of "
                    f"{protocol.name} ({protocol.seeds_text}, sources {list(protocol.sources)})",
                    "remove it; " + REGENERATE)
        elif key[0] < 0:
            v.error(SUBMISSION_FILE, f"cells.{i}.replicate", f"is {key[0]}: 0 is the method's own run, r > 0 its "
                    "replicate r", REGENERATE)
        else:
            held[key] = ref
    listed = {key[1:]: ref for key, ref in held.items() if not key[0]}
    replicates = {key: ref for key, ref in held.items() if key[0]}
    _check_fresh_from(v, meta, protocol, {seed for seed, _ in listed}, reference)
    _check_replicates(v, meta, protocol, set(held))
    # A protocol with a sequential plan takes further whole seeds after its own, without a gap.
    seeds = protocol.submission_seeds(seed for seed, _ in listed)
    missing = [(seed, source) for seed in seeds for source in protocol.sources if (seed, source) not in listed]
    if missing:
        shown = ", ".join(f"seed {seed} {source}" for seed, source in missing)
        v.error(SUBMISSION_FILE, "cells", f"{len(missing)} of the {len(seeds) * len(protocol.sources)} cells of "
                f"seeds {', '.join(map(str, seeds))} are missing: {shown}", f"run them (bench run "
                f"{method_option(meta['method'])} --protocol {protocol.name} --seeds {' '.join(map(str, seeds))}, with the "
                "same --param), then bench submit again")
    names = (RESULT_FILE, SCORES_FILE) + ((CANDIDATES_FILE,) if protocol.candidates is not None else ())
    expected_files = {f"{cell_folder(*key)}/{name}" for key in listed for name in names} | {
        f"{cell_folder(seed, source, r)}/{name}" for r, seed, source in replicates for name in names}
    for rel in sorted(set(files) - expected_files - {SUBMISSION_FILE}):
        if CELL_FILE_RE.fullmatch(rel):
            v.error(rel, "", "is not listed in submission.json", "remove it, or " + REGENERATE)

    for i, key in enumerate(sorted(listed, key=lambda k: (k[0], protocol.sources.index(k[1])))):
        _in_time(v, started, budget, f"cell {i + 1} of {len(listed)} (seed {key[0]}, {key[1]})")
        read: list[bytes] = []
        result = check_cell(v, meta, protocol, listed[key], files, reference, read)
        if result is not None:
            v.cells.append(result)
            v.read.append(read[0])
    replicated = []   # the replicates' results: their commands are the submission's too
    for i, key in enumerate(sorted(replicates, key=lambda k: (k[0], k[1], protocol.sources.index(k[2])))):
        _in_time(v, started, budget, f"replicate cell {i + 1} of {len(replicates)} (replicate {key[0]}, seed "
                 f"{key[1]}, {key[2]})")
        result = check_cell(v, meta, protocol, replicates[key], files, reference)
        if result is not None:
            replicated.append(result)
    _check_alike(v, replicated)

    check_method_source(v, files)
    if len(v.cells) == len(listed) and v.cells:
        summary = submission_summary(v.cells, {protocol.name: protocol})   # far targets of an unregistered one too
        if set(meta["summary"]) != set(summary):
            v.error(SUBMISSION_FILE, "summary", f"has fields {sorted(meta['summary'])}, expected {sorted(summary)}",
                    REGENERATE)
        for name, value in summary.items():
            if not close(meta["summary"].get(name), value):
                v.error(SUBMISSION_FILE, f"summary.{name}", f"is {meta['summary'].get(name)} but the cells give "
                        f"{value}", REGENERATE)
        from bench.submissions.reference import PAIRS_FIX, same_splits

        try:   # every cell scores one test split per eval set (the reference checked them, where there is one)
            same_splits(v.pairs, "this submission")
            one_split = True
        except ValueError as error:
            v.error(SUBMISSION_FILE, "cells", str(error), PAIRS_FIX)
            one_split = False
        if len(v.pairs) == len(v.cells) and one_split:   # every cell recomputed: so can its intervals
            _in_time(v, started, budget, "the intervals")
            _check_intervals(v, meta["intervals"], submission_intervals(v.pairs))
        if meta["code_version"] != code_version(v.cells):
            v.error(SUBMISSION_FILE, "code_version", "does not match the cells' recorded environments", REGENERATE)
        if sorted({c.command for c in (*v.cells, *replicated)}) != meta["run_commands"]:
            v.error(SUBMISSION_FILE, "run_commands", "are not the commands the cells record", REGENERATE)


def _check_replicates(v: Validation, meta: dict, protocol: ProtocolSpec, held: set[tuple[int, int, str]]) -> None:
    """Replicates (CellRef.replicate) only on naive's submission, its A/A runs (benchmarks/aa_test.py; each run's control
    against naive where the rule applies one: bench.core.runs), and each replicate of whole seeds that naive's own runs
    hold: an A/A comparison pairs whole seeds.
    ``held``: the submission's (replicate, seed, source), r = 0 its own runs."""
    from bench.core.results import BASELINE

    replicated = {key for key in held if key[0]}
    if replicated and meta["slug"] != BASELINE:
        v.error(SUBMISSION_FILE, "cells", f"lists replicates of its cells ({len(replicated)}), but only {BASELINE}'s "
                f"submission holds them (its A/A runs)",
                f"submit the replicates with {BASELINE}'s results (bench submit results/.../{BASELINE} "
                f"results/.../{BASELINE}#1); " + REGENERATE)
        return
    for r in sorted({r for r, _, _ in replicated}):
        seeds = sorted({seed for q, seed, _ in replicated if q == r})
        unheld = [seed for seed in seeds if any((0, seed, d) not in held for d in protocol.sources)]
        partial = [seed for seed in seeds if seed not in unheld and
                   any((r, seed, d) not in held for d in protocol.sources)]
        if unheld:
            v.error(SUBMISSION_FILE, "cells", f"replicate {r} holds seed{'s' if len(unheld) > 1 else ''} "
                    f"{', '.join(map(str, unheld))}, of which {BASELINE}'s own runs miss a source: a replicate is an "
                    f"A/A run of {BASELINE}'s own run of its cell", "leave those seeds of the replicate out, or run "
                    f"{BASELINE}'s own missing cells; " + REGENERATE)
        if partial:
            v.error(SUBMISSION_FILE, "cells", f"replicate {r} of seed{'s' if len(partial) > 1 else ''} "
                    f"{', '.join(map(str, partial))} is not whole: a replicate runs every source of a seed that "
                    f"{BASELINE}'s own runs hold", f"run the missing cells (bench run --method {BASELINE} --replicate "
                    f"{r} --protocol {protocol.name} --seeds {' '.join(map(str, partial))}), or leave those seeds out; "
                    + REGENERATE)


def _check_alike(v: Validation, replicated: list) -> None:
    """Each replicate is an A/A run of naive's own cell of its seed and source: the same test pairs, teacher and
    verdicts (bench.core.runs.paired), labels, and code of the method; only the student's randomness differs.
    An A/A run that is not one would bias the A/A rate it measures, and every difference where a rule corrects by it."""
    from bench.core.results import replicate_of
    from bench.core.runs import paired

    rerun = ("rerun the replicate beside naive's own runs, with the same model pair, data and shiftbench (bench run "
             "--method naive --replicate R --seeds N), or leave it out; then " + REGENERATE)
    own, mine = {(c.seed, c.source): c for c in v.pairs}, {(c.seed, c.source): c for c in v.cells}
    for c in v.controls:
        if (c.seed, c.source) in own and not paired(c, own[c.seed, c.source]):
            v.error(f"{cell_folder(c.seed, c.source, replicate_of(c.method))}/{RESULT_FILE}", "eval_sets", "its test "
                    f"pairs or teacher's verdicts are not those of naive's own cell ({cell_folder(c.seed, c.source)}): "
                    "a replicate trains the student again on the same teacher and labels", rerun)
    for result in replicated:
        base = mine.get((result.seed, result.source))
        if base is None:
            continue
        for fld, value, expected in (
                ("labels.digest", result.labels and result.labels.digest, base.labels and base.labels.digest),
                ("teacher.cache_key", result.teacher.get("cache_key"), base.teacher.get("cache_key")),
                ("method.origin", *_method_code(result.method.origin, base.method.origin))):
            if value != expected:
                v.error(f"{cell_folder(result.seed, result.source, result.replicate)}/{RESULT_FILE}", fld,
                        f"is {str(value)[:80]!r}, naive's own cell ({cell_folder(result.seed, result.source)}) records "
                        f"{str(expected)[:80]!r}: a replicate differs from it in the student's randomness alone", rerun)


def _method_code(a: dict, b: dict) -> tuple:
    """What must match of two cells' method origins for one to be the other's replicate: their normalised code digest
    where both record one under the same scheme (bench.core.versions: a docstring edit between two runs is the same
    code), else the whole origin, file sha256 and all."""
    if a.get("digest_scheme") is not None and a.get("digest_scheme") == b.get("digest_scheme") and a.get("code_digest"):
        return a.get("code_digest"), b.get("code_digest")
    return a, b


def _check_fresh_from(v: Validation, meta: dict, protocol: ProtocolSpec, held: set[int],
                      reference: reference_teacher.Reference | None = None) -> None:
    """A method chosen on the protocol's own seeds (the best of a zoo by NTS there) decides on the seeds after them
    (SubmissionFile.fresh_from): only that seed, so that choosing where to start cannot itself pick the seeds that
    decide; on a protocol with a sequential plan that holds a first look after them; never naive or the ceiling,
    which nothing chose; and with a seed held from there on. A reference submission the committed reference records
    as chosen (Reference.chosen) must say so: without the mark, the seeds that chose it would count in its decision."""
    from bench.core.results import BASELINE, CEILING

    fresh, slug = meta.get("fresh_from"), meta["slug"]
    recorded = (reference.chosen or {}).get(slug) if reference is not None and \
        reference.models == meta["models"]["name"] else None
    if recorded is not None and fresh != recorded:
        v.error(SUBMISSION_FILE, "fresh_from", f"is {fresh}, but {slug} was chosen as the best of several on "
                f"{protocol.name}'s seeds before {recorded} ({reference.origin}'s reference records it): it is decided "
                f"on the seeds from {recorded} on, and those before cannot count", f"bench submit again with "
                f"--fresh-from {recorded}")
    if fresh is None:
        return
    without = "bench submit again without --fresh-from"
    after = protocol.seed_order[len(protocol.seeds):]   # the seeds a plan adds after the protocol's own
    if meta["method"]["name"] in (BASELINE, CEILING):
        v.error(SUBMISSION_FILE, "fresh_from", f"is {fresh} on {meta['method']['name']}, which nothing chose: it is "
                "the baseline or a reference, decided on every seed", without)
    elif protocol.looks is None or len(after) < protocol.looks[0]:
        v.error(SUBMISSION_FILE, "fresh_from", f"is {fresh}, but {protocol.name} has no sequential plan that looks at "
                f"{protocol.looks[0] if protocol.looks else 'any'} seeds after its own {list(protocol.seeds)}: its "
                "differences are decided on all of its seeds", without)
    elif fresh != after[0]:
        v.error(SUBMISSION_FILE, "fresh_from", f"is {fresh}; on {protocol.name} it is {after[0]}, the first seed after "
                f"the protocol's own {list(protocol.seeds)}, which chose the method (a start one may pick could itself "
                "pick the seeds that decide)", f"bench submit again with --fresh-from {after[0]}")
    elif not any(seed >= fresh for seed in held):
        v.error(SUBMISSION_FILE, "fresh_from", f"is {fresh}, but the submission holds no seed from {fresh} on, so "
                "nothing is left to decide on", f"run its seeds from {fresh} (bench compare {slug} naive --out RESULTS "
                f"--until-decided --fresh-from {fresh}), then bench submit RESULTS --fresh-from {fresh}")


def _check_intervals(v: Validation, stored: dict, recomputed: dict) -> None:
    for key in ("level", "n_boot", "seed"):
        if stored[key] != recomputed[key]:
            v.error(SUBMISSION_FILE, f"intervals.{key}", f"is {stored[key]}; this bench computes intervals with "
                    f"{recomputed[key]}", REGENERATE)
            return
    if set(stored["metrics"]) != set(recomputed["metrics"]):
        v.error(SUBMISSION_FILE, "intervals.metrics", f"has {sorted(stored['metrics'])}, expected "
                f"{sorted(recomputed['metrics'])}", REGENERATE)
        return
    for metric, bounds in recomputed["metrics"].items():
        if len(stored["metrics"][metric]) != 2 or not all(map(close, stored["metrics"][metric], bounds)):
            v.error(SUBMISSION_FILE, f"intervals.metrics.{metric}", f"is {stored['metrics'][metric]} but the per-pair "
                    f"scores give {bounds}", REGENERATE)


def validate_submission(folder: Path, protocols: Mapping[str, ProtocolSpec] | None = None,
                        model_pairs: Mapping[str, ModelPairSpec] | None = None,
                        time_budget_s: float | None = None,
                        references: Path | None = REFERENCES) -> Validation:
    """Check one submission folder. ``protocols`` / ``model_pairs`` add specs to the registries' (tests).
    ``time_budget_s``: stop with an error after this long (checked between cells; the leaderboard
    passes limits.UPLOAD_TIME_BUDGET_S for uploads, bench validate none). ``references``: the folder of
    committed reference teachers (bench.submissions.reference; None: none, to build one)."""
    v = Validation(Path(folder))
    try:
        _check(v, protocols, model_pairs, time_budget_s, references)
    except _Stop:
        pass
    except (OSError, KeyError, TypeError, ValueError) as error:  # malformed beyond what the schema says
        v.error(".", "", f"could not be read: {type(error).__name__}: {str(error)[:200]}", REGENERATE)
    v.store = None   # what validation read from it is in v.pairs; the board keeps outcomes, not tables
    v.close()
    return v
