"""The validation record: each submission's validation outcome, stored by the checksums of its files, so
that ``bench validate``, the board's start-up and its reload validate again only the submissions that
changed (``validate_tree``; ``bench validate --no-cache`` reads no entry).

Validating a submission recomputes every number from its per-pair scores (about half a second for a
reference submission on a 2-core machine, and most of `bench validate submissions`'s time). Its
outcome is a pure function of

- the bytes of every file of the submission (their sha256, with their paths),
- the code that validates (``VALIDATION_CODE``, by ``bench.core.versions.code_version``) and the numpy and
  pydantic it runs on,
- the registered protocols and model pairs it is checked against (and the ones a caller adds), and the
  committed reference teachers (bench.submissions.reference), and
- the limits of ``bench.submissions.limits`` (a test may lower one),

so one entry per submission folder stores that key beside the outcome, and is used only when the key
is the same. An entry is JSON (never pickle: a record file is read, never run), written atomically; an
entry that cannot be read or does not hold what a Validation needs is ignored and written again. A
folder with a link or a special file is not recorded: validation refuses it anyway, and its files
cannot be hashed without following the link. Beside each entry, ``<entry>.path`` names its folder, so
the entries of folders that are gone (a test's temporary submissions) are removed, not kept forever.
The checks across submissions (duplicates, misplaced folders, disagreements: ``bench.submissions.tree``)
are cheap and always run on the outcomes, recorded or not.
"""
from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from dataclasses import asdict
from importlib.metadata import version
from pathlib import Path
from typing import Mapping

import numpy as np

import bench.submissions.limits as limits
from bench.core.cells import Cell, EvalSet, correctness_from_text, correctness_text
from bench.core.io import atomic_write_bytes, atomic_write_json, sha256_file
from bench.core.specs import ModelPairSpec, ProtocolSpec, canonical_json
from bench.submissions.check import validate_submission
from bench.submissions.limits import Problem, Validation

FORMAT = 4   # the layout of an entry; bump it when what is stored changes (3: the cells' BoN credits, 4: controls)
# What a submission's validation outcome depends on besides its files: the check itself, the
# schemas and recompute it uses, the bootstrap its intervals come from, the registries and hashes
# of protocols and model pairs, and this module (how an outcome is stored).
VALIDATION_CODE = ("bench.submissions.check", "bench.submissions.cell_checks", "bench.submissions.fields",
                   "bench.submissions.limits", "bench.submissions.schema",
                   "bench.submissions.reference", "bench.core.data", "bench.core.registry",
                   "bench.submissions.scores", "bench.submissions.commands", "bench.core.results",
                   "bench.core.result_schema", "bench.core.metrics", "bench.core.report", "bench.core.stats",
                   "bench.core.cells", "bench.core.runs", "bench.core.sequential", "bench.core.specs",
                   "bench.core.errors", "bench.core.protocols", "bench.core.io", "bench.core.store", "bench.core.columns",
                   "bench.submissions.record")


def default_dir() -> Path:
    """Beside the teacher cache: $SHIFTBENCH_CACHE/leaderboard, else ~/.cache/shiftbench/leaderboard."""
    from bench.core.settings import default_cache_dir

    return default_cache_dir() / "leaderboard"


def context_key(protocols: Mapping[str, ProtocolSpec] | None, model_pairs: Mapping[str, ModelPairSpec] | None) -> str:
    """Everything but the files that decides a validation outcome, as one digest."""
    from bench.core.protocols import MODEL_PAIRS, PROTOCOLS, protocol_hash
    from bench.core.versions import code_version

    known = {name: PROTOCOLS.get(name) for name in PROTOCOLS.names()} | dict(protocols or {})
    pairs = {name: MODEL_PAIRS.get(name) for name in MODEL_PAIRS.names()} | dict(model_pairs or {})
    return hashlib.sha256(canonical_json({
        "format": FORMAT, "code": code_version(VALIDATION_CODE),
        "packages": {name: version(name) for name in ("numpy", "pydantic")},
        "limits": {name: getattr(limits, name) for name in dir(limits) if name.isupper()
                   and isinstance(getattr(limits, name), (int, float, str))},
        "protocols": {name: protocol_hash(spec) for name, spec in known.items()},
        "model_pairs": {name: canonical_json(spec) for name, spec in pairs.items()},
        "references": {path.name: sha256_file(path) for path in sorted(limits.REFERENCES.glob("*.json"))},
    }).encode()).hexdigest()


