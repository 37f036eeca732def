"""The reference teacher of a protocol x model pair: the test pairs every submission scores and the
teacher's verdict on each, against which every submission is checked (``problems``).

The teacher is the shared baseline of every comparison: WRG, AOG and NTS are a student's accuracy less
its teacher's, and two methods are compared pair by pair over one teacher. Every number of a submission
recomputes from its per-pair scores, so a submission that flips some of its teacher's wins, or drops
test pairs its student gets wrong, passes every recomputation; it is refused here instead, by
``bench validate`` and by the board's upload, naming the cell, the eval set and how many pairs differ.

Verdicts, not scores: per test pair whether the teacher scores the chosen response above the rejected
one, below it, or equal (bench.core.cells.correctness, stored as ``correctness_text``). A rerun on another
machine moves the teacher's scores in the fourth decimal and flipped none of 21,600 verdicts
(docs/reliability.md), so an honest submission has the reference's verdicts, and any difference is
refused. On ``mini`` every reference submission agrees with naive's on every verdict.

On a protocol with best-of-N candidate sets the same holds for them, since a set's candidates 0 and 1 are
its pair's and the others are taken on trust otherwise: the reference holds each eval set's candidate sets
(their ids, the pair each extends and every candidate's gold grade: ``CandidateRef``, what the protocol's
sets are) and, per cell and eval set, the teacher's credit in each set (``credit_text``: which share of
its top-scored candidates is gold-best, the number BoN is the mean of). A teacher's score raised on a
non-pair candidate, or a grade edited, changes a credit or a grade and is refused (``candidate_problems``).

Where a submission's reference comes from, the first found:

1. committed: ``references/<protocol>__<models>.json`` beside this module, built from the reference
   submission of ``naive`` (``python -m bench.submissions.make_reference submissions/mini/tiny/naive``); a
   test checks that each equals what its submission gives. It holds the test pairs and the verdicts, and
   the candidate sets and the teacher's credits in them.
2. a folder of submissions (``bench validate DIR``, the board and its upload): the valid ``naive``
   submission of the same protocol and model pair there (``bench.submissions.tree.check_teachers``).
3. a protocol whose datasets are generated (``mini`` and its capped versions): its test splits are
   generated again (seconds, offline), so its test pairs (and candidate sets, with their grades) are
   checked; its teacher cannot be.

With none of these (a protocol of real datasets without a reference submission yet), the test pairs of
every cell of a submission are checked to be the same pairs, and a warning says the teacher is not.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

import numpy as np

from bench.core.cells import Cell, correctness_text
from bench.core.specs import ProtocolSpec
from bench.submissions.limits import REFERENCES

FORMAT = "shiftbench-reference/v2"   # v2: best-of-N candidate sets and the teacher's credits in them
FORMATS = ("shiftbench-reference/v1", FORMAT)   # v1 (no candidate sets) still reads
VERDICT_WORDS = {"2": "chosen above rejected", "1": "a tie", "0": "rejected above chosen"}   # correctness_text's digits


@dataclass(frozen=True)
class Reference:
    protocol: dict                       # name, version and hash of the protocol it is for
    models: str                          # the model pair's name
    origin: str                          # what it was built from, e.g. "submission mini/tiny/naive"
    test_pairs: dict[str, tuple[str, ...]]   # eval set -> its test pair ids, in the order they are scored
    verdicts: dict[tuple[int, str, str], str] | None   # (seed, source, eval set) -> the teacher's verdicts
                                                       # (correctness_text), in test_pairs' order; None: unknown
    # On a protocol with candidate sets: eval set -> its sets in the order they are scored; None: not known
    candidate_sets: dict[str, tuple[CandidateRef, ...]] | None = None
    # (seed, source, eval set) -> the teacher's credit in each set (credit_text), in candidate_sets' order
    credits: dict[tuple[int, str, str], str] | None = None
    # The reference submissions chosen as the best of several on the protocol's own seeds: slug -> the first seed
    # they are decided on (SubmissionFile.fresh_from), which their submissions must keep saying (``chosen_of``)
    chosen: dict[str, int] | None = None

    @functools.cached_property
    def laid_out(self) -> dict[str, tuple]:
        """Per eval set of ``candidate_sets``: its set ids, pair ids, set sizes and grades laid end to end (as
        bench.core.columns.CandidateSets lays a cell's), so that a cell's sets are checked as whole arrays."""
        return {name: (tuple(s.set_id for s in sets), tuple(s.pair_id for s in sets),
                       np.array([len(s.grades) for s in sets], dtype=np.int64),
                       np.array([g for s in sets for g in s.grades], dtype=np.float64))
                for name, sets in (self.candidate_sets or {}).items()}

    def to_json(self) -> dict:
        data = {"format": FORMAT, "protocol": self.protocol, "models": self.models, "origin": self.origin,
                "verdict_format": "per test pair: 2 the teacher scores chosen above rejected, 0 below, 1 a tie",
                "test_pairs": {name: list(ids) for name, ids in self.test_pairs.items()}}
        if self.candidate_sets is not None:
            data["credit_format"] = ("per candidate set: the share of the teacher's top-scored candidates that are "
                                     "gold-best (1, 0, or a fraction such as 1/2 where scores tie at the top)")
            data["candidate_sets"] = {name: [[s.set_id, s.pair_id, list(s.grades)] for s in sets]
                                      for name, sets in self.candidate_sets.items()}
        if self.chosen:
            data["chosen_on_first_seeds"] = dict(sorted(self.chosen.items()))
        credits = self.credits or {}
        data["teacher"] = [{"seed": seed, "source": source, "eval_set": name, "verdicts": text,
                            **({"credits": credits[seed, source, name]} if (seed, source, name) in credits else {})}
                           for (seed, source, name), text in sorted((self.verdicts or {}).items())]
        return data

    @classmethod
    def from_json(cls, data: dict) -> Reference:
        if data.get("format") not in FORMATS:
            raise ValueError(f"format {data.get('format')!r}, not one of {FORMATS}")
        pairs = {name: tuple(ids) for name, ids in data["test_pairs"].items()}
        verdicts = {(int(t["seed"]), t["source"], t["eval_set"]): t["verdicts"] for t in data["teacher"]}
        if any(len(text) != len(pairs[name]) for (_, _, name), text in verdicts.items()):
            raise ValueError("a verdict string does not match its eval set's test pairs")
        sets = data.get("candidate_sets")
        if sets is not None:
            sets = {name: tuple(CandidateRef(set_id, pair_id, tuple(map(float, grades)))
                                for set_id, pair_id, grades in own) for name, own in sets.items()}
        credits = {(int(t["seed"]), t["source"], t["eval_set"]): t["credits"] for t in data["teacher"] if "credits" in t}
        if any(sets is None or len(credit_values(text)) != len(sets.get(name, ())) for (_, _, name), text in credits.items()):
            raise ValueError("a credit string does not match its eval set's candidate sets")
        chosen = {slug: int(seed) for slug, seed in data.get("chosen_on_first_seeds", {}).items()}
        return cls(data["protocol"], data["models"], data["origin"], pairs, verdicts, sets, credits or None,
                   chosen or None)


@dataclass(frozen=True)
class CandidateRef:
    """One candidate set as the protocol makes it: its id, the test pair it extends ("" for none) and each
    candidate's gold grade, in candidate order."""
    set_id: str
    pair_id: str
    grades: tuple[float, ...]


def candidate_refs(sets) -> tuple[CandidateRef, ...]:
    """The CandidateRefs of one eval set's sets laid end to end (bench.core.columns.CandidateSets)."""
    bounds = np.cumsum(sets.sizes).tolist()
    grades = sets.grade.tolist()
    return tuple(CandidateRef(set_id, pair_id or "", tuple(grades[a:b]))
                 for set_id, pair_id, a, b in zip(sets.set_ids, sets.pair_ids, [0, *bounds], bounds))


def credit_text(credits) -> str:
    """Per-set BoN credits (bench.core.metrics.bon_credit: a whole count over a whole count of at most N) as
    text: "1", "0" or the fraction ("1/2", "2/3"), space-separated, in set order."""
    return " ".join(str(Fraction(value).limit_denominator(1 << 16)) for value in np.asarray(credits).tolist())


def credit_values(text: str) -> list[str]:
    return text.split()


@functools.lru_cache(maxsize=4096)
def credit_array(text: str) -> np.ndarray:
    """``credit_text`` read back as floats, each the very double bon_credit's division gives (a fraction of two
    whole counts, correctly rounded either way): credits compare as numbers, not as text made per cell. Read once
    per reference entry (cached), read-only."""
    values = np.array([float(Fraction(token)) for token in credit_values(text)])
    values.flags.writeable = False
    return values


def dumps(data: dict) -> str:
    """A reference as JSON that reads and diffs line by line: one line per eval set's pairs, per verdicts."""
    def block(items: list[str], open_: str, close: str) -> str:
        return open_ + "\n" + ",\n".join(f"  {item}" for item in items) + "\n " + close
    parts = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in data.items()
             if k not in ("test_pairs", "candidate_sets", "teacher")]
    parts.append(' "test_pairs": ' + block([f"{json.dumps(k)}: {json.dumps(v)}" for k, v in data["test_pairs"].items()],
                                            "{", "}"))
    if "candidate_sets" in data:
        parts.append(' "candidate_sets": ' + block([f"{json.dumps(k)}: {json.dumps(v)}"
                                                    for k, v in data["candidate_sets"].items()], "{", "}"))
    parts.append(' "teacher": ' + block([json.dumps(t) for t in data["teacher"]], "[", "]"))
    return "{\n" + ",\n".join(parts) + "\n}\n"


