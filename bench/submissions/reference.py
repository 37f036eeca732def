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

Where a submission's reference comes from, the first found:

1. committed: ``references/<protocol>__<models>.json`` beside this module, built from the reference
   submission of ``naive`` (``python -m bench.submissions.make_reference submissions/mini/tiny/naive``); a
   test checks that each equals what its submission gives. It holds the test pairs and the verdicts.
2. a folder of submissions (``bench validate DIR``, the board and its upload): the valid ``naive``
   submission of the same protocol and model pair there (``bench.submissions.tree.check_teachers``).
3. a protocol whose datasets are generated (``mini`` and its capped versions): its test splits are
   generated again (seconds, offline), so its test pairs are checked; its teacher cannot be.

With none of these (a protocol of real datasets without a reference submission yet), the test pairs of
every cell of a submission are checked to be the same pairs, and a warning says the teacher is not.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from bench.core.cells import Cell, correctness_text
from bench.core.specs import ProtocolSpec
from bench.submissions.limits import REFERENCES

FORMAT = "shiftbench-reference/v1"
VERDICT_WORDS = {"2": "chosen above rejected", "1": "a tie", "0": "rejected above chosen"}   # correctness_text's digits


@dataclass(frozen=True)
class Reference:
    protocol: dict                       # name, version and hash of the protocol it is for
    models: str                          # the model pair's name
    origin: str                          # what it was built from, e.g. "submission mini/tiny/naive"
    test_pairs: dict[str, tuple[str, ...]]   # eval set -> its test pair ids, in the order they are scored
    verdicts: dict[tuple[int, str, str], str] | None   # (seed, source, eval set) -> the teacher's verdicts
                                                       # (correctness_text), in test_pairs' order; None: unknown

    def to_json(self) -> dict:
        return {"format": FORMAT, "protocol": self.protocol, "models": self.models, "origin": self.origin,
                "verdict_format": "per test pair: 2 the teacher scores chosen above rejected, 0 below, 1 a tie",
                "test_pairs": {name: list(ids) for name, ids in self.test_pairs.items()},
                "teacher": [{"seed": seed, "source": source, "eval_set": name, "verdicts": text}
                            for (seed, source, name), text in sorted((self.verdicts or {}).items())]}

    @classmethod
    def from_json(cls, data: dict) -> Reference:
        if data.get("format") != FORMAT:
            raise ValueError(f"format {data.get('format')!r}, not {FORMAT!r}")
        pairs = {name: tuple(ids) for name, ids in data["test_pairs"].items()}
        verdicts = {(int(t["seed"]), t["source"], t["eval_set"]): t["verdicts"] for t in data["teacher"]}
        if any(len(text) != len(pairs[name]) for (_, _, name), text in verdicts.items()):
            raise ValueError("a verdict string does not match its eval set's test pairs")
        return cls(data["protocol"], data["models"], data["origin"], pairs, verdicts)


def dumps(data: dict) -> str:
    """A reference as JSON that reads and diffs line by line: one line per eval set's pairs, per verdicts."""
    def block(items: list[str], open_: str, close: str) -> str:
        return open_ + "\n" + ",\n".join(f"  {item}" for item in items) + "\n " + close
    parts = [f" {json.dumps(k)}: {json.dumps(v)}" for k, v in data.items() if k not in ("test_pairs", "teacher")]
    parts.append(' "test_pairs": ' + block([f"{json.dumps(k)}: {json.dumps(v)}" for k, v in data["test_pairs"].items()],
                                            "{", "}"))
    parts.append(' "teacher": ' + block([json.dumps(t) for t in data["teacher"]], "[", "]"))
    return "{\n" + ",\n".join(parts) + "\n}\n"


def from_cells(cells: list[Cell], protocol: dict, models: str, origin: str) -> Reference:
    """The reference a submission's cells (bench.core.cells.Cell, as validation reads them) give: their test
    pairs and their teacher's verdicts. A ValueError naming the cell whose test pairs of an eval set are
    not the other cells' (a protocol's test split is the same pairs in every cell)."""
    pairs: dict[str, tuple[str, ...]] = {}
    first: dict[str, Cell] = {}
    verdicts = {}
    for cell in cells:
        for e in cell.eval_sets:
            ids = pairs.setdefault(e.name, e.pair_ids)
            other = first.setdefault(e.name, cell)
            if ids != e.pair_ids:
                missing, foreign = len(set(ids) - set(e.pair_ids)), len(set(e.pair_ids) - set(ids))
                raise ValueError(f"{origin}: seed {cell.seed} {cell.source} scores other test pairs of {e.name} than "
                                 f"seed {other.seed} {other.source} ({len(e.pair_ids)} pairs against {len(ids)}: "
                                 f"{missing} of those missing, {foreign} others{'' if missing or foreign else ', in another order'})")
            verdicts[cell.seed, cell.source, e.name] = correctness_text(e.teacher)
    return Reference(protocol, models, origin, dict(sorted(pairs.items())), verdicts)


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