def files_key(folder: Path) -> str | None:
    """sha256 over every file of ``folder`` (path and content); None when it holds a link or a special file."""
    digest = hashlib.sha256()
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in [*dirs, *sorted(names)]:
            path = Path(root, name)
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode) or not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                return None
            if stat.S_ISREG(mode):
                digest.update(f"{path.relative_to(folder).as_posix()}\0{sha256_file(path)}\0".encode())
    return digest.hexdigest()


# --- an outcome as JSON, and back ------------------------------------------------------------------------
def _to_json(v: Validation, key: str) -> dict:
    return {"format": FORMAT, "key": key, "folder": str(v.folder),
            "errors": [asdict(p) for p in v.errors], "warnings": [asdict(p) for p in v.warnings],
            "submission": v.submission, "cells": [c.model_dump(mode="json") for c in v.cells],
            "pairs": [_cell_to_json(c) for c in v.pairs], "controls": [_cell_to_json(c) for c in v.controls]}


def _cell_to_json(c: Cell) -> dict:
    return {"method": c.method, "name": c.name, "seed": c.seed, "source": c.source, "category": c.category,
            "independent": c.independent, "looks": list(c.looks) if c.looks else None,
            "eval_sets": [{"name": e.name, "role": e.role, "pair_ids": list(e.pair_ids),
                           "teacher": correctness_text(e.teacher), "student": correctness_text(e.student)}
                          for e in c.eval_sets],
            # a set's credit is |T ∩ B| / |T|, any fraction: kept as JSON floats, which read back exactly
            "bon": [{"name": e.name, "role": e.role, "set_ids": list(e.pair_ids),
                     "teacher": e.teacher.tolist(), "student": e.student.tolist()} for e in c.bon]}


def _ids(ids: list[str]) -> tuple[str, ...]:
    """Pair or set ids, interned: every submission of a protocol names the same test pairs, and a board holds them all
    (a record's JSON gives each entry its own copies)."""
    return tuple(map(sys.intern, ids))


def _cell_from_json(c: dict) -> Cell:
    return Cell(c["method"], int(c["seed"]), c["source"], c["category"], tuple(
        EvalSet(e["name"], e["role"], _ids(e["pair_ids"]), correctness_from_text(e["teacher"], len(e["pair_ids"])),
                correctness_from_text(e["student"], len(e["pair_ids"]))) for e in c["eval_sets"]),
        c["independent"], tuple(c["looks"]) if c["looks"] else None, c["name"], _bon_from_json(c["bon"]))


def _bon_from_json(sets: list[dict]) -> tuple[EvalSet, ...]:
    """Cell.bon as ``_to_json`` stores it: per eval set, each candidate set's credit, which lies in [0, 1]."""
    out = []
    for e in sets:
        teacher, student = (np.array(e[who], dtype=np.float64) for who in ("teacher", "student"))
        credits = np.concatenate([teacher, student])
        if not teacher.shape == student.shape == (len(e["set_ids"]),) or not ((credits >= 0) & (credits <= 1)).all():
            raise ValueError("best-of-N credits do not match their candidate sets")
        out.append(EvalSet(e["name"], e["role"], _ids(e["set_ids"]), teacher, student))
    return tuple(out)


def _from_json(data: dict, folder: Path) -> Validation:
    from bench.core.result_schema import CellResult

    return Validation(folder, errors=[Problem(**p) for p in data["errors"]],
                      warnings=[Problem(**p) for p in data["warnings"]], submission=data["submission"],
                      cells=[CellResult.model_validate(c) for c in data["cells"]],
                      pairs=[_cell_from_json(c) for c in data["pairs"]],
                      controls=[_cell_from_json(c) for c in data["controls"]])


def entry_path(cache_dir: Path, folder: Path) -> Path:
    return Path(cache_dir) / f"{hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:32]}.json"


