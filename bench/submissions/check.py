"""Reading and checking one submission folder (``validate_submission``): its inventory of files, its
JSON and scores files, its protocol and model pair against the registries, its commands, and every
cell's numbers recomputed from the per-pair scores (and, on a protocol with best-of-N candidate sets,
its BoN numbers from the per-candidate scores). It only reads JSON and gzip'd CSV, with the size
limits checked before anything is read; nothing of a submission is imported or run. A scores file
is streamed a line at a time and read only as far as its cell's declared pairs, and problems are
kept up to a bound per file, so what validation holds is bounded (limits.py says how far)."""
from __future__ import annotations

import json
import math
import os
import stat
import time
from pathlib import Path
from typing import Any, Iterator, Mapping

from pydantic import BaseModel, ValidationError

import bench.submissions.limits as limits
import bench.submissions.reference as reference_teacher
from bench.core.data import STUDENT_STAGES, TEACHER_STAGES, stage_seed
from bench.core.errors import UnknownNameError
from bench.core.io import sha256_file
from bench.core.results import (CANDIDATE_COLUMNS, CANDIDATES_FILE, EXTERNAL_NOTE, METHOD_SOURCE_FILE, RESULT_FILE,
                           SCHEMA_VERSION as RESULT_SCHEMA, SCORES_FILE, CellResult, params_slug, recompute)
from bench.core.specs import ModelPairSpec, ProtocolSpec, to_plain
from bench.core.cells import cell_from_scores
from bench.submissions.commands import absolute_paths
from bench.submissions.limits import (CELL_FILE_RE, LOCAL_PATH_RE, NAME_RE, PARAM_KEY_RE, REFERENCES, REGENERATE,
                                      SCHEMA_VERSION, SUBMISSION_FILE, UNSAFE_TEXT_HELP, Validation, _Stop, cell_folder,
                                      unsafe_text)
from bench.submissions.schema import SubmissionFile, code_version, submission_intervals, submission_summary
import bench.submissions.reference as reference_teacher
from bench.submissions.scores import as_rows, read_candidates, read_scores


# --- small helpers --------------------------------------------------------------------------------------
def _field(loc: tuple) -> str:
    return ".".join(str(part) for part in loc)