def same_splits(cells: list[Cell], origin: str) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """Each eval set's test pair ids and candidate set ids, as every one of ``cells`` scores them (a protocol's test
    split is the same pairs in every cell). A ValueError names the cell whose test pairs (or candidate sets) of
    an eval set are not the other cells'."""
    pairs: dict[str, tuple[str, ...]] = {}
    set_ids: dict[str, tuple[str, ...]] = {}
    first: dict[str, Cell] = {}
    for cell in cells:
        for e in cell.eval_sets:
            ids = pairs.setdefault(e.name, e.pair_ids)
            other = first.setdefault(e.name, cell)
            if ids != e.pair_ids:
                missing, foreign = len(set(ids) - set(e.pair_ids)), len(set(e.pair_ids) - set(ids))
                raise ValueError(f"{origin}: seed {cell.seed} {cell.source} scores other test pairs of {e.name} than "
                                 f"seed {other.seed} {other.source} ({len(e.pair_ids)} pairs against {len(ids)}: "
                                 f"{missing} of those missing, {foreign} others{'' if missing or foreign else ', in another order'})")
        for e in cell.bon:
            if set_ids.setdefault(e.name, e.pair_ids) != e.pair_ids:
                other = first[e.name]
                raise ValueError(f"{origin}: seed {cell.seed} {cell.source} scores other candidate sets of {e.name} "
                                 f"than seed {other.seed} {other.source}")
    return pairs, set_ids


