"""The W2S preference-shift pipeline, one cell at a time:

    load -> split -> teacher -> soft labels -> student -> score -> metrics -> write

A cell is one source and one seed. The teacher stage (train the weak model on half A with gold
labels, label half B, score every eval set) is cached on disk by a hash of everything that
determines it, so every method and every rerun on the same cell reuses it.
"""
from __future__ import annotations

import functools
import math
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cached_property, lru_cache
from pathlib import Path

from bench.cache import Cache, SharedWork
from bench.data import LoadedSplit, OrderedPair, Pair, eval_sets, load_pairs, random_order, split_prompt_disjoint, sub_seed
from bench.distributed import on_main_process, state
from bench.env import environment
from bench.io import atomic_write_json, csv_gz_bytes, read_csv_gz
from bench.metrics import accuracy, cell_metrics
from bench.models import (formatter_for, load_reward_model, load_tokenizer, max_positions, model_provenance, score,
                          weights_revision)
from bench.protocols import DATASETS, protocol_hash
from bench.errors import NonFiniteScoresError
from bench.report import params_text
from bench.results import SCHEMA_VERSION, CellResult, cell_dir, load_cell, params_slug, write_cell
from bench.scorers import SCORERS
from bench.settings import RunSettings
from bench.specs import ModelPairSpec, ModelSpec, ProtocolSpec, stable_hash, to_plain
from bench.train import TrainExample, train_reward_model, train_student
from methods import make_method, method_origin
from methods.base import Method
from methods.naive import Naive

TEACHER_STAGE_VERSION = "teacher/v1"
MISFIT_PAIRS = 256   # half-B pairs the misfit is measured on: a seeded sample, about 10% of a cell's scoring


@dataclass
class RunContext:
    """A run's settings with what is built from them once: the method, the cache, and (on first use)
    the loaded splits, formatters, revisions and environment."""

    settings: RunSettings
    method: Method
    cache: Cache

    @property
    def protocol(self) -> ProtocolSpec:
        return self.settings.protocol

    @property
    def models(self) -> ModelPairSpec:
        return self.settings.models

    @cached_property
    def protocol_hash(self) -> str:
        return protocol_hash(self.protocol)

    @cached_property
    def revisions(self) -> dict[str, dict]:
        """What exactly was loaded (weights digest or hub commit) and how (the dtype ``auto`` resolved to)."""
        return {which: {**weights_revision(spec), **model_provenance(spec)}
                for which, spec in (("weak", self.models.weak), ("strong", self.models.strong))}

    @cached_property
    def environment(self) -> dict:
        return environment()

    @lru_cache(maxsize=None)
    def loaded(self, dataset: str, split: str) -> LoadedSplit:
        """``split`` is "train" (the source's train pool) or "test"; the spec names the real splits."""
        spec = DATASETS.get(dataset)
        if split == "train":
            return load_pairs(spec, spec.train_split, self.protocol.train_pool_size, self.settings.data_dir)
        return load_pairs(spec, spec.test_split, self.protocol.test_size, self.settings.data_dir)

    def pairs(self, dataset: str, split: str) -> list[Pair]:
        return self.loaded(dataset, split).pairs

    @lru_cache(maxsize=None)
    def formatter(self, which: str):
        """The model's token layout at the protocol's max length, or the model's own limit when that is
        shorter (an encoder with 512 positions on a 1024-token protocol); the formatter's provenance,
        recorded in every result, holds the length actually used."""
        spec: ModelSpec = getattr(self.models, which)
        limit = max_positions(spec)
        if limit is not None and limit < self.protocol.max_length:
            print(f"[bench] {which} model {spec.name} reads at most {limit} tokens: sequences are cut to {limit}, "
                  f"not the protocol's {self.protocol.max_length}", file=sys.stderr)
        length = min(self.protocol.max_length, limit or self.protocol.max_length)
        return formatter_for(spec, load_tokenizer(spec), length)

    def data_fingerprint(self, source: str) -> dict:
        """What the data of a cell was read from (Hub commits, file digests); empty for generated data,
        whose every input is in the protocol hash."""
        sets = {("train", source): self.loaded(source, "train"),
                **{("test", name): self.loaded(name, "test") for name in eval_sets(self.protocol, source)}}
        return {f"{split}:{name}": fingerprint for (split, name), loaded in sets.items()
                if (fingerprint := data_fingerprint(loaded.provenance))}

    def cell_key(self, source: str, seed: int) -> str:
        """Everything that decides a cell's numbers; a finished cell is reused only when this matches."""
        return stable_hash({"protocol_hash": self.protocol_hash, "models": self.models, "revisions": self.revisions,
                            "formatters": {w: self.formatter(w).provenance() for w in ("weak", "strong")},
                            "data": self.data_fingerprint(source),
                            "method": self.method.name, "params": self.method.params.model_dump(),
                            "method_code": method_origin(type(self.method)).get("sha256"),
                            "source": source, "seed": seed, "schema": SCHEMA_VERSION,
                            **({"scorer": self.settings.scorer} if self.settings.scorer != "hf" else {})}, length=24)

    def __hash__(self) -> int:  # lru_cache on methods keys on self
        return id(self)


