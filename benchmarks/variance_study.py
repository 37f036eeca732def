"""The variance study of `mini`'s design: what a one-point decision on Δ NTS against naive costs.

A decision's cost is (runs needed) x (CPU-seconds per run), and the runs needed grow with the
per-run variance of the paired difference: with n independent runs in 6 sources, the 95% interval's
half-width is t(0.975, n - 6) * sd / sqrt(n), where sd is the SD of one run's Δ NTS within its source.
So a design is scored by sd^2 x cost, and this script measures both for designs of `mini` x `tiny`
that differ in one or two knobs. Every design seeds each (seed, source) cell on its own
(ProtocolSpec.seeding "per-source"), so its runs are independent.

Arms, per (design, seed, source): naive; naive again with fresh student randomness (replicate 1: the
A/A noise floor, same teacher and labels); ANCHOR at lam = 1; confidence (alpha 0.5). ANCHOR holds the
student near its pretrained features and confidence sharpens its own labels: two different ways of
moving away from naive's training.

A design is a name of knobs joined by "_" ("base" for none):
    epN      the student trains N epochs (v1: 1)
    lrX      the student's learning rate (v1: 1e-4)
    LN       the student is MiniLM cut to its first N layers (v1: all 6)
    poolN    train pool pairs per source, split in halves (v1: 1600)
    cueX     the spurious cues' strength in their own domain (v1: 0.5)
    es       the student keeps its best checkpoint on teacher-labelled held-out pairs (bench.core.specs
             .EarlyStopping's defaults: 10% held out, checked every 10 steps, by loss): with epN, training
             to convergence on the teacher-labelled held-out loss
    zhead    the student's reward head starts at zero (weights and bias) instead of a seeded random draw
    swa      each run of the student's training loop ends at the uniform average of its weights after each
             step of its second half (tail averaging, as SWA does), not at its last step's weights (a
             method that runs the loop several times, lp-ft's phases, averages each run apart)

zhead and swa are levers under study, applied by this script (``levers``) around the student's
loading and training only (never the teacher's, whose cache the designs share). They are not options
of the harness: a lever that earns its place becomes a field of the model pair's specs, in the code
whose digest is in every key, with a protocol version of its own.

    python benchmarks/variance_study.py run --designs base ep3 --seeds 0 1 [--worker 0/2]
    python benchmarks/variance_study.py analyse --designs base ep3 [--csv docs/results/variance-study.csv]

`run` is resumable and writes its cells under --out (default study/variance, not committed). Each
finished run is also one line of the ledger, --ledger/<design>.jsonl (default
benchmarks/results/variance-study, committed): its CPU-seconds (this process's user + system time, one
torch thread) and the teacher's and student's per-pair verdicts on every test split, which is all the
analysis reads, so the study's data outlive the machine it ran on and a unit already in the ledger is
not run again. `analyse` reads the ledgers and prints, per design and arm, the
per-run SD of Δ NTS against naive pooled within sources, the CPU-seconds per run, sd^2 x cost, and
the runs and CPU-hours a ±1-point interval needs; --test-size N recomputes every accuracy on the
first N pairs of each test split (what a protocol with N test pairs scores: mini's splits are
generated in order) and the cost of scoring only those (``run_cost``), so test size is a knob with no
runs of its own.
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import re
import resource
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TQDM_DISABLE", "1")

ARMS = (("naive", {}, 0), ("naive", {}, 1), ("anchor", {"lam": "1.0"}, 0), ("confidence", {}, 0))
# --ceiling adds the student trained on gold labels: a design must keep it decidedly above the teacher (PGR)
CEILING = ("ceiling", {}, 0)
KNOBS = {"ep": r"ep(\d+)", "lr": r"lr([0-9.]+e-?[0-9]+|[0-9.]+)", "L": r"L(\d+)", "pool": r"pool(\d+)",
         "cue": r"cue([0-9.]+)", "es": r"(es)", "zhead": r"(zhead)", "swa": r"(swa)"}


def knobs(design: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for token in [] if design == "base" else design.split("_"):
        for knob, pattern in KNOBS.items():
            match = re.fullmatch(pattern, token)
            if match:
                found[knob] = match[1]
                break
        else:
            raise SystemExit(f"design {design!r}: unknown knob {token!r}; knobs: epN lrX LN poolN cueX es zhead swa")
    if "swa" in found and "es" in found:
        raise SystemExit(f"design {design!r}: swa and es both choose the student's final weights; use one")
    return found


def specs(design: str):
    """(protocol, model pair) of a design: mini x tiny with its knobs, every cell seeded on its own."""
    from bench.core.protocols import DATASETS, MODEL_PAIRS, PROTOCOLS
    from bench.core.specs import EarlyStopping, frozen_map

    k = knobs(design)
    protocol = PROTOCOLS.get("mini")
    categories = protocol.categories
    if "cue" in k:   # the datasets with another cue strength, registered under a name of their own
        prefix = f"mini-cue{k['cue']}"
        for name in protocol.datasets:
            new = name.replace("mini/", f"{prefix}/")
            if new not in DATASETS:
                spec = DATASETS.get(name)
                DATASETS.register(new, dataclasses.replace(spec, name=new, options=frozen_map(
                    {**spec.kwargs, "cue_strength": float(k["cue"])})))
        categories = tuple((c, tuple(n.replace("mini/", f"{prefix}/") for n in names)) for c, names in categories)
    # Named by its data knobs alone: designs that differ only in the student share their teachers (cached).
    data = "_".join(f"{key}{k[key]}" for key in ("pool", "cue") if key in k) or "base"
    protocol = dataclasses.replace(protocol, name=f"mini-study-{data}", version="study", seeding="per-source",
                                   categories=categories,
                                   train_pool_size=int(k.get("pool", protocol.train_pool_size)))
    models = MODEL_PAIRS.get("tiny")
    strong, train = models.strong, models.student_train
    if "L" in k:
        strong = dataclasses.replace(strong, name=f"minilm-l{k['L']}", num_layers=int(k["L"]))
    train = dataclasses.replace(train, epochs=int(k.get("ep", train.epochs)),
                                learning_rate=float(k.get("lr", train.learning_rate)))
    if "es" in k:
        train = dataclasses.replace(train, early_stopping=EarlyStopping())
    models = dataclasses.replace(models, name=f"tiny-study-{design}", strong=strong, student_train=train)
    return protocol, models


@contextlib.contextmanager
def levers(design: str):
    """The design's student levers (zhead, swa) in force for the runs inside: the student's loader
    (``bench.stages.pipeline.load_reward_model``, the student's alone) and the training loop's run
    (``bench.stages.train.train_reward_model`` as ``TrainingLoop`` calls it, students' training alone)
    are wrapped, and restored on leaving."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    from bench.core.anatomy import head_of
    from bench.stages import pipeline, train

    k, saved = knobs(design), {}
    if "zhead" in k:
        load = saved["load"] = pipeline.load_reward_model

        def zero_head_load(spec, seed):
            model = load(spec, seed)
            with torch.no_grad():
                for parameter in head_of(model)[1].parameters():
                    parameter.zero_()
            return model
        pipeline.load_reward_model = zero_head_load
    if "swa" in k:
        fit = saved["fit"] = train.train_reward_model

        def tail_averaged(model, examples, cfg, method, seed, desc):
            total = math.ceil(len(examples) / cfg.batch_size) * cfg.epochs
            state = {"step": 0, "mean": None, "n": 0}

            def after_step(optimizer, args, kwargs):
                state["step"] += 1
                if state["step"] <= total // 2:
                    return
                params = [p for p in model.parameters() if p.requires_grad]
                if state["mean"] is None:
                    state["mean"] = [p.detach().clone() for p in params]
                else:   # the running mean of the iterates since the half-way step
                    for mean, p in zip(state["mean"], params, strict=True):
                        mean.add_(p.detach() - mean, alpha=1.0 / (state["n"] + 1))
                state["n"] += 1
            handle = register_optimizer_step_post_hook(after_step)
            try:
                log = fit(model, examples, cfg, method, seed, desc)
            finally:
                handle.remove()
            if state["step"] != total:   # the hook saw another loop's steps, or this one stopped early
                raise RuntimeError(f"swa: {state['step']} optimizer steps in a loop of {total}")
            if state["mean"] is not None:
                with torch.no_grad():
                    for mean, p in zip(state["mean"], [p for p in model.parameters() if p.requires_grad], strict=True):
                        p.copy_(mean)
            return {**log, "tail_averaged_steps": state["n"]}
        train.train_reward_model = tail_averaged
    try:
        yield
    finally:
        if "load" in saved:
            pipeline.load_reward_model = saved["load"]
        if "fit" in saved:
            train.train_reward_model = saved["fit"]


def run(args) -> None:
    import torch

    from bench.core.errors import CellsFailedError
    from bench.core.results import cell_dir, load_cell
    from bench.core.settings import RunSettings, default_cache_dir
    from bench.stages.pipeline import checked_method, run_slug
    from bench.stages.pipeline import run as run_cells

    torch.set_num_threads(1)
    index, workers = (int(x) for x in args.worker.split("/"))
    # seed-major: every design gets its first seed's runs before any gets its second, so an early look compares them
    units = [(d, s, src) for s in args.seeds for d in args.designs for src in specs(d)[0].datasets]
    mine = units[index::workers]
    arms = ARMS + ((CEILING,) if args.ceiling else ())
    print(f"# worker {index}/{workers}: {len(mine)} units x {len(arms)} arms, torch {torch.__version__}, 1 thread",
          flush=True)
    for design, seed, source in mine:
        protocol, models = specs(design)
        out = args.out / design
        ledger = args.ledger / f"{design}.jsonl"
        done = {(r["run"], r["seed"], r["source"]) for r in read_ledger(ledger)}
        for method, params, replicate in arms:
            if args.arms and arm_slug(method, params, replicate) not in args.arms:
                continue
            settings = RunSettings(protocol=protocol, models=models, method=method, params=params, sources=(source,),
                                   seeds=(seed,), out=out, cache_dir=args.cache_dir or default_cache_dir(),
                                   replicate=replicate,
                                   command=f"python benchmarks/variance_study.py run --designs {design} --seeds {seed}")
            slug = run_slug(settings, checked_method(settings))
            if (slug, seed, source) in done:
                continue
            folder = cell_dir(out, protocol.name, models.name, slug, seed, source)
            if load_cell(folder) is not None:   # finished, not in the ledger (cut between the two writes)
                append_line(ledger, {"design": design, "cpu_s": None, **verdicts(folder)})
                continue
            usage, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
            try:
                with levers(design):
                    (result,) = run_cells(settings)
            except CellsFailedError as error:
                print(f"[failed] {design} {slug} seed {seed} {source}: {error}", flush=True)
                continue
            after = resource.getrusage(resource.RUSAGE_SELF)
            cost = {"design": design, "run": slug, "seed": seed, "source": source,
                    "cpu_s": after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime,
                    "wall_s": time.perf_counter() - wall, "teacher_trained": not result.teacher["reused"],
                    "timings_s": result.timings_s}
            append_line(ledger, {**cost, **verdicts(folder)})
            nts = sum(m.nts for m in result.metrics.values()) / len(result.metrics)
            print(f"{design} {slug} seed {seed} {source}: NTS {nts:+.2f}, {cost['cpu_s']:.0f} CPU-s", flush=True)


# --- analysis -------------------------------------------------------------------------------------------
def verdicts(folder: Path) -> dict:
    """A finished cell's ledger entry: run name, seed, source, the student's misfit to its teacher's labels,
    and the teacher's and student's per-pair correctness on each test split, one digit per pair
    (bench.core.cells.correctness_text)."""
    from bench.core.cells import correctness, correctness_text
    from bench.core.results import params_slug, read_cell, replicate_slug

    result, rows = read_cell(folder)
    by_set: dict[str, list[dict]] = defaultdict(list)
    for row in rows:
        by_set[row["eval_set"]].append(row)
    return {"run": replicate_slug(params_slug(result.method.name, result.method.params), result.replicate),
            "seed": result.seed, "source": result.source,
            # how far the student fits its teacher's labels on its own training pairs (None: nothing trains)
            "misfit": result.misfit.model_dump(mode="json") if result.misfit else None,
            "verdicts": {name: {who: correctness_text(correctness([float(r[f"{who}_chosen"]) for r in got],
                                                                   [float(r[f"{who}_rejected"]) for r in got]))
                                for who in ("teacher", "student")} for name, got in by_set.items()}}


def append_line(path: Path, entry: dict) -> None:
    """One JSON line, appended and flushed to disk: a run cut mid-write leaves at most a partial last
    line, which read_ledger skips."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        handle.write(json.dumps(entry, sort_keys=True) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_ledger(path: Path) -> list[dict]:
    entries = []
    for line in path.read_text().splitlines() if path.is_file() else []:
        try:
            entries.append(json.loads(line))
        except json.JSONDecodeError:
            continue   # the partial last line of a cut run
    return entries


def runs_of(entries: list[dict], test_size: int | None) -> list[dict]:
    """Each ledger entry's accuracies, teacher and student, on the ID split and each target (on the
    first ``test_size`` pairs of each split when given)."""
    from bench.core.cells import correctness_from_text

    found = []
    for entry in entries:
        acc = {}
        for name, by in entry["verdicts"].items():
            acc[name] = {}
            for who, text in by.items():
                values = correctness_from_text(text, len(text))
                acc[name][who] = 100 * float(values[:test_size].mean() if test_size else values.mean())
        found.append({**entry, "acc": acc})
    return found


def run_metrics(run: dict) -> dict[str, float]:
    from bench.core.metrics import cell_metrics

    per_target = cell_metrics(run["acc"], run["source"])
    return {k: statistics.fmean(m[k] for m in per_target.values()) for k in ("wrg", "aog", "nts")}


def run_cost(entry: dict, test_size: int | None) -> float:
    """A run's CPU-seconds, or what it would have spent scoring only the first ``test_size`` pairs of each
    split: its scoring stage (the eval sets' 2 x pairs sequences and the misfit's 2 x its pairs) shrinks in
    proportion to the sequences scored, and the CPU-seconds split between training and scoring as the run's
    wall-clock timers do."""
    if not test_size:
        return entry["cpu_s"]
    timers = entry["timings_s"]
    pairs = [len(by["student"]) for by in entry["verdicts"].values()]
    misfit = 2 * entry["misfit"]["pairs"] if entry.get("misfit") else 0
    scored, kept = 2 * sum(pairs) + misfit, 2 * sum(min(n, test_size) for n in pairs) + misfit
    saved = timers["student_score"] * (1 - kept / scored)
    return entry["cpu_s"] * (1 - saved / timers["total"])


def pooled_sd(deltas: dict[str, list[float]]) -> tuple[float, int]:
    """The SD of one run's value around its source's mean, pooled over sources, and its degrees of freedom."""
    ss = sum(sum((x - statistics.fmean(xs)) ** 2 for x in xs) for xs in deltas.values() if len(xs) > 1)
    df = sum(len(xs) - 1 for xs in deltas.values() if len(xs) > 1)
    return (math.sqrt(ss / df) if df else math.nan), df


def runs_for_half_width(sd: float, sources: int = 6, target: float = 1.0) -> int:
    """The fewest independent runs (a whole number of seeds x sources) whose stratified t-interval has
    half-width <= target at this per-run SD."""
    from bench.core.sequential import t_quantile

    if not math.isfinite(sd):
        return 0
    for seeds in range(2, 100000):
        n = seeds * sources
        if t_quantile(0.975, n - sources) * sd / math.sqrt(n) <= target:
            return n
    return 0


def design_profile(entries: list[dict], design: str, test_size: int | None = None) -> dict:
    """A design's naive runs (naive and its replicate: independent students): mean WRG, AOG per category, NTS,
    misfit, the teacher's ID error (its error on the source's test split, standing in for its error on the student's training pairs, the same
    distribution), and the share of the teacher's mistakes the students fit, at least."""
    protocol = specs(design)[0]
    runs = runs_of(entries, test_size)
    naive = [r for r in runs if r["run"] in ("naive", "naive#1")]   # both are naive students
    metrics = [run_metrics(r) for r in naive]
    out: dict = {"design": design, "runs": len(naive),
                 "wrg": statistics.fmean(m["wrg"] for m in metrics) if metrics else math.nan}
    for category, _ in protocol.categories:
        own = [m["aog"] for r, m in zip(naive, metrics) if protocol.category_of(r["source"]) == category]
        out[f"aog_{category}"] = statistics.fmean(own) if own else math.nan
    out["nts"] = statistics.fmean(m["nts"] for m in metrics) if metrics else math.nan
    misfit = [r["misfit"]["disagreement"] for r in naive if r.get("misfit")]
    out["misfit"] = statistics.fmean(misfit) if misfit else math.nan
    errors = [100 - r["acc"][r["source"]]["teacher"] for r in naive if r.get("misfit")]   # the same runs
    out["teacher_id_error"] = statistics.fmean(errors) if errors else math.nan
    # A student that disagrees with its teacher on m% of its pairs, where the teacher errs on e%, agrees with
    # the teacher on at least (e - m) / e of the teacher's mistakes: a lower bound on the mistakes it fits.
    out["fits_mistakes"] = max(0.0, 100 * (1 - out["misfit"] / out["teacher_id_error"])) if misfit and errors else math.nan
    # The ceiling (--ceiling) above the teacher in distribution, with a t-interval over its runs: PGR needs it > 0
    gaps = [r["acc"][r["source"]]["student"] - r["acc"][r["source"]]["teacher"]
            for r in runs if r["run"] == "ceiling"]
    if len(gaps) > 1:
        from bench.core.sequential import t_quantile

        half = t_quantile(0.975, len(gaps) - 1) * statistics.stdev(gaps) / math.sqrt(len(gaps))
        mean = statistics.fmean(gaps)
        out["ceiling_gap"] = f"{mean:+.1f} [{mean - half:+.1f}, {mean + half:+.1f}] ({len(gaps)})"
    else:
        out["ceiling_gap"] = "not run (--ceiling)"
    return out