def from_cells(cells: list[Cell], protocol: dict, models: str, origin: str,
               candidate_sets: dict[str, tuple[CandidateRef, ...]] | None = None) -> Reference:
    """The reference a submission's cells (bench.core.cells.Cell, as validation reads them) give: their test
    pairs and their teacher's verdicts, and on a protocol with candidate sets the teacher's credits in them,
    with ``candidate_sets`` (what the sets are: ``sets_of_store`` reads them from a submission). A ValueError
    where the cells do not score one split (``same_splits``)."""
    pairs, set_ids = same_splits(cells, origin)
    verdicts = {(cell.seed, cell.source, e.name): correctness_text(e.teacher) for cell in cells for e in cell.eval_sets}
    credits = {(cell.seed, cell.source, e.name): credit_text(e.teacher) for cell in cells for e in cell.bon}
    if candidate_sets is not None:
        candidate_sets = {name: sets for name, sets in sorted(candidate_sets.items())}
        if any(tuple(s.set_id for s in candidate_sets.get(name, ())) != ids for name, ids in set_ids.items()):
            raise ValueError(f"{origin}: the candidate sets given are not the ones its cells score")
    return Reference(protocol, models, origin, dict(sorted(pairs.items())), verdicts,
                     candidate_sets if credits else None, (credits or None) if candidate_sets is not None else None)


