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
is the same. An entry is three files, none of them pickle (a record file is read, never run), each written
atomically: ``<entry>.json``, the summary (problems, submission.json, what the board and the checks across
submissions read of each cell, bench.submissions.facts, and what each per-pair cell is), written last; ``<entry>.results``,
every cell's result as the JSON it was validated from (one array of them: read as validation read them, they give the
same CellResults); and ``<entry>.npz``, the per-pair correctness and best-of-N credits as
arrays (``_pack``). The summary names the other two by sha256. A reader gets the summary at once, the results
only when it first reads ``Validation.cells`` (``LazyResults``) and the arrays when it first reads
``Validation.pairs`` or ``.controls`` (``LazyCells``): the board's first page and ``bench validate`` need the
summary only. An entry that cannot be read or does not hold what a Validation needs is ignored and written
again; results or arrays that do not match their summary are replaced by validating the folder again, and the
entry is removed, so that the next reader writes it anew. An outcome is stored only if the folder's files are
the ones hashed when its validation ends: by their stamps (inode, size, modification and change times), and by
their content again where a file was written less than ``RACY_NS`` before it was hashed (a file system's coarse
ticks may leave a stamp as it was). A
folder with a link or a special file is not recorded: validation refuses it anyway, and its files
cannot be hashed without following the link. Beside each entry, ``<entry>.path`` names its folder, so
the entries of folders that are gone (a test's temporary submissions) are removed, not kept forever.
The checks across submissions (duplicates, misplaced folders, disagreements: ``bench.submissions.tree``)
are cheap and always run on the outcomes, recorded or not.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import stat
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from importlib.metadata import version
from pathlib import Path

import numpy as np

import bench.submissions.limits as limits
from bench.core.cells import Cell, EvalSet
from bench.core.errors import BenchError
from bench.core.io import atomic_write_bytes, sha256_file
from bench.core.specs import ModelPairSpec, ProtocolSpec, canonical_json
from bench.submissions.check import validate_submission
from bench.submissions.facts import FACTS, Lazy, LazyResults, facts_of
from bench.submissions.limits import Problem, Validation

FORMAT = 7   # the layout of an entry; bump it when what is stored changes (3: the cells' BoN credits, 4: controls,
             # 5: the per-pair values in an array file beside the summary, 6: the results in a file of their own,
             # the summary holding each cell's facts, 7: the results as the JSON each was validated from)
# What a submission's validation outcome depends on besides its files: the check itself, the
# schemas and recompute it uses, the bootstrap its intervals come from, the registries and hashes
# of protocols and model pairs, and this module (how an outcome is stored).
VALIDATION_CODE = ("bench.submissions.check", "bench.submissions.cell_checks", "bench.submissions.fields",
                   "bench.submissions.limits", "bench.submissions.schema",
                   "bench.submissions.reference", "bench.core.candidates", "bench.core.data", "bench.core.registry",
                   "bench.submissions.scores", "bench.submissions.commands", "bench.core.results",
                   "bench.core.result_schema", "bench.core.metrics", "bench.core.report", "bench.core.stats",
                   "bench.core.cells", "bench.core.runs", "bench.core.sequential", "bench.core.specs",
                   "bench.core.errors", "bench.core.protocols", "bench.core.io", "bench.core.store", "bench.core.columns",
                   "bench.submissions.facts", "bench.submissions.record")


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
    found = _files(folder)
    return None if found is None else found[0]


def _files(folder: Path) -> tuple[str, tuple] | None:
    """``files_key(folder)`` and the stamps of the files it hashed (``_stamps``), each taken before its file was
    read: a file written after its stamp (during the hashing or later) has another stamp."""
    found = _regular_files(folder)
    if found is None:
        return None
    digest = hashlib.sha256()
    for path, _ in found:
        try:
            digest.update(f"{path.relative_to(folder).as_posix()}\0{sha256_file(path)}\0".encode())
        except FileNotFoundError:   # gone since the walk: nothing of the folder is recorded
            return None
    return digest.hexdigest(), _stamped(found)


def _stamps(folder: Path) -> tuple | None:
    """The stamps ``_files`` took of ``folder``'s files, taken again without reading them."""
    found = _regular_files(folder)
    return None if found is None else _stamped(found)


def _unchanged(folder: Path, files: str, stamps: tuple, since: int) -> bool:
    """Whether ``folder`` still holds the files whose key is ``files`` and stamps ``stamps``, taken from the clock time
    ``since`` on: by their stamps, unless one was written less than ``RACY_NS`` before ``since`` (a file system
    stamps in coarse ticks, so a write just after a stamp may leave it as it was): then by their content."""
    if _stamps(folder) != stamps:
        return False
    return all(max(s[3], s[4]) < since - RACY_NS for s in stamps) or files_key(folder) == files


RACY_NS = 2 * 10**9   # the coarsest common file system tick (FAT's two seconds)


def _stamped(found: list[tuple[Path, os.stat_result]]) -> tuple:
    # ctime as well as mtime: writing a file moves its ctime, which (unlike mtime) no tool sets back
    return tuple((str(path), st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) for path, st in found)


def _regular_files(folder: Path) -> list[tuple[Path, os.stat_result]] | None:
    """Every file of ``folder`` in a fixed order, with its lstat; None when it holds a link or a special file, or a
    file goes while it is walked (then nothing of it is recorded)."""
    found = []
    for root, dirs, names in os.walk(folder, followlinks=False):
        dirs.sort()
        for name in [*dirs, *sorted(names)]:
            path = Path(root, name)
            try:
                st = path.lstat()
            except FileNotFoundError:
                return None
            if stat.S_ISLNK(st.st_mode) or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
                return None
            if stat.S_ISREG(st.st_mode):
                found.append((path, st))
    return found


# --- an outcome as a JSON summary and its arrays, and back -------------------------------------------------------
def _to_entry(v: Validation, key: str, protocols: Mapping[str, ProtocolSpec] | None) -> tuple[dict, bytes, bytes]:
    """The summary (JSON), the results (JSON bytes) and the per-pair arrays (npz bytes) of ``v``, a fresh validation
    (its ``read`` holds the bytes of each of its results) with ``protocols``; the summary holds the sha256 of the other
    two."""
    arrays = _pack([*v.pairs, *v.controls])
    # the very JSON each result was validated from, as one array: read back as validation read it, it gives the same
    # models (not a dump of them, which costs time and may rewrite a text or a number)
    results = b"[" + b",".join(v.read) + b"]"
    return {"format": FORMAT, "key": key, "folder": str(v.folder),
            "errors": [asdict(p) for p in v.errors], "warnings": [asdict(p) for p in v.warnings],
            "submission": v.submission, "results": hashlib.sha256(results).hexdigest(),
            "facts": [facts_of(c, protocols) for c in v.cells],
            "pairs": [_cell_meta(c) for c in v.pairs], "controls": [_cell_meta(c) for c in v.controls],
            "arrays": hashlib.sha256(arrays).hexdigest()}, results, arrays


def _cell_meta(c: Cell) -> dict:
    """What a Cell is, without its per-pair values: those are in the entry's arrays, in this order."""
    return {"method": c.method, "name": c.name, "seed": c.seed, "source": c.source, "category": c.category,
            "independent": c.independent, "looks": list(c.looks) if c.looks else None,
            "eval_sets": [[e.name, e.role, len(e.pair_ids)] for e in c.eval_sets],
            "bon": [[e.name, e.role, len(e.pair_ids)] for e in c.bon]}


def _pack(cells: list[Cell]) -> bytes:
    """Every cell's per-pair values, concatenated in order (eval sets, then BoN sets): correctness as halves
    (uint8: 0, 1 or 2), BoN credits as float64 (any fraction |T ∩ B| / |T|, exact), and the pair and set ids
    as indices into one table of the distinct ids (UTF-8, with their byte lengths): a submission's cells name
    the same test pairs over and over."""
    table: dict[str, int] = {}
    known: dict[tuple[str, ...], np.ndarray] = {}   # each distinct tuple of ids, indexed once
    halves, credits, index = [], [], []
    for c in cells:
        for e in c.eval_sets:
            halves += [(e.teacher * 2).astype(np.uint8), (e.student * 2).astype(np.uint8)]
        for e in c.bon:
            credits += [np.asarray(e.teacher, dtype=np.float64), np.asarray(e.student, dtype=np.float64)]
        for e in (*c.eval_sets, *c.bon):
            if e.pair_ids not in known:
                known[e.pair_ids] = np.fromiter((table.setdefault(i, len(table)) for i in e.pair_ids), dtype=np.int64,
                                                count=len(e.pair_ids))
            index.append(known[e.pair_ids])
    encoded = [i.encode() for i in table]
    buffer = io.BytesIO()
    np.savez(buffer, halves=np.concatenate(halves or [np.zeros(0, np.uint8)]),
             credits=np.concatenate(credits or [np.zeros(0)]), index=np.concatenate(index or [np.zeros(0, np.int64)]),
             id_bytes=np.frombuffer(b"".join(encoded), dtype=np.uint8),
             id_lengths=np.array([len(b) for b in encoded], dtype=np.int64))
    return buffer.getvalue()


def _unpack(data: bytes, metas: list[dict]) -> list[Cell]:
    """``_pack``'s inverse for the cells ``metas`` describe (``_cell_meta``, in order); a ValueError unless the
    arrays hold exactly what they describe."""
    with np.load(io.BytesIO(data), allow_pickle=False) as found:
        halves, credits, index = found["halves"], found["credits"], found["index"]
        blob, lengths = found["id_bytes"].tobytes(), found["id_lengths"]
    ends = np.cumsum(lengths)
    ids = [sys.intern(blob[end - n:end].decode()) for n, end in zip(lengths.tolist(), ends.tolist())]
    if (halves > 2).any() or ((credits < 0) | (credits > 1)).any() or (len(index) and not 0 <= index.min() <= index.max() < len(ids)):
        raise ValueError("per-pair values out of range")
    at = {"halves": 0, "credits": 0, "index": 0}

    def take(name: str, array: np.ndarray, n: int) -> np.ndarray:
        start = at[name]
        at[name] = start + n
        if at[name] > len(array):
            raise ValueError("per-pair arrays shorter than their summary")
        return array[start:start + n]

    out = []
    for m in metas:
        sets = [(name, role, take("halves", halves, n) / 2.0, take("halves", halves, n) / 2.0, n)
                for name, role, n in m["eval_sets"]]
        bon = [(name, role, take("credits", credits, n), take("credits", credits, n), n) for name, role, n in m["bon"]]
        out.append(Cell(m["method"], int(m["seed"]), m["source"], m["category"],
                        tuple(EvalSet(name, role, tuple(ids[k] for k in take("index", index, n).tolist()), t, s)
                              for name, role, t, s, n in sets),
                        m["independent"], tuple(m["looks"]) if m["looks"] else None, m["name"],
                        tuple(EvalSet(name, role, tuple(ids[k] for k in take("index", index, n).tolist()), t, s)
                              for name, role, t, s, n in bon)))
    if at != {"halves": len(halves), "credits": len(credits), "index": len(index)}:
        raise ValueError("per-pair arrays longer than their summary")
    return out


class LazyCells(Lazy):
    """A Validation's ``pairs`` or ``controls`` as the record holds them: each cell's method, name, seed, source,
    category and independence described (``_cell_meta``), the cells on first use (from the entry's arrays;
    ``load()`` gives both lists of the entry)."""

    def __init__(self, metas: list[dict], load: Callable[[], tuple[list[Cell], list[Cell]]], which: int):
        super().__init__(metas, lambda: load()[which])


def _lazy_results(data: dict, entry: Path, full: Callable[[], Validation]) -> LazyResults:
    """The results of the entry whose summary is ``data``, read from ``entry``'s results file on first use, and from a
    validation of the folder (``full()``) where that file is missing or not the summary's."""
    from bench.core.result_schema import CellResult

    def load() -> list:
        try:
            raw = results_path(entry).read_bytes()
            if hashlib.sha256(raw).hexdigest() != data["results"]:
                raise ValueError("the results are not the summary's")
            found = [CellResult.model_validate(c) for c in json.loads(raw)]
            if len(found) != len(data["facts"]):
                raise ValueError("not the summary's number of results")
            return found
        except (OSError, ValueError, KeyError, TypeError, RecursionError):   # ValueError: pydantic's too
            found = list(full().cells)
        if len(found) != len(data["facts"]):   # the folder changed since its entry was read
            raise BenchError(f"{entry}: the submission it records changed while it was read ({len(found)} cells, "
                             f"the record says {len(data['facts'])}). Fix: run the command again")
        return found

    return LazyResults(data["facts"], load)


def _from_entry(data: dict, folder: Path, entry: Path, again: Callable[[], Validation]) -> Validation:
    """A Validation from the summary of ``entry``; its results and per-pair cells are read from the entry's other
    files when first used, and validated ``again`` (a full validation of the folder, once) if those are missing or
    are not the summary's."""
    metas = (data["pairs"], data["controls"])
    if not all(isinstance(m, dict) and isinstance(m["eval_sets"], list) and isinstance(m["bon"], list)
               for m in (*metas[0], *metas[1])):
        raise ValueError("per-pair cells not described")
    facts = data["facts"]
    if not (isinstance(facts, list) and all(isinstance(f, dict) and set(f) == set(FACTS) and
                                            all(isinstance(x, list) or (x is None and name == "rows")
                                                for name, x in f.items()) for f in facts)):
        raise ValueError("cells' facts not described")
    fresh: list[Validation] = []

    def full() -> Validation:   # one validation of the folder, whichever file was missing
        if not fresh:
            fresh.append(again())
            try:
                entry.unlink(missing_ok=True)   # so that the next reader validates once and writes the entry anew
            except OSError:
                pass
        return fresh[0]

    loaded: list[tuple[list[Cell], list[Cell]]] = []

    def load() -> tuple[list[Cell], list[Cell]]:
        if not loaded:
            try:
                raw = arrays_path(entry).read_bytes()
                if hashlib.sha256(raw).hexdigest() != data["arrays"]:
                    raise ValueError("the per-pair arrays are not the summary's")
                cells = _unpack(raw, [*metas[0], *metas[1]])
                loaded.append((cells[:len(metas[0])], cells[len(metas[0]):]))
            except (OSError, ValueError, KeyError, TypeError, IndexError):
                whole = full()   # a damaged or missing array file costs a validation, never a result
                loaded.append((list(whole.pairs), list(whole.controls)))
        return loaded[0]

    return Validation(folder, errors=[Problem(**p) for p in data["errors"]],
                      warnings=[Problem(**p) for p in data["warnings"]], submission=data["submission"],
                      cells=_lazy_results(data, entry, full),
                      pairs=LazyCells(metas[0], load, 0), controls=LazyCells(metas[1], load, 1))


def described(cells: Sequence[Cell], name: str) -> list:
    """Each cell's ``name`` (a field the summary holds: method, name, seed, source, category or independent) without
    reading any per-pair value where ``cells`` are a record's (``LazyCells``)."""
    return cells.described(name) if isinstance(cells, LazyCells) else [getattr(c, name) for c in cells]


def entry_path(cache_dir: Path, folder: Path) -> Path:
    return Path(cache_dir) / f"{hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:32]}.json"


def arrays_path(entry: Path) -> Path:
    """The per-pair arrays of the entry whose summary is ``entry``."""
    return entry.with_suffix(".npz")


def results_path(entry: Path) -> Path:
    """The results of the entry whose summary is ``entry``."""
    return entry.with_suffix(".results")


def prune(cache_dir: Path) -> None:
    """Remove the entries whose submission folder no longer exists."""
    for path_file in Path(cache_dir).glob("*.json.path"):
        try:
            if not Path(path_file.read_text(encoding="utf-8")).is_dir():
                path_file.with_suffix("").unlink(missing_ok=True)
                arrays_path(path_file.with_suffix("")).unlink(missing_ok=True)
                results_path(path_file.with_suffix("")).unlink(missing_ok=True)
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
    since = time.time_ns()
    found_files = _files(folder)
    if found_files is None:
        found = validate_submission(folder, protocols, model_pairs)
        found.read = []   # an outcome does not carry its results' bytes
        return found, False
    files, stamps = found_files
    key = hashlib.sha256(f"{context}\0{files}".encode()).hexdigest()
    entry = entry_path(cache_dir, folder)
    if reuse:
        try:
            data = json.loads(entry.read_bytes())
            if data.get("format") == FORMAT and data.get("key") == key:
                found = _from_entry(data, folder, entry, lambda: validate_submission(folder, protocols, model_pairs))
                found.digest = key
                return found, True
        except FileNotFoundError:
            pass
        except (OSError, ValueError, KeyError, TypeError, AttributeError, ValidationError):
            pass   # a damaged entry: validate again and write it anew
    found = validate_submission(folder, protocols, model_pairs)
    # recorded where the folder is unchanged since it was read (the outcome belongs to this key), with every result's bytes
    if len(found.read) == len(found.cells) and _unchanged(folder, files, stamps, since):
        found.digest = key
        try:
            summary, results, arrays = _to_entry(found, key, protocols)
            # not fsync'd: an entry is a cache, read only where its key and the sha256s its summary names agree
            atomic_write_bytes(entry.with_name(entry.name + ".path"), str(folder.resolve()).encode(), durable=False)
            atomic_write_bytes(results_path(entry), results, durable=False)
            atomic_write_bytes(arrays_path(entry), arrays, durable=False)
            # last: it names the others
            atomic_write_bytes(entry, json.dumps(summary, separators=(",", ":")).encode(), durable=False)
            # the results from the record from now on, as a reused outcome's: a board of many submissions does not
            # hold them all (it reads the facts alone); the per-pair cells stay, as its decisions read them all
            found.cells = _lazy_results(summary, entry, lambda: validate_submission(folder, protocols, model_pairs))
        except OSError:
            pass   # a record that cannot be written costs time, never a result
    found.read = []   # the results' bytes are in the entry now, if anywhere: an outcome does not carry them
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
    from bench.core.stats import one_blas_thread

    one_blas_thread()   # before the first product: a spinning second BLAS thread costs every step after it
    record = record or Record(cache_dir, protocols, model_pairs)
    return tree.validate_tree(Path(path), protocols, model_pairs, validate=record.validate)