def prune(cache_dir: Path) -> None:
    """Remove the entries whose submission folder no longer exists."""
    for path_file in Path(cache_dir).glob("*.json.path"):
        try:
            if not Path(path_file.read_text(encoding="utf-8")).is_dir():
                path_file.with_suffix("").unlink(missing_ok=True)
                path_file.unlink(missing_ok=True)
        except OSError:
            pass   # another process pruned it first, or the cache is read-only: nothing to do


def _validate(folder: Path, protocols: Mapping[str, ProtocolSpec] | None, model_pairs: Mapping[str, ModelPairSpec] | None,
              cache_dir: Path, context: str, reuse: bool = True) -> tuple[Validation, bool]:
    """``validate_submission(folder, ...)`` and whether it came from the record: from the stored entry when
    ``reuse`` and the folder's files and ``context`` (``context_key``) are the entry's; else validated in
    full and stored."""
    from pydantic import ValidationError

    folder = Path(folder)
    files = files_key(folder)
    if files is None:
        return validate_submission(folder, protocols, model_pairs), False
    key = hashlib.sha256(f"{context}\0{files}".encode()).hexdigest()
    entry = entry_path(cache_dir, folder)
    if reuse:
        try:
            data = json.loads(entry.read_bytes())
            if data.get("format") == FORMAT and data.get("key") == key:
                return _from_json(data, folder), True
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ValidationError):
            pass   # a damaged entry: validate again and write it anew
    found = validate_submission(folder, protocols, model_pairs)
    if files_key(folder) == files:   # unchanged while it was read: the outcome belongs to this key
        try:
            atomic_write_bytes(entry.with_name(entry.name + ".path"), str(folder.resolve()).encode())
            atomic_write_json(entry, _to_json(found, key))
        except OSError:
            pass   # a record that cannot be written costs time, never a result
    return found, False


def validate_cached(folder: Path, protocols: Mapping[str, ProtocolSpec] | None,
                    model_pairs: Mapping[str, ModelPairSpec] | None, cache_dir: Path, context: str) -> Validation:
    """``validate_submission(folder, ...)``, from the record when the folder's files and ``context``
    (``context_key``) are those of the stored entry."""
    return _validate(folder, protocols, model_pairs, cache_dir, context)[0]


class Record:
    """The record under ``cache_dir`` (default: ``default_dir()``) for one set of added ``protocols`` and
    ``model_pairs``: ``validate`` is ``validate_submission`` through it. ``reuse=False`` reads no entry
    (every submission is validated in full) and writes the fresh outcomes, replacing the old ones.
    ``reused`` lists the folders whose outcome came from the record, for a caller to say so."""

    def __init__(self, cache_dir: Path | None = None, protocols: Mapping[str, ProtocolSpec] | None = None,
                 model_pairs: Mapping[str, ModelPairSpec] | None = None, reuse: bool = True):
        self.dir = Path(cache_dir) if cache_dir else default_dir()
        self.context = context_key(protocols, model_pairs)
        self.reuse = reuse
        self.reused: list[Path] = []
        prune(self.dir)

    def validate(self, folder: Path, protocols: Mapping[str, ProtocolSpec] | None = None,
                 model_pairs: Mapping[str, ModelPairSpec] | None = None) -> Validation:
        found, reused = _validate(folder, protocols, model_pairs, self.dir, self.context, self.reuse)
        if reused:
            self.reused.append(Path(folder))
        return found


def validate_tree(path: Path, protocols: Mapping[str, ProtocolSpec] | None = None,
                  model_pairs: Mapping[str, ModelPairSpec] | None = None, cache_dir: Path | None = None,
                  record: Record | None = None) -> list[Validation]:
    """``bench.submissions.tree.validate_tree`` with each submission's own checks taken from the record
    (``record``, else the one under ``cache_dir`` for these ``protocols`` and ``model_pairs``); the checks
    across submissions (duplicates, misplaced folders, disagreements: cheap) always run."""
    import bench.submissions.tree as tree

    record = record or Record(cache_dir, protocols, model_pairs)
    return tree.validate_tree(Path(path), protocols, model_pairs, validate=record.validate)