def sets_of_store(folder: Path) -> dict[str, tuple[CandidateRef, ...]] | None:
    """The candidate sets (with their grades) of a submission, in the compact store (bench.core.store) or in cell
    folders: each eval set's as the first cell scoring it holds them; None for a submission without candidate sets.
    Where such a reference is committed, every cell's sets are checked against them (``candidate_problems``); the
    reference a folder's naive gives (bench.submissions.tree) checks the teacher's credits, not the grades."""
    from bench.core.columns import CandidateColumns, well_formed_sets
    from bench.core.io import read_csv_gz
    from bench.core.result_schema import CANDIDATES_FILE
    from bench.core.store import CELLS, load_store

    folder = Path(folder)
    if (folder / CELLS).is_file():
        store = load_store(folder)
        cells = [(store.paths[i], lambda i=i: CandidateColumns(*store.candidate_columns(i)))
                 for i in range(len(store.paths))
                 if store.refs[i] is None and store.candidate_spans[i + 1] > store.candidate_spans[i]]
    else:   # the per-cell folder layout
        cells = [(path.parent.relative_to(folder).as_posix(), lambda path=path: CandidateColumns.from_rows(read_csv_gz(path)))
                 for path in sorted(folder.glob(f"cells/*/*/{CANDIDATES_FILE}"))]
    found: dict[str, tuple[CandidateRef, ...]] = {}
    for where, columns in cells:   # each cell scores its own eval sets' sets: the first that scores one gives it
        sets = well_formed_sets(columns())
        if sets is None:
            raise ValueError(f"{folder}: the candidate sets of its cell {where} are not well-formed (bench validate "
                             "says why)")
        found.update({name: candidate_refs(own) for name, own in sets.items() if name not in found})
    return found or None


def chosen_of(folder: Path) -> dict[str, int]:
    """slug -> fresh_from of each submission beside ``folder`` (its protocol x model pair's) whose submission.json
    says it was chosen on the protocol's first seeds: what the reference records, so that a reference submission
    cannot later drop the mark and have the seeds that chose it count in its decision."""
    from bench.submissions.limits import SUBMISSION_FILE

    chosen = {}
    for path in sorted(Path(folder).parent.glob(f"*/{SUBMISSION_FILE}")):
        meta = json.loads(path.read_text(encoding="utf-8"))
        if meta.get("fresh_from") is not None:
            chosen[meta["slug"]] = int(meta["fresh_from"])
    return chosen


def path_of(protocol: str, models: str, root: Path = REFERENCES) -> Path:
    return Path(root) / f"{protocol}__{models}.json"


def teacher_pairs(models: str) -> list[str]:
    """The model pairs whose reference teacher a pair's cells are checked against, in order: its own, then for a pair
    whose students are early-stopped (``tiny+early-stop``, bench.core.specs.ModelPairSpec.early_stopped) its base
    pair, as early stopping changes only the student: the teacher and the test pairs are the base pair's."""
    base, _, mark = models.partition("+")
    return [models, base] if mark.startswith("early-stop") else [models]


def reference_file(protocol: str, models: str, root: Path | None = REFERENCES) -> Path | None:
    """The committed reference file a protocol x model pair's cells are checked against (``teacher_pairs``), or None."""
    if root is None:
        return None
    return next((path for name in teacher_pairs(models) if (path := path_of(protocol, name, root)).is_file()), None)


@functools.lru_cache(maxsize=8)
def _read(path: Path, mtime_ns: int, size: int) -> Reference:
    """A committed reference file, parsed once per version of it (a tree's submissions of one pair share it)."""
    return Reference.from_json(json.loads(path.read_text(encoding="utf-8")))


