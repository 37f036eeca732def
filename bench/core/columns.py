"""A cell's score files as columns: ``ScoreColumns`` (SCORES_FILE, one row per eval pair) and
``CandidateColumns`` (CANDIDATES_FILE, one row per candidate), each column one numpy array in file order.
bench.core.results.recompute and bench.core.cells.cell_from_scores take them in place of rows and read
them with a few array operations per eval set rather than Python per row.

Columns mean exactly what their rows mean (``as_rows``): every number is the one ``float`` reads from the
row, a candidate set is its rows in file order as bench.core.results.candidate_sets_from_rows reads them,
and whatever is wrong is the error that row-by-row reading raises, in its words. So only columns of
well-formed rows are read as columns (``read``: every column there, every number finite, every
candidate index written as a plain whole number, ``well_formed_sets``); for anything else the callers
read the rows one by one, as they always did, and that reading words the problem.
"""
from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, Hashable, Iterable, Mapping, NamedTuple, Sequence

import numpy as np

from bench.core.metrics import accuracy, bon_credits
from bench.core.result_schema import CANDIDATE_COLUMNS, CANDIDATES_FILE, SCORE_COLUMNS

_SCORES = SCORE_COLUMNS[2:]       # teacher_chosen, teacher_rejected, student_chosen, student_rejected
_NUMBERS = CANDIDATE_COLUMNS[4:]  # grade, teacher, student
# A candidate index as a file writes it ("0", "1", ...) -> its number: a dict look-up per row, where int()
# and the check that str() gives the text back cost ten times as much. Larger ones take that slower way.
_INDEX = {str(i): i for i in range(256)}


def _objects(values: Sequence[Any]) -> np.ndarray:
    """A 1-D object array of ``values`` as they are (np.array would make a tuple id a row of its own)."""
    return np.fromiter(values, dtype=object, count=len(values))


def _floats(values: Iterable[Any], n: int) -> np.ndarray:
    """``float(v)`` of each value, as the row-by-row readers convert a cell (text or a number alike)."""
    return np.fromiter(map(float, values), dtype=np.float64, count=n)


def _as_text(values: Any) -> np.ndarray:
    """An id column as an object array of Python values (a numpy unicode array's items are np.str_,
    whose repr would change the wording of an error that quotes one)."""
    array = np.asarray(values)
    return array if array.dtype == object else array.astype(object)


def _check_shapes(columns: Any, names: Sequence[str]) -> None:
    shapes = [getattr(columns, name).shape for name in names]
    if len(set(shapes)) != 1 or len(shapes[0]) != 1:
        raise ValueError(f"the columns {', '.join(names)} must be 1-D and of one length, got shapes {shapes}")


def groups(values: np.ndarray) -> dict[Hashable, np.ndarray]:
    """``{value: the indices holding it, in order}``, values in order of first appearance: the eval sets of
    a file as the row-by-row readers collect them (a dict keyed by eval set, filled row by row)."""
    items = values.tolist()
    names = list(dict.fromkeys(items))
    if len(names) <= 1:
        return {name: np.arange(len(items)) for name in names}
    changes = np.flatnonzero(values[1:] != values[:-1]) + 1
    if len(changes) == len(names) - 1:   # each value's entries together, as a file writes an eval set's rows
        bounds = [0, *changes.tolist(), len(items)]
        return {name: np.arange(bounds[i], bounds[i + 1]) for i, name in enumerate(names)}
    code = {name: i for i, name in enumerate(names)}
    codes = np.fromiter(map(code.__getitem__, items), dtype=np.intp, count=len(items))
    order = np.argsort(codes, kind="stable")
    bounds = np.searchsorted(codes[order], np.arange(len(names) + 1))
    return {name: order[bounds[i]:bounds[i + 1]] for i, name in enumerate(names)}


class _Columns:
    """What score and candidate columns share: their length, and reading rows that may not read cleanly (``read``:
    a subclass's ``_convert`` and ``finite`` say what clean is; anything else only the row-by-row reading words)."""

    eval_set: np.ndarray

    def __len__(self) -> int:
        return len(self.eval_set)

    @classmethod
    def given(cls, rows: Iterable[Mapping] | Any) -> tuple[Any, Any]:
        """``rows`` (as a list) and their columns, or None where they do not read cleanly (``read``); columns given
        are their own."""
        if isinstance(rows, cls):
            return rows, rows
        rows = list(rows)
        return rows, cls.read(rows)

    @classmethod
    def read(cls, rows: list[Mapping]) -> Any:
        """The columns of rows that read cleanly, else None."""
        try:
            columns = cls._convert(rows)
        except Exception:   # whatever a row does wrong, the row-by-row reading says it, in its words
            return None
        return columns if columns.finite() else None


