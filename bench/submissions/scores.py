"""Reading one submission's score files in bounded memory: streamed a line at a time, read only as far
as its cell's declared pairs (or candidate sets), with a bounded number of problems kept (limits.py says
how far)."""
from __future__ import annotations

import csv
import gzip
import math
import zlib
from functools import lru_cache
from pathlib import Path
from typing import Callable, Iterator, Mapping, NamedTuple

import numpy as np

import bench.submissions.limits as limits
from bench.core.result_schema import CANDIDATE_COLUMNS, SCORE_COLUMNS
from bench.core.store import keep
from bench.submissions.limits import REGENERATE, Validation, unsafe_text


class _Unreadable(Exception):
    """A scores file that cannot be read further (the message says why); reading stops there."""


def _lines(handle) -> Iterator[str]:
    """The decompressed text a line at a time: never more than one line of at most
    MAX_SCORES_LINE_BYTES held, and no more than MAX_SCORES_BYTES read in all."""
    read = 0
    while True:
        line = handle.readline(limits.MAX_SCORES_LINE_BYTES + 1)
        if not line:
            return
        read += len(line)
        if read > limits.MAX_SCORES_BYTES:
            raise _Unreadable(f"decompresses to more than {limits.MAX_SCORES_BYTES} bytes")
        if len(line) > limits.MAX_SCORES_LINE_BYTES:
            raise _Unreadable(f"has a line longer than {limits.MAX_SCORES_LINE_BYTES} bytes (a scores line is under 200)")
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _Unreadable(f"is not UTF-8 CSV ({error})") from None


_BAD_KINDS = {"fields": "wrong number of fields", "eval_set": "an eval set not of this cell",
              "twice": "a pair given twice", "text": "a pair id that is not plain text",
              "number": "a score that is not a finite number"}
_BAD_CANDIDATE_KINDS = {**_BAD_KINDS, "twice": "a candidate given twice", "text": "a set or pair id that is not plain text",
                        "number": "a grade or score that is not a finite number",
                        "candidate": "a candidate index that is not a whole number below the protocol's N"}


def read_scores(v: Validation, rel: str, path: Path, n_pairs: Mapping[str, int]) -> list[tuple] | None:
    """The cell's score rows as (eval_set, pair_id, 4 floats), or None after recording what is wrong.
    Streams: it stops at the first row past the sum of ``n_pairs`` (the pairs result.json declares,
    bounded by the protocol before this is called), and keeps MAX_ERRORS_PER_KIND messages per kind
    of bad line -- a file of a million duplicate rows costs what its first few do."""
    def judge(line: int, row: list[str], flag: Callable[[str, str], None], seen: set) -> tuple | None:
        eval_set, pair_id = row[0], row[1]
        what = unsafe_text(pair_id)
        if eval_set not in n_pairs:
            flag("eval_set", f"line {line}: eval set {eval_set[:60]!r} is not one of this cell's")
        elif (eval_set, pair_id) in seen:
            flag("twice", f"line {line}: pair {pair_id[:60]!r} of {eval_set} twice")
        elif what:
            flag("text", f"line {line}: pair id contains {what}")
        else:
            return _with_numbers(line, row, 2, (eval_set, pair_id), flag, seen, "scores")
        return None

    return _read_rows(v, rel, path, SCORE_COLUMNS, _BAD_KINDS, sum(n_pairs.values()), judge,
                      "the pairs its result.json's eval sets declare (n_pairs)")