def _strings(obj: Any, loc: tuple = ()) -> Iterator[tuple[tuple, str, bool]]:
    """Every string in a JSON value, keys included, with where it is and whether it is a key."""
    if isinstance(obj, str):
        yield loc, obj, False
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield (*loc, key), key, True
            yield from _strings(value, (*loc, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _strings(value, (*loc, i))


def _tokenizer_text_limit(loc: tuple, is_key: bool) -> int | None:
    """The length limit of a tokenizer's own text (limits.TOKENIZER_TEXT_FIELDS) at ``loc``: a value of
    ``formatters.<role>.<field>`` (``special_tokens``: ``{name: token}``, one level deeper) or of
    ``models.<role>.chat_template``; None for every other string."""
    if is_key or len(loc) < 3:
        return None
    if loc[0] == "models" and loc[1] in ("weak", "strong"):
        tokenizer_text = len(loc) == 3 and loc[2] == "chat_template"
    else:
        tokenizer_text = (loc[0] == "formatters" and loc[2] in limits.TOKENIZER_TEXT_FIELDS
                          and len(loc) == (4 if loc[2] == "special_tokens" else 3))
    if not tokenizer_text:
        return None
    return limits.MAX_TEMPLATE_CHARS if loc[2] == "chat_template" else limits.MAX_TEXT_CHARS


def _check_text(v: Validation, file: str, obj: Any) -> None:
    for loc, text, is_key in _strings(obj):
        tokenizer_limit = _tokenizer_text_limit(loc, is_key)
        limit = tokenizer_limit or limits.MAX_TEXT_CHARS
        what = unsafe_text(text, markup_ok=tokenizer_limit is not None)
        if what:
            v.error(file, _field(loc), f"text {text[:60]!r} contains {what}, which could be markup, script or "
                                       "disguised text where it is shown",
                    f"remove it: names, commands and notes are {UNSAFE_TEXT_HELP}")
        elif len(text) > limit:
            v.error(file, _field(loc), f"text of {len(text)} characters (limit {limit})", "shorten it")
        elif tokenizer_limit is None and not is_key and loc[-1:] != ("command",) and LOCAL_PATH_RE.match(text):
            v.error(file, _field(loc), f"holds the local path {text[:100]!r}: a submission records no folder of the "
                    "machine it was made on", "rerun with this version of shiftbench, whose results record file names "
                    "and hub ids only, then " + REGENERATE)


def _no_constants(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _read_json(v: Validation, folder: Path, rel: str, model: type[BaseModel]) -> BaseModel:
    path = folder / rel
    size = path.stat().st_size
    if size > limits.MAX_JSON_BYTES:
        v.error(rel, "", f"{size} bytes, over the limit of {limits.MAX_JSON_BYTES}", REGENERATE)
        raise _Stop
    try:
        data = json.loads(path.read_bytes().decode("utf-8"), parse_constant=_no_constants)
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        v.error(rel, "", f"not valid JSON ({str(error)[:200]})", REGENERATE)
        raise _Stop from None
    if not isinstance(data, dict):
        v.error(rel, "", "is not a JSON object", REGENERATE)
        raise _Stop
    _check_text(v, rel, data)
    expected = SCHEMA_VERSION if model is SubmissionFile else RESULT_SCHEMA
    if data.get("schema_version") != expected:
        v.error(rel, "schema_version", f"is {data.get('schema_version')!r}; this bench reads {expected}",
                f"{REGENERATE} with this version of shiftbench")
        raise _Stop
    try:
        return model.model_validate(data)
    except ValidationError as error:
        for item in error.errors()[:20]:
            v.error(rel, _field(item["loc"]), item["msg"], REGENERATE)
        raise _Stop from None


def _check_commands(v: Validation, file: str, commands: list[tuple[str, str]]) -> None:
    """(field, command) pairs: refuse an absolute path in any (``bench submit`` stores commands without)."""
    for fld, command in commands:
        paths = absolute_paths(command)
        if paths:
            v.error(file, fld, f"holds the local path {paths[0][:100]!r}: a submission records commands without "
                    "the submitter's folders", "re-pack with bench submit, which replaces every local path in a "
                    "command by its last component")


def _check_name(v: Validation, file: str, fld: str, name: Any) -> None:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or ".." in name:
        v.error(file, fld, f"{name!r} is not a plain name (letters, digits and . _ + = -, no path "
                           "separators, no '..', at most 96 characters)", "use a plain name")


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
        if rel not in (SUBMISSION_FILE, METHOD_SOURCE_FILE) and not CELL_FILE_RE.fullmatch(rel):
            v.error(rel, "", "is not part of a submission (it is never read or run)",
                    "remove it: a submission holds only submission.json, cells/seed<N>/<source>/"
                    f"{{result.json,scores.csv.gz}} (and {CANDIDATES_FILE} on a protocol with candidate sets) and, for a "
                    f"method that is not built in, {METHOD_SOURCE_FILE}")
    if SUBMISSION_FILE not in files:
        v.error(SUBMISSION_FILE, "", "is missing", REGENERATE)
        raise _Stop
    return files


def _resolve(name: str, override: Mapping | None, registry) -> Any:
    if override and name in override:
        return override[name]
    return registry.get(name) if name in registry else None


def _check_protocol(v: Validation, meta: dict, protocols: Mapping[str, ProtocolSpec] | None) -> ProtocolSpec:
    from bench.core.protocols import protocol_hash, protocol_named

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
    return protocol


def _plain_models(models: dict) -> dict:
    """A recorded model pair as its spec: the run records the resolved revision (weights sha256 or
    hub commit) where the spec has the requested one."""
    def spec(model: Any) -> Any:
        if isinstance(model, dict) and isinstance(model.get("revision"), dict):
            return {**model, "revision": model["revision"].get("requested_revision")}
        return model
    return {k: spec(v) if k in ("weak", "strong") else v for k, v in models.items()}


def _with_defaults(cls: type, recorded: dict) -> dict:
    """A recorded spec with the fields it predates filled in with their defaults, so that a field added
    to a spec later (with a default that keeps old behaviour) does not make older submissions differ."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
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
    _check_name(v, SUBMISSION_FILE, "models.name", models.get("name"))
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


def _close(a: float | None, b: float | None) -> bool:
    """Summary values: equal to 1e-9, or both missing (a spread over one seed is None)."""
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return math.isclose(a, b, abs_tol=1e-9)


def _check_cell(v: Validation, meta: dict, protocol: ProtocolSpec, ref: dict, files: dict[str, int],
                reference: reference_teacher.Reference | None = None) -> CellResult | None:
    base = cell_folder(ref["seed"], ref["source"])
    rel_result, rel_scores, rel_candidates = (f"{base}/{name}" for name in (RESULT_FILE, SCORES_FILE, CANDIDATES_FILE))
    listed_files = {rel_result: ref["result_sha256"], rel_scores: ref["scores_sha256"]}
    if protocol.candidates is not None:   # its cells score best-of-N sets: the submission carries their scores
        listed_files[rel_candidates] = ref.get("candidates_sha256")
    elif ref.get("candidates_sha256") is not None:
        v.error(SUBMISSION_FILE, "cells", f"seed {ref['seed']} {ref['source']} lists a {CANDIDATES_FILE}, but "
                f"{protocol.name} scores no candidate sets", REGENERATE)
    missing = [r for r in listed_files if r not in files]
    for rel in missing:
        v.error(rel, "", "is missing" + (f" (seed {ref['seed']} {ref['source']}: {protocol.name} scores best-of-N "
                "candidate sets, whose per-candidate scores every cell carries)" if rel == rel_candidates else ""),
                REGENERATE)
    if missing:
        return None
    for rel, listed in listed_files.items():
        if sha256_file(v.folder / rel) != listed:
            v.error(rel, "", "its sha256 is not the one submission.json lists (the file was changed)", REGENERATE)
    try:
        result = _read_json(v, v.folder, rel_result, CellResult)
    except _Stop:
        return None
    _check_commands(v, rel_result, [("command", result.command)])
    source = ref["source"]
    recorded = {"seed": result.seed, "source": result.source, "protocol": result.protocol.model_dump(exclude_none=True),
                "models": result.models, "category": result.category}
    expected = {"seed": ref["seed"], "source": source, "protocol": meta["protocol"], "models": meta["models"],
                "category": protocol.category_of(source)}
    for key, value in expected.items():
        if recorded[key] != value:
            v.error(rel_result, key, f"is {str(recorded[key])[:120]!r}, expected {str(value)[:120]!r} "
                    "(the submission's)", "a submission's cells all come from one run of one method; " + REGENERATE)
    for key in ("name", "params"):
        if getattr(result.method, key) != meta["method"][key]:
            v.error(rel_result, f"method.{key}", f"is {getattr(result.method, key)!r}, the submission's is "
                    f"{meta['method'][key]!r}", REGENERATE)
    _check_provenance(v, rel_result, result, meta)
    _check_seeds(v, rel_result, result, protocol)
    roles = {source: "id", **{t: "ood" for t in protocol.targets_of(source)}}
    if {k: e.role for k, e in result.eval_sets.items()} != roles:
        v.error(rel_result, "eval_sets", f"are {sorted(result.eval_sets)}, the protocol's for {source} are "
                f"{sorted(roles)} (the source as 'id', its siblings as 'ood')", REGENERATE)
    if set(result.metrics) != set(roles) - {source}:
        v.error(rel_result, "metrics", f"targets {sorted(result.metrics)}, expected "
                f"{sorted(set(roles) - {source})}", REGENERATE)
    if result.scores_file is None or result.scores_file.sha256 != ref["scores_sha256"]:
        v.error(rel_result, "scores_file.sha256", "does not match the scores file", REGENERATE)
    if protocol.candidates is not None and (result.candidates_file is None
                                            or result.candidates_file.sha256 != ref.get("candidates_sha256")):
        v.error(rel_result, "candidates_file.sha256", f"does not match the {CANDIDATES_FILE} file", REGENERATE)
    # The scores file is read only as far as the pairs result.json declares, so those must be bounded
    # first: the protocol's eval sets (checked above), each with at most its test split's pairs.
    most = min(protocol.test_size, limits.MAX_PAIRS_PER_EVAL_SET)
    oversize = {name: e.n_pairs for name, e in result.eval_sets.items() if not 0 <= e.n_pairs <= most}
    for name, n in oversize.items():
        v.error(rel_result, f"eval_sets.{name}.n_pairs", f"is {n}; {protocol.name} scores from 0 to {most} pairs per "
                "test split (its test_size), so the scores file is not read", REGENERATE)
    # likewise the candidates file: at most N rows for each set of each eval set, one set per test pair at most
    n_sets = {name: e.n_sets for name, e in result.eval_sets.items()} if protocol.candidates is not None else {}
    for name, n in n_sets.items():
        if not (isinstance(n, int) and 1 <= n <= most):
            v.error(rel_result, f"eval_sets.{name}.n_sets", f"is {n}; {protocol.name} scores 1 to {most} best-of-N sets "
                    f"per test split (one per test pair at most), so {CANDIDATES_FILE} is not read", REGENERATE)
            oversize[name] = n
    if oversize or set(result.eval_sets) != set(roles):
        return result
    rows = read_scores(v, rel_scores, v.folder / rel_scores, {k: e.n_pairs for k, e in result.eval_sets.items()})
    candidates = None
    if protocol.candidates is not None:
        candidates = read_candidates(v, rel_candidates, v.folder / rel_candidates, n_sets, protocol.candidates)
        if candidates is None:
            return result
    if rows is not None:  # the one recompute, as bench verify's
        candidate_rows = None if candidates is None else list(as_rows(candidates, CANDIDATE_COLUMNS))
        problems = recompute(result, as_rows(rows), candidate_rows)
        for fld, problem in problems:   # a set's own rows are the candidates file's problem, a number is result.json's
            v.error(rel_candidates if fld.startswith("candidates") else rel_result, fld, problem,
                    "the numbers must be the ones the per-pair (and per-candidate) scores give; " + REGENERATE)
        if not problems:  # what the board's intervals are computed from (at most the declared pairs)
            v.pairs.append(cell_from_scores(result, as_rows(rows), rel_result, candidate_rows))
            if reference is not None:   # the protocol's test pairs, judged by the protocol's teacher
                from bench.submissions.reference import check_cell

                check_cell(v, reference, v.pairs[-1])
    return result


def _check_seeds(v: Validation, rel: str, result: CellResult, protocol: ProtocolSpec) -> None:
    """Every derived seed is the one the code derives from the cell's seed (bench.core.data.stage_seed): a
    seed is never chosen, so an edited one is a cell no rerun reproduces. A harness-trained cell records
    the teacher's and the student's stages, a student trained elsewhere (bench evaluate) the teacher's."""
    stages = TEACHER_STAGES if result.external is not None else TEACHER_STAGES + STUDENT_STAGES
    if set(result.derived_seeds) != set(stages):
        v.error(rel, "derived_seeds", f"names the stages {sorted(result.derived_seeds)}; a cell's are {sorted(stages)}",
                REGENERATE)
    for stage in stages:
        derived = stage_seed(protocol, result.seed, result.source, stage, result.replicate)
        if stage in result.derived_seeds and result.derived_seeds[stage] != derived:
            v.error(rel, f"derived_seeds.{stage}", f"is {result.derived_seeds[stage]}, but seed {result.seed} of "
                    f"{result.source}{f' (replicate {result.replicate})' if result.replicate else ''} derives "
                    f"{derived} (bench.core.data.stage_seed): seeds are derived, never chosen", REGENERATE)


def _check_provenance(v: Validation, rel: str, result: CellResult, meta: dict) -> None:
    """What a cell says it learned from (``labels``) and, for a student trained outside the harness
    (``external``, written by bench evaluate), that it is marked as such everywhere and that the labels
    its checkpoint was trained on are the cell's. The training itself cannot be checked: that is what
    the mark says."""
    fix = "evaluate the checkpoint again with bench evaluate, then " + REGENERATE
    labels = result.labels
    if labels is not None:
        half_b = result.sizes.get("half_b")
        if labels.stage is None and labels.pairs != half_b:
            v.error(rel, "labels.pairs", f"is {labels.pairs}, but the student's half B holds {half_b} pairs", REGENERATE)
        if labels.stage is not None and not (half_b is not None and 1 <= labels.pairs <= half_b):  # a label stage may drop pairs
            v.error(rel, "labels.pairs", f"is {labels.pairs}, but a label stage trains on 1 to {half_b} pairs (half B)",
                    REGENERATE)
        if labels.kind != result.method.labels:
            v.error(rel, "labels.kind", f"is {labels.kind!r}, but method.labels is {result.method.labels!r}", REGENERATE)
    if result.external is None and result.method.trains and result.student.get("trained_on", {}).get("loop_runs") == 0:
        v.warn(rel, "student.trained_on", "the method never ran the harness's training loop, so what its student "
               "trained on (half B, by the loop's check) is not known", "train through train(...), as methods/api.py says")
    external, marked = result.external, meta.get("external")
    if (external is not None) != (marked is not None):
        v.error(rel, "external", "the cell's student was trained outside the harness but the submission is not marked "
                "so" if external is not None else "the submission is marked external but this cell's student was "
                "trained by the harness", "a submission holds students of one kind; " + REGENERATE)
    if (result.method.origin.get("kind") == "external") != (external is not None):
        v.error(rel, "method.origin.kind", f"is {result.method.origin.get('kind')!r}, but the cell "
                f"{'records' if external is not None else 'does not record'} an external checkpoint", fix)
    if external is None:
        return
    if external.note != EXTERNAL_NOTE:
        v.error(rel, "external.note", f"is {external.note[:80]!r}, not {EXTERNAL_NOTE!r}", fix)
    for name, record in (("checkpoint", external.checkpoint), ("adapter", external.adapter)):
        paths = absolute_paths(str((record or {}).get("path", "")))
        if paths:
            v.error(rel, f"external.{name}.path", f"holds the local path {paths[0][:100]!r}",
                    "evaluate with a relative path or a hub id; " + REGENERATE)
    if labels is None:
        v.error(rel, "labels", "is missing: which labels the checkpoint was trained on cannot be checked against the "
                "cell's", fix)
    elif external.trained_on != labels.digest:
        v.error(rel, "external.trained_on", f"the checkpoint was trained on labels with digest {external.trained_on[:16]}, "
                f"but this cell's labels have digest {labels.digest[:16]}: it learned from another cell's data (or "
                "another teacher's)", "train on this cell's bench labels output and evaluate that checkpoint")


def _check_method_source(v: Validation, files: dict[str, int]) -> None:
    """A submission of a method that is not built in (a method file, an installed package's) carries its
    source (METHOD_SOURCE_FILE), the file every cell records the sha256 of, so that a reviewer can read what
    trained its students (the harness cannot stop a method's code from reading a test split; the training
    loop checks what it trains on: ``student.trained_on``). It is hashed, never imported or run."""
    kinds = {cell.method.origin.get("kind") for cell in v.cells}
    needed, carried = bool(kinds - {"built-in", "external"}), METHOD_SOURCE_FILE in files
    if needed and not carried:
        v.error(METHOD_SOURCE_FILE, "", f"is missing: the method is not built in (its origin: {', '.join(sorted(map(str, kinds)))}), "
                "and a submission of such a method carries its source for a reviewer to read",
                "rerun the cells with this version of shiftbench, which keeps the source beside the results, then "
                + REGENERATE)
    elif carried and not needed:
        v.error(METHOD_SOURCE_FILE, "", "is not part of a submission of a built-in method", "remove it")
    elif carried and files[METHOD_SOURCE_FILE] > limits.MAX_SOURCE_BYTES:
        v.error(METHOD_SOURCE_FILE, "", f"{files[METHOD_SOURCE_FILE]} bytes, over the limit of {limits.MAX_SOURCE_BYTES}",
                "a method is one short file: " + REGENERATE)
    elif carried:
        digest = sha256_file(v.folder / METHOD_SOURCE_FILE)
        for cell in v.cells:
            if cell.method.origin.get("sha256") != digest:
                v.error(f"{cell_folder(cell.seed, cell.source)}/{RESULT_FILE}", "method.origin.sha256",
                        f"is not the sha256 of the submission's {METHOD_SOURCE_FILE}: the cell ran other code than the "
                        "source the submission carries", REGENERATE)


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
    files = _inventory(v)
    parsed = _read_json(v, v.folder, SUBMISSION_FILE, SubmissionFile)
    meta = parsed.model_dump() if parsed is not None else None
    if meta is not None:   # as the cells record it: a protocol's optional fields only when set
        meta["protocol"] = parsed.protocol.model_dump(exclude_none=True)
    v.submission = meta
    for fld, name in (("method.name", meta["method"]["name"]), ("protocol.name", meta["protocol"]["name"]),
                      ("slug", meta["slug"])):
        _check_name(v, SUBMISSION_FILE, fld, name)
    _check_commands(v, SUBMISSION_FILE, [("command", meta["command"]),
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

    listed: dict[tuple[int, str], dict] = {}
    for i, ref in enumerate(meta["cells"]):
        key = (ref["seed"], ref["source"])
        if key in listed:
            v.error(SUBMISSION_FILE, f"cells.{i}", f"seed {key[0]}, source {key[1]} is listed twice", REGENERATE)
        elif key[0] not in protocol.seeds or key[1] not in protocol.datasets:
            v.error(SUBMISSION_FILE, f"cells.{i}", f"seed {key[0]}, source {key[1]!r} is not a cell of "
                    f"{protocol.name} (seeds {list(protocol.seeds)}, sources {list(protocol.datasets)})",
                    "remove it; " + REGENERATE)
        else:
            listed[key] = ref
    missing = [(seed, source) for seed in protocol.seeds for source in protocol.datasets if (seed, source) not in listed]
    if missing:
        shown = ", ".join(f"seed {seed} {source}" for seed, source in missing)
        v.error(SUBMISSION_FILE, "cells", f"{len(missing)} of the protocol's {len(protocol.seeds) * len(protocol.datasets)} "
                f"cells are missing: {shown}", f"run them (bench run --method {meta['method']['name']} --protocol "
                f"{protocol.name} --seeds {' '.join(map(str, protocol.seeds))}, with the same --param), then "
                "bench submit again")
    names = (RESULT_FILE, SCORES_FILE) + ((CANDIDATES_FILE,) if protocol.candidates is not None else ())
    expected_files = {f"{cell_folder(*key)}/{name}" for key in listed for name in names}
    for rel in sorted(set(files) - expected_files - {SUBMISSION_FILE}):
        if CELL_FILE_RE.fullmatch(rel):
            v.error(rel, "", "is not listed in submission.json", "remove it, or " + REGENERATE)

    for i, key in enumerate(sorted(listed, key=lambda k: (k[0], protocol.datasets.index(k[1])))):
        _in_time(v, started, budget, f"cell {i + 1} of {len(listed)} (seed {key[0]}, {key[1]})")
        result = _check_cell(v, meta, protocol, listed[key], files, reference)
        if result is not None:
            v.cells.append(result)

    _check_method_source(v, files)
    if len(v.cells) == len(listed) and v.cells:
        summary = submission_summary(v.cells)
        if set(meta["summary"]) != set(summary):
            v.error(SUBMISSION_FILE, "summary", f"has fields {sorted(meta['summary'])}, expected {sorted(summary)}",
                    REGENERATE)
        for name, value in summary.items():
            if not _close(meta["summary"].get(name), value):
                v.error(SUBMISSION_FILE, f"summary.{name}", f"is {meta['summary'].get(name)} but the cells give "
                        f"{value}", REGENERATE)
        from bench.submissions.reference import PAIRS_FIX, from_cells

        try:   # every cell scores one test split per eval set (the reference checked them, where there is one)
            from_cells(v.pairs, meta["protocol"], meta["models"]["name"], "this submission")
            one_split = True
        except ValueError as error:
            v.error(SUBMISSION_FILE, "cells", str(error), PAIRS_FIX)
            one_split = False
        if len(v.pairs) == len(v.cells) and one_split:   # every cell recomputed: so can its intervals
            _in_time(v, started, budget, "the intervals")
            _check_intervals(v, meta["intervals"], submission_intervals(v.pairs))
        if meta["code_version"] != code_version(v.cells):
            v.error(SUBMISSION_FILE, "code_version", "does not match the cells' recorded environments", REGENERATE)
        if sorted({c.command for c in v.cells}) != meta["run_commands"]:
            v.error(SUBMISSION_FILE, "run_commands", "are not the commands the cells record", REGENERATE)


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
        if len(stored["metrics"][metric]) != 2 or not all(map(_close, stored["metrics"][metric], bounds)):
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
    v.close()
    return v
