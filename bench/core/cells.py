"""The cells the statistics read: per method, cell (seed, source) and eval set, the teacher's and the
student's per-pair correctness c in {0, 1/2, 1} (r(chosen) > r(rejected), a tie 1/2:
bench.core.metrics.accuracy), read from a finished cell's result.json and scores.csv.gz
(``cell_from_scores``, ``load_cells``), as rows or as columns (bench.core.columns). bench.core.stats bootstraps
them; the board's validation cache and the reference teachers store the correctness as text (``correctness_text``)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import numpy as np

from bench.core.columns import (
    CandidateColumns,
    CandidateSets,
    ScoreColumns,
    candidate_sets_from_rows,
    well_formed_sets,
)


@dataclass(frozen=True, eq=False)
class EvalSet:
    name: str                 # dataset, e.g. "mini/chat"
    role: str                 # "id" (the source's own test split), "ood" or "far" (a far target, never in NTS:
                              # bench.core.protocols.far_targets)
    pair_ids: tuple[str, ...]
    teacher: np.ndarray       # per-pair correctness, 0 / 0.5 / 1
    student: np.ndarray


@dataclass(frozen=True, eq=False)
class Cell:
    method: str               # the submission slug: method name and params (bench.core.results.params_slug)
    seed: int
    source: str
    category: str
    eval_sets: tuple[EvalSet, ...]   # the ID set first, then the targets in the result's order
    independent: bool = False         # its protocol seeds every (seed, source) cell on its own (ProtocolSpec.seeding)
    looks: tuple[int, int] | None = None   # the seeds a paired comparison may be decided at (ProtocolSpec.looks)
    name: str = ""                    # the method's registered name (with #R for a replicate): slugs are never parsed
    # On a protocol with candidate sets: per eval set (as ``eval_sets``), the teacher's and the student's credit
    # in each set (bench.core.metrics.bon_credit), its ``pair_ids`` the set ids; empty without candidate sets
    bon: tuple[EvalSet, ...] = ()

    @property
    def method_name(self) -> str:
        """The name a user gives for this method (``anchor`` for ``anchor_lam=0.1_layers=last``)."""
        return self.name or self.method


def correctness(chosen: Sequence[float], rejected: Sequence[float]) -> np.ndarray:
    chosen, rejected = np.asarray(chosen, dtype=np.float64), np.asarray(rejected, dtype=np.float64)
    return (chosen > rejected) + 0.5 * (chosen == rejected)


def correctness_text(values: np.ndarray) -> str:
    """Per-pair correctness (0, 1/2 or 1) as one digit each, "0", "1" or "2" halves: how the board's
    cache and the reference teachers (bench.submissions.reference) store verdicts."""
    return ((np.asarray(values) * 2).astype(np.uint8) + ord("0")).tobytes().decode("ascii")


def correctness_from_text(text: str, n: int) -> np.ndarray:
    """``correctness_text``'s inverse; a ValueError unless ``text`` holds ``n`` such digits."""
    halves = np.frombuffer(text.encode("ascii"), dtype=np.uint8) - ord("0")
    if len(halves) != n or (halves > 2).any():
        raise ValueError("per-pair correctness does not match its pairs")
    return halves / 2.0


# the fields of a result.json a Cell is made from (the rest of a schema object is not dumped)
_READ = {"method": {"name", "params"}, "seed": True, "source": True, "category": True, "replicate": True,
         "protocol": True, "eval_sets": True}


def cell_from_scores(result, rows: Iterable[Mapping] | ScoreColumns, where: str = "",
                     candidates: Iterable[Mapping] | CandidateColumns | None = None,
                     protocols: Mapping | None = None) -> Cell:
    """A Cell from a result.json (dict, or its schema object) and its scores rows, as in scores.csv.gz; with
    its candidates.csv.gz rows (``candidates``), its BoN credits too (``Cell.bon``). Either may be given as
    columns (bench.core.columns.ScoreColumns, CandidateColumns). ``protocols``: specs besides the registry's,
    where its far targets are looked up (``far_roles``)."""
    from bench.core.results import params_slug, replicate_slug

    if not isinstance(result, Mapping):     # a schema object (pydantic) rather than the JSON dict: what is read here
        result = result.model_dump(mode="json", include=_READ)
    where = where or f"{result['method']['name']} seed {result['seed']} {result['source']}"
    rows, read = ScoreColumns.given(rows)
    if read is not None and read.finite():
        sets = _eval_sets(result, read, where)
    else:   # rows that do not read as columns, read one by one: an error names the first that is wrong
        sets = _eval_sets_row_by_row(result, rows if read is None else read.as_rows(), where)
    sets = far_roles(result, sets, protocols)
    sets.sort(key=lambda s: s.role != "id")
    if [s.role for s in sets].count("id") != 1 or sets[0].name != result["source"]:
        raise ValueError(f"{where}: needs exactly one ID eval set, the source {result['source']}")
    slug = replicate_slug(params_slug(result["method"]["name"], result["method"]["params"]), result.get("replicate", 0))
    looks = result["protocol"].get("looks")
    return Cell(slug, int(result["seed"]), result["source"], result["category"], tuple(sets),
                result["protocol"].get("seeding") == "per-source", tuple(looks) if looks else None,
                replicate_slug(result["method"]["name"], result.get("replicate", 0)),
                _bon_sets(result, candidates, where, protocols) if candidates is not None else ())