def committed(protocol: ProtocolSpec, models: str, root: Path | None = REFERENCES) -> Reference | None:
    """The committed reference of a protocol x model pair (``reference_file``), or None. A reference made for another
    version of the protocol (another hash) is an error: the test pairs it holds are not the protocol's."""
    from bench.core.protocols import protocol_hash

    path = reference_file(protocol.name, models, root)
    if path is None:
        return None
    stat = path.stat()
    reference = _read(path, stat.st_mtime_ns, stat.st_size)
    if reference.protocol["hash"] != protocol_hash(protocol):
        raise ValueError(f"the reference teacher of {protocol.name}/{models} ({path.name}) was built for protocol hash "
                         f"{reference.protocol['hash']}, and {protocol.name} hashes to {protocol_hash(protocol)} here: "
                         "rebuild it from the protocol's new reference submission of naive (python -m "
                         "bench.submissions.reference SUBMISSION)")
    return reference


def generated(protocol: ProtocolSpec) -> Reference | None:
    """For a protocol whose every dataset is generated by a suite (bench/suites/), the test pairs its cells
    score, generated again as the pipeline does (bench.core.data.load_pairs at the protocol's test size), and
    on a protocol with candidate sets those sets with their grades (bench.core.candidates); no verdicts. None for a protocol of real datasets: their files are not at hand when validating."""
    from bench.core.data import load_pairs
    from bench.core.protocols import DATASETS, protocol_hash

    specs = [DATASETS.get(name) for name in protocol.datasets]
    if not all(spec.loader.startswith("bench.suites.") for spec in specs):
        return None
    tests = {spec.name: load_pairs(spec, spec.test_split, protocol.test_size).pairs for spec in specs}
    sets = None
    if protocol.candidates is not None:   # and their candidate sets, with the grades the suite gives them
        from bench.core.candidates import load_candidate_sets

        sets = {spec.name: tuple(CandidateRef(s.id, s.pair_id or "", tuple(map(float, s.grades)))
                                 for s in load_candidate_sets(spec, tests[spec.name], protocol.candidates))
                for spec in specs}
    return Reference({"name": protocol.name, "version": protocol.version, "hash": protocol_hash(protocol)}, "",
                     "the protocol's test splits, generated again", {name: tuple(p.id for p in pairs)
                                                                       for name, pairs in tests.items()}, None, sets)


def problems(reference: Reference, cell: Cell) -> list[tuple[str, str]]:
    """(eval set, what differs) for each eval set of ``cell`` whose test pairs are not the reference's, or
    whose teacher judges a pair otherwise than the reference teacher of that cell."""
    found = []
    for e in cell.eval_sets:
        ids = reference.test_pairs.get(e.name)
        if ids is None:
            continue
        if e.pair_ids != ids:
            found.append((e.name, _other_ids(e.pair_ids, ids, "test pairs", "the protocol's test split", "pairs",
                                             reference.origin)))
            continue
        expected = (reference.verdicts or {}).get((cell.seed, cell.source, e.name))
        got = correctness_text(e.teacher)
        if expected is not None and (differ := _differ(got, expected)):
            i = differ[0]
            found.append((e.name, f"the teacher's verdicts differ from those of the reference teacher "
                          f"({reference.origin}) on {len(differ)} of {len(ids)} test pairs (e.g. {ids[i]!r}: "
                          f"{VERDICT_WORDS[got[i]]} here, {VERDICT_WORDS[expected[i]]} there)"))
    for e in cell.bon:
        laid = reference.laid_out.get(e.name)
        if laid is None:
            continue
        ids = laid[0]
        if e.pair_ids != ids:
            found.append((e.name, _other_ids(e.pair_ids, ids, "best-of-N candidate sets", "the protocol", "sets",
                                             reference.origin)))
            continue
        expected = (reference.credits or {}).get((cell.seed, cell.source, e.name))
        if expected is None:
            continue
        got, want = np.asarray(e.teacher, dtype=np.float64), credit_array(expected)
        differ = np.flatnonzero(got != want) if got.shape == want.shape else np.arange(len(ids))
        if len(differ):
            i = int(differ[0])
            found.append((e.name, f"the teacher's best-of-N picks differ from those of the reference teacher "
                          f"({reference.origin}) in {len(differ)} of {len(ids)} candidate sets (e.g. {ids[i]!r}: "
                          f"credit {credit_text(got[i:i + 1])} here, {credit_values(expected)[i]} there: the share of "
                          "its top-scored candidates that are gold-best)"))
    return found