def read_candidates(v: Validation, rel: str, path: Path, n_sets: Mapping[str, int], n: int) -> list[tuple] | None:
    """The cell's per-candidate rows as (eval_set, set_id, pair_id, candidate, grade, teacher, student), or None
    after recording what is wrong; streamed and bounded as ``read_scores``: at most ``n`` candidates (the
    protocol's N) for each of the sets ``n_sets`` declares per eval set (bounded by the protocol first). Whether
    a set's rows are its candidates in order is for bench.core.results.recompute, which names the set."""
    def judge(line: int, row: list[str], flag: Callable[[str, str], None], seen: set) -> tuple | None:
        eval_set, set_id, pair_id, candidate = row[:4]
        what = unsafe_text(set_id) or unsafe_text(pair_id)
        if eval_set not in n_sets:
            flag("eval_set", f"line {line}: eval set {eval_set[:60]!r} is not one of this cell's")
        elif what:
            flag("text", f"line {line}: set or pair id contains {what}")
        elif not (candidate.isdigit() and int(candidate) < n):
            flag("candidate", f"line {line}: candidate {candidate[:20]!r} of set {set_id[:60]!r} is not 0 to {n - 1}")
        elif (eval_set, set_id, candidate) in seen:
            flag("twice", f"line {line}: candidate {candidate} of set {set_id[:60]!r} of {eval_set} twice")
        else:
            return _with_numbers(line, row, 4, (eval_set, set_id, candidate), flag, seen, "grade and scores")
        return None

    return _read_rows(v, rel, path, CANDIDATE_COLUMNS, _BAD_CANDIDATE_KINDS, n * sum(n_sets.values()), judge,
                      f"{n} candidates for each set its result.json's eval sets declare (n_sets)")


def _with_numbers(line: int, row: list[str], k: int, key: tuple, flag: Callable[[str, str], None], seen: set,
                  what: str) -> tuple | None:
    """A row whose first ``k`` fields passed their checks, as those fields and the rest as finite floats (``key``
    then counts as seen); None after flagging a field that is not a finite number."""
    try:
        numbers = tuple(float(x) for x in row[k:])
    except ValueError:
        numbers = (math.nan,)
    if not all(map(math.isfinite, numbers)):
        flag("number", f"line {line}: {what} must be finite numbers")
        return None
    seen.add(key)
    return (*row[:k], *numbers)


def _read_rows(v: Validation, rel: str, path: Path, columns: tuple[str, ...], kinds: dict[str, str], max_rows: int,
               judge: Callable[[int, list[str], Callable[[str, str], None], set], tuple | None], declared: str
               ) -> list[tuple] | None:
    """A score file's rows as ``judge`` parses them (None for a bad one, after ``flag(kind, message)``), or
    None after recording what is wrong: the header, a row with another number of fields, a bad row of each
    of ``kinds`` (MAX_ERRORS_PER_KIND messages each), more than ``max_rows`` rows (``declared`` says whose)."""
    seen: set = set()
    parsed: list[tuple] = []
    bad: dict[str, list[str]] = {kind: [] for kind in kinds}
    counts = dict.fromkeys(kinds, 0)

    def flag(kind: str, message: str) -> None:
        counts[kind] += 1
        if len(bad[kind]) < limits.MAX_ERRORS_PER_KIND:
            bad[kind].append(message)

    try:
        with gzip.open(path, "rb") as handle:
            reader = csv.reader(_lines(handle))
            header = next(reader, None)
            if header != list(columns):
                v.error(rel, "header", f"is {str(header)[:200]}, expected {list(columns)}", REGENERATE)
                return None
            for line, row in enumerate(reader, start=2):
                if len(row) != len(columns):
                    flag("fields", f"line {line}: {len(row)} fields, expected {len(columns)}")
                else:
                    got = judge(line, row, flag, seen)
                    if got is not None:
                        parsed.append(got)
                if line - 1 > max_rows:  # that row is judged too, so a row added twice is named as such
                    raise _Unreadable(f"holds more than {max_rows} rows, {declared}; reading stopped at line {line}")
    except _Unreadable as error:
        v.error(rel, "", str(error), REGENERATE)
        return None
    except csv.Error as error:
        v.error(rel, "", f"is not UTF-8 CSV ({error})", REGENERATE)
        return None
    except (OSError, EOFError, zlib.error) as error:
        v.error(rel, "", f"is not a readable gzip file ({error})", REGENERATE)
        return None
    finally:
        for kind, messages in bad.items():
            for problem in messages:
                v.error(rel, "", problem, REGENERATE)
            if counts[kind] > len(messages):
                v.error(rel, "", f"and {counts[kind] - len(messages)} more lines with {kinds[kind]}", REGENERATE)
    return None if any(counts.values()) else parsed


def as_rows(parsed: list[tuple], columns: tuple[str, ...] = SCORE_COLUMNS) -> Iterator[dict]:
    """Rows as recompute and the board read them (a dict per row, made as they are read); ``columns``:
    CANDIDATE_COLUMNS for ``read_candidates``' rows."""
    for values in parsed:
        yield dict(zip(columns, values))