def far_roles(result: Mapping, sets: Iterable[EvalSet], protocols: Mapping | None = None) -> list[EvalSet]:
    """``sets`` with the role "far" on the far targets of the result's protocol and source, which its result.json
    lists as "ood" (bench.core.protocols.far_targets, with ``protocols`` besides the registry's): the statistics
    read NTS from the "ood" sets alone."""
    import dataclasses

    from bench.core.protocols import far_targets

    far = far_targets(result["protocol"]["name"], result["source"], protocols)
    return [dataclasses.replace(s, role="far") if s.name in far else s for s in sets]


def _eval_sets(result: Mapping, read: ScoreColumns, where: str) -> list[EvalSet]:
    """``result``'s eval sets, in its order, from score columns of finite scores (``ScoreColumns.read``)."""
    at_of = read.groups()
    sets = []
    for name, info in result["eval_sets"].items():
        at = at_of.get(name)
        if at is None:
            raise ValueError(f"{where}: no scores for eval set {name}")
        sets.append(EvalSet(name, info["role"], tuple(read.pair_id[at].tolist()),
                            correctness(read.teacher_chosen[at], read.teacher_rejected[at]),
                            correctness(read.student_chosen[at], read.student_rejected[at])))
    return sets


def _eval_sets_row_by_row(result: Mapping, rows: list[Mapping], where: str) -> list[EvalSet]:
    """``_eval_sets`` from rows, one by one: for rows that do not read as columns, whose problem it words (a
    row of an eval set not of ``result`` is not read at all)."""
    columns: dict[str, list] = {name: [] for name in result["eval_sets"]}
    for row in rows:
        if row["eval_set"] in columns:
            columns[row["eval_set"]].append(row)
    sets = []
    for name, info in result["eval_sets"].items():
        got = columns[name]
        if not got:
            raise ValueError(f"{where}: no scores for eval set {name}")
        scores = np.array([[float(r[k]) for k in ("teacher_chosen", "teacher_rejected", "student_chosen",
                                                  "student_rejected")] for r in got])
        if not np.isfinite(scores).all():
            bad = got[int(np.flatnonzero(~np.isfinite(scores).all(1))[0])]["pair_id"]
            raise ValueError(f"{where}: non-finite score in eval set {name} (pair {bad})")
        sets.append(EvalSet(name, info["role"], tuple(r["pair_id"] for r in got),
                            correctness(scores[:, 0], scores[:, 1]), correctness(scores[:, 2], scores[:, 3])))
    return sets


def _bon_sets(result: Mapping, candidates: Iterable[Mapping] | CandidateColumns, where: str,
              protocols: Mapping | None = None) -> tuple[EvalSet, ...]:
    """Per eval set of ``result``, the teacher's and the student's credit in each candidate set, ID first."""
    candidates, read = CandidateColumns.given(candidates)
    by_name = None if read is None else well_formed_sets(read)
    if by_name is None:   # it reads the rows one by one, and raises naming the first out of place
        by_name = {name: CandidateSets.of(own) for name, own in candidate_sets_from_rows(candidates).items()}
    sets = []
    for name, info in result["eval_sets"].items():
        own = by_name.get(name)
        if not own:
            raise ValueError(f"{where}: no candidate sets for eval set {name}")
        sets.append(EvalSet(name, info["role"], own.set_ids, own.credits("teacher"), own.credits("student")))
    return tuple(sorted(far_roles(result, sets, protocols), key=lambda s: s.role != "id"))


def load_cells(folders: Iterable[str | Path], protocols: Mapping | None = None) -> list[Cell]:
    """Cells from finished cell folders (result.json, scores.csv.gz and, where the protocol has candidate sets,
    candidates.csv.gz, read by bench.core.results.read_cell_files); ``protocols`` as ``cell_from_scores``'s."""
    from bench.core.results import read_cell_files

    cells = []
    for folder in map(Path, folders):
        found = read_cell_files(folder)
        if found is None:
            raise ValueError(f"{folder}: not a finished cell (result.json unreadable, scores.csv.gz or candidates.csv.gz "
                             "does not match the sha256 in result.json, or its numbers do not recompute from them)")
        cells.append(cell_from_scores(found.result, found.rows, str(folder), found.candidates, protocols))
    return cells
