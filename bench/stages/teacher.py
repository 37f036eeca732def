"""The teacher stage of a cell: the weak model trained on half A with gold labels, its soft labels
on half B, and its scores on every eval set (and, on a protocol with best-of-N candidate sets, on
every candidate); cached by a hash of everything that decides it (the code and platform included),
so every method and rerun on the same cell reuses it.
"""
from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from bench.core.candidates import CandidateSet
from bench.core.data import OrderedPair, Pair, random_order, shuffled_groups, sub_seed
from bench.core.distributed import on_main_process
from bench.core.errors import BenchError
from bench.core.io import atomic_write_json, csv_gz_bytes, read_csv_gz
from bench.core.versions import TEACHER_CODE, code_version, platform_version
from bench.stages.batches import score
from bench.stages.models import load_reward_model
from bench.stages.scorers import TEACHER_FIX, check_finite, score_candidate_sets, score_eval_sets
from bench.stages.train import TrainExample, train_reward_model
from methods.api import Step, preference_probability, soft_bt_loss

if TYPE_CHECKING:
    from bench.stages.context import RunContext

TEACHER_STAGE_VERSION = "teacher/v1"
TEACHER_FILES = ("model/config.json", "model/*.safetensors", "labels.csv.gz", "scores.csv.gz", "info.json")
CANDIDATES = "candidates.csv.gz"   # in an entry that scored candidate sets: every candidate's score
CANDIDATE_COLUMNS = ("eval_set", "set_id", "candidate", "score")


HELD_OUT = "half A, held out"   # the eval set of a teacher trained with ``holdout``


def split_half_a(half_a: list[Pair], share: float, seed: int) -> tuple[list[Pair], list[Pair]]:
    """Half A cut in two for a ``holdout`` teacher: the pairs it trains on and those it holds out, both
    in half A's order. The unit is the pair's group, as in the cell's own split of the pool
    (bench.core.data.split_prompt_disjoint): groups shuffled with the seed go, whole, to the held-out part
    until it holds ``floor(share * n)`` pairs or more, so that no prompt (on mini, no topic) sits on
    both sides and the held-out error is measured as the student's half B is labelled: on prompts the
    teacher never saw. At least one group on each side."""
    groups = shuffled_groups(half_a, seed, "teacher-holdout")
    if len(groups) < 2:
        raise BenchError(f"half A holds {len(half_a)} pair(s) in {len(groups)} prompt group(s): holding some out for "
                         "the teacher's error leaves none to train on. Give the source more train pairs (a larger "
                         "--cap-train)")
    target, held = math.floor(share * len(half_a)), set()
    for group in groups[:-1]:   # the last group always trains
        if held and len(held) >= target:
            break
        held.update(group)
    return [p for i, p in enumerate(half_a) if i not in held], [half_a[i] for i in sorted(held)]


@dataclass
class Teacher:
    key: str
    reused: bool
    ordered: list[OrderedPair]            # half B, each pair in its seeded random order
    soft_labels: list[float]              # q = P(a > b) from the teacher, one per ordered pair
    scores: dict[str, tuple[list[float], list[float]]]   # eval set -> (r_chosen, r_rejected)
    info: dict = field(default_factory=dict)
    # eval set -> per candidate set, every candidate's score (bench.core.candidates); None without candidate sets
    candidate_scores: dict[str, list[list[float]]] | None = None


@dataclass
class CellData:
    """A cell's data and its teacher stage: what every student of the cell is trained on and scored
    against, whether the harness trains it (``run_cell``) or it comes from elsewhere (bench.stages.evaluate);
    bench.stages.labels exports the student's half of it."""

    pool: list[Pair]                   # the source's train pool
    evals: dict[str, list[Pair]]       # eval set -> its test pairs, the source's first
    half_a: list[Pair]                 # the teacher's half of the pool
    half_b: list[Pair]                 # the student's half
    teacher: Teacher                   # trained on half A; its soft labels on half B and its eval scores
    sets: dict[str, list[CandidateSet]] | None = None   # eval set -> its best-of-N sets, on a protocol with them


class GoldBT:
    """The teacher's training loss: soft-label Bradley-Terry (methods.api.soft_bt_loss) on half A's gold
    labels, as naive's loss on the teacher's; what the loop needs of a method, and nothing else."""

    name = "teacher (gold BT)"   # how the loop's messages name whose loss it checks
    needs_hidden_states = False

    @staticmethod
    def loss(step: Step):
        loss = soft_bt_loss(step.r_a, step.r_b, step.target)
        return loss, {"bt": loss.detach()}


GOLD_BT = GoldBT()