@dataclass(frozen=True, eq=False)
class ScoreColumns(_Columns):
    """SCORES_FILE's columns, one entry per pair in file order: ``eval_set`` and ``pair_id`` (object arrays of
    str), the four scores (float64). ``source``: the rows they were read from (``from_rows``), which an error
    quotes, so that a score reads as its file writes it."""

    eval_set: np.ndarray
    pair_id: np.ndarray
    teacher_chosen: np.ndarray
    teacher_rejected: np.ndarray
    student_chosen: np.ndarray
    student_rejected: np.ndarray
    source: Sequence[Mapping] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in SCORE_COLUMNS:
            value = getattr(self, name)
            object.__setattr__(self, name, _as_text(value) if name in SCORE_COLUMNS[:2]
                               else np.asarray(value, dtype=np.float64))
        _check_shapes(self, SCORE_COLUMNS)

    @classmethod
    def _convert(cls, rows: list[Mapping]) -> ScoreColumns:
        """Clean rows (``read``): every row has every column and four scores, finite (``finite``); anything else
        raises, and only the row-by-row reading (bench.core.results.accuracies_from_scores) words it."""
        n = len(rows)
        return cls(_objects(list(map(itemgetter("eval_set"), rows))), _objects(list(map(itemgetter("pair_id"), rows))),
                   *(_floats(map(itemgetter(name), rows), n) for name in _SCORES), source=rows)

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping]) -> ScoreColumns:
        """The columns of SCORES_FILE rows (as csv.DictReader gives them, or with float scores). Raises what
        bench.core.results.accuracies_from_scores raises for such rows (a ValueError naming the eval set, pair
        and column), or KeyError for a row without a pair_id."""
        rows = list(rows)
        columns = cls.read(rows)
        if columns is None:
            accuracies_from_scores(rows)   # reads row by row: raises what is wrong
            columns = cls._convert(rows)   # it passed, so what is missing is a pair_id (KeyError), or nothing
        return columns

    def finite(self) -> bool:
        return all(np.isfinite(getattr(self, name)).all() for name in _SCORES)

    def groups(self) -> dict[Hashable, np.ndarray]:
        """Per eval set, in order of first appearance, the indices of its pairs in file order."""
        return groups(self.eval_set)

    def as_rows(self) -> list[Mapping]:
        """The rows these columns mean: the ones they were read from, else a dict per pair with float scores."""
        if self.source is not None:
            return list(self.source)
        values = [getattr(self, name).tolist() for name in SCORE_COLUMNS]
        return [dict(zip(SCORE_COLUMNS, row)) for row in zip(*values)]


@dataclass(frozen=True, eq=False)
class CandidateSets:
    """One eval set's candidate sets laid end to end, in file order: set i is ``sizes[i]`` (two or more)
    consecutive entries of ``grade``, ``teacher`` and ``student``, its candidates 0, 1, ... in order;
    ``pair_ids[i]`` the eval pair it is built from, "" for none."""

    set_ids: tuple
    pair_ids: tuple
    sizes: np.ndarray      # int64
    grade: np.ndarray      # float64, as the three below
    teacher: np.ndarray
    student: np.ndarray

    def __len__(self) -> int:
        return len(self.set_ids)

    @property
    def starts(self) -> np.ndarray:
        """Where each set's candidate 0 is."""
        return np.cumsum(self.sizes) - self.sizes

    def credits(self, who: str) -> np.ndarray:
        """Each set's credit |T ∩ B| / |T| for ``who`` ("teacher" or "student"): bench.core.metrics.bon_credit.
        Computed once (validation reads them for the cell's BoN numbers and again for its Cell), read-only."""
        cached = self.__dict__.setdefault("_credits", {})
        if who not in cached:
            cached[who] = bon_credits(getattr(self, who), self.grade, self.sizes)
            cached[who].flags.writeable = False
        return cached[who]

    def one_by_one(self) -> list[tuple]:
        """Each set as (set_id, pair_id, grades, teacher, student), the three as lists of floats in candidate
        order: the fields of bench.core.results.SetScores."""
        bounds = np.cumsum(self.sizes).tolist()
        grade, teacher, student = self.grade.tolist(), self.teacher.tolist(), self.student.tolist()
        return [(set_id, pair_id, grade[a:b], teacher[a:b], student[a:b])
                for set_id, pair_id, a, b in zip(self.set_ids, self.pair_ids, [0, *bounds], bounds)]

    @classmethod
    def of(cls, sets: Sequence[Any]) -> CandidateSets:
        """From sets given one by one (bench.core.results.SetScores: set_id, pair_id, grades, teacher, student)."""
        def joined(name: str) -> np.ndarray:
            parts = [np.asarray(getattr(s, name), dtype=np.float64) for s in sets]
            return np.concatenate(parts) if parts else np.zeros(0)

        return cls(tuple(s.set_id for s in sets), tuple(s.pair_id for s in sets),
                   np.array([len(s.grades) for s in sets], dtype=np.int64),
                   joined("grades"), joined("teacher"), joined("student"))