def markdown(header: tuple[str, ...], rows: list[dict]) -> str:
    """A pipe table (what docs/statistics.md holds), floats to 2 decimals."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(f"{v:.2f}" if isinstance(v, float) else str(v) for v in row.values()) + " |"
              for row in rows]
    return "\n".join(lines)


def arm_slug(method: str, params: dict, replicate: int) -> str:
    """An arm of ARMS by name (``anchor_lam=1.0``, ``naive#1``): what --arms takes and analyse prints."""
    from bench.core.results import params_slug, replicate_slug

    return replicate_slug(params_slug(method, params), replicate)


def arm_name(run: str) -> str:
    """A run's arm as ARMS gives it (``anchor_lam=1.0``, ``naive#1``), not the full slug with every default."""
    slug, _, rep = run.partition("#")
    for method, params, replicate in ARMS + (CEILING,):
        if slug.split("_")[0] == method and int(rep or 0) == replicate:
            return arm_slug(method, params, replicate)
    return run


def sd_interval(sd: float, df: int) -> tuple[float, float]:
    """The 95% interval of an SD estimated with ``df`` degrees of freedom (chi-square)."""
    from scipy.stats import chi2

    if not df or not math.isfinite(sd):
        return math.nan, math.nan
    return sd * math.sqrt(df / chi2.ppf(0.975, df)), sd * math.sqrt(df / chi2.ppf(0.025, df))


def row(design: str, arm: str, runs: int, delta: float | str, sd: float, df: int, cost: float) -> dict:
    """One line of the σ² x cost table."""
    low, high = sd_interval(sd, df)
    need = runs_for_half_width(sd)
    return {"design": design, "arm": arm, "runs": runs, "delta_nts": delta, "sd": sd, "sd_95": f"{low:.1f}-{high:.1f}",
            "df": df, "cpu_s_per_run": cost, "sd2_cost": sd * sd * cost, "runs_for_1": need,
            "cpu_h_for_1": need * cost / 3600}


def against_naive(nts: dict[tuple[str, int, str], float], arm: str) -> dict[str, list[float]]:
    """Per source, each run of ``arm`` minus naive's NTS in the same cell (``nts``: (run, seed, source) -> NTS)."""
    deltas: dict[str, list[float]] = defaultdict(list)
    for (run, seed, source), value in nts.items():
        if run == arm and ("naive", seed, source) in nts:
            deltas[source].append(value - nts["naive", seed, source])
    return deltas


def reference_rows(folders: list[Path], seeds: list[int] | None) -> list[dict]:
    """The SD rows of committed runs (results folders or submissions, together holding naive, its replicates and
    the methods to compare), as ``analyse`` computes them from a ledger: each arm's run minus naive's in the cell, pooled within
    sources. mini-v2's reference runs are design lr3e-4's (its ledger's seeds 0 and 1 are those runs, digit for
    digit), so they give that design's SD on more seeds. No cost: the runs' CPU-seconds are not the study's."""
    from bench.core.cells import load_cells
    from bench.core.runs import cell_value
    from bench.core.store import cell_folders

    cells = load_cells([f for folder in folders for f in cell_folders(folder)])
    value = {(arm_name(c.method), c.seed, c.source): cell_value(c, "nts") for c in cells if seeds is None or c.seed in seeds}
    rows = []
    for arm in sorted({a for a, _, _ in value} - {"naive", "ceiling"}):
        deltas = against_naive(value, arm)
        sd, df = pooled_sd(deltas)
        flat = [d for ds in deltas.values() for d in ds]
        if flat:
            rows.append(row("committed runs", arm, len(flat), statistics.fmean(flat), sd, df, math.nan))
    return rows


def analyse(args) -> None:
    import csv

    rows_out = []
    print(f"Per-run Δ NTS against naive (the arm's run minus naive's in the same cell), SD pooled within sources "
          f"with its 95% interval; cost: median CPU-seconds of a student run (teacher reused, one torch thread)"
          f"{f'; test splits cut to {args.test_size} pairs' if args.test_size else ''}. naive#1 is the A/A row: "
          "naive again with fresh student randomness.\n")
    header = ("design", "arm", "runs", "Δ NTS", "sd", "sd 95%", "df", "CPU-s/run", "sd²×cost", "runs for ±1",
              "CPU-h for ±1")
    for design in args.designs:
        entries = [e for e in read_ledger(args.ledger / f"{design}.jsonl") if args.seeds is None or e["seed"] in args.seeds]
        runs, costs = runs_of(entries, args.test_size), entries
        nts = {(r["run"], r["seed"], r["source"]): run_metrics(r)["nts"] for r in runs}
        arms = []
        for name in sorted({r["run"] for r in runs} - {"naive", "ceiling"}):
            deltas = against_naive(nts, name)
            sd, df = pooled_sd(deltas)
            spent = [run_cost(c, args.test_size) for c in costs
                     if c["run"] == name and c["cpu_s"] and not c["teacher_trained"]]
            cost = statistics.median(spent) if spent else math.nan
            flat = [d for ds in deltas.values() for d in ds]
            rows_out.append(row(design, arm_name(name), len(flat), statistics.fmean(flat) if flat else math.nan,
                                sd, df, cost))
            arms.append((sd, df, cost))
        # One SD per design, pooled over its arms (each arm's within-source sums of squares): the arms' SDs
        # differ, but a design lowers or raises them together, and df 6 per arm cannot rank designs.
        df = sum(d for _, d, _ in arms if d)
        if len(arms) > 1 and df:
            sd = math.sqrt(sum(s * s * d for s, d, _ in arms if d) / df)
            rows_out.append(row(design, "all arms, pooled", sum(r["runs"] for r in rows_out[-len(arms):]), "—",
                                sd, df, statistics.fmean(c for _, _, c in arms)))
    if args.reference:
        rows_out += reference_rows(args.reference, args.seeds)
    print(markdown(header, rows_out))
    print("\nWhat a design shows of the paper's question, from its naive runs (naive and naive#1): the gain in distribution (WRG), "
          "out of distribution per category (AOG), and how far the students fit their teachers' labels on "
          "their own training pairs (misfit: % disagreeing) against the teachers' error on their test split.\n")
    profiles = [design_profile(read_ledger(args.ledger / f"{design}.jsonl"), design, args.test_size) for design in args.designs]
    print(markdown(("design", "naive runs", "WRG", *(f"AOG {c}" for c, _ in specs("base")[0].categories), "NTS",
                    "misfit %", "teacher ID error %", "teacher's mistakes fit, at least %",
                    "ceiling − teacher ID (95%, runs)"), profiles))
    if args.csv:
        with open(args.csv, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows_out[0]))
            writer.writeheader()
            writer.writerows(rows_out)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)
    for name in ("run", "analyse"):
        c = sub.add_parser(name)
        c.add_argument("--designs", nargs="+", default=["base"])
        c.add_argument("--ledger", type=Path, default=ROOT / "benchmarks" / "results" / "variance-study")
    sub.choices["run"].add_argument("--out", type=Path, default=ROOT / "study" / "variance")
    sub.choices["run"].add_argument("--seeds", nargs="+", type=int, default=[0, 1])
    sub.choices["run"].add_argument("--worker", default="0/1", help="I/N: this process runs every N-th unit from I")
    sub.choices["run"].add_argument("--cache-dir", type=Path)
    sub.choices["run"].add_argument("--ceiling", action="store_true", help="also train the ceiling (gold labels)")
    sub.choices["run"].add_argument("--arms", nargs="+", help="only these arms (naive naive#1 anchor_lam=1.0 confidence "
                                    "ceiling); default: all")
    sub.choices["analyse"].add_argument("--test-size", type=int)
    sub.choices["analyse"].add_argument("--csv", type=Path)
    sub.choices["analyse"].add_argument("--seeds", nargs="+", type=int, help="only these seeds' runs")
    sub.choices["analyse"].add_argument("--reference", nargs="+", type=Path, metavar="FOLDER",
                                        help="also the SD rows of committed runs (e.g. mini-v2's naive submission)")
    args = p.parse_args()
    if args.command == "run":
        for design in args.designs:
            knobs(design)
        known = [arm_slug(*arm) for arm in ARMS + (CEILING,)]
        for arm in args.arms or ():
            if arm not in known or (arm == "ceiling" and not args.ceiling):
                raise SystemExit(f"--arms {arm!r}: not an arm of this run; arms: {' '.join(known[:-1])}"
                                 f"{', and ceiling with --ceiling' if not args.ceiling else ' ceiling'}")
    (run if args.command == "run" else analyse)(args)


if __name__ == "__main__":
    main()