def _other_ids(got: tuple, ids: tuple, units: str, where: str, short: str, origin: str) -> str:
    """What differs between the ids a cell scores (``got``) and the reference's (``ids``), in words."""
    missing, foreign = set(ids) - set(got), set(got) - set(ids)
    example = f" (e.g. {sorted(missing or foreign)[0]!r})" if missing or foreign else ", in another order"
    return (f"scores {len(got)} {units} where {where} has {len(ids)}: {len(missing)} of its {short} are missing and "
            f"{len(foreign)} are not in it{example}; checked against {origin}")


def _differ(got, expected) -> list[int]:
    """The positions where two equally long sequences of verdicts (or credits) differ."""
    if got == expected:   # the common case, at once
        return []
    return [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]


def candidate_problems(reference: Reference, sets) -> list[tuple[str, str]]:
    """(eval set, what differs) for each eval set of a cell's candidate sets (``{eval set: CandidateSets}``,
    bench.core.columns) whose sets extend other pairs than the reference's or hold other gold grades. The grades
    decide which candidate is gold-best, so they are the protocol's, never the submission's. Sets of other ids
    are ``problems``'."""
    found = []
    for name, own in sets.items():
        laid = reference.laid_out.get(name)
        if laid is None or tuple(own.set_ids) != laid[0]:
            continue
        if (own.pair_ids == laid[1] or tuple(p or "" for p in own.pair_ids) == laid[1]) \
                and np.array_equal(own.sizes, laid[2]) \
                and np.array_equal(own.grade, laid[3]):
            continue   # the common case, on whole arrays; the sets one by one only to word a difference
        expected = reference.candidate_sets[name]
        differ = [(got, want) for got, want in zip(candidate_refs(own), expected) if got != want]
        if differ:
            got, want = differ[0]
            what = "the pair it extends" if got.pair_id != want.pair_id else "its gold grades"
            found.append((name, f"{len(differ)} of its {len(expected)} best-of-N candidate sets differ from the "
                          f"protocol's in {what} or more (e.g. {got.set_id!r}: grades {list(got.grades)} and pair "
                          f"{got.pair_id!r} here, {list(want.grades)} and {want.pair_id!r} in {reference.origin})"))
    return found


def check_cell(v, reference: Reference, cell: Cell, candidates=None) -> None:
    """Record each of ``problems`` as an error of the validation ``v`` (a bench.submissions.limits.Validation)
    at the cell's result.json and the eval set, and with the cell's candidate rows (``candidates``,
    bench.core.columns.CandidateColumns) each of ``candidate_problems`` at its candidates file."""
    from bench.core.columns import CandidateColumns, well_formed_sets
    from bench.core.result_schema import CANDIDATES_FILE
    from bench.core.results import replicate_of
    from bench.submissions.limits import cell_folder

    folder = cell_folder(cell.seed, cell.source, replicate_of(cell.method))
    for name, problem in problems(reference, cell):
        v.error(f"{folder}/result.json", f"eval_sets.{name}", problem,
                TEACHER_FIX if "teacher's" in problem else PAIRS_FIX)
    sets = well_formed_sets(candidates) if isinstance(candidates, CandidateColumns) else None
    for name, problem in candidate_problems(reference, sets or {}):
        v.error(f"{folder}/{CANDIDATES_FILE}", f"candidates.{name}", problem, SETS_FIX)


TEACHER_FIX = ("the teacher is the protocol's, the same for every method (trained before any method runs, and "
               "cached): rerun the cells with this version of shiftbench on the registered model pair, then bench "
               "submit again")
SETS_FIX = ("a cell's candidate sets and their gold grades are the protocol's: rerun the cells with this version of "
            "shiftbench, then bench submit again")
PAIRS_FIX = ("a cell scores every pair of its eval sets' test splits: rerun the cells with this version of "
             "shiftbench, then bench submit again")