@dataclass(frozen=True, eq=False)
class CandidateColumns(_Columns):
    """CANDIDATES_FILE's columns, one entry per candidate in file order: ``eval_set``, ``set_id``, ``pair_id``
    (object arrays of str; None where a row lacks the column, as the row-by-row reading's ``row.get`` has
    it), ``candidate`` (int64: the index the row's text writes), ``grade``, ``teacher``, ``student``
    (float64). ``source``: the rows they were read from (``from_rows``), which an error quotes."""

    eval_set: np.ndarray
    set_id: np.ndarray
    pair_id: np.ndarray
    candidate: np.ndarray
    grade: np.ndarray
    teacher: np.ndarray
    student: np.ndarray
    source: Sequence[Mapping] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        for name in CANDIDATE_COLUMNS:
            value = getattr(self, name)
            object.__setattr__(self, name, _as_text(value) if name in CANDIDATE_COLUMNS[:3]
                               else np.asarray(value, dtype=np.int64 if name == "candidate" else np.float64))
        _check_shapes(self, CANDIDATE_COLUMNS)

    @classmethod
    def _convert(cls, rows: list[Mapping]) -> CandidateColumns:
        """Clean rows (``read``): every grade and score there, finite (``finite``), every candidate index written as a
        plain whole number ("0", "1", ...); anything else raises, and only the row-by-row reading
        (bench.core.results.candidate_sets_from_rows) words it."""
        n = len(rows)
        ids = [_objects([row.get(name) for row in rows]) for name in CANDIDATE_COLUMNS[:3]]
        text = [row.get("candidate") for row in rows]
        try:
            candidate = np.fromiter(map(_INDEX.__getitem__, text), dtype=np.int64, count=n)
        except (KeyError, TypeError):
            candidate = np.fromiter(map(int, text), dtype=np.int64, count=n)
            # the row-by-row reading compares the text with "0", "1", ...: "01", " 1" or 1.0 is no index
            if list(map(str, candidate.tolist())) != text:
                raise ValueError("a candidate index is not written as a plain whole number") from None
        return cls(*ids, candidate, *(_floats(map(itemgetter(name), rows), n) for name in _NUMBERS), source=rows)

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping]) -> CandidateColumns:
        """The columns of CANDIDATES_FILE rows (as csv.DictReader gives them, or with float numbers), in any
        order: whether they are candidate sets is for ``sets``. Raises what
        bench.core.results.candidate_sets_from_rows raises for rows that do not read cleanly (a grade or
        score that is not a finite number, a candidate index that is not one)."""
        rows = list(rows)
        columns = cls.read(rows)
        if columns is None:
            candidate_sets_from_rows(rows)   # reads row by row: raises what is wrong
            columns = cls._convert(rows)     # reached only for rows it accepts, which convert
        return columns

    def finite(self) -> bool:
        return all(np.isfinite(getattr(self, name)).all() for name in _NUMBERS)

    def as_rows(self) -> list[Mapping]:
        """The rows these columns mean: the ones they were read from, else a dict per candidate with float
        numbers and the candidate index as text, as a file writes it."""
        if self.source is not None:
            return list(self.source)
        values = [getattr(self, name).tolist() for name in CANDIDATE_COLUMNS]
        values[3] = list(map(str, values[3]))
        return [dict(zip(CANDIDATE_COLUMNS, row)) for row in zip(*values)]

    def sets(self) -> dict[Hashable, CandidateSets]:
        """Per eval set, in order of first appearance, its candidate sets in file order. Raises the ValueError
        bench.core.results.candidate_sets_from_rows raises for these rows when they are not such sets."""
        found = well_formed_sets(self)
        if found is None:
            # it raises: it reads the rows one by one to the first that is out of place and names it
            found = {name: CandidateSets.of(own) for name, own in candidate_sets_from_rows(self.as_rows()).items()}
        return found