def data_fingerprint(provenance: dict) -> dict:
    """The parts of a split's provenance that decide its pairs (not local paths or counts)."""
    if provenance.get("source") == "generated":
        return {}
    return {"source": provenance.get("source"), "hub_id": provenance.get("hub_id"), "config": provenance.get("config"),
            "data_dir": provenance.get("data_dir"), "commit": provenance.get("resolved_commit"),
            "files": sorted(f["sha256"] for f in provenance.get("files", []))}


@dataclass
class Teacher:
    key: str
    reused: bool
    ordered: list[OrderedPair]            # half B, each pair in its seeded random order
    soft_labels: list[float]              # q = P(a > b) from the teacher, one per ordered pair
    scores: dict[str, tuple[list[float], list[float]]]   # eval set -> (r_chosen, r_rejected)
    info: dict = field(default_factory=dict)


# --- the cell -------------------------------------------------------------------------------------
def run_cell(ctx: RunContext, source: str, seed: int) -> CellResult:
    started = time.perf_counter()
    timings: dict[str, float] = {}

    # 1. load: the source's train pool and the test split of the source and of each target
    pool = ctx.pairs(source, "train")
    evals = {name: ctx.pairs(name, "test") for name in eval_sets(ctx.protocol, source)}

    # 2. split: two prompt-disjoint halves, A for the teacher and B for the student
    half_a, half_b = split_prompt_disjoint(pool, seed)

    # 3. teacher: trained on A with gold labels; labels B; scores every eval set (cached)
    teacher = teacher_stage(ctx, source, seed, half_a, half_b, evals, timings)

    # 4. soft labels: what the student learns from (the ceiling learns from gold instead)
    if ctx.method.labels == "teacher":
        targets = teacher.soft_labels
    else:
        targets = [1.0 if o.a_is_chosen else 0.0 for o in teacher.ordered]

    # 5. student: the pretrained strong model, trained by the method (a rule-based method trains nothing)
    t = time.perf_counter()
    strong = ctx.formatter("strong")
    examples: list[TrainExample] = []
    student_log: dict = {"trained": False}
    if ctx.method.trains:
        student = load_reward_model(ctx.models.strong, seed=sub_seed(seed, "student-init"))
        examples = [TrainExample(strong.encode(o.pair.prompt, o.a), strong.encode(o.pair.prompt, o.b), q)
                    for o, q in zip(teacher.ordered, targets)]
        shared = SharedWork(ctx.cache, {  # what decides the pretrained student's outputs
            "strong": ctx.models.strong, "strong_revision": ctx.revisions["strong"],
            "strong_formatter": strong.provenance(), "device": state().device.type})
        student_log = train_student(student, examples, ctx.models.student_train, ctx.method, shared=shared,
                                    seed=sub_seed(seed, "student-order"), desc=f"student {source} s{seed}")
    timings["student_train"] = time.perf_counter() - t

    # 6. score: the student on every eval set
    t = time.perf_counter()
    if ctx.method.trains:
        scorer = functools.partial(SCORERS.get(ctx.settings.scorer), spec=ctx.models.strong)
        student_scores = score_eval_sets(student, strong, evals, ctx.models.score_batch_size, "student", scorer)
        misfit = student_misfit(student, examples, teacher.soft_labels, ctx.models.score_batch_size, scorer)
        del student
    else:
        misfit = None
        student_scores = {name: ([ctx.method.rule_reward(p.prompt, p.chosen) for p in pairs],
                                 [ctx.method.rule_reward(p.prompt, p.rejected) for p in pairs])
                          for name, pairs in evals.items()}
    timings["student_score"] = time.perf_counter() - t
    check_finite(student_scores, f"student {ctx.models.strong.name}", f"{source} seed {seed}, {ctx.method.name}")

    # 7. metrics: accuracies, then WRG / AOG / NTS per target
    accuracies = {name: {"teacher": accuracy(*teacher.scores[name]), "student": accuracy(*student_scores[name])}
                  for name in evals}
    metrics = cell_metrics(accuracies, source)
    timings["total"] = time.perf_counter() - started

    # 8. write: per-pair scores and the cell's numbers, atomically
    result = CellResult(
        schema_version=SCHEMA_VERSION,
        cell_key=ctx.cell_key(source, seed),
        protocol={"name": ctx.protocol.name, "version": ctx.protocol.version, "hash": ctx.protocol_hash},
        method={"name": ctx.method.name, "params": ctx.method.params.model_dump(), "labels": ctx.method.labels,
                "trains": ctx.method.trains, "paper": ctx.method.paper, "origin": method_origin(type(ctx.method))},
        models={**to_plain(ctx.models),
                "weak": {**to_plain(ctx.models.weak), "revision": ctx.revisions["weak"]},
                "strong": {**to_plain(ctx.models.strong), "revision": ctx.revisions["strong"]}},
        source=source,
        category=ctx.protocol.category_of(source),
        seed=seed,
        derived_seeds={stage: sub_seed(seed, stage) for stage in
                       ("split", "order", "teacher-init", "teacher-order", "student-init", "student-order")},
        eval_sets={name: {"role": role, "n_pairs": len(evals[name]),
                          "teacher_acc": accuracies[name]["teacher"], "student_acc": accuracies[name]["student"]}
                   for name, role in eval_sets(ctx.protocol, source).items()},
        metrics=metrics,
        datasets={"train_pool": ctx.loaded(source, "train").provenance,
                  **{name: ctx.loaded(name, "test").provenance for name in evals}},
        formatters={w: ctx.formatter(w).provenance() for w in ("weak", "strong")},
        sizes={"train_pool": len(pool), "half_a": len(half_a), "half_b": len(half_b),
               "half_a_prompts": len({p.prompt_key for p in half_a}),
               "half_b_prompts": len({p.prompt_key for p in half_b}),
               "student_truncated_sequences": sum(e.a.truncated + e.b.truncated for e in examples)},
        teacher={"cache_key": teacher.key, "reused": teacher.reused, **teacher.info},
        student={"train": student_log, "scorer": ctx.settings.scorer},
        misfit=misfit,
        timings_s=timings,
        environment=ctx.environment,
        command=ctx.settings.command,
        created_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    rows = [(name, pair.id, tc, tr, sc, sr)
            for name, pairs in evals.items()
            for pair, tc, tr, sc, sr in zip(pairs, *teacher.scores[name], *student_scores[name])]
    folder = cell_dir(ctx.settings.out, ctx.protocol.name, ctx.models.name, slug_of(ctx.method), seed, source)
    written = on_main_process(lambda: write_cell(folder, result, rows))  # launched on several processes: one writes
    return written or result


def student_misfit(student, examples: list[TrainExample], soft_labels: list[float], batch_size: int, scorer
                   ) -> dict:
    """How far the trained student sits from its teacher's labels on the pairs it trained on (the
    first ``MISFIT_PAIRS`` of half B, in their seeded order): Charikar et al. 2024's misfit, whose size
    tracks the weak-to-strong gain. Scored in a pass of its own, so the eval scores do not change."""
    n = min(MISFIT_PAIRS, len(examples))
    rewards = scorer(student, [e.a for e in examples[:n]] + [e.b for e in examples[:n]], batch_size, desc="misfit")
    p = [1.0 / (1.0 + math.exp(-(a - b))) for a, b in zip(rewards[:n], rewards[n:])]
    q = soft_labels[:n]
    disagree = sum((pi > 0.5) != (qi > 0.5) for pi, qi in zip(p, q) if pi != 0.5 and qi != 0.5)
    return {"pairs": n, "squared": sum((pi - qi) ** 2 for pi, qi in zip(p, q)) / n,
            "disagreement": 100.0 * disagree / n}


def check_finite(scores: dict[str, tuple[list[float], list[float]]], model: str, cell: str) -> None:
    """Stop a cell whose model gave a NaN or infinite score: counted as a wrong pair it would make a
    wrong table that looks like a result."""
    for name, (chosen, rejected) in scores.items():
        bad = sum(not math.isfinite(v) for v in (*chosen, *rejected))
        if bad:
            raise NonFiniteScoresError(
                f"{model} gave {bad} non-finite scores (NaN or infinite) on eval set {name} ({cell}): its weights are "
                "broken although training finished. Check what the method does to the weights (its finish() or "
                "loss), lower the learning rate, then rerun the cell; nothing was written for it")


def slug_of(method: Method) -> str:
    return params_slug(method.name, method.params.model_dump())


def score_eval_sets(model, formatter, evals: dict[str, list[Pair]], batch_size: int, who: str, scorer=score
                    ) -> dict[str, tuple[list[float], list[float]]]:
    """(r_chosen, r_rejected) per eval set, all sequences scored in one length-sorted pass."""
    sequences, spans = [], {}
    for name, pairs in evals.items():
        start = len(sequences)
        sequences += [formatter.encode(p.prompt, p.chosen) for p in pairs]
        sequences += [formatter.encode(p.prompt, p.rejected) for p in pairs]
        spans[name] = (start, len(pairs))
    rewards = scorer(model, sequences, batch_size, desc=f"scoring {who}")
    return {name: (rewards[start:start + n], rewards[start + n:start + 2 * n]) for name, (start, n) in spans.items()}


# --- the teacher stage ----------------------------------------------------------------------------
def teacher_stage(ctx: RunContext, source: str, seed: int, half_a: list[Pair], half_b: list[Pair],
                  evals: dict[str, list[Pair]], timings: dict[str, float]) -> Teacher:
    inputs = {
        "stage": TEACHER_STAGE_VERSION,
        "protocol": ctx.protocol.name, "protocol_hash": ctx.protocol_hash,
        "source": source, "seed": seed, "eval_sets": sorted(evals),
        "weak": ctx.models.weak, "weak_revision": ctx.revisions["weak"], "weak_formatter": ctx.formatter("weak").provenance(),
        "data": ctx.data_fingerprint(source),
        "train": ctx.models.teacher_train, "score_batch_size": ctx.models.score_batch_size,
    }
    key = ctx.cache.key(inputs)
    ordered = random_order(half_b, seed)
    folder = ctx.cache.load("teacher", key)
    if folder is not None:
        teacher = _read_teacher(folder, key, ordered)
        if teacher is not None:
            timings.update(teacher_train=0.0, teacher_label=0.0, teacher_score=0.0)
            return teacher
        print(f"[cache] teacher/{key} does not match this cell's pairs; rebuilding it", file=sys.stderr)

    weak = ctx.formatter("weak")
    t = time.perf_counter()
    model = load_reward_model(ctx.models.weak, seed=sub_seed(seed, "teacher-init"))
    gold = [TrainExample(weak.encode(p.prompt, p.chosen), weak.encode(p.prompt, p.rejected), 1.0) for p in half_a]
    train_log = train_reward_model(model, gold, ctx.models.teacher_train, Naive(),
                                   seed=sub_seed(seed, "teacher-order"), desc=f"teacher {source} s{seed}")
    timings["teacher_train"] = time.perf_counter() - t

    t = time.perf_counter()
    sequences = [weak.encode(o.pair.prompt, o.a) for o in ordered] + [weak.encode(o.pair.prompt, o.b) for o in ordered]
    rewards = score(model, sequences, ctx.models.score_batch_size, desc="teacher labels")
    r_a, r_b = rewards[:len(ordered)], rewards[len(ordered):]
    soft = [1.0 / (1.0 + math.exp(-(a - b))) for a, b in zip(r_a, r_b)]
    timings["teacher_label"] = time.perf_counter() - t

    t = time.perf_counter()
    scores = score_eval_sets(model, weak, evals, ctx.models.score_batch_size, "teacher")
    timings["teacher_score"] = time.perf_counter() - t
    check_finite({"half B (its labels)": (r_a, r_b), **scores}, f"teacher {ctx.models.weak.name}", f"{source} seed {seed}")

    agree = sum((q > 0.5) == o.a_is_chosen for q, o in zip(soft, ordered)) + 0.5 * sum(q == 0.5 for q in soft)
    info = {"train": train_log,
            "labels": {"pairs": len(soft), "mean_q": sum(soft) / len(soft),
                       "a_is_chosen_share": sum(o.a_is_chosen for o in ordered) / len(ordered),
                       "agreement_with_gold": 100.0 * agree / len(soft)},
            "timings_s": {k: timings[k] for k in ("teacher_train", "teacher_label", "teacher_score")}}

    def write(folder: Path) -> None:
        model.save_pretrained(folder / "model")
        (folder / "labels.csv.gz").write_bytes(csv_gz_bytes(
            ("pair_id", "a_is_chosen", "teacher_a", "teacher_b", "q"),
            [(o.pair.id, int(o.a_is_chosen), a, b, q) for o, a, b, q in zip(ordered, r_a, r_b, soft)]))
        (folder / "scores.csv.gz").write_bytes(csv_gz_bytes(
            ("eval_set", "pair_id", "r_chosen", "r_rejected"),
            [(name, p.id, c, r) for name, pairs in evals.items() for p, c, r in zip(pairs, *scores[name])]))
        atomic_write_json(folder / "info.json", info)

    on_main_process(lambda: ctx.cache.store("teacher", key, inputs, write))
    return Teacher(key=key, reused=False, ordered=ordered, soft_labels=soft, scores=scores, info=info)


def _read_teacher(folder: Path, key: str, ordered: list[OrderedPair]) -> Teacher | None:
    import json

    labels = read_csv_gz(folder / "labels.csv.gz")
    if [(r["pair_id"], r["a_is_chosen"] == "1") for r in labels] != [(o.pair.id, o.a_is_chosen) for o in ordered]:
        return None
    scores: dict[str, tuple[list[float], list[float]]] = {}
    for row in read_csv_gz(folder / "scores.csv.gz"):
        chosen, rejected = scores.setdefault(row["eval_set"], ([], []))
        chosen.append(float(row["r_chosen"]))
        rejected.append(float(row["r_rejected"]))
    info = json.loads((folder / "info.json").read_text())
    return Teacher(key=key, reused=True, ordered=ordered, soft_labels=[float(r["q"]) for r in labels],
                   scores=scores, info=info)


# --- a run: many cells ----------------------------------------------------------------------------
def run(settings: RunSettings) -> list[CellResult]:
    import errno

    from tqdm.auto import tqdm

    from bench.errors import BenchError, CellsFailedError, TrainingDivergedError
    from bench.preflight import preflight

    # bad params or an unknown scorer fail here, before any work
    method = make_method(settings.method, settings.params, settings.models.defaults_for(settings.method))
    SCORERS.get(settings.scorer)
    ctx = RunContext(settings, method, Cache(settings.cache_dir))
    cells = settings.cells
    folders = {cell: cell_dir(settings.out, settings.protocol.name, settings.models.name, slug_of(method), *cell)
               for cell in cells}
    finished = {}
    for seed, source in cells:
        done = None if settings.force else load_cell(folders[seed, source])
        if done is not None and done.cell_key == ctx.cell_key(source, seed):
            finished[seed, source] = done
    if len(finished) < len(cells):  # a read-only or full folder fails now, not after the first training
        preflight({"results folder (--out)": settings.out, "teacher cache (--cache-dir)": ctx.cache.root})
    shown = params_text(method.params.model_dump()) or "no params"
    results, failures = [], []
    for seed, source in tqdm(cells, desc=f"{method.name} cells", unit="cell"):
        if (seed, source) in finished:
            print(f"[skip] {source} seed {seed}: finished result in {folders[seed, source]}", file=sys.stderr)
            results.append(finished[seed, source])
            continue
        try:
            results.append(run_cell(ctx, source, seed))
        except TrainingDivergedError as error:  # this cell's settings, not the run's: the other cells go on
            failures.append(f"{source} seed {seed}, {method.name} ({shown}): {error}")
            print(f"[failed] {failures[-1]}", file=sys.stderr)
        except OSError as error:  # the disk filled or went read-only mid-run: every later cell would fail too
            if error.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
                raise
            where = f" ({error.filename})" if error.filename else ""
            raise BenchError(f"{source} seed {seed} stopped: {error.strerror}{where} while writing the results folder "
                             f"{settings.out} or the teacher cache {ctx.cache.root}. Free space there (or make it "
                             "writable) and rerun: finished cells are kept") from error
    if failures:
        raise CellsFailedError(failures, results, settings.out)
    return results