def teacher_stage(ctx: RunContext, source: str, seed: int, half_a: list[Pair], half_b: list[Pair],
                  evals: dict[str, list[Pair]], timings: dict[str, float], member: int = 0,
                  holdout: float = 0.0, sets: dict[str, list[CandidateSet]] | None = None) -> Teacher:
    """The cell's teacher; ``member`` m > 0 is another teacher of an ensemble (bench.stages.label_stage), trained
    on the same half A with seeds of its own, in an entry of its own (the member index is in its key).
    ``holdout`` > 0: a teacher trained on ``half_a`` less a seeded share of it, which it scores as the
    eval set HELD_OUT (for its error on gold pairs it never saw: bench.stages.label_stage); the share is in its key.
    ``sets``: the eval sets' best-of-N candidate sets, whose every candidate it scores too (cached with
    the pairs' scores, CANDIDATES; their N is in its key)."""
    if holdout:
        half_a, held = split_half_a(half_a, holdout, seed)
        evals = {**evals, HELD_OUT: held}
    inputs = {
        "stage": TEACHER_STAGE_VERSION,
        "protocol": ctx.protocol.name, "protocol_hash": ctx.protocol_hash,
        "source": source, "seed": seed, "eval_sets": sorted(evals),
        "weak": ctx.models.weak, "weak_revision": ctx.revisions["weak"], "weak_formatter": ctx.formatter("weak").provenance(),
        "data": ctx.data_fingerprint(source),
        "train": ctx.models.teacher_train, "score_batch_size": ctx.models.score_batch_size,
        "code": teacher_code(ctx.loaders(source)), "platform": platform_version(),
        **({"member": member} if member else {}),   # member 0, the cell's teacher, has no such field: inputs as before
        **({"half_a_holdout": holdout} if holdout else {}),
        # an entry without sets has no such field: keys as before
        **({"candidate_sets": {name: {"sets": len(its), "n": sorted({len(s.responses) for s in its})}
                               for name, its in sorted(sets.items())}} if sets else {}),
    }
    key = ctx.cache.key(inputs)
    # Held from the lookup to the store: a second run on this cache waits here, then reuses this entry.
    with ctx.cache.lock("teacher", key, collective=True):
        return _teacher_stage(ctx, source, seed, half_a, half_b, evals, timings, key, inputs, member, sets)


def teacher_code(loaders: tuple[str, ...] = ()) -> str:
    """The version of the code that decides a teacher entry: the modules of bench.core.versions.TEACHER_CODE
    (this one among them) and the cell's dataset ``loaders``."""
    return code_version(TEACHER_CODE + loaders)