def well_formed_sets(columns: CandidateColumns) -> dict[Hashable, CandidateSets] | None:
    """``columns.sets()`` when the rows are well-formed sets, else None (the row-by-row reading then says why).

    Row by row, bench.core.results.candidate_sets_from_rows adds a row to its eval set's last set when the
    row has that set's id, the next candidate index and the set's pair id (its first row's, "" if that is
    empty), and else starts a set with it when it is candidate 0 of a set id not yet seen. It accepts a
    file exactly when, within each eval set's rows: a set starts wherever the set id changes, each set's
    rows are candidates 0, 1, 2, ... with its pair id, each set has two or more, and no set id starts two
    sets. Those are the checks here, on whole columns; every number must be finite too."""
    if "_well_formed" not in columns.__dict__:   # columns are not changed once made: their sets are found once
        columns.__dict__["_well_formed"] = _well_formed_sets(columns)
    return columns.__dict__["_well_formed"]


def _well_formed_sets(columns: CandidateColumns) -> dict[Hashable, CandidateSets] | None:
    if not columns.finite():
        return None
    found = {}
    for name, at in groups(columns.eval_set).items():
        set_id, pair_id, candidate = columns.set_id[at], columns.pair_id[at], columns.candidate[at]
        n = len(at)
        first = np.ones(n, dtype=bool)
        first[1:] = set_id[1:] != set_id[:-1]
        starts = np.flatnonzero(first)
        sizes = np.diff(np.append(starts, n))
        of_set = np.cumsum(first) - 1
        if (sizes < 2).any() or not np.array_equal(candidate, np.arange(n) - starts[of_set]):
            return None
        pairs = [p or "" for p in pair_id[starts].tolist()]
        rest = ~first
        if not (pair_id[rest] == _objects(pairs)[of_set[rest]]).all():
            return None
        ids = set_id[starts].tolist()
        if len(set(ids)) != len(ids):
            return None
        found[name] = CandidateSets(tuple(ids), tuple(pairs), sizes.astype(np.int64), columns.grade[at],
                                    columns.teacher[at], columns.student[at])
    return found


def built_from(candidates: CandidateColumns, scores: ScoreColumns) -> CandidateColumns:
    """``candidates``, marked as taking the candidates 0 and 1 of every set built from a pair from that pair's row of
    ``scores`` (a store keeps them so, bench.core.store.Store.pairs_implied): they match by construction, so the
    recompute does not compare them again (``matched_by_construction``)."""
    candidates.__dict__["_built_from"] = scores
    return candidates


def matched_by_construction(candidates: CandidateColumns, scores: ScoreColumns) -> bool:
    """Whether ``candidates`` were marked ``built_from`` these very ``scores``: then ``sets_match_pairs`` holds."""
    return candidates.__dict__.get("_built_from") is scores


def sets_match_pairs(sets: Mapping[Hashable, CandidateSets], scores: ScoreColumns) -> bool:
    """Whether every set built from an eval pair (its pair id not "") names a pair that ``scores`` scores, and
    its candidates 0 and 1 have that pair's chosen and rejected scores, teacher's and student's, float for
    float (bench.core.candidates builds them from the pair's two responses). A pair scored twice counts with
    its last row, as bench.core.results._candidates_match_pairs has it, which says what is wrong when not."""
    row_of = dict(zip(zip(scores.eval_set.tolist(), scores.pair_id.tolist()), range(len(scores))))
    for eval_set, own in sets.items():
        at = np.array([row_of.get((eval_set, pair_id), -1) if pair_id else -2 for pair_id in own.pair_ids],
                      dtype=np.intp)
        named = at != -2
        row, first = at[named], own.starts[named]
        if (row < 0).any():
            return False
        for who in ("teacher", "student"):
            mine = getattr(own, who)
            if not (np.array_equal(mine[first], getattr(scores, f"{who}_chosen")[row])
                    and np.array_equal(mine[first + 1], getattr(scores, f"{who}_rejected")[row])):
                return False
    return True