# --- a cell of a store (bench.core.store) ---------------------------------------------------------------------
@lru_cache(maxsize=1 << 17)
def _unsafe(text: str | None) -> str | None:
    """``unsafe_text`` once per distinct id: every method's cells of a seed and source score the same test pairs."""
    return "a missing value" if text is None else unsafe_text(text)


def _stored_rows(v: Validation, rel: str, keys: list[list], numbers: np.ndarray, max_rows: int, declared: str,
                 judge: Callable[[int, tuple], tuple[str, str] | None], kinds: dict[str, str]) -> list[tuple] | None:
    """A store's rows of one cell checked as ``_read_rows`` checks a file's: ``keys`` the text columns, ``numbers``
    the number columns (rows x k, float64, NaN for a missing one), ``judge(row, keys)`` a row's (kind, message)
    or None. The same tuples as ``_read_rows`` gives, or None after recording what is wrong."""
    n = len(numbers)
    if n > max_rows:
        v.error(rel, "", f"holds {n} rows, more than {max_rows}, {declared}", REGENERATE)
        return None
    bad: dict[str, list[str]] = {kind: [] for kind in kinds}
    finite = np.isfinite(numbers).all(axis=1)
    rows = list(zip(*keys, *numbers.T.tolist())) if n else []
    for k, row in enumerate(rows):
        got = judge(k, row) or (None if finite[k] else ("number", f"row {k + 1}: the scores must be finite numbers"))
        if got is not None:
            bad[got[0]].append(got[1])
    for kind, messages in bad.items():
        for problem in messages[:limits.MAX_ERRORS_PER_KIND]:
            v.error(rel, "", problem, REGENERATE)
        if len(messages) > limits.MAX_ERRORS_PER_KIND:
            v.error(rel, "", f"and {len(messages) - limits.MAX_ERRORS_PER_KIND} more rows with {kinds[kind]}",
                    REGENERATE)
    return None if any(bad.values()) else rows


def _clean_keys(keys: list[list], wanted: Mapping[str, int], unique: list[tuple] | None = None) -> bool:
    """Whether every row's eval set is one of ``wanted``, every id is safe text, and no key of ``unique`` (if given)
    repeats: the common case, checked without a message per row (a row that fails is then worded by ``judge``)."""
    return all(e in wanted for e in set(keys[0])) and _safe_ids(keys[1:3]) and (unique is None or _unique(unique))


def _unique(keys: list[tuple]) -> bool:
    return len(set(keys)) == len(keys)


# Ids found safe in this process: a tree's cells score the same test pairs again and again, so a set difference
# leaves only the ids not seen yet to check one by one.
_SAFE_IDS: set[str] = set()


def _safe_ids(columns: list[list]) -> bool:
    new = set().union(*columns) - _SAFE_IDS
    if any(_unsafe(t) for t in new):
        return False
    if len(_SAFE_IDS) < 1 << 20:   # short ones: a real id is a few dozen characters
        _SAFE_IDS.update(t for t in new if len(t) <= 256)
    return True