def _teacher_stage(ctx: RunContext, source: str, seed: int, half_a: list[Pair], half_b: list[Pair],
                   evals: dict[str, list[Pair]], timings: dict[str, float], key: str, inputs: dict,
                   member: int = 0, sets: dict[str, list[CandidateSet]] | None = None) -> Teacher:
    ordered = random_order(half_b, seed)
    required = TEACHER_FILES + ((CANDIDATES,) if sets else ())
    stages = ("teacher_train", "teacher_label", "teacher_score") + (("teacher_candidates",) if sets else ())
    folder = ctx.cache.load("teacher", key, required=required)
    if folder is not None:
        teacher = _read_teacher(folder, key, ordered, sets)
        if teacher is not None:
            timings.update(dict.fromkeys(stages, 0.0))
            return teacher
        on_main_process(lambda: ctx.cache.discard("teacher", key, "it does not match this cell's pairs"))

    weak = ctx.formatter("weak")
    t = time.perf_counter()
    seeded = (lambda stage: stage) if not member else (lambda stage: f"{stage}/member{member}")
    name = f"teacher {source} s{seed}" + (f" member {member}" if member else "")
    model = load_reward_model(ctx.models.weak, seed=sub_seed(seed, seeded("teacher-init")))
    gold = [TrainExample(weak.encode(p.prompt, p.chosen), weak.encode(p.prompt, p.rejected), 1.0) for p in half_a]
    train_log = train_reward_model(model, gold, ctx.models.teacher_train, GOLD_BT,
                                   seed=sub_seed(seed, seeded("teacher-order")), desc=name)
    timings["teacher_train"] = time.perf_counter() - t

    t = time.perf_counter()
    sequences = [weak.encode(o.pair.prompt, o.a) for o in ordered] + [weak.encode(o.pair.prompt, o.b) for o in ordered]
    rewards = score(model, sequences, ctx.models.score_batch_size, desc="teacher labels", pairs=True)
    r_a, r_b = rewards[:len(ordered)], rewards[len(ordered):]
    soft = [preference_probability(a, b) for a, b in zip(r_a, r_b)]
    timings["teacher_label"] = time.perf_counter() - t

    t = time.perf_counter()
    scores = score_eval_sets(model, weak, evals, ctx.models.score_batch_size, "teacher")
    timings["teacher_score"] = time.perf_counter() - t
    candidate_scores = None
    if sets:
        t = time.perf_counter()
        candidate_scores = score_candidate_sets(model, weak, sets, evals, scores, ctx.models.score_batch_size, "teacher")
        timings["teacher_candidates"] = time.perf_counter() - t
    check_finite({"half B (its labels)": (r_a, r_b), **scores, **candidate_checks(candidate_scores)},
                 f"teacher {ctx.models.weak.name}", f"{source} seed {seed}", TEACHER_FIX)

    agree = sum((q > 0.5) == o.a_is_chosen for q, o in zip(soft, ordered)) + 0.5 * sum(q == 0.5 for q in soft)
    info = {"train": train_log,
            "labels": {"pairs": len(soft), "mean_q": sum(soft) / len(soft),
                       "a_is_chosen_share": sum(o.a_is_chosen for o in ordered) / len(ordered),
                       "agreement_with_gold": 100.0 * agree / len(soft)},
            "timings_s": {k: timings[k] for k in stages}}

    def write(folder: Path) -> None:
        model.save_pretrained(folder / "model")
        (folder / "labels.csv.gz").write_bytes(csv_gz_bytes(
            ("pair_id", "a_is_chosen", "teacher_a", "teacher_b", "q"),
            [(o.pair.id, int(o.a_is_chosen), a, b, q) for o, a, b, q in zip(ordered, r_a, r_b, soft)]))
        (folder / "scores.csv.gz").write_bytes(csv_gz_bytes(
            ("eval_set", "pair_id", "r_chosen", "r_rejected"),
            [(name, p.id, c, r) for name, pairs in evals.items() for p, c, r in zip(pairs, *scores[name])]))
        if sets:
            (folder / CANDIDATES).write_bytes(csv_gz_bytes(CANDIDATE_COLUMNS, [
                (name, s.id, j, score) for name, its in sets.items()
                for s, row in zip(its, candidate_scores[name]) for j, score in enumerate(row)]))
        atomic_write_json(folder / "info.json", info)

    on_main_process(lambda: ctx.cache.store("teacher", key, inputs, write, required=required))
    return Teacher(key=key, reused=False, ordered=ordered, soft_labels=soft, scores=scores, info=info,
                   candidate_scores=candidate_scores)


def candidate_checks(candidate_scores: dict[str, list[list[float]]] | None) -> dict[str, tuple[list[float], list[float]]]:
    """Candidate scores in the shape bench.stages.scorers.check_finite reads, one entry per eval set's sets."""
    return {f"{name} (its candidate sets)": ([x for row in rows for x in row], [])
            for name, rows in (candidate_scores or {}).items()}


def _read_teacher(folder: Path, key: str, ordered: list[OrderedPair],
                  sets: dict[str, list[CandidateSet]] | None = None) -> Teacher | None:
    labels = read_csv_gz(folder / "labels.csv.gz")
    if [(r["pair_id"], r["a_is_chosen"] == "1") for r in labels] != [(o.pair.id, o.a_is_chosen) for o in ordered]:
        return None
    scores: dict[str, tuple[list[float], list[float]]] = {}
    for row in read_csv_gz(folder / "scores.csv.gz"):
        chosen, rejected = scores.setdefault(row["eval_set"], ([], []))
        chosen.append(float(row["r_chosen"]))
        rejected.append(float(row["r_rejected"]))
    candidate_scores = None
    if sets:
        rows: dict[tuple[str, str], list[float]] = {}
        for row in read_csv_gz(folder / CANDIDATES):
            rows.setdefault((row["eval_set"], row["set_id"]), []).append(float(row["score"]))
        candidate_scores = {name: [rows.get((name, s.id), []) for s in its] for name, its in sets.items()}
        # an entry whose sets are not these (another N, other ids) is not this cell's: train again
        if len(rows) != sum(map(len, sets.values())) or any(
                len(row) != len(s.responses) for name, its in sets.items() for s, row in zip(its, candidate_scores[name])):
            return None
    info = json.loads((folder / "info.json").read_text())
    return Teacher(key=key, reused=True, ordered=ordered, soft_labels=[float(r["q"]) for r in labels],
                   scores=scores, info=info, candidate_scores=candidate_scores)
