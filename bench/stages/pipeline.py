"""The W2S preference-shift pipeline, one cell at a time:

    load -> split -> teacher -> soft labels -> student -> score -> metrics -> write

A cell is one source and one seed. The teacher stage (train the weak model on half A with gold
labels, label half B, score every eval set) is cached on disk by a hash of everything that
determines it (the code and platform included: bench/core/versions.py), so every method and every rerun on
the same cell reuses it. Runs that share a results folder or a cache lock each cell and each cache
entry (bench/core/locks.py): a second run waits for the first and reuses its work.

On a protocol with best-of-N candidate sets (``ProtocolSpec.candidates``, docs/best-of-n.md) the teacher
(in its cached stage) and the student also score every candidate of every eval set's sets, and the cell
writes their scores (``candidates.csv.gz``) and BoN accuracies and metrics beside the pairs'.

Stages 1-3 (``cell_data``) and the record of a cell (``cell_result``) are shared with the commands
for students trained elsewhere: ``bench labels`` (bench/stages/labels.py) exports stage 4's labels, and
``bench evaluate`` (bench/stages/evaluate.py) scores a checkpoint in place of stages 5-6.
"""
from __future__ import annotations

import functools
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from bench.core.cache import LOCKS, Cache, SharedWork
from bench.core.data import (
    STUDENT_STAGES,
    TEACHER_STAGES,
    cell_seed,
    eval_sets,
    split_prompt_disjoint,
    stage_seed,
)
from bench.core.distributed import on_main_process, state
from bench.core.label_digest import labels_record
from bench.core.metrics import accuracy, bon_accuracy, bon_cell_metrics, cell_metrics
from bench.core.report import params_text
from bench.core.result_schema import (
    CANDIDATES_FILE,
    METHOD_SOURCE_FILE,
    RESULT_FILE,
    SCHEMA_VERSION,
    SCORES_FILE,
    CellResult,
    ExternalStudent,
    LabelsRecord,
)
from bench.core.results import cell_dir, load_cell, params_slug, replicate_slug, write_cell
from bench.core.settings import RunSettings
from bench.core.specs import to_plain
from bench.stages.apart import ApartScoring, scores_apart
from bench.stages.context import RunContext
from bench.stages.label_stage import label_stage
from bench.stages.models import load_reward_model
from bench.stages.scorers import SCORERS, check_finite, score_candidate_sets, score_eval_sets
from bench.stages.teacher import CellData, Teacher, candidate_checks, teacher_stage
from bench.stages.train import TrainExample, train_student
from methods import make_method, method_origin, method_source
from methods.api import Method, has_label_stage, preference_probability

MIN_HALF_PAIRS = 2   # pairs each half of a cell's train pool needs: see check_cells
MISFIT_PAIRS = 256   # half-B pairs the misfit is measured on: a seeded sample, about 10% of a cell's scoring


# --- the cell -------------------------------------------------------------------------------------
def cell_data(ctx: RunContext, source: str, seed: int, timings: dict[str, float]) -> CellData:
    """Stages 1-3 of a cell: load, split, teacher (cached). Split and teacher draw from the cell's seed
    (bench.core.data.cell_seed: the protocol's seed, or one of the cell's own)."""
    # 1. load: the source's train pool and the test split of the source and of each target (with its
    # candidate sets, on a protocol that has them)
    pool = ctx.pairs(source, "train")
    evals = {name: ctx.pairs(name, "test") for name in eval_sets(ctx.protocol, source)}
    sets = {name: ctx.candidate_sets(name) for name in evals} if ctx.protocol.candidates is not None else None
    # 2. split: two prompt-disjoint halves, A for the teacher and B for the student
    own = cell_seed(ctx.protocol, seed, source)
    half_a, half_b = split_prompt_disjoint(pool, own)
    # 3. teacher: trained on A with gold labels; labels B; scores every eval set and candidate (cached)
    teacher = teacher_stage(ctx, source, own, half_a, half_b, evals, timings, sets=sets)
    return CellData(pool, evals, half_a, half_b, teacher, sets)


def training_targets(teacher: Teacher, labels: str) -> list[float]:
    """Stage 4: what the student learns from, P(a > b) per half-B pair: the teacher's soft labels, or
    the gold labels (the ceiling). A label-side method replaces this with its label stage (bench.stages.label_stage)."""
    if labels == "teacher":
        return teacher.soft_labels
    return [1.0 if o.a_is_chosen else 0.0 for o in teacher.ordered]