class _Clean(NamedTuple):
    """Every cell of a store checked at once (``clean_cells``), on the dictionary codes of its ids: which cells
    ``stored_scores`` and ``stored_candidates`` would accept without a message, but for the bounds each cell's
    result.json sets, which they check per cell (``scores_of``, ``candidates_of``). Any other cell is read
    the per-cell way, which words what is wrong."""

    scores: np.ndarray         # bool per cell: finite scores, safe pair ids, no (eval set, pair id) twice
    score_sets: list           # per cell, the eval sets its pairs name
    candidates: np.ndarray     # bool per cell: also its pairs clean, every implied score found, finite numbers,
                               # safe ids, well-formed sets (bench.core.columns.well_formed_sets), each eval set's rows
                               # together
    candidate_sets: list       # per cell, the eval sets its candidates name
    most: np.ndarray           # per cell, its largest candidate index (-1: none)
    teacher: np.ndarray        # every candidate's scores, an implied one its pair's (Store.candidate_columns)
    student: np.ndarray
    runs: np.ndarray           # where each (cell, eval set) run of candidate rows starts, store-wide, and ends
    starts: np.ndarray         # where each set starts, store-wide (within a run)
    credits: dict              # "teacher" / "student": each set's credit (bench.core.metrics.bon_credits) in a
                               # clean cell, NaN in another
    pair_words: np.ndarray     # the candidates' pair ids by code, a null one (a set built from no pair) as ""
    pairs_implied: np.ndarray  # bool per cell: Store.pairs_implied, for every cell at once

    def scores_of(self, store, i: int, n_pairs: Mapping[str, int]):
        """Cell ``i``'s ScoreColumns where it is clean within ``n_pairs``, else None."""
        from bench.core.columns import ScoreColumns

        lo, hi = store.pair_spans[i], store.pair_spans[i + 1]
        if not (self.scores[i] and hi - lo <= sum(n_pairs.values()) and all(e in n_pairs for e in self.score_sets[i])):
            return None
        return ScoreColumns(*(store.pairs[name][lo:hi] for name in SCORE_COLUMNS))

    def candidates_of(self, store, i: int, n_sets: Mapping[str, int], n: int):
        """Cell ``i``'s CandidateColumns, its sets found (bench.core.columns.well_formed_sets), where it is clean
        within ``n_sets`` sets of at most ``n`` candidates; else None."""
        from bench.core.columns import CandidateColumns, CandidateSets

        lo, hi = store.candidate_spans[i], store.candidate_spans[i + 1]
        if not (self.candidates[i] and self.most[i] < n and hi - lo <= n * sum(n_sets.values())
                and all(e in n_sets for e in self.candidate_sets[i])):
            return None
        c = store.candidates
        columns = CandidateColumns(*(c[name][lo:hi] for name in CANDIDATE_COLUMNS[:5]), self.teacher[lo:hi],
                                   self.student[lo:hi])
        found = {}
        set_words, pair_words = store.codes["candidates.set_id"], store.codes["candidates.pair_id"]
        for r in range(*np.searchsorted(self.runs[:-1], [lo, hi])):
            a, b = self.runs[r], self.runs[r + 1]
            held = slice(*np.searchsorted(self.starts, [a, b]))
            starts = self.starts[held]
            own = found[c["eval_set"][a]] = CandidateSets(
                tuple(set_words[1][set_words[0][starts]].tolist()),
                tuple(self.pair_words[pair_words[0][starts]].tolist()),
                np.diff(np.append(starts, b)), c["grade"][a:b], self.teacher[a:b], self.student[a:b])
            own.__dict__["_credits"] = {who: credits[held] for who, credits in self.credits.items()}   # as credits() keeps them
        columns.__dict__["_well_formed"] = found   # as bench.core.columns.well_formed_sets keeps what it found
        return columns


# A key of a cell's, an eval set's and an id's codes takes cells x eval sets x ids values: they must fit an int64.
_KEYS = 1 << 62
_IDS = ("pairs.eval_set", "pairs.pair_id", "candidates.eval_set", "candidates.set_id", "candidates.pair_id")


def clean_cells(store) -> _Clean | None:
    """``store``'s cells checked at once (``_Clean``), computed once per store; None where its ids are not kept as
    dictionaries of distinct words (then a code does not stand for one word), or a column not as the store writes it
    (numbers, integers), or of so many cells and words that a key of a cell's, an eval set's and an id's codes would
    not fit an int64: then every cell is read per cell."""
    if "_clean" not in store.__dict__:   # a frozen dataclass: set behind its back, as Store.index does
        codes, p, c = store.codes, store.pairs, store.candidates
        ok = all(name in codes and len(set(codes[name][1].tolist())) == len(codes[name][1]) for name in _IDS) and \
            all(a.dtype == np.float64 for a in (*(p[k] for k in SCORE_COLUMNS[2:]), *(c[k] for k in CANDIDATE_COLUMNS[4:]))) \
            and all(a.dtype == np.int64 for a in (p["cell"], c["cell"], c["candidate"])) \
            and all(len(store.paths) * len(codes[f"{table}.eval_set"][1]) * len(codes[f"{table}.{ids}"][1]) < _KEYS
                    for table, ids in (("pairs", "pair_id"), ("candidates", "set_id")))   # the keys fit an int64
        object.__setattr__(store, "_clean", _clean_cells(store) if ok else None)
    return store.__dict__["_clean"]