def committed(protocol: ProtocolSpec, models: str, root: Path | None = REFERENCES) -> Reference | None:
    """The committed reference of a protocol x model pair (``reference_file``), or None. A reference made for another
    version of the protocol (another hash) is an error: the test pairs it holds are not the protocol's."""
    from bench.core.protocols import protocol_hash

    path = reference_file(protocol.name, models, root)
    if path is None:
        return None
    reference = Reference.from_json(json.loads(path.read_text(encoding="utf-8")))
    if reference.protocol["hash"] != protocol_hash(protocol):
        raise ValueError(f"the reference teacher of {protocol.name}/{models} ({path.name}) was built for protocol hash "
                         f"{reference.protocol['hash']}, and {protocol.name} hashes to {protocol_hash(protocol)} here: "
                         "rebuild it from the protocol's new reference submission of naive (python -m "
                         "bench.submissions.reference SUBMISSION)")
    return reference


def generated(protocol: ProtocolSpec) -> Reference | None:
    """For a protocol whose every dataset is generated by a suite (bench/suites/), the test pairs its cells
    score, generated again as the pipeline does (bench.core.data.load_pairs at the protocol's test size); no
    verdicts. None for a protocol of real datasets: their files are not at hand when validating."""
    from bench.core.data import load_pairs
    from bench.core.protocols import DATASETS, protocol_hash

    specs = [DATASETS.get(name) for name in protocol.datasets]
    if not all(spec.loader.startswith("bench.suites.") for spec in specs):
        return None
    pairs = {spec.name: tuple(p.id for p in load_pairs(spec, spec.test_split, protocol.test_size).pairs)
             for spec in specs}
    return Reference({"name": protocol.name, "version": protocol.version, "hash": protocol_hash(protocol)}, "",
                     "the protocol's test splits, generated again", pairs, None)


def problems(reference: Reference, cell: Cell) -> list[tuple[str, str]]:
    """(eval set, what differs) for each eval set of ``cell`` whose test pairs are not the reference's, or
    whose teacher judges a pair otherwise than the reference teacher of that cell."""
    found = []
    for e in cell.eval_sets:
        ids = reference.test_pairs.get(e.name)
        if ids is None:
            continue
        if e.pair_ids != ids:
            missing, foreign = set(ids) - set(e.pair_ids), set(e.pair_ids) - set(ids)
            example = f" (e.g. {sorted(missing or foreign)[0]!r})" if missing or foreign else ", in another order"
            found.append((e.name, f"scores {len(e.pair_ids)} test pairs where the protocol's test split has {len(ids)}: "
                          f"{len(missing)} of its pairs are missing and {len(foreign)} are not in it{example}; checked "
                          f"against {reference.origin}"))
            continue
        expected = (reference.verdicts or {}).get((cell.seed, cell.source, e.name))
        if expected is None:
            continue
        got = correctness_text(e.teacher)
        differ = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
        if differ:
            i = differ[0]
            found.append((e.name, f"the teacher's verdicts differ from those of the reference teacher "
                          f"({reference.origin}) on {len(differ)} of {len(ids)} test pairs (e.g. {ids[i]!r}: "
                          f"{VERDICT_WORDS[got[i]]} here, {VERDICT_WORDS[expected[i]]} there)"))
    return found


def check_cell(v, reference: Reference, cell: Cell) -> None:
    """Record each of ``problems`` as an error of the validation ``v`` (a bench.submissions.limits.Validation)
    at the cell's result.json and the eval set."""
    from bench.core.results import replicate_of
    from bench.submissions.limits import cell_folder

    for name, problem in problems(reference, cell):
        v.error(f"{cell_folder(cell.seed, cell.source, replicate_of(cell.method))}/result.json", f"eval_sets.{name}", problem,
                TEACHER_FIX if "verdicts" in problem else PAIRS_FIX)


TEACHER_FIX = ("the teacher is the protocol's, the same for every method (trained before any method runs, and "
               "cached): rerun the cells with this version of shiftbench on the registered model pair, then bench "
               "submit again")
PAIRS_FIX = ("a cell scores every pair of its eval sets' test splits: rerun the cells with this version of "
             "shiftbench, then bench submit again")
