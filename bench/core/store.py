"""The compact results store: a folder's finished cells as three Parquet tables (zstd), in place of a folder
of three small files per cell. A submission (``submission.json`` beside them) and a results folder of one
method (``extra-seeds/<protocol>/<models>/<slug>/``) are both kept this way in the repository.

    cells.parquet       one row per cell: ``path``, the folder the cell had (``cells/seed0/mini__travel`` in a
                        submission, ``seed0/mini__travel`` in a results folder), its seed, source, replicate,
                        method and category, the bytes of its result.json exactly as written, and the sha256s
                        its three files had; ``ref``/``ref_path`` where the cell is kept in another store
    pairs.parquet       one row per scored pair, in file order: ``cell`` (its row in cells.parquet), the eval set
                        and pair id (dictionary-encoded), and the four scores as the float32 values the models
                        produced
    candidates.parquet  one row per best-of-N candidate, in file order: ``cell``, eval set, set id, pair id
                        (dictionary-encoded), candidate, grade, and the teacher's and student's scores; the scores
                        are null for candidates 0 and 1 of a set built from an eval pair, which are that pair's
                        chosen and rejected responses, whose scores pairs.parquet already holds

A store is lossless. A score file's numbers are float32 scores written as the shortest decimal of their
float64, so they round-trip through float32. ``cell_texts`` gives back each cell's CSV text byte for byte,
and ``bench migrate`` checks that for every cell before it removes the folder. A cell that another store
holds (an extra-seeds cell that a submission also holds) is stored once: its row names that store
(``ref``, a folder relative to this one) and the cell's path there, and keeps the sha256 of its
result.json, which must match when the cell is read through the reference.

cells.parquet is written last, and it records the sha256 of the two other tables. So a store that a
kill cut off mid-write is refused as a whole; it is never half-read.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Iterator, NamedTuple, Sequence

import numpy as np

from bench.core.errors import BenchError
from bench.core.result_schema import (
    CANDIDATE_COLUMNS,
    CANDIDATES_FILE,
    RESULT_FILE,
    SCORE_COLUMNS,
    SCORES_FILE,
)

CELLS, PAIRS, CANDIDATES = "cells.parquet", "pairs.parquet", "candidates.parquet"
STORE_FILES = (CELLS, PAIRS, CANDIDATES)
FORMAT = 1   # the store's layout; a reader refuses a store of another
_META = b"shiftbench-store"


class StoreError(BenchError, ValueError):
    """A store that cannot be read as one: the message names the file and the fix."""


@dataclass(frozen=True)
class StoredCell:
    """One cell as it goes into a store: its folder's files, parsed. ``scores``: SCORES_FILE's rows as
    (eval_set, pair_id, 4 floats); ``candidates``: CANDIDATES_FILE's as (eval_set, set_id, pair_id, candidate
    (text), grade, teacher, student), or None without candidate sets. ``ref``: kept in that other store instead
    (a folder relative to this store's), at ``ref_path`` there."""

    path: str
    result: bytes
    scores: list[tuple] | None
    candidates: list[tuple] | None
    result_sha256: str
    scores_sha256: str | None
    candidates_sha256: str | None
    ref: str | None = None
    ref_path: str | None = None


def is_store(folder: str | os.PathLike) -> bool:
    return (Path(folder) / CELLS).is_file()


# --- writing ------------------------------------------------------------------------------------------------
def _float_type(values: np.ndarray):
    """float32 when every value is a float32 exactly (the models' scores), else float64: never lossy."""
    import pyarrow as pa

    return pa.float32() if np.array_equal(values.astype(np.float32).astype(np.float64), values) else pa.float64()


def _floats(values: list[float]):
    import pyarrow as pa

    array = np.asarray(values, dtype=np.float64)
    return pa.array(array.astype(np.float32) if _float_type(array) == pa.float32() else array)


def _parquet_bytes(table) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    floats = [f.name for f in table.schema if pa.types.is_floating(f.type)]
    sink = io.BytesIO()
    # Scores are float32 with random mantissas: split into byte streams, their sign-and-exponent bytes compress;
    # a dictionary only for the repeated strings (a float's dictionary is as large as the column).
    pq.write_table(table, sink, compression="zstd", compression_level=19, write_statistics=False,
                   use_dictionary=[f.name for f in table.schema if pa.types.is_dictionary(f.type)],
                   use_byte_stream_split=floats or False)
    return sink.getvalue()


def write_store(folder: str | os.PathLike, cells: Sequence[StoredCell]) -> None:
    """Write ``cells`` as a store in ``folder`` (replacing one there): pairs and candidates first, cells.parquet
    last with their sha256s, each file atomically."""
    import pyarrow as pa

    from bench.core.io import atomic_write_bytes

    folder = Path(folder)
    pair_cols: dict[str, list] = {"cell": [], **{name: [] for name in SCORE_COLUMNS}}
    cand_cols: dict[str, list] = {"cell": [], **{name: [] for name in CANDIDATE_COLUMNS}}
    for i, cell in enumerate(cells):
        pair_of = {}
        for row in cell.scores or ():
            pair_cols["cell"].append(i)
            for name, value in zip(SCORE_COLUMNS, row):
                pair_cols[name].append(value)
            pair_of[row[0], row[1]] = row[2:]
        for row in cell.candidates or ():
            eval_set, set_id, pair_id, candidate, grade, teacher, student = row
            cand_cols["cell"].append(i)
            for name, value in zip(CANDIDATE_COLUMNS[:5], (eval_set, set_id, pair_id, int(candidate), grade)):
                cand_cols[name].append(value)
            pair = pair_of.get((eval_set, pair_id)) if pair_id and candidate in ("0", "1") else None
            side = None if pair is None else (0 if candidate == "0" else 1)
            implied = pair is not None and (teacher, student) == (pair[side], pair[2 + side])
            cand_cols["teacher"].append(None if implied else teacher)
            cand_cols["student"].append(None if implied else student)
    def strings(values):
        return pa.array(values, type=pa.string()).dictionary_encode()

    pairs = pa.table({"cell": pa.array(pair_cols["cell"], type=pa.int32()),
                      "eval_set": strings(pair_cols["eval_set"]), "pair_id": strings(pair_cols["pair_id"]),
                      **{name: _floats(pair_cols[name]) for name in SCORE_COLUMNS[2:]}})
    def nullable(values):
        present = [v for v in values if v is not None]
        kind = _float_type(np.asarray(present, dtype=np.float64)) if present else pa.float32()
        return pa.array(values, type=kind)

    candidates = pa.table({"cell": pa.array(cand_cols["cell"], type=pa.int32()),
                           **{name: strings(cand_cols[name]) for name in ("eval_set", "set_id", "pair_id")},
                           "candidate": pa.array(cand_cols["candidate"], type=pa.uint8()),
                           "grade": _floats(cand_cols["grade"]),
                           "teacher": nullable(cand_cols["teacher"]), "student": nullable(cand_cols["student"])})
    blobs = {PAIRS: _parquet_bytes(pairs), CANDIDATES: _parquet_bytes(candidates)}
    fields = [_fields(c) for c in cells]
    table = pa.table({
        "path": pa.array([c.path for c in cells], type=pa.string()),
        "seed": pa.array([f.get("seed") for f in fields], type=pa.int32()),
        "source": strings([f.get("source") for f in fields]),
        "replicate": pa.array([f.get("replicate") or 0 for f in fields], type=pa.int32()),
        "method": strings([(f.get("method") or {}).get("name") for f in fields]),
        "category": strings([f.get("category") for f in fields]),
        "result_json": pa.array([None if c.ref else c.result for c in cells], type=pa.binary()),
        "result_sha256": pa.array([c.result_sha256 for c in cells], type=pa.string()),
        "scores_sha256": pa.array([c.scores_sha256 for c in cells], type=pa.string()),
        "candidates_sha256": pa.array([c.candidates_sha256 for c in cells], type=pa.string()),
        "ref": pa.array([c.ref for c in cells], type=pa.string()),
        "ref_path": pa.array([c.ref_path for c in cells], type=pa.string()),
    })
    table = table.replace_schema_metadata({_META: json.dumps({
        "format": FORMAT, **{name: hashlib.sha256(blob).hexdigest() for name, blob in blobs.items()}}).encode()})
    for name, blob in blobs.items():
        atomic_write_bytes(folder / name, blob)
    atomic_write_bytes(folder / CELLS, _parquet_bytes(table))
    _load.cache_clear()


def _fields(cell: StoredCell) -> dict:
    """The cell's result.json as a dict, for cells.parquet's typed columns (empty where it does not parse)."""
    try:
        data = json.loads(cell.result)
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


# --- reading ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Store:
    """A store as read: the cells table's columns, and each cell's rows of the two others (by offset)."""

    folder: Path
    paths: tuple[str, ...]
    results: tuple[bytes | None, ...]
    sha256: dict[str, tuple[str | None, ...]]     # result / scores / candidates, per cell
    refs: tuple[tuple[str, str] | None, ...]
    pairs: dict[str, np.ndarray]                  # per column, all cells' rows; eval_set/pair_id as str objects
    pair_spans: np.ndarray                        # cell i's pair rows: pair_spans[i]:pair_spans[i + 1]
    candidates: dict[str, np.ndarray]
    candidate_spans: np.ndarray
    # "pairs.<column>" / "candidates.<column>" of an id column -> (each row's index into ``words``, ``words``: the
    # column's dictionary, then None for a null): what checks of every cell at once compare in place of strings
    codes: dict[str, tuple[np.ndarray, np.ndarray]] = field(default_factory=dict, compare=False, repr=False)

    def index(self, path: str) -> int | None:
        if not hasattr(self, "_where"):   # path -> row, built once (a frozen dataclass: set behind its back)
            object.__setattr__(self, "_where", {p: i for i, p in enumerate(self.paths)})
        return self._where.get(path)

    def cell(self, i: int) -> "CellData":
        """Cell ``i``: its result.json bytes, its score rows and the sha256s its files had, from this store's tables
        or, for a cell kept elsewhere (``ref``), from there: a cell of another store, or a cell folder on disk. The
        cell found there must have the result.json this row records (its sha256)."""
        if self.refs[i] is None:
            return CellData(self.results[i], self.score_rows(i), self.candidate_rows(i),
                            tuple(self.sha256[who][i] for who in ("result", "scores", "candidates")))
        target = Path(os.path.normpath(self.folder / self.refs[i][0] / self.refs[i][1]))
        found = store_of(target)
        data = None
        if found is not None:
            other = load_store(found[0])
            j = other.index(found[1])
            if j is not None and other.refs[j] is None:   # one hop: a reference never leads to another
                data = other.cell(j)
        elif (target / "result.json").is_file():
            data = read_folder(target)
        if data is None or data.sha256[0] != self.sha256["result"][i]:
            raise StoreError(f"{self.folder / CELLS}: cell {self.paths[i]} is kept at {self.refs[i][0]}/"
                             f"{self.refs[i][1]}, which does not hold that cell: restore it, or migrate this folder "
                             "again without --refer-to")
        return data

    def result(self, i: int) -> bytes:
        return self.cell(i).result

    def score_rows(self, i: int) -> list[tuple]:
        """Cell ``i``'s SCORES_FILE rows, (eval_set, pair_id, 4 floats), in file order (a cell kept here)."""
        lo, hi = self.pair_spans[i], self.pair_spans[i + 1]
        cols = [self.pairs[name][lo:hi] for name in SCORE_COLUMNS]
        return list(zip(*(c.tolist() for c in cols)))

    def candidate_columns(self, i: int) -> tuple[np.ndarray, ...]:
        """Cell ``i``'s CANDIDATES_FILE columns (a cell kept here), in file order: eval set, set id and pair id
        (object arrays of str), candidate (int64), grade, teacher and student (float64). A candidate whose scores
        are implied (null) gets its pair's; a StoreError where the cell scores no such pair."""
        lo, hi = self.candidate_spans[i], self.candidate_spans[i + 1]
        c = {name: self.candidates[name][lo:hi] for name in CANDIDATE_COLUMNS}
        teacher, student = c["teacher"].copy(), c["student"].copy()
        implied = np.flatnonzero(self.candidates["implied"][lo:hi])
        if len(implied):   # candidates 0 and 1 of a pair's set: the pair's chosen and rejected scores
            plo, phi = self.pair_spans[i], self.pair_spans[i + 1]
            where = {key: k for k, key in enumerate(zip(self.pairs["eval_set"][plo:phi].tolist(),
                                                         self.pairs["pair_id"][plo:phi].tolist()))}
            eval_sets, pair_ids = c["eval_set"][implied].tolist(), c["pair_id"][implied].tolist()
            sides = c["candidate"][implied]
            pairs = np.array([where.get(key, -1) for key in zip(eval_sets, pair_ids)], dtype=np.int64)
            if (pairs < 0).any() or (sides > 1).any():
                k = int(np.flatnonzero((pairs < 0) | (sides > 1))[0])
                raise StoreError(f"{self.folder / CANDIDATES}: cell {self.paths[i]}'s candidate {int(sides[k])} of set "
                                 f"{str(c['set_id'][implied[k]])[:60]!r} takes its scores from a pair the cell does "
                                 "not score: migrate the folder again")
            for side in (0, 1):
                mine = sides == side
                teacher[implied[mine]] = self.pairs[SCORE_COLUMNS[2 + side]][plo + pairs[mine]]
                student[implied[mine]] = self.pairs[SCORE_COLUMNS[4 + side]][plo + pairs[mine]]
        return (c["eval_set"], c["set_id"], c["pair_id"], c["candidate"], c["grade"], teacher, student)

    def pairs_implied(self, i: int) -> bool:
        """Whether every candidate 0 and 1 of cell ``i``'s sets built from a pair (a pair id) is implied: its scores
        are then its pair's by construction (``candidate_columns``), which is what a recompute checks them against."""
        lo, hi = self.candidate_spans[i], self.candidate_spans[i + 1]
        from_pair = (self.candidates["candidate"][lo:hi] < 2) & self.candidates["pair_id"][lo:hi].astype(bool)
        return bool(self.candidates["implied"][lo:hi][from_pair].all())

    def candidate_rows(self, i: int) -> list[tuple] | None:
        """Cell ``i``'s CANDIDATES_FILE rows, (eval_set, set_id, pair_id, candidate (text), grade, teacher,
        student), in file order; None for a cell without candidate sets (no candidates sha256)."""
        if self.sha256["candidates"][i] is None:
            return None
        eval_set, set_id, pair_id, candidate, grade, teacher, student = self.candidate_columns(i)
        return list(zip(eval_set.tolist(), set_id.tolist(), pair_id.tolist(), [str(k) for k in candidate.tolist()],
                        grade.tolist(), teacher.tolist(), student.tolist()))

    def cell_texts(self, i: int) -> tuple[bytes, bytes, bytes | None]:
        """Cell ``i``'s result.json, scores CSV and candidates CSV (None without) as their files held them,
        the CSVs decompressed: what ``bench migrate`` compares with the folder it replaces."""
        data = self.cell(i)
        return (data.result, csv_text(SCORE_COLUMNS, data.scores),
                None if data.candidates is None else csv_text(CANDIDATE_COLUMNS, data.candidates))


class CellData(NamedTuple):
    """One cell's files, read: result.json's bytes, the score files' rows (as ``StoredCell``'s), and the sha256s of
    the result.json, scores and candidates files (None: no candidates file)."""

    result: bytes
    scores: list[tuple]
    candidates: list[tuple] | None
    sha256: tuple[str, str, str | None]


def _csv_rows(data: bytes, numbers_from: int) -> tuple[bytes, list[tuple]]:
    """A gzip'd score file's CSV text and its rows, the columns from ``numbers_from`` on as floats."""
    import gzip

    text = gzip.decompress(data)
    reader = csv.reader(text.decode("utf-8").splitlines())
    next(reader)
    return text, [(*row[:numbers_from], *map(float, row[numbers_from:])) for row in reader]


def _read_folder(folder: Path) -> tuple[CellData, tuple[bytes, bytes, bytes | None]]:
    """A cell folder's files (result.json, scores.csv.gz, candidates.csv.gz where there is one), read, and the texts
    they hold (the CSVs decompressed): what a store of the cell must give back."""
    result, scores = (folder / RESULT_FILE).read_bytes(), (folder / SCORES_FILE).read_bytes()
    candidates = (folder / CANDIDATES_FILE).read_bytes() if (folder / CANDIDATES_FILE).is_file() else None
    score_text, score_rows = _csv_rows(scores, 2)
    candidate_text, candidate_rows = (None, None) if candidates is None else _csv_rows(candidates, 4)
    return (CellData(result, score_rows, candidate_rows,
                     (_sha(result), _sha(scores), None if candidates is None else _sha(candidates))),
            (result, score_text, candidate_text))


def read_folder(folder: Path) -> CellData:
    """A cell folder's files (result.json, scores.csv.gz, candidates.csv.gz where there is one), read."""
    return _read_folder(folder)[0]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def csv_text(header: Sequence[str], rows: Sequence[Sequence]) -> bytes:
    """The CSV text bench.core.io.csv_gz_bytes compresses."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return text.getvalue().encode()


def _column(table, name: str, codes: dict | None = None) -> np.ndarray:
    """A column as numpy: strings as an object array of str (a dictionary decoded once; its codes put in ``codes``
    under ``name``, as Store.codes holds them), numbers as float64 (null as NaN), integers as int64."""
    import pyarrow as pa

    column = table.column(name).combine_chunks()
    if pa.types.is_dictionary(column.type):
        words = _words(column.dictionary)
        indices = column.indices.fill_null(len(column.dictionary)).to_numpy(zero_copy_only=False)
        if codes is not None:
            codes[name] = (indices.astype(np.int64, copy=False), words)
        return words[indices]
    if pa.types.is_floating(column.type):
        return column.cast(pa.float64()).to_numpy(zero_copy_only=False)
    if pa.types.is_integer(column.type):
        return column.cast(pa.int64()).to_numpy(zero_copy_only=False)
    return np.array(column.to_pylist(), dtype=object)


_WORDS: dict[tuple, np.ndarray] = {}   # a dictionary's buffers -> its words (the last few distinct dictionaries)
_WORDS_KEPT = 64


def _words(dictionary) -> np.ndarray:
    """A dictionary's words as a read-only object array of str, None appended (a null's code): interned, as every
    store of a protocol names the same test pairs and a board holds many stores' ids; and decoded once per distinct
    dictionary, which its length, offset and buffers fix (stores of one protocol hold the same dictionaries)."""
    key = (str(dictionary.type), len(dictionary), dictionary.offset,
           tuple(None if b is None else b.to_pybytes() for b in dictionary.buffers()))
    words = _WORDS.get(key)
    if words is None:
        words = np.array([None if w is None else sys.intern(w) for w in dictionary.to_pylist()] + [None], dtype=object)
        words.flags.writeable = False
        keep(_WORDS, key, words, _WORDS_KEPT)
    return words


def keep(cache: dict, key, value, most: int) -> None:
    """``cache[key] = value``, the oldest entry dropped first where ``cache`` holds ``most`` (a per-process memo kept
    small; threads may share it)."""
    if len(cache) >= most:
        try:
            cache.pop(next(iter(cache), None), None)
        except RuntimeError:   # another thread changed it meanwhile: it is kept small all the same
            pass
    cache[key] = value


def _spans(cell: np.ndarray, n: int, name: str, folder: Path) -> np.ndarray:
    if len(cell) and (np.any(np.diff(cell) < 0) or cell[0] < 0 or cell[-1] >= n):
        raise StoreError(f"{folder / name}: its rows are not grouped by cell in cells.parquet's order: migrate again")
    return np.searchsorted(cell, np.arange(n + 1), side="left")


def _read_table(path: Path, blob: bytes | None = None):
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        # one thread: a store is small, and a pool of threads costs more CPU than it saves; one file, not
        # pq.read_table's dataset (which costs more than the reading at a store's size)
        table = pq.ParquetFile(path if blob is None else pa.BufferReader(blob)).read(use_threads=False)
    except (OSError, ValueError) as error:   # pyarrow's ArrowInvalid is a ValueError
        raise StoreError(f"{path}: is not a readable Parquet table ({str(error)[:200]}): restore it from git, or "
                         "migrate the folder again") from None
    if len(set(table.column_names)) != table.num_columns:   # a column is then not one table.column can name
        raise StoreError(f"{path}: names a column twice ({', '.join(sorted(table.column_names))[:200]}): restore it "
                         "from git, or migrate the folder again")
    return table


def load_store(folder: str | os.PathLike) -> Store:
    """The store in ``folder``, read once per version of its files (a StoreError names what is wrong)."""
    folder = Path(folder).resolve()
    try:
        stamp = tuple((f.stat().st_mtime_ns, f.stat().st_size) for f in (folder / n for n in STORE_FILES))
    except OSError:
        raise StoreError(f"{folder}: a store holds {', '.join(STORE_FILES)}, and one is missing: restore it from "
                         "git, or migrate the folder again (bench migrate)") from None
    return _load(folder, stamp)


@lru_cache(maxsize=8)   # a few: the cells that refer to one submission's store read it once, and no more are held
def _load(folder: Path, stamp: tuple) -> Store:
    import pyarrow.parquet as pq

    try:
        meta = json.loads((pq.read_schema(folder / CELLS).metadata or {}).get(_META, b"{}"))
    except (OSError, ValueError) as error:
        raise StoreError(f"{folder / CELLS}: is not a readable store ({str(error)[:200]})") from None
    if meta.get("format") != FORMAT:
        raise StoreError(f"{folder / CELLS}: store format {meta.get('format')!r}, this shiftbench reads {FORMAT}: "
                         "upgrade shiftbench, or migrate the folder again")
    blobs = {}
    for name in (PAIRS, CANDIDATES):
        blobs[name] = (folder / name).read_bytes()
        if hashlib.sha256(blobs[name]).hexdigest() != meta.get(name):
            raise StoreError(f"{folder / name}: is not the one {CELLS} was written with (a write was cut off, or "
                             "the file was changed): restore the store from git, or migrate the folder again")
    # the tables read from the bytes just checked: a file changed in between is never the one read
    cells, pairs, candidates = (_read_table(folder / name, blobs.get(name)) for name in STORE_FILES)
    n = cells.num_rows
    pair_codes, cand_codes = {}, {}
    pair_cols = {name: _column(pairs, name, pair_codes) for name in ("cell", *SCORE_COLUMNS)}
    cand_cols = {name: _column(candidates, name, cand_codes) for name in ("cell", *CANDIDATE_COLUMNS)}
    cand_cols["implied"] = candidates.column("teacher").combine_chunks().is_null().to_numpy(zero_copy_only=False)
    refs = cells.column("ref").to_pylist()
    return Store(folder, tuple(cells.column("path").to_pylist()), tuple(cells.column("result_json").to_pylist()),
                 {who: tuple(cells.column(f"{who}_sha256").to_pylist()) for who in ("result", "scores", "candidates")},
                 tuple(None if r is None else (r, p) for r, p in zip(refs, cells.column("ref_path").to_pylist())),
                 pair_cols, _spans(pair_cols["cell"], n, PAIRS, folder),
                 cand_cols, _spans(cand_cols["cell"], n, CANDIDATES, folder),
                 {**{f"pairs.{k}": v for k, v in pair_codes.items()}, **{f"candidates.{k}": v for k, v in cand_codes.items()}})


def store_of(path: str | os.PathLike) -> tuple[Path, str] | None:
    """The store that holds the cell folder ``path`` (which need not exist on disk), with the cell's path in it;
    None when no folder above ``path`` is a store."""
    path = Path(path)
    for parent in path.parents:
        if is_store(parent):
            return parent, path.relative_to(parent).as_posix()
    return None


def cell_folders(root: str | os.PathLike, marker: str = "result.json") -> Iterator[Path]:
    """Every cell folder under ``root``, sorted: folders holding ``marker`` (a cell's result.json), and the cells
    of every store under it, as the paths their folders had (``root/<store>/<path>``; read them with
    bench.core.results.read_cell_files)."""
    root = Path(root)
    found = {p.parent for p in root.rglob(marker)}
    stores = [root] if is_store(root) else []
    stores += [p.parent for p in root.rglob(CELLS)]
    for folder in dict.fromkeys(stores):
        try:
            found.update(folder / path for path in load_store(folder).paths)
        except StoreError:
            found.add(folder / "?")   # reported as unreadable by whoever reads it
    yield from sorted(found)


# --- migrating cell folders into a store, and back ---------------------------------------------------------
def _cell(base: Path, rel: str, index: dict[str, tuple[Path, str]], here: Path) -> tuple[StoredCell, tuple]:
    """A cell folder read into a StoredCell (referring to where ``index`` says the same cell is kept, by the sha256 of
    its result.json and scores), and the texts it must read back as."""
    data, texts = _read_folder(base / rel)
    found = index.get(data.sha256[0])
    if found is not None and found[2] == data.sha256[1:]:
        ref = Path(os.path.relpath(found[0], here)).as_posix()
        return StoredCell(rel, data.result, None, None, *data.sha256, ref=ref, ref_path=found[1]), texts
    return StoredCell(rel, data.result, data.scores, data.candidates, *data.sha256), texts


def index_cells(root: Path | None) -> dict[str, tuple[Path, str, tuple]]:
    """result.json sha256 -> (folder, cell path in it, its score files' sha256s) for every cell kept under ``root``:
    in a store (not itself referred to elsewhere), or as a folder of files."""
    index: dict[str, tuple[Path, str, tuple]] = {}
    if root is None:
        return index
    for folder in cell_folders(root):
        found = store_of(folder)
        if found is not None:
            store = load_store(found[0])
            i = store.index(found[1])
            if store.refs[i] is None:
                index.setdefault(store.sha256["result"][i], (found[0].resolve(), found[1], tuple(
                    store.sha256[who][i] for who in ("scores", "candidates"))))
        else:
            data = read_folder(folder)
            index.setdefault(data.sha256[0], (folder.parent.resolve(), folder.name, data.sha256[1:]))
    return index


def cell_paths(folder: Path) -> list[str]:
    """The cell folders of a submission (``cells/...``) or a results folder of one method (``seed<N>/...``)."""
    return sorted(p.parent.relative_to(folder).as_posix() for p in folder.rglob(RESULT_FILE))


def migrate_folder(folder: Path, refer_to: Path | None = None, index: dict | None = None) -> tuple[int, int]:
    """One submission or method folder into a store; returns (cells kept, cells referred to)."""
    folder = Path(folder)
    paths = cell_paths(folder)
    if not paths:
        raise BenchError(f"{folder}: no cell folders to migrate (a cell folder holds {RESULT_FILE})")
    if is_store(folder):
        raise BenchError(f"{folder}: holds both a store and cell folders: remove one (bench migrate --unpack "
                         "writes a store's cells as folders)")
    index = index_cells(refer_to) if index is None else index
    here = folder.resolve()
    cells, expected = zip(*(_cell(folder, rel, index, here) for rel in paths))
    write_store(folder, cells)
    store = load_store(folder)
    for i, rel in enumerate(paths):   # read back before anything is removed
        got = store.cell_texts(i)
        if got != tuple(expected[i]):
            for name in STORE_FILES:
                (folder / name).unlink(missing_ok=True)
            raise BenchError(f"{folder / rel}: does not read back from the store byte for byte; the folder is left "
                             "as it was (report it: a score that is not a float32, or text the writer does not give)")
    for top in sorted({rel.split("/")[0] for rel in paths}):
        shutil.rmtree(folder / top)
    return sum(c.ref is None for c in cells), sum(c.ref is not None for c in cells)


def unpack(folder: Path, dest: Path) -> int:
    """A store's cells written as folders under ``dest`` (files as the harness writes them); ``dest`` = ``folder``:
    in place, the store's tables removed once every cell is written."""
    import gzip

    from bench.core.io import atomic_write_bytes

    store = load_store(folder)
    for i, path in enumerate(store.paths):
        result, scores, candidates = store.cell_texts(i)
        target = Path(dest) / path
        atomic_write_bytes(target / SCORES_FILE, gzip.compress(scores, compresslevel=6, mtime=0))
        if candidates is not None:
            atomic_write_bytes(target / CANDIDATES_FILE, gzip.compress(candidates, compresslevel=6, mtime=0))
        atomic_write_bytes(target / RESULT_FILE, result)
    if Path(dest).resolve() == Path(folder).resolve():
        for name in STORE_FILES:
            (Path(folder) / name).unlink()
    return len(store.paths)


def stored_cell(folder: str | os.PathLike) -> CellData | None:
    """The cell whose folder was ``folder``, from the store above it; None where no store holds it. A store that
    cannot be read raises StoreError."""
    found = store_of(folder)
    store = None if found is None else load_store(found[0])
    i = None if store is None else store.index(found[1])
    return None if i is None else store.cell(i)


def cell_result(folder: str | os.PathLike) -> bytes:
    """The result.json of the cell folder ``folder``: the file, or the bytes a store above it keeps (a StoreError
    where neither holds one)."""
    folder = Path(folder)
    if (folder / RESULT_FILE).is_file():
        return (folder / RESULT_FILE).read_bytes()
    cell = stored_cell(folder)
    if cell is None:
        raise StoreError(f"{folder}: no cell there (no {RESULT_FILE}, and no store above it holds it)")
    return cell.result