def cell_result(ctx: RunContext, source: str, seed: int, data: CellData, *, cell_key: str, method: dict,
                student_scores: dict[str, tuple[list[float], list[float]]], student: dict, misfit: dict | None,
                labels: LabelsRecord | None, truncated: int, formatters: dict[str, dict], timings: dict[str, float],
                started: float, stages: tuple[str, ...] = TEACHER_STAGES + STUDENT_STAGES,
                external: ExternalStudent | None = None, label_stage: dict | None = None,
                student_candidates: dict[str, list[list[float]]] | None = None
                ) -> tuple[CellResult, list[tuple], list[tuple] | None]:
    """Stage 7 and the record of stage 8: the cell's accuracies and WRG / AOG / NTS per target from the
    teacher's and the student's scores, as a CellResult, with its per-pair score rows; on a protocol with
    candidate sets, its BoN accuracies and metrics too, with its per-candidate score rows (else None)."""
    evals, teacher = data.evals, data.teacher
    accuracies = {name: {"teacher": accuracy(*teacher.scores[name]), "student": accuracy(*student_scores[name])}
                  for name in evals}
    metrics = cell_metrics(accuracies, source)
    bon, candidate_rows = {name: {} for name in evals}, None
    if data.sets is not None:
        grades = {name: [s.grades for s in data.sets[name]] for name in evals}
        bons = {name: {"teacher": bon_accuracy(teacher.candidate_scores[name], grades[name]),
                       "student": bon_accuracy(student_candidates[name], grades[name])} for name in evals}
        bon = {name: {"n_sets": len(data.sets[name]), "teacher_bon": bons[name]["teacher"],
                      "student_bon": bons[name]["student"]} for name in evals}
        for target, values in bon_cell_metrics(bons, source).items():
            metrics[target].update(values)
        candidate_rows = [(name, s.id, s.pair_id or "", j, grade, t, st)
                          for name in evals
                          for s, t_row, s_row in zip(data.sets[name], teacher.candidate_scores[name], student_candidates[name])
                          for j, (grade, t, st) in enumerate(zip(s.grades, t_row, s_row))]
    timings["total"] = time.perf_counter() - started
    result = CellResult(
        schema_version=SCHEMA_VERSION,
        cell_key=cell_key,
        protocol={"name": ctx.protocol.name, "version": ctx.protocol.version, "hash": ctx.protocol_hash,
                  **({"seeding": ctx.protocol.seeding} if ctx.protocol.seeding != "shared" else {}),
                  **({"looks": list(ctx.protocol.looks)} if ctx.protocol.looks else {}),
                  **({"candidates": ctx.protocol.candidates} if ctx.protocol.candidates is not None else {})},
        method=method,
        models={**to_plain(ctx.models),
                "weak": {**to_plain(ctx.models.weak), "revision": ctx.revisions["weak"]},
                "strong": {**to_plain(ctx.models.strong), "revision": ctx.revisions["strong"]}},
        source=source,
        category=ctx.protocol.category_of(source),
        seed=seed,
        replicate=ctx.settings.replicate,
        derived_seeds={stage: stage_seed(ctx.protocol, seed, source, stage, ctx.settings.replicate) for stage in stages},
        eval_sets={name: {"role": role, "n_pairs": len(evals[name]),
                          "teacher_acc": accuracies[name]["teacher"], "student_acc": accuracies[name]["student"],
                          **bon[name]}
                   for name, role in eval_sets(ctx.protocol, source).items()},
        metrics=metrics,
        datasets={"train_pool": ctx.loaded(source, "train").provenance,
                  **{name: ctx.loaded(name, "test").provenance for name in evals}},
        formatters=formatters,
        sizes={"train_pool": len(data.pool), "half_a": len(data.half_a), "half_b": len(data.half_b),
               "half_a_prompts": len({p.prompt_key for p in data.half_a}),
               "half_b_prompts": len({p.prompt_key for p in data.half_b}),
               "student_truncated_sequences": truncated},
        teacher={"cache_key": teacher.key, "reused": teacher.reused, **teacher.info},
        student=student,
        misfit=misfit,
        labels=labels,
        label_stage=label_stage,
        external=external,
        timings_s=timings,
        environment=ctx.environment,
        command=ctx.settings.command,
        created_utc=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    rows = [(name, pair.id, tc, tr, sc, sr)
            for name, pairs in evals.items()
            for pair, tc, tr, sc, sr in zip(pairs, *teacher.scores[name], *student_scores[name])]
    return result, rows, candidate_rows


def run_cell(ctx: RunContext, source: str, seed: int) -> CellResult:
    started = time.perf_counter()
    timings: dict[str, float] = {}

    # 1-3. load, split, teacher
    data = cell_data(ctx, source, seed, timings)
    teacher, evals = data.teacher, data.evals

    strong = ctx.formatter("strong")
    shared = SharedWork(ctx.cache, {  # what decides the pretrained student's outputs
        "strong": ctx.models.strong, "strong_revision": ctx.revisions["strong"],
        "strong_formatter": strong.provenance(), "device": state().device.type})

    # 4. soft labels: what the student learns from (the ceiling learns from gold instead); a label-side
    # method's label stage (cached) makes them, for all of half B or the pairs it keeps
    stage = (label_stage(ctx, source, cell_seed(ctx.protocol, seed, source), data, shared, timings)
             if has_label_stage(ctx.method) else None)
    kept = stage.kept if stage else list(range(len(teacher.ordered)))
    ordered = [teacher.ordered[i] for i in kept]
    targets = stage.targets if stage else training_targets(teacher, ctx.method.labels)
    per_teacher = stage.teacher_labels if stage and stage.teacher_labels else [()] * len(kept)

    # 5. student: the pretrained strong model, trained by the method (a rule-based method trains nothing)
    t = time.perf_counter()
    examples: list[TrainExample] = []
    student_log: dict = {"trained": False}
    trained_on: dict = {}   # what the training loop checked the method trained on (bench.stages.train.train_student)
    if ctx.method.trains:
        seeds = {name: stage_seed(ctx.protocol, seed, source, name, ctx.settings.replicate) for name in STUDENT_STAGES}
        student = load_reward_model(ctx.models.strong, seed=seeds["student-init"])
        examples = [TrainExample(strong.encode(o.pair.prompt, o.a), strong.encode(o.pair.prompt, o.b), q, tuple(row))
                    for o, q, row in zip(ordered, targets, per_teacher)]
        student_log = train_student(student, examples, ctx.models.student_train, ctx.method, shared=shared,
                                    seed=seeds["student-order"], desc=f"student {source} s{seed}", trained_on=trained_on)
    timings["student_train"] = time.perf_counter() - t

    # 6. score: the student on every eval set (and every candidate of their sets, on a protocol with them); a
    # method whose code is not the harness's has its student scored by a process that never imported that code
    t = time.perf_counter()
    apart = None
    if ctx.method.trains:
        scorer = functools.partial(SCORERS.get(ctx.settings.scorer), spec=ctx.models.strong)
        misfit = student_misfit(student, examples, [teacher.soft_labels[i] for i in kept], ctx.models.score_batch_size,
                                scorer)
        if scores_apart(ctx.method):
            job = ApartScoring(student, ctx.models.strong, strong.max_length, evals, data.sets,
                               ctx.models.score_batch_size, ctx.settings.scorer, type(ctx.method).__module__)
            student = None   # its weights are on disk: the scoring process holds the one copy in memory
            student_scores, apart = job.run()
        else:
            student_scores = score_eval_sets(student, strong, evals, ctx.models.score_batch_size, "student", scorer)
    else:
        misfit = None
        student_scores = {name: ([ctx.method.rule_reward(p.prompt, p.chosen) for p in pairs],
                                 [ctx.method.rule_reward(p.prompt, p.rejected) for p in pairs])
                          for name, pairs in evals.items()}
    timings["student_score"] = time.perf_counter() - t
    student_candidates = None
    if data.sets is not None:
        t = time.perf_counter()
        student_candidates = apart if apart is not None else score_candidate_sets(
            student, strong, data.sets, evals, student_scores, ctx.models.score_batch_size, "student", scorer) \
            if ctx.method.trains else {name: [[ctx.method.rule_reward(s.prompt, r) for r in s.responses] for s in its]
                                       for name, its in data.sets.items()}
        timings["student_candidates"] = time.perf_counter() - t
    if ctx.method.trains:
        del student
    check_finite({**student_scores, **candidate_checks(student_candidates)}, f"student {ctx.models.strong.name}",
                 f"{source} seed {seed}, {ctx.method.name}")

    # 7-8. metrics, then write: per-pair scores and the cell's numbers, atomically
    result, rows, candidate_rows = cell_result(
        ctx, source, seed, data, cell_key=ctx.cell_key(source, seed),
        method={"name": ctx.method.name, "params": ctx.method.params.model_dump(), "labels": ctx.method.labels,
                "trains": ctx.method.trains, "paper": ctx.method.paper, "origin": method_origin(type(ctx.method))},
        student_scores=student_scores, misfit=misfit,
        student={"train": student_log, "scorer": ctx.settings.scorer,
                 **({"scored_apart": True} if ctx.method.trains and scores_apart(ctx.method) else {}),
                 **({"trained_on": trained_on} if trained_on else {})},
        labels=labels_record(ctx.method.labels, ordered, targets, stage.key if stage else None)
        if ctx.method.trains else None,
        truncated=sum(e.a.truncated + e.b.truncated for e in examples),
        formatters={w: ctx.formatter(w).provenance() for w in ("weak", "strong")}, timings=timings, started=started,
        label_stage=stage.record(len(teacher.ordered)) if stage else None, student_candidates=student_candidates)
    folder = cell_dir(ctx.settings.out, ctx.protocol.name, ctx.models.name, run_slug(ctx.settings, ctx.method), seed,
                      source)
    source = method_source(type(ctx.method))   # a method that is not built in: its source, for a reviewer
    written = on_main_process(lambda: write_cell(folder, result, rows, source, candidate_rows))  # launched on several processes: one writes
    return written or result


def student_misfit(student, examples: list[TrainExample], soft_labels: list[float], batch_size: int, scorer
                   ) -> dict:
    """How far the trained student sits from its teacher's labels on the pairs it trained on (the
    first ``MISFIT_PAIRS`` of half B, in their seeded order): Charikar et al. 2024's misfit, whose size
    tracks the weak-to-strong gain. Scored in a pass of its own, so the eval scores do not change."""
    n = min(MISFIT_PAIRS, len(examples))
    rewards = scorer(student, [e.a for e in examples[:n]] + [e.b for e in examples[:n]], batch_size, desc="misfit",
                     pairs=True)
    p = [preference_probability(a, b) for a, b in zip(rewards[:n], rewards[n:])]
    q = soft_labels[:n]
    disagree = sum((pi > 0.5) != (qi > 0.5) for pi, qi in zip(p, q) if pi != 0.5 and qi != 0.5)
    return {"pairs": n, "squared": sum((pi - qi) ** 2 for pi, qi in zip(p, q)) / n,
            "disagreement": 100.0 * disagree / n}


def slug_of(method: Method) -> str:
    return params_slug(method.name, method.params.model_dump())


def run_slug(settings: RunSettings, method: Method) -> str:
    """The folder and row name of a run's cells: the method's slug, ``#r`` for replicate r > 0 (``naive#1``)."""
    return replicate_slug(slug_of(method), settings.replicate)


# --- a run: many cells ----------------------------------------------------------------------------
def check_cells(ctx: RunContext, cells: list[tuple[int, str]]) -> None:
    """What would fail a cell after its teacher trained, checked before any work: a train pool whose
    prompt-disjoint halves hold fewer than MIN_HALF_PAIRS pairs each (with one pair, half B is empty
    and the teacher's label statistics divide by zero; a one-pair half trains on a single comparison),
    an eval set with no pairs (its accuracy is undefined), and, on a protocol with candidate sets, an eval
    set that has none or whose sets do not extend its pairs (bench.core.candidates.load_candidate_sets). The
    pools are loaded here once; the cells reuse them (RunContext.loaded)."""
    from bench.core.errors import BenchError

    for seed, source in cells:
        pool = ctx.pairs(source, "train")
        half_a, half_b = split_prompt_disjoint(pool, cell_seed(ctx.protocol, seed, source))
        if min(len(half_a), len(half_b)) < MIN_HALF_PAIRS:
            groups = len({p.group_key for p in pool})
            raise BenchError(
                f"{source} seed {seed}: its train pool of {len(pool)} pairs ({groups} prompt groups) splits into "
                f"{len(half_a)} pairs for the teacher (half A) and {len(half_b)} for the student (half B); each half "
                f"needs at least {MIN_HALF_PAIRS}. Use a larger train pool (the protocol's train_pool_size, or a "
                "larger --cap-train) or a source with more prompts")
        for name in eval_sets(ctx.protocol, source):
            if not ctx.pairs(name, "test"):
                raise BenchError(f"eval set {name} (a target of {source}) has no test pairs: its accuracy is undefined. "
                                 "Use a larger --cap-test or check the dataset's test split")
            if ctx.protocol.candidates is not None:
                ctx.candidate_sets(name)   # a dataset without sets, or sets that do not extend its pairs: refused now


def checked_method(settings: RunSettings) -> Method:
    """The run's method, once what fails without any data is checked: bad params, a student the method
    cannot train, an unknown scorer or one that cannot score this student."""
    from bench.stages.scorers import check_scorer

    method = make_method(settings.method, settings.params, settings.models.defaults_for(settings.method))
    SCORERS.get(settings.scorer)
    if method.trains:  # a rule-based method has no student, and scores without the scorer
        method.check_student(settings.models.strong)
        check_scorer(settings.scorer, settings.models.strong)
    return method


def cell_folders(settings: RunSettings, method: Method) -> dict[tuple[int, str], Path]:
    return {cell: cell_dir(settings.out, settings.protocol.name, settings.models.name, run_slug(settings, method), *cell)
            for cell in settings.cells}


def check_before_work(ctx: RunContext, folders: dict[tuple[int, str], Path], todo: list[tuple[int, str]]) -> None:
    """What would fail the ``todo`` cells after hours of work, checked now: a read-only or full folder,
    a file where a folder belongs or a folder where a cell's file belongs, a pool too small (check_cells)."""
    from bench.stages.preflight import check_files, check_folders, preflight

    preflight({"results folder (--out)": ctx.settings.out, "teacher cache (--cache-dir)": ctx.cache.root})
    kinds = ("teacher", "anchor-reference", LOCKS) + (("labels", "pair-features") if has_label_stage(ctx.method) else ())
    check_folders({**{f"the cache's {kind} folder": ctx.cache.root / kind for kind in kinds},
                   "the results folder's locks": ctx.settings.out / LOCKS,
                   **{f"the cell folder of {source} seed {seed}": folders[seed, source] for seed, source in todo}})
    check_files(cell_files(folders, todo))
    check_cells(ctx, todo)


def cell_files(folders: dict[tuple[int, str], Path], cells: list[tuple[int, str]]) -> dict[str, Path]:
    """The files a cell writes (what each is -> path), for bench.stages.preflight.check_files."""
    return {f"the {name} of {source} seed {seed}": folders[seed, source] / name
            for seed, source in cells for name in (METHOD_SOURCE_FILE, SCORES_FILE, CANDIDATES_FILE, RESULT_FILE)}


def run(settings: RunSettings) -> list[CellResult]:
    import errno

    from tqdm.auto import tqdm

    from bench.core.errors import BenchError, CellsFailedError, described
    from bench.core.locks import file_lock, lock_path

    method = checked_method(settings)   # fails before any work
    ctx = RunContext(settings, method, Cache(settings.cache_dir))
    cells = settings.cells
    folders = cell_folders(settings, method)

    def finished_result(seed: int, source: str) -> CellResult | None:
        done = None if settings.force else load_cell(folders[seed, source])
        return done if done is not None and done.cell_key == ctx.cell_key(source, seed) else None

    finished = {cell: done for cell in cells if (done := finished_result(*cell)) is not None}
    todo = [cell for cell in cells if cell not in finished]
    if todo:
        check_before_work(ctx, folders, todo)
    shown = params_text(method.params.model_dump()) or "no params"
    results, failures = [], []
    for seed, source in tqdm(cells, desc=f"{method.name} cells", unit="cell"):
        if (seed, source) in finished:
            print(f"[skip] {source} seed {seed}: finished result in {folders[seed, source]}", file=sys.stderr)
            results.append(finished[seed, source])
            continue
        # Another run on this results folder may be on this cell: wait for it, then take its result.
        lock = lock_path(settings.out / LOCKS, folders[seed, source].relative_to(settings.out).as_posix())
        with file_lock(lock, f"cell {source} seed {seed} ({method.name}, {shown})", collective=True):
            done = finished_result(seed, source)
            if done is not None:
                print(f"[skip] {source} seed {seed}: finished by another run meanwhile, result in "
                      f"{folders[seed, source]}", file=sys.stderr)
                results.append(done)
                continue
            try:
                results.append(run_cell(ctx, source, seed))
            except Exception as error:  # noqa: BLE001
                if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT, errno.EROFS):
                    # the disk filled or went read-only mid-run: every later cell would fail too
                    where = f" ({error.filename})" if error.filename else ""
                    raise BenchError(f"{source} seed {seed} stopped: {error.strerror}{where} while writing the results "
                                     f"folder {settings.out} or the teacher cache {ctx.cache.root}. Free space there (or "
                                     "make it writable) and rerun: finished cells are kept") from error
                # this cell's settings or its method's code, not the run's: the other cells go on, as they do
                # in worker processes (bench.stages.sweep.run_cells), and the run ends listing the failed ones
                failures.append(f"{source} seed {seed}, {method.name} ({shown}): {described(error)}")
                print(f"[failed] {failures[-1]}", file=sys.stderr)
    if failures:
        raise CellsFailedError(failures, results, settings.out)
    return results
