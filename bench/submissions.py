"""Leaderboard submissions: ``bench submit`` packs run results, ``bench validate`` checks them.

A submission is one method x params x model pair x protocol, in a folder
``<protocol>/<models>/<slug>/`` of a submissions root::

    submission.json                          metadata, the list of cells with sha256s, the summary
    cells/seed<N>/<source>/result.json       each cell's result, as ``bench run`` wrote it
    cells/seed<N>/<source>/scores.csv.gz     the per-pair scores behind it

(``<source>`` is the dataset name with ``/`` written ``__``.) Validation only reads JSON and
gzip'd CSV, with size limits checked before anything is read; it never imports or runs anything
from a submission. Every accuracy, metric and the summary are recomputed from the per-pair scores
and any mismatch is refused. Text that could be markup (``<`` or ``>``) or control characters is
refused in every field, and names that could be paths are refused.
"""
from __future__ import annotations

import csv
import gzip
import io
import json
import math
import os
import re
import shutil
import stat
import tempfile
import zlib
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Literal, Mapping

from pydantic import BaseModel, ConfigDict, ValidationError

from bench.errors import BenchError
from bench.io import atomic_write_json, sha256_file
from bench.metrics import cell_metrics
from bench.report import COLUMNS, cell_rows, summarise
from bench.results import (RESULT_FILE, SCHEMA_VERSION as RESULT_SCHEMA, SCORE_COLUMNS, SCORES_FILE,
                           accuracies_from_scores, load_cell, params_slug)
from bench.specs import ModelPairSpec, ProtocolSpec, canonical_json, to_plain

SCHEMA_VERSION = 1
KIND = "shiftbench-submission"
SUBMISSION_FILE = "submission.json"

# Limits, checked before reading: a submission of the real protocol is a few MB.
MAX_SUBMISSION_BYTES = 50 * 2**20      # all files of one submission on disk (or in an upload)
MAX_JSON_BYTES = 2 * 2**20             # one submission.json or result.json
MAX_SCORES_BYTES = 64 * 2**20          # one scores file, decompressed
MAX_FILES = 5000
MAX_TEXT_CHARS = 4000                  # one string field

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]{0,95}")     # protocol, model pair, method, slug
PARAM_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
UNSAFE_TEXT_RE = re.compile(r"[<>\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
CELL_FILE_RE = re.compile(r"cells/seed(\d+)/([A-Za-z0-9][A-Za-z0-9._+=-]*)/(result\.json|scores\.csv\.gz)")
REGENERATE = "regenerate the submission with `bench submit` from the run's results"


# --- what validation reports ------------------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    file: str        # relative to the submission folder
    field: str       # e.g. "eval_sets.mini/travel.student_acc", or "" for the file as a whole
    message: str
    fix: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.message}. Fix: {self.fix}"


@dataclass
class Validation:
    """The outcome for one submission folder; ``submission`` and ``cells`` hold what could be read."""

    folder: Path
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    submission: dict | None = None
    cells: list[dict] = field(default_factory=list)
    name: str = ""   # how to call it: its path in the submissions root (unique there)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def key(self) -> str:
        """``name``, else ``protocol/models/slug`` when readable, else the folder name."""
        s = self.submission
        return self.name or (f"{s['protocol']['name']}/{s['models']['name']}/{s['slug']}" if s else self.folder.name)

    def error(self, file: str, fld: str, message: str, fix: str) -> None:
        self.errors.append(Problem(file, fld, message, fix))

    def warn(self, file: str, fld: str, message: str, fix: str) -> None:
        self.warnings.append(Problem(file, fld, message, fix))


class _Stop(Exception):
    """Nothing further can be checked (the reason is already recorded)."""