def _per_cell(cell: np.ndarray, bad: np.ndarray, n: int) -> np.ndarray:
    """Per cell, whether none of its rows is ``bad``."""
    return np.bincount(cell[bad], minlength=n) == 0


def _names_per_cell(cell: np.ndarray, code: np.ndarray, words: np.ndarray, n: int) -> tuple[list, np.ndarray]:
    """Per cell, the set of words its rows name; and how many distinct ones (the rows grouped by cell)."""
    heads = np.ones(len(cell), dtype=bool)   # a row's word is that of the first of its run: those name them all
    heads[1:] = (cell[1:] != cell[:-1]) | (code[1:] != code[:-1])
    both = np.unique(cell[heads] * len(words) + code[heads])
    names: list = [set() for _ in range(n)]
    for c, w in zip((both // len(words)).tolist(), words[both % len(words)].tolist()):
        names[c].add(w)
    return names, np.bincount(both // len(words), minlength=n)


class _WordFacts(NamedTuple):
    words: np.ndarray   # held, so that the id it is kept under names no other array while it is kept
    safe: np.ndarray    # per word: its text is safe (bench.submissions.limits.unsafe_text)
    blank: np.ndarray   # per word: null or "" (a candidate set built from no pair)
    text: np.ndarray    # the words, a blank one as ""


_FACTS: dict[int, _WordFacts] = {}   # id of a store's words (bench.core.store.Store.codes) -> their facts
_FACTS_KEPT = 64


def _facts(words: np.ndarray) -> _WordFacts:
    """What the checks read of each word of a dictionary, found once per dictionary: the stores of one protocol hold
    the very same word arrays (bench.core.store decodes each distinct dictionary once)."""
    found = _FACTS.get(id(words))
    if found is None or found.words is not words:
        listed = words.tolist()
        blank = np.array([not w for w in listed], dtype=bool)
        found = _WordFacts(words, np.array([_unsafe(w) is None for w in listed], dtype=bool), blank,
                           np.where(blank, "", words).astype(object))
        for array in found[1:]:
            array.flags.writeable = False
        keep(_FACTS, id(words), found, _FACTS_KEPT)
    return found


def _safe_words(words: np.ndarray) -> np.ndarray:
    return _facts(words).safe


def _clean_cells(store) -> _Clean:
    from bench.core.metrics import bon_credits

    n, codes = len(store.paths), store.codes
    # pairs: finite, safe ids, no key twice within a cell
    p = store.pairs
    p_cell = p["cell"].astype(np.int64)
    (p_eval, p_eval_words), (p_id, p_id_words) = codes["pairs.eval_set"], codes["pairs.pair_id"]
    finite = np.logical_and.reduce([np.isfinite(p[name]) for name in SCORE_COLUMNS[2:]]) if len(p_cell) else \
        np.ones(0, dtype=bool)
    scores = _per_cell(p_cell, ~(finite & _safe_words(p_id_words)[p_id]), n)
    keys = (p_cell * len(p_eval_words) + p_eval) * len(p_id_words) + p_id
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    twice = np.flatnonzero(ordered[1:] == ordered[:-1])
    scores[p_cell[order][twice]] = False
    score_sets, _ = _names_per_cell(p_cell, p_eval, p_eval_words, n)

    # candidates: implied scores found in the cell's pairs, finite, safe ids, well-formed sets in runs
    c = store.candidates
    c_cell = c["cell"].astype(np.int64)
    (c_eval, c_eval_words), (c_set, c_set_words), (c_pair, c_pair_words) = (codes[f"candidates.{name}"] for name in
                                                                             ("eval_set", "set_id", "pair_id"))
    candidate, m = c["candidate"], len(c_cell)
    teacher, student = c["teacher"].copy(), c["student"].copy()
    bad = np.zeros(m, dtype=bool)
    implied = np.flatnonzero(c["implied"])
    if len(implied):
        as_eval = {w: k for k, w in enumerate(p_eval_words.tolist())}
        as_id = {w: k for k, w in enumerate(p_id_words.tolist())}
        e = np.array([as_eval.get(w, -1) for w in c_eval_words.tolist()], dtype=np.int64)[c_eval[implied]]
        q = np.array([as_id.get(w, -1) for w in c_pair_words.tolist()], dtype=np.int64)[c_pair[implied]]
        wanted = (c_cell[implied] * len(p_eval_words) + e) * len(p_id_words) + q
        at = np.minimum(np.searchsorted(ordered, wanted), max(len(keys) - 1, 0))
        side = candidate[implied]
        found = (e >= 0) & (q >= 0) & (side <= 1) & (len(keys) > 0)
        found[found] = ordered[at[found]] == wanted[found]
        bad[implied[~found]] = True
        filled, row = implied[found], order[at[found]]
        for k in (0, 1):
            mine = side[found] == k
            teacher[filled[mine]] = p[SCORE_COLUMNS[2 + k]][row[mine]]
            student[filled[mine]] = p[SCORE_COLUMNS[4 + k]][row[mine]]
    bad |= ~(np.isfinite(c["grade"]) & np.isfinite(teacher) & np.isfinite(student))
    bad |= ~(_safe_words(c_set_words)[c_set] & _safe_words(c_pair_words)[c_pair])
    run = np.ones(m, dtype=bool)
    run[1:] = (c_cell[1:] != c_cell[:-1]) | (c_eval[1:] != c_eval[:-1])
    first = run.copy()
    first[1:] |= c_set[1:] != c_set[:-1]
    starts = np.flatnonzero(first)
    sizes = np.diff(np.append(starts, m))
    of_set = np.cumsum(first) - 1
    bad |= candidate != np.arange(m) - starts[of_set]
    bad |= c_pair != c_pair[starts][of_set]
    bad[starts[sizes < 2]] = True
    candidates = _per_cell(c_cell, bad, n) & scores
    set_keys = np.sort((c_cell[starts] * len(c_eval_words) + c_eval[starts]) * len(c_set_words) + c_set[starts])
    candidates[(set_keys[np.flatnonzero(set_keys[1:] == set_keys[:-1])] // len(c_set_words)) // len(c_eval_words)] = False
    candidate_sets, distinct = _names_per_cell(c_cell, c_eval, c_eval_words, n)
    runs = np.flatnonzero(run)
    candidates &= np.bincount(c_cell[runs], minlength=n) == distinct   # each eval set's rows together
    most = np.full(n, -1, dtype=np.int64)
    held = np.flatnonzero(np.diff(store.candidate_spans) > 0)
    if len(held):
        most[held] = np.maximum.reduceat(candidate, store.candidate_spans[held])
    # the credits of every set of the clean cells in one bon_credits (each set's is its own, whatever is beside it)
    rows, sets = candidates[c_cell], candidates[c_cell[starts]]
    credits = {}
    for who, score in (("teacher", teacher), ("student", student)):
        credits[who] = np.full(len(starts), np.nan)
        credits[who][sets] = bon_credits(score[rows], c["grade"][rows], sizes[sets])
        credits[who].flags.writeable = False
    teacher.flags.writeable = student.flags.writeable = False   # shared by every cell's columns: read, never written
    pair_words = _facts(c_pair_words)
    from_pair = (candidate < 2) & ~pair_words.blank[c_pair]
    return _Clean(scores, score_sets, candidates, candidate_sets, most, teacher, student, np.append(runs, m), starts,
                  credits, pair_words.text, _per_cell(c_cell, from_pair & ~c["implied"], n))


def stored_scores(v: Validation, rel: str, store, i: int, n_pairs: Mapping[str, int]):
    """``read_scores`` for cell ``i`` of a store, as columns (bench.core.columns.ScoreColumns): the same checks (a
    row's eval set, a pair given twice, its id's text, finite scores) on the store's arrays; None after recording
    what is wrong, worded row by row."""
    from bench.core.columns import ScoreColumns

    clean = clean_cells(store)
    found = None if clean is None else clean.scores_of(store, i, n_pairs)
    if found is not None:
        return found
    lo, hi = store.pair_spans[i], store.pair_spans[i + 1]
    eval_set, pair_id = (store.pairs[name][lo:hi] for name in SCORE_COLUMNS[:2])
    numbers = np.column_stack([store.pairs[name][lo:hi] for name in SCORE_COLUMNS[2:]])
    keys = [eval_set.tolist(), pair_id.tolist()]
    if len(numbers) <= sum(n_pairs.values()) and np.isfinite(numbers).all() and \
            _clean_keys(keys, n_pairs, list(zip(*keys))):
        return ScoreColumns(eval_set, pair_id, *numbers.T)
    seen: set = set()

    def judge(k: int, row: tuple) -> tuple[str, str] | None:
        eval_set, pair_id = row[0], row[1]
        if eval_set not in n_pairs:
            return "eval_set", f"row {k + 1}: eval set {str(eval_set)[:60]!r} is not one of this cell's"
        if (eval_set, pair_id) in seen:
            return "twice", f"row {k + 1}: pair {str(pair_id)[:60]!r} of {eval_set} twice"
        seen.add((eval_set, pair_id))
        what = _unsafe(pair_id)
        return ("text", f"row {k + 1}: pair id contains {what}") if what else None

    _stored_rows(v, rel, keys, numbers, sum(n_pairs.values()), "the pairs its result.json's eval sets declare "
                 "(n_pairs)", judge, _BAD_KINDS)
    return None


def stored_candidates(v: Validation, rel: str, store, i: int, n_sets: Mapping[str, int], n: int, scores=None):
    """``read_candidates`` for cell ``i`` of a store, as columns (bench.core.columns.CandidateColumns), the scores of
    candidates 0 and 1 of a pair's set filled in from the pair's (bench.core.store.Store.candidate_columns); None
    after recording what is wrong. ``scores``: the cell's ScoreColumns (``stored_scores``'), which the columns are
    marked as built from where the store implies every such candidate (bench.core.columns.built_from)."""
    from bench.core.columns import CandidateColumns, built_from, well_formed_sets
    from bench.core.store import StoreError

    clean = clean_cells(store)
    found = None if clean is None else clean.candidates_of(store, i, n_sets, n)
    if found is not None:
        return built_from(found, scores) if scores is not None and clean.pairs_implied[i] else found
    try:
        eval_set, set_id, pair_id, candidate, grade, teacher, student = store.candidate_columns(i)
    except StoreError as error:
        v.error(rel, "", str(error).split(": ", 1)[-1], REGENERATE)
        return None
    numbers = np.column_stack([grade, teacher, student])
    keys = [eval_set.tolist(), set_id.tolist(), pair_id.tolist()]
    if len(numbers) <= n * sum(n_sets.values()) and np.isfinite(numbers).all() and (candidate < n).all() and \
            _clean_keys(keys, n_sets):
        columns = CandidateColumns(eval_set, set_id, pair_id, candidate, grade, teacher, student)
        # well-formed sets (found once, and read again by the recompute) hold no candidate twice: each set's
        # rows are candidates 0, 1, ... and no set id starts two sets; only other rows need the check by key
        if well_formed_sets(columns) is not None or _unique(list(zip(keys[0], keys[1], candidate.tolist()))):
            return built_from(columns, scores) if scores is not None and store.pairs_implied(i) else columns
    keys.append([str(c) for c in candidate.tolist()])   # the index as a file writes it, for the messages
    seen: set = set()

    def judge(k: int, row: tuple) -> tuple[str, str] | None:
        eval_set, set_id, pair_id, candidate = row[:4]
        if eval_set not in n_sets:
            return "eval_set", f"row {k + 1}: eval set {str(eval_set)[:60]!r} is not one of this cell's"
        what = _unsafe(set_id) or _unsafe(pair_id)
        if what:
            return "text", f"row {k + 1}: set or pair id contains {what}"
        if not int(candidate) < n:
            return "candidate", f"row {k + 1}: candidate {candidate} of set {set_id[:60]!r} is not 0 to {n - 1}"
        if (eval_set, set_id, candidate) in seen:
            return "twice", f"row {k + 1}: candidate {candidate} of set {set_id[:60]!r} of {eval_set} twice"
        seen.add((eval_set, set_id, candidate))
        return None

    _stored_rows(v, rel, keys, numbers, n * sum(n_sets.values()), f"{n} candidates for each set its result.json's "
                 "eval sets declare (n_sets)", judge, _BAD_CANDIDATE_KINDS)
    return None