# --- the row-by-row readers: what the columns stand for, and the words of every error --------------------------
def accuracies_from_scores(rows: Iterable[dict[str, str]]) -> dict[str, dict[str, float]]:
    """``{eval_set: {"teacher": acc, "student": acc, "n_pairs": n}}`` from per-pair score rows, or their columns
    (bench.core.columns.ScoreColumns). Raises ValueError naming the eval set, pair and column of a score that is
    not a finite number. Well-formed rows are read as columns, one ``accuracy`` per eval set and model; the loop
    below reads any others row by row, and says what is wrong with the first row at fault."""
    rows, read = ScoreColumns.given(rows)
    if read is not None and read.finite():
        return {eval_set: {"teacher": accuracy(read.teacher_chosen[at], read.teacher_rejected[at]),
                           "student": accuracy(read.student_chosen[at], read.student_rejected[at]),
                           "n_pairs": len(at)}
                for eval_set, at in read.groups().items()}
    if read is not None:
        rows = read.as_rows()
    columns: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        for name in SCORE_COLUMNS[2:]:
            try:
                value = float(row[name])
            except (KeyError, TypeError, ValueError):
                raise ValueError(f"{row.get('eval_set')}: pair {row.get('pair_id')!r} has no number in column {name}; "
                                 f"a scores file has the columns {', '.join(SCORE_COLUMNS)}") from None
            if not math.isfinite(value):
                raise ValueError(f"{row['eval_set']}: pair {row['pair_id']!r} has {name} = {row[name]}, not a finite "
                                 "score; the model that produced it is broken (NaN or infinite weights): rerun the cell")
            columns[row["eval_set"]][name].append(value)
    return {
        eval_set: {"teacher": accuracy(c["teacher_chosen"], c["teacher_rejected"]),
                   "student": accuracy(c["student_chosen"], c["student_rejected"]),
                   "n_pairs": len(c["teacher_chosen"])}
        for eval_set, c in columns.items()
    }


class SetScores(NamedTuple):
    """One candidate set's rows of CANDIDATES_FILE: its grades and scores in candidate order."""

    set_id: str
    pair_id: str                       # "" for a set not built from an eval pair
    grades: list[float]
    teacher: list[float]
    student: list[float]


def candidate_sets_from_rows(rows: Iterable[dict[str, str]]) -> dict[str, list[SetScores]]:
    """Per eval set, its candidate sets in file order, from CANDIDATES_FILE rows. Raises ValueError naming the
    eval set, set and column of what is wrong: a grade or score that is not a finite number, a set whose rows
    are not its candidates 0, 1, ... in order (two or more) or name two pairs, a set id given twice. Rows that read
    cleanly are checked as columns (bench.core.columns.well_formed_sets, which accepts exactly the files this loop
    does); the loop below reads any other rows one by one (columns given as bench.core.columns.CandidateColumns:
    the rows they mean), and says what is wrong with the first row at fault."""
    rows, read = CandidateColumns.given(rows)
    found = None if read is None else well_formed_sets(read)
    if found is not None:
        return {eval_set: [SetScores(*one) for one in own.one_by_one()] for eval_set, own in found.items()}
    if read is not None:
        rows = read.as_rows()
    sets: dict[str, list[SetScores]] = defaultdict(list)
    seen: set[tuple[str, str]] = set()
    for row in rows:
        eval_set, set_id, candidate = row.get("eval_set"), row.get("set_id"), row.get("candidate")
        where = f"{eval_set}: set {set_id!r} of {CANDIDATES_FILE}"
        values = {}
        for name in ("grade", "teacher", "student"):
            try:
                values[name] = float(row[name])
            except (KeyError, TypeError, ValueError):
                raise ValueError(f"{where}: candidate {candidate} has no number in column {name}; a candidates file "
                                 f"has the columns {', '.join(CANDIDATE_COLUMNS)}") from None
            if not math.isfinite(values[name]):
                raise ValueError(f"{where}: candidate {candidate} has {name} = {row[name]}, not a finite number; the "
                                 "model that produced it is broken (NaN or infinite weights): rerun the cell")
        own = sets[eval_set]
        if own and own[-1].set_id == set_id and candidate == str(len(own[-1].grades)) and \
                row.get("pair_id") == own[-1].pair_id:
            current = own[-1]
        elif candidate == "0" and (eval_set, set_id) not in seen:
            seen.add((eval_set, set_id))
            current = SetScores(set_id, row.get("pair_id") or "", [], [], [])
            own.append(current)
        else:
            raise ValueError(f"{where}: row of candidate {candidate!r} is out of place: a set's rows are its candidates "
                             "0, 1, 2, ... in order, together, with one pair_id, and a set id appears once per eval set")
        for name, column in (("grade", current.grades), ("teacher", current.teacher), ("student", current.student)):
            column.append(values[name])
    for eval_set, own in sets.items():
        for one in own:
            if len(one.grades) < 2:
                raise ValueError(f"{eval_set}: set {one.set_id!r} of {CANDIDATES_FILE} has one candidate; a set has two "
                                 "or more")
    return dict(sets)