# --- schemas ------------------------------------------------------------------------------------------
class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class _Open(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


class ProtocolRef(_Strict):
    name: str
    version: str
    hash: str


class MethodRef(_Open):  # the run may record more (paper, origin); name and params are what identify it
    name: str
    params: dict[str, str | int | float | bool | None]


class ModelsRef(_Open):  # the whole model pair as the run recorded it; its name identifies it
    name: str


class CellRef(_Strict):
    seed: int
    source: str
    result_sha256: str
    scores_sha256: str


class CodeVersion(_Strict):
    shiftbench: list[str | None]
    git_commits: list[str | None]
    dirty: bool | None


class SubmissionFile(_Strict):
    schema_version: int
    kind: Literal["shiftbench-submission"]
    slug: str
    method: MethodRef
    protocol: ProtocolRef
    models: ModelsRef
    code_version: CodeVersion
    submitter: str
    created_utc: str
    command: str
    run_commands: list[str]
    cells: list[CellRef]
    summary: dict[str, float | int | None]


class EvalSetResult(_Open):
    role: Literal["id", "ood"]
    n_pairs: int
    teacher_acc: float
    student_acc: float


class CellMetrics(_Open):
    wrg: float
    aog: float
    nts: float


class CellResult(_Open):  # result.json: the fields a submission relies on; the run records more
    schema_version: int
    protocol: ProtocolRef
    method: MethodRef
    models: ModelsRef
    source: str
    category: str
    seed: int
    eval_sets: dict[str, EvalSetResult]
    metrics: dict[str, CellMetrics]
    command: str = ""
    environment: dict[str, Any] = {}


# --- small helpers --------------------------------------------------------------------------------------
def cell_folder(seed: int, source: str) -> str:
    return f"cells/seed{seed}/{source.replace('/', '__')}"


def _field(loc: tuple) -> str:
    return ".".join(str(part) for part in loc)


def _strings(obj: Any, loc: tuple = ()) -> Iterator[tuple[tuple, str]]:
    """Every string in a JSON value, keys included, with where it is."""
    if isinstance(obj, str):
        yield loc, obj
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield (*loc, key), key
            yield from _strings(value, (*loc, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from _strings(value, (*loc, i))


def _check_text(v: Validation, file: str, obj: Any) -> None:
    for loc, text in _strings(obj):
        if UNSAFE_TEXT_RE.search(text):
            v.error(file, _field(loc), f"text {text[:60]!r} contains '<', '>' or a control character, "
                                       "which could be markup or script where it is shown",
                    "remove those characters (names, commands and notes are plain text)")
        elif len(text) > MAX_TEXT_CHARS:
            v.error(file, _field(loc), f"text of {len(text)} characters (limit {MAX_TEXT_CHARS})", "shorten it")


def _no_constants(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _read_json(v: Validation, folder: Path, rel: str, model: type[BaseModel]) -> dict:
    path = folder / rel
    size = path.stat().st_size
    if size > MAX_JSON_BYTES:
        v.error(rel, "", f"{size} bytes, over the limit of {MAX_JSON_BYTES}", REGENERATE)
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
        model.model_validate(data)
    except ValidationError as error:
        for item in error.errors()[:20]:
            v.error(rel, _field(item["loc"]), item["msg"], REGENERATE)
        raise _Stop from None
    return data


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
            if total > MAX_SUBMISSION_BYTES or len(files) > MAX_FILES:
                v.error(".", "", f"more than {MAX_SUBMISSION_BYTES} bytes or {MAX_FILES} files",
                        "a submission holds only submission.json and its cells' result.json and scores.csv.gz")
                raise _Stop
        dirs[:] = [d for d in dirs if not Path(root, d).is_symlink()]
    for rel in files:
        if rel != SUBMISSION_FILE and not CELL_FILE_RE.fullmatch(rel):
            v.error(rel, "", "is not part of a submission (it is never read or run)",
                    "remove it: a submission holds only submission.json and cells/seed<N>/<source>/"
                    "{result.json,scores.csv.gz}")
    if SUBMISSION_FILE not in files:
        v.error(SUBMISSION_FILE, "", "is missing", REGENERATE)
        raise _Stop
    return files


def _resolve(name: str, override: Mapping | None, registry) -> Any:
    if override and name in override:
        return override[name]
    return registry.get(name) if name in registry else None


def _check_protocol(v: Validation, meta: dict, protocols: Mapping[str, ProtocolSpec] | None) -> ProtocolSpec:
    from bench.protocols import PROTOCOLS, protocol_hash

    ref = meta["protocol"]
    protocol = _resolve(ref["name"], protocols, PROTOCOLS)
    if protocol is None:
        v.error(SUBMISSION_FILE, "protocol.name", f"protocol {ref['name']!r} is not registered "
                f"(registered: {', '.join(PROTOCOLS.names())})", "submit results of a registered protocol")
        raise _Stop
    if ref["version"] != protocol.version:
        v.error(SUBMISSION_FILE, "protocol.version", f"is {ref['version']!r}; {protocol.name} is at "
                f"{protocol.version!r} here", "rerun on the current protocol and submit again")
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


def _check_models(v: Validation, meta: dict, model_pairs: Mapping[str, ModelPairSpec] | None) -> None:
    from bench.protocols import MODEL_PAIRS

    models = meta["models"]
    _check_name(v, SUBMISSION_FILE, "models.name", models.get("name"))
    spec = _resolve(models.get("name"), model_pairs, MODEL_PAIRS)
    if spec is None:
        v.warn(SUBMISSION_FILE, "models.name", f"model pair {models.get('name')!r} is not registered here, so its "
               "settings cannot be checked", "register the pair, or submit results of a registered one")
        return
    recorded, registered = _with_defaults(ModelPairSpec, _plain_models(models)), to_plain(spec)
    differing = sorted(k for k in set(recorded) | set(registered) if recorded.get(k) != registered.get(k))
    if differing:
        v.error(SUBMISSION_FILE, "models", f"model pair {spec.name!r} differs from the registered one in: "
                f"{', '.join(differing)}", "rerun with the registered model pair and submit again")


def _read_scores(v: Validation, rel: str, path: Path, eval_sets: set[str]) -> list[dict[str, str]] | None:
    try:
        with gzip.open(path, "rb") as handle:
            data = handle.read(MAX_SCORES_BYTES + 1)
    except (OSError, EOFError, zlib.error) as error:
        v.error(rel, "", f"is not a readable gzip file ({error})", REGENERATE)
        return None
    if len(data) > MAX_SCORES_BYTES:
        v.error(rel, "", f"decompresses to more than {MAX_SCORES_BYTES} bytes", REGENERATE)
        return None
    try:
        reader = csv.reader(io.StringIO(data.decode("utf-8"), newline=""))
        header = next(reader, None)
        rows = list(reader)
    except (UnicodeDecodeError, csv.Error) as error:
        v.error(rel, "", f"is not UTF-8 CSV ({error})", REGENERATE)
        return None
    if header != list(SCORE_COLUMNS):
        v.error(rel, "header", f"is {header}, expected {list(SCORE_COLUMNS)}", REGENERATE)
        return None
    seen, parsed, bad = set(), [], []
    for line, row in enumerate(rows, start=2):
        if len(row) != len(SCORE_COLUMNS):
            bad.append(f"line {line}: {len(row)} fields")
            continue
        record = dict(zip(SCORE_COLUMNS, row))
        if record["eval_set"] not in eval_sets:
            bad.append(f"line {line}: eval set {record['eval_set'][:60]!r} is not one of this cell's")
        elif (record["eval_set"], record["pair_id"]) in seen:
            bad.append(f"line {line}: pair {record['pair_id'][:60]!r} of {record['eval_set']} twice")
        elif UNSAFE_TEXT_RE.search(record["pair_id"]):
            bad.append(f"line {line}: pair id contains '<', '>' or a control character")
        else:
            try:
                if not all(math.isfinite(float(record[c])) for c in SCORE_COLUMNS[2:]):
                    raise ValueError
            except ValueError:
                bad.append(f"line {line}: scores must be finite numbers")
                continue
            seen.add((record["eval_set"], record["pair_id"]))
            parsed.append(record)
    for problem in bad[:10]:
        v.error(rel, "", problem, REGENERATE)
    return None if bad else parsed


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return math.isclose(a, b, abs_tol=1e-9)


def _recompute_cell(v: Validation, rel: str, result: dict, rows: list[dict[str, str]]) -> None:
    """Every stored accuracy and metric against the per-pair scores."""
    fix = "the numbers must be the ones the per-pair scores give; " + REGENERATE
    got = accuracies_from_scores(rows)
    for name, stored in result["eval_sets"].items():
        if name not in got:
            v.error(rel, f"eval_sets.{name}", "has no per-pair scores", fix)
            continue
        for who in ("teacher", "student"):
            if not _close(stored[f"{who}_acc"], got[name][who]):
                v.error(rel, f"eval_sets.{name}.{who}_acc", f"is {stored[f'{who}_acc']} but the per-pair scores "
                        f"give {got[name][who]}", fix)
        if stored["n_pairs"] != got[name]["n_pairs"]:
            v.error(rel, f"eval_sets.{name}.n_pairs", f"is {stored['n_pairs']} but {got[name]['n_pairs']} pairs "
                    "are scored", fix)
    if result["source"] in got:
        for target, values in cell_metrics(got, result["source"]).items():
            for metric, value in values.items():
                stored = result["metrics"].get(target, {}).get(metric)
                if not _close(stored, value):
                    v.error(rel, f"metrics.{target}.{metric}", f"is {stored} but the per-pair scores give {value}", fix)


def _check_cell(v: Validation, meta: dict, protocol: ProtocolSpec, ref: dict, files: dict[str, int]) -> dict | None:
    base = cell_folder(ref["seed"], ref["source"])
    rel_result, rel_scores = f"{base}/{RESULT_FILE}", f"{base}/{SCORES_FILE}"
    missing = [r for r in (rel_result, rel_scores) if r not in files]
    for rel in missing:
        v.error(rel, "", "is missing", REGENERATE)
    if missing:
        return None
    for rel, listed in ((rel_result, ref["result_sha256"]), (rel_scores, ref["scores_sha256"])):
        if sha256_file(v.folder / rel) != listed:
            v.error(rel, "", "its sha256 is not the one submission.json lists (the file was changed)", REGENERATE)
    try:
        result = _read_json(v, v.folder, rel_result, CellResult)
    except _Stop:
        return None
    source = ref["source"]
    expected = {"seed": ref["seed"], "source": source, "protocol": meta["protocol"], "models": meta["models"],
                "category": protocol.category_of(source)}
    for key, value in expected.items():
        if result[key] != value:
            v.error(rel_result, key, f"is {str(result[key])[:120]!r}, expected {str(value)[:120]!r} "
                    "(the submission's)", "a submission's cells all come from one run of one method; " + REGENERATE)
    for key in ("name", "params"):
        if result["method"][key] != meta["method"][key]:
            v.error(rel_result, f"method.{key}", f"is {result['method'][key]!r}, the submission's is "
                    f"{meta['method'][key]!r}", REGENERATE)
    roles = {source: "id", **{t: "ood" for t in protocol.targets_of(source)}}
    if {k: e["role"] for k, e in result["eval_sets"].items()} != roles:
        v.error(rel_result, "eval_sets", f"are {sorted(result['eval_sets'])}, the protocol's for {source} are "
                f"{sorted(roles)} (the source as 'id', its siblings as 'ood')", REGENERATE)
    if set(result["metrics"]) != set(roles) - {source}:
        v.error(rel_result, "metrics", f"targets {sorted(result['metrics'])}, expected "
                f"{sorted(set(roles) - {source})}", REGENERATE)
    if result.get("scores_file", {}).get("sha256") != ref["scores_sha256"]:
        v.error(rel_result, "scores_file.sha256", "does not match the scores file", REGENERATE)
    rows = _read_scores(v, rel_scores, v.folder / rel_scores, set(result["eval_sets"]))
    if rows is not None:
        _recompute_cell(v, rel_result, result, rows)
    return result


def submission_summary(cells: list[dict]) -> dict[str, float | int | None]:
    """Means over cells and seeds, with spreads (None with one seed): what submission.json records."""
    summary = summarise(cell_rows(cells))
    out: dict[str, float | int | None] = {}
    for name in [*COLUMNS, *(f"{c}_sd" for c in COLUMNS)]:
        out[name] = None if math.isnan(summary[name]) else float(summary[name])
    out["cells"], out["seeds"] = int(summary["cells"]), int(summary["seeds"])
    return out


def code_version(cells: list[dict]) -> dict:
    envs = [c.get("environment", {}) for c in cells]
    dirty = [e.get("git", {}).get("dirty") for e in envs]
    return {"shiftbench": sorted({e.get("packages", {}).get("shiftbench") for e in envs}, key=str),
            "git_commits": sorted({e.get("git", {}).get("commit") for e in envs}, key=str),
            "dirty": None if None in dirty else any(dirty)}


def _check(v: Validation, protocols, model_pairs) -> None:
    files = _inventory(v)
    meta = _read_json(v, v.folder, SUBMISSION_FILE, SubmissionFile)
    v.submission = meta
    for fld, name in (("method.name", meta["method"]["name"]), ("protocol.name", meta["protocol"]["name"]),
                      ("slug", meta["slug"])):
        _check_name(v, SUBMISSION_FILE, fld, name)
    for key, value in meta["method"]["params"].items():
        if not PARAM_KEY_RE.fullmatch(key):
            v.error(SUBMISSION_FILE, f"method.params.{key}", "is not a plain parameter name", "use a plain name")
        if isinstance(value, str) and not NAME_RE.fullmatch(value or "x"):
            v.error(SUBMISSION_FILE, f"method.params.{key}", f"value {value!r} is not a plain value", "use a plain value")
    if meta["slug"] != params_slug(meta["method"]["name"], meta["method"]["params"]):
        v.error(SUBMISSION_FILE, "slug", f"is {meta['slug']!r}, the method and params give "
                f"{params_slug(meta['method']['name'], meta['method']['params'])!r}", REGENERATE)
    protocol = _check_protocol(v, meta, protocols)
    _check_models(v, meta, model_pairs)

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
    expected_files = {f"{cell_folder(*key)}/{name}" for key in listed for name in (RESULT_FILE, SCORES_FILE)}
    for rel in sorted(set(files) - expected_files - {SUBMISSION_FILE}):
        if CELL_FILE_RE.fullmatch(rel):
            v.error(rel, "", "is not listed in submission.json", "remove it, or " + REGENERATE)

    for key in sorted(listed, key=lambda k: (k[0], protocol.datasets.index(k[1]))):
        result = _check_cell(v, meta, protocol, listed[key], files)
        if result is not None:
            v.cells.append(result)

    if len(v.cells) == len(listed) and v.cells:
        summary = submission_summary(v.cells)
        if set(meta["summary"]) != set(summary):
            v.error(SUBMISSION_FILE, "summary", f"has fields {sorted(meta['summary'])}, expected {sorted(summary)}",
                    REGENERATE)
        for name, value in summary.items():
            if not _close(meta["summary"].get(name), value):
                v.error(SUBMISSION_FILE, f"summary.{name}", f"is {meta['summary'].get(name)} but the cells give "
                        f"{value}", REGENERATE)
        if meta["code_version"] != code_version(v.cells):
            v.error(SUBMISSION_FILE, "code_version", "does not match the cells' recorded environments", REGENERATE)
        if sorted({c.get("command", "") for c in v.cells}) != meta["run_commands"]:
            v.error(SUBMISSION_FILE, "run_commands", "are not the commands the cells record", REGENERATE)


def validate_submission(folder: Path, protocols: Mapping[str, ProtocolSpec] | None = None,
                        model_pairs: Mapping[str, ModelPairSpec] | None = None) -> Validation:
    """Check one submission folder. ``protocols`` / ``model_pairs`` add specs to the registries' (tests)."""
    v = Validation(Path(folder))
    try:
        _check(v, protocols, model_pairs)
    except _Stop:
        pass
    except (OSError, KeyError, TypeError, ValueError) as error:  # malformed beyond what the schema says
        v.error(".", "", f"could not be read: {type(error).__name__}: {str(error)[:200]}", REGENERATE)
    return v


# --- many submissions -------------------------------------------------------------------------------------
def find_submissions(root: Path) -> list[Path]:
    """Submission folders under ``root`` (or ``root`` itself), without following links."""
    root = Path(root)
    if (root / SUBMISSION_FILE).is_file():
        return [root]
    found = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        if SUBMISSION_FILE in names:
            found.append(Path(folder))
            dirs[:] = []
        else:
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    return sorted(found)


def teacher_conflicts(validations: list[Validation]) -> list[tuple[str, set[str]]]:
    """Cells where submissions of one protocol x model pair disagree on the teacher (it is trained
    before any method runs, so it must be the same for all of them): (what differs, which submissions)."""
    seen: dict[tuple, dict[float, set[str]]] = defaultdict(lambda: defaultdict(set))
    for v in validations:
        for cell in v.cells:
            for name, acc in cell["eval_sets"].items():
                key = (cell["protocol"]["hash"], cell["models"]["name"], cell["seed"], cell["source"], name)
                seen[key][round(acc["teacher_acc"], 9)].add(v.key)
    conflicts = []
    for (_, models, seed, source, name), by_value in seen.items():
        if len(by_value) > 1:
            shown = "; ".join(f"{value} in {', '.join(sorted(keys))}" for value, keys in by_value.items())
            conflicts.append((f"{models} seed {seed} {source} -> {name}: teacher accuracy {shown}",
                              set().union(*by_value.values())))
    return conflicts


def validate_tree(path: Path, protocols: Mapping[str, ProtocolSpec] | None = None,
                  model_pairs: Mapping[str, ModelPairSpec] | None = None) -> list[Validation]:
    """Validate every submission under ``path``; also refuse duplicates and misplaced folders, and
    warn where submissions disagree on the teacher."""
    path = Path(path)
    validations = [validate_submission(folder, protocols, model_pairs) for folder in find_submissions(path)]
    for v in validations:
        v.name = v.folder.relative_to(path).as_posix() if v.folder != path else path.name
    readable = [v for v in validations if v.submission is not None]
    for v in readable:
        s, parts = v.submission, v.folder.relative_to(path).parts
        expected = (s["protocol"]["name"], s["models"]["name"], s["slug"])
        if len(parts) == 3 and parts != expected:
            v.error(".", "", f"is at {'/'.join(parts)} but holds {'/'.join(expected)}",
                    f"move it to {path / '/'.join(expected)}")
    first: dict[str, Validation] = {}
    for v in sorted(readable, key=lambda v: not v.ok):  # a valid one keeps its place; later copies are refused
        s = v.submission
        identity = canonical_json([s["protocol"], s["models"]["name"], s["method"]["name"], s["method"]["params"]])
        if identity in first:
            v.error(SUBMISSION_FILE, "", f"duplicates {first[identity].folder}: the same method, params, model pair "
                    "and protocol", "keep one of them")
        else:
            first[identity] = v
    conflicts = teacher_conflicts(validations)
    for v in validations:
        for conflict, keys in conflicts:
            if v.key in keys:
                v.warn(".", "teacher", f"submissions disagree on the teacher: {conflict}",
                       "rerun every method of this protocol and model pair with the same code and settings")
    return validations


# --- bench submit -------------------------------------------------------------------------------------------
def _group_cells(paths: list[Path]) -> dict[tuple, list[tuple[Path, dict]]]:
    groups: dict[tuple, list[tuple[Path, dict]]] = defaultdict(list)
    for base in paths:
        if not Path(base).is_dir():
            raise BenchError(f"{base} is not a folder; give a results folder of `bench run` (e.g. results/ or "
                             "results/mini/tiny/naive)")
        for result_file in sorted(Path(base).rglob(RESULT_FILE)):
            result = load_cell(result_file.parent)
            if result is None:
                raise BenchError(f"{result_file.parent} is not a finished cell (result.json unreadable, another schema, "
                                 "or the scores file changed); rerun it with bench run, or move it away")
            key = (result["protocol"]["name"], result["models"]["name"],
                   params_slug(result["method"]["name"], result["method"]["params"]))
            groups[key].append((result_file.parent, result))
    if not groups:
        raise BenchError(f"no cell results under {', '.join(map(str, paths))}; run `bench run` first")
    return groups


def _plan(cells: list[tuple[Path, dict]], protocol: ProtocolSpec) -> tuple[dict, list[str]]:
    from bench.protocols import protocol_hash

    chosen, problems = {}, []
    for folder, result in cells:
        key = (result["seed"], result["source"])
        if result["protocol"]["hash"] != protocol_hash(protocol):
            problems.append(f"{folder}: made with protocol hash {result['protocol']['hash']}, {protocol.name} is "
                            f"{protocol_hash(protocol)} now: rerun it")
        elif key[0] in protocol.seeds and key in chosen:
            problems.append(f"{folder}: seed {key[0]} {key[1]} also in {chosen[key][0]}: give one results folder")
        elif key[0] in protocol.seeds:
            chosen[key] = (folder, result)
    missing = [f"seed {s} {d}" for s in protocol.seeds for d in protocol.datasets if (s, d) not in chosen]
    if missing:
        method = cells[0][1]["method"]
        params = " ".join(f"--param {k}={v}" for k, v in method["params"].items())
        problems.append(f"missing cells: {', '.join(missing)}; run them with bench run --method {method['name']} "
                        f"{params} --protocol {protocol.name} --models {cells[0][1]['models']['name']} "
                        f"--seeds {' '.join(map(str, protocol.seeds))}".replace("  ", " "))
    return chosen, problems


def _write(chosen: dict, protocol: ProtocolSpec, folder: Path, submitter: str, command: str) -> None:
    ordered = [chosen[(s, d)] for s in protocol.seeds for d in protocol.datasets]
    refs = []
    for cell_dir, result in ordered:
        target = folder / cell_folder(result["seed"], result["source"])
        target.mkdir(parents=True)
        for name in (RESULT_FILE, SCORES_FILE):
            shutil.copyfile(cell_dir / name, target / name)
        refs.append({"seed": result["seed"], "source": result["source"],
                     "result_sha256": sha256_file(target / RESULT_FILE),
                     "scores_sha256": sha256_file(target / SCORES_FILE)})
    results = [r for _, r in ordered]
    first = results[0]
    atomic_write_json(folder / SUBMISSION_FILE, {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "slug": params_slug(first["method"]["name"], first["method"]["params"]),
        "method": first["method"],
        "protocol": first["protocol"],
        "models": first["models"],
        "code_version": code_version(results),
        "submitter": submitter,
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "run_commands": sorted({r.get("command", "") for r in results}),
        "cells": refs,
        "summary": submission_summary(results),
    })


def submit(paths: list[Path], out: Path, submitter: str, command: str = "", force: bool = False,
           protocols: Mapping[str, ProtocolSpec] | None = None,
           model_pairs: Mapping[str, ModelPairSpec] | None = None) -> list[Path]:
    """One submission per method x params x model pair x protocol found in the results ``paths``,
    written to ``out/<protocol>/<models>/<slug>/`` and validated; all or nothing."""
    from bench.protocols import PROTOCOLS

    text = Validation(Path("."))
    _check_text(text, "--submitter", {"submitter": submitter})
    if text.errors or not submitter.strip():
        raise BenchError(f"--submitter {submitter!r}: give a plain name without '<', '>' or control characters")
    plans, problems = [], []
    for (protocol_name, models, slug), cells in sorted(_group_cells(paths).items()):
        protocol = (protocols or {}).get(protocol_name) or PROTOCOLS.get(protocol_name)
        chosen, group_problems = _plan(cells, protocol)
        problems += [f"{protocol_name}/{models}/{slug}: {p}" for p in group_problems]
        destination = Path(out) / protocol_name / models / slug
        if destination.exists() and not force:
            problems.append(f"{destination} exists; pass --force to replace it")
        plans.append((chosen, protocol, destination))
    if problems:
        raise BenchError("nothing submitted:\n  " + "\n  ".join(problems))
    written = []
    for chosen, protocol, destination in plans:
        destination.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{destination.name}.", dir=destination.parent))
        try:
            _write(chosen, protocol, staging, submitter, command)
            check = validate_submission(staging, protocols, model_pairs)
            if not check.ok:
                raise BenchError(f"the submission for {destination} does not validate:\n  " +
                                 "\n  ".join(map(str, check.errors)))
            if destination.exists():
                shutil.rmtree(destination)
            staging.rename(destination)
        finally:
            if staging.exists():
                shutil.rmtree(staging)
        written.append(destination)
    return written


# --- uploads ------------------------------------------------------------------------------------------------
def extract_upload(archive: Path, dest: Path) -> Path:
    """A submission .zip unpacked into ``dest`` without trusting it: size and file-count limits from
    the archive's directory and again while reading, only the submission layout, no links, nothing run.
    Returns the submission folder (the archive may hold it at its top or inside one folder)."""
    import zipfile

    size = Path(archive).stat().st_size
    if size > MAX_SUBMISSION_BYTES:
        raise BenchError(f"the upload is {size} bytes, over the limit of {MAX_SUBMISSION_BYTES}")
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as error:
        raise BenchError(f"the upload is not a zip archive ({error}); zip the submission folder "
                         "(python -m zipfile -c sub.zip FOLDER/)") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > MAX_FILES or sum(i.file_size for i in infos) > MAX_SUBMISSION_BYTES:
            raise BenchError(f"the upload unpacks to more than {MAX_SUBMISSION_BYTES} bytes or {MAX_FILES} files")
        names = [i.filename for i in infos]
        tops = {n.split("/", 1)[0] for n in names}
        prefix = f"{tops.pop()}/" if len(tops) == 1 and all("/" in n for n in names) else ""
        unpacked = 0
        for info in infos:
            rel = info.filename[len(prefix):]
            if stat.S_ISLNK(info.external_attr >> 16):
                raise BenchError(f"the upload holds a link, {info.filename!r}; a submission holds only files")
            if rel != SUBMISSION_FILE and not CELL_FILE_RE.fullmatch(rel):
                raise BenchError(f"the upload holds {info.filename[:100]!r}, which is not part of a submission "
                                 "(submission.json and cells/seed<N>/<source>/{result.json,scores.csv.gz} only)")
            target = Path(dest, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as source, open(target, "wb") as sink:
                data = source.read(MAX_SUBMISSION_BYTES - unpacked + 1)
                unpacked += len(data)
                if unpacked > MAX_SUBMISSION_BYTES:
                    raise BenchError("the upload unpacks to more than its directory says")
                sink.write(data)
    return Path(dest)
