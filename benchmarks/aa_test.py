"""The A/A test: how often the harness's rule calls a difference decided when there is none.

A pool of runs of one method with replicates (bench run --replicate R: the student trained again with
fresh randomness on the same split, teacher and labels; rows METHOD, METHOD#1, METHOD#2, ...) holds,
for every (seed, source) cell, R + 1 runs that differ by run-to-run noise alone. One A/A comparison:
  1. draws K whole seeds from the pool's seeds (without replacement);
  2. in every cell of those seeds, draws two different replicates, "A" and "B";
  3. applies the rule to A - B on NTS (bench.core.runs.stratified: the interval over independent runs,
     stratified by source, at the protocol's sequential boundary for K seeds, or with --fixed the
     fixed-sample interval), and records whether it is decided.
Comparisons drawn from one pool share runs, so they are not independent: the false-positive rate's
Monte Carlo error is shown two ways, the binomial one over the comparisons (too small) and one from
resampling the pool's seeds (the draws repeated on bootstrap copies of the pool's seeds).
With --control each run's difference is corrected by the cell's other replicates (their mean minus B: the
control the rule took from the baseline's replicates until 2026-12-07, from bench.core.runs.VARIANT_CONTROL_FROM
seeds; the rule now applies none); it needs 3 replicates.
With --symmetric each comparison first reflects every cell's runs about their mean with probability 1/2: each cell
keeps its spread and the size of its outlying runs, and loses the sign of its skew (what the control carries into a
difference and two alike runs cancel). The plain rule's A - B is already as likely as B - A, so a reflection leaves its
rate the committed pool's; the control's changes. The comparisons share the pool's cells, so the binomial SE printed
leaves out the pool's own variation.
With --sequential the comparison instead grows seed by seed from the plan's first look and stops at
the first look that decides (what bench compare --until-decided does): the rate that matters for it.
With --fresh each comparison instead draws a pool of its own, three runs a cell with or without --control (so
both rules judge the same draws): in every cell, each run is a deviation drawn from its source's deviations in the
pool (each cell's runs minus their mean, scaled by sqrt(r / (r - 1)), r runs a cell, to the runs' own spread).
That keeps each source's spread and makes the comparisons independent, so the binomial SE is the Monte Carlo
error; it gives up which runs met in one cell, and thins the tails (a deviation from a mean of three mixes
three runs: an outlier X becomes 0.82 X and two of -0.41 X after scaling, and the excess kurtosis about halves).

    python benchmarks/aa_test.py FOLDER [--method naive] [--seeds-per-comparison 3] [--comparisons 400]
    python benchmarks/aa_test.py FOLDER --sequential --control --fresh --comparisons 10000
    python benchmarks/aa_test.py FOLDER --sequential --control --beta 0.5      # a fixed slope for the control
    python benchmarks/aa_test.py FOLDER --sequential [--control] --symmetric --comparisons 10000   # the skew taken out
    python benchmarks/aa_test.py FOLDER --sequential --control --control-from 10   # the control from 10 seeds
    python benchmarks/aa_test.py FOLDER --shape     # per source: the pool's run SD, its runs' skewness and kurtosis
"""
from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bench.core.runs  # noqa: E402
from bench.core.cells import load_cells  # noqa: E402
from bench.core.runs import VARIANT_CONTROL_FROM, cell_value, stratified  # noqa: E402

DRAW_SEED = 20261202


def pool(folder: Path, method: str) -> tuple[dict, tuple[int, int] | None]:
    """{(seed, source): [NTS of each replicate]} for the runs of ``method`` and its replicates, and the looks."""
    from bench.core.store import cell_folders

    cells = load_cells(cell_folders(folder))
    runs: dict[tuple[int, str], list[float]] = defaultdict(list)
    looks = None
    for cell in cells:
        if cell.method == method or cell.method.startswith(f"{method}#"):
            if not cell.independent:
                raise SystemExit(f"{folder}: {cell.method} seed {cell.seed} {cell.source} is on a protocol whose "
                                 "sources share their seeds: its runs are not independent")
            runs[cell.seed, cell.source].append(cell_value(cell, "nts"))
            looks = cell.looks
    return dict(runs), looks


def one_comparison(runs: dict, seeds: list[int], sources: list[str], rng, k: int, looks, sequential: bool,
                   control: bool = False, variances: str = "solved", beta: float | None = None) -> bool:
    """One A/A comparison drawn from the pool: True if the rule decides it. ``control``: the cell's other replicates'
    mean minus B is each run's control (bench.core.runs.stratified), as B's replicates were in bench compare until
    2026-12-07: applied where bench.core.runs.CONTROL_FROM is set (main sets it; a ValueError where it is not)."""
    if control and beta is None:
        bench.core.runs.control_applied()
    chosen = list(rng.choice(seeds, size=k if not sequential else looks[1], replace=False))
    diffs: dict[str, list[float]] = {s: [] for s in sources}
    controls: dict[str, list[float]] = {s: [] for s in sources}
    for seed in chosen:
        for s in sources:
            order = rng.permutation(len(runs[seed, s]))
            a, b, rest = runs[seed, s][order[0]], runs[seed, s][order[1]], [runs[seed, s][i] for i in order[2:]]
            diffs[s].append(a - b)
            controls[s].append(float(np.mean(rest)) - b if control else 0.0)
    given = controls if control else None
    if not sequential:
        return stratified(diffs, looks if looks else None, controls=given, variances=variances, beta=beta)[-1]
    return any(stratified({s: d[:n] for s, d in diffs.items()}, looks,
                          controls={s: c[:n] for s, c in controls.items()} if control else None, variances=variances,
                          beta=beta)[-1]
               for n in range(looks[0], looks[1] + 1))


def run_deviations(runs: dict, sources: list[str]) -> dict[str, np.ndarray]:
    """Per source, every run's deviation from its cell's mean, scaled by sqrt(r / (r - 1)) (a deviation from a mean
    of r runs is that much narrower than the runs' own spread)."""
    return {s: np.concatenate([(np.asarray(v) - np.mean(v)) * math.sqrt(len(v) / (len(v) - 1))
                               for (_, src), v in sorted(runs.items()) if src == s and len(v) >= 2]) for s in sources}


def fresh_pool(spread: dict[str, np.ndarray], seeds: int, replicates: int, rng) -> dict:
    """A pool of ``seeds`` independent seeds, ``replicates`` runs a cell, each run a deviation drawn from its
    source's (every cell's mean is 0: an A/A difference never sees it)."""
    return {(seed, s): rng.choice(values, size=replicates).tolist() for seed in range(seeds)
            for s, values in spread.items()}


def symmetrized(runs: dict, rng) -> dict:
    """The pool with each cell's runs reflected about their mean with probability 1/2 (--symmetric)."""
    return {key: [2 * float(np.mean(v)) - x for x in v] if rng.random() < 0.5 else list(v) for key, v in runs.items()}


def pooled_skewness(runs: dict, sources: list[str], rng, n_boot: int = 2000) -> tuple[float, float, float]:
    """The skewness of every run's deviation from its cell's mean, each source's deviations divided by their SD
    (sources differ several-fold in spread), and its 95% percentile interval over the seeds resampled (a seed's
    cells together: its deviations are not independent)."""
    seeds = sorted({j for j, s in runs if all(len(runs.get((j, d), ())) >= 2 for d in sources)})
    sd = {s: float(np.concatenate([np.asarray(runs[j, s]) - np.mean(runs[j, s]) for j in seeds]).std()) for s in sources}
    per_seed = [np.concatenate([(np.asarray(runs[j, s]) - np.mean(runs[j, s])) / sd[s] for s in sources]) for j in seeds]

    def skew(z: np.ndarray) -> float:
        z = z - z.mean()
        return float(np.mean(z ** 3) / np.mean(z ** 2) ** 1.5)

    drawn = [skew(np.concatenate([per_seed[i] for i in rng.integers(0, len(seeds), len(seeds))])) for _ in range(n_boot)]
    return float(np.percentile(drawn, 2.5)), skew(np.concatenate(per_seed)), float(np.percentile(drawn, 97.5))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--method", default="naive")
    p.add_argument("--seeds-per-comparison", type=int, default=3)
    p.add_argument("--comparisons", type=int, default=400)
    p.add_argument("--fixed", action="store_true", help="the fixed-sample interval (one look at K seeds)")
    p.add_argument("--sequential", action="store_true", help="grow each comparison look by look, stop when decided")
    p.add_argument("--pool-resamples", type=int, default=50)
    p.add_argument("--control", action="store_true",
                   help="each run's control: the cell's other replicates (3+ per cell) minus B, as bench compare uses "
                        "the baseline's replicates")
    p.add_argument("--variances", choices=("solved", "bound"), default="solved",
                   help="with --control: the sources' variances as the rule solves them, or the bound on them "
                        "(bench.core.runs.stratified)")
    p.add_argument("--beta", type=float, default=None,
                   help="with --control: a fixed slope at every look instead of the fitted one (bench.core.runs."
                        "stratified's beta); 0.5 compares A with the mean of B and the cell's other run")
    p.add_argument("--fresh", action="store_true", help="each comparison on a fresh pool drawn from the pool's run "
                   "deviations, per source (independent comparisons: the binomial SE is the Monte Carlo error)")
    p.add_argument("--symmetric", action="store_true", help="each comparison on the pool with each cell's runs "
                   "reflected about their mean with probability 1/2: the runs' skew taken out, their spread and outliers "
                   "kept. The comparisons share the pool's cells: the binomial SE printed leaves out the pool's own "
                   "variation (the SD over resampled pools of the plain run). For the plain rule a reflection changes "
                   "nothing (A - B is as likely as B - A): its rate is the committed pool's again")
    p.add_argument("--control-from", type=int, default=VARIANT_CONTROL_FROM, metavar="SEEDS",
                   help="with --control: apply it from this many seeds (default: the seeds it waited for as the rule)")
    p.add_argument("--shape", action="store_true", help="per source: the run SD (a cell's runs' SD, pooled over its "
                   "seeds: control_variate.py --spreads) and the skewness and excess kurtosis of the runs' deviations "
                   "from their cell's mean")
    args = p.parse_args()
    if (args.beta is not None or args.variances != "solved") and not args.control:
        raise SystemExit("--beta and --variances change the control: give --control with them")
    if args.symmetric and (args.fresh or not args.sequential):
        raise SystemExit("--symmetric draws its own pool per comparison from the committed one: give --sequential, "
                         "without --fresh")
    if args.control:   # the rule applies no control: measured as a variant, from the seeds it waited for
        bench.core.runs.CONTROL_FROM = args.control_from
    elif args.control_from != VARIANT_CONTROL_FROM:
        raise SystemExit("--control-from changes the control: give --control with it")
    runs, looks = pool(args.folder, args.method)
    sources = sorted({s for _, s in runs})
    if args.shape:
        for s in sources:
            cells = [np.asarray(v) for (_, src), v in sorted(runs.items()) if src == s and len(v) >= 2]
            deviations = np.concatenate([v - v.mean() for v in cells])
            sd = math.sqrt(sum(float(np.sum((v - v.mean()) ** 2)) for v in cells) / sum(len(v) - 1 for v in cells))
            z = deviations / deviations.std()
            print(f"{s}: {len(cells)} cells, run SD {sd:.2f}, skewness {float(np.mean(z ** 3)):+.2f}, excess kurtosis "
                  f"{float(np.mean(z ** 4)) - 3:+.1f}, largest deviation {float(np.abs(z).max()):.1f} SDs")
        low, estimate, high = pooled_skewness(runs, sources, np.random.default_rng(DRAW_SEED))
        print(f"all sources, each standardised: skewness {estimate:+.2f}, 95% [{low:+.2f}, {high:+.2f}] (a cell's runs' "
              "deviations from their mean; the seeds resampled, 2,000 times)")
        return
    need = 3 if args.control else 2
    seeds = sorted(seed for seed in {j for j, _ in runs} if all(len(runs.get((seed, s), ())) >= need for s in sources))
    k = args.seeds_per_comparison
    plan = None if args.fixed else (looks or (k, k))
    if args.sequential and (plan is None or len(seeds) < plan[1]):
        raise SystemExit(f"--sequential needs the protocol's looks and at least {plan and plan[1]} seeds in the pool")
    if len(seeds) < k:
        raise SystemExit(f"the pool has {len(seeds)} whole seeds with {need}+ replicates per cell; need {k}")
    rng = np.random.default_rng(DRAW_SEED)
    if args.fresh:
        spread, size = run_deviations(runs, sources), plan[1] if args.sequential else k
        hits = [one_comparison(fresh_pool(spread, size, 3, rng), list(range(size)), sources, rng, k, plan,
                               args.sequential, args.control, args.variances, args.beta)
                for _ in range(args.comparisons)]
        fpr = float(np.mean(hits))
        print(f"A/A on fresh pools drawn from {args.method}'s run deviations ({len(seeds)} seeds x {len(sources)} sources, "
              f"3 runs a cell): {args.comparisons} independent comparisons of "
              f"{k if not args.sequential else f'up to {plan[1]}'} seeds "
              f"({'sequential, stopped when decided' if args.sequential else 'fixed sample' if args.fixed else f'look at {k} seeds of plan {plan}'}"
              f"{', the other replicates as control' if args.control else ''}"
              f"{(', beta %g' % args.beta if args.beta is not None else ', variances ' + args.variances) if args.control else ''})")
        print(f"decided (false positives): {100 * fpr:.2f}%  (binomial SE {100 * math.sqrt(fpr * (1 - fpr) / args.comparisons):.2f})")
        return

    if args.symmetric:
        hits = [one_comparison(symmetrized(runs, rng), seeds, sources, rng, k, plan, True, args.control,
                               args.variances, args.beta) for _ in range(args.comparisons)]
        fpr = float(np.mean(hits))
        print(f"A/A on {args.method}'s pool ({len(seeds)} seeds x {len(sources)} sources), each cell's runs reflected "
              f"about their mean with probability 1/2 per comparison: {args.comparisons} comparisons of up to {plan[1]} "
              f"seeds (sequential, stopped when decided{', the other replicates as control' if args.control else ''}"
              f"{(', beta %g' % args.beta if args.beta is not None else ', variances ' + args.variances) if args.control else ''})")
        print(f"decided (false positives): {100 * fpr:.2f}%  (binomial SE {100 * math.sqrt(fpr * (1 - fpr) / args.comparisons):.2f}, "
              "given this pool: not its own variation)")
        return

    def rate(seed_pool: list[int]) -> float:
        return float(np.mean([one_comparison(runs, seed_pool, sources, rng, k, plan, args.sequential, args.control,
                                             args.variances, args.beta)
                              for _ in range(args.comparisons)]))

    fpr = rate(seeds)
    resampled = [rate(sorted(rng.choice(seeds, size=len(seeds), replace=True).tolist()))
                 for _ in range(args.pool_resamples)] if args.pool_resamples else []
    replicates = sorted({len(v) for v in runs.values()})
    print(f"A/A on {args.method}: {len(seeds)} seeds x {len(sources)} sources in the pool, replicates per cell "
          f"{replicates}; {args.comparisons} comparisons of {k if not args.sequential else f'up to {plan[1]}'} seeds "
          f"({'sequential, stopped when decided' if args.sequential else 'fixed sample' if args.fixed else f'look at {k} seeds of plan {plan}'}"
          f"{', the other replicates as control' if args.control else ''}"
              f"{(', beta %g' % args.beta if args.beta is not None else ', variances ' + args.variances) if args.control else ''})")
    print(f"decided (false positives): {100 * fpr:.1f}%  (binomial SE {100 * math.sqrt(fpr * (1 - fpr) / args.comparisons):.1f}"
          + (f"; SD over {len(resampled)} resampled pools {100 * float(np.std(resampled, ddof=1)):.1f})" if resampled else ")"))
    if resampled:   # copies of one pool's seeds, with repeats: its Monte Carlo SE, not the rate's uncertainty
        print(f"mean over the resampled pools: {100 * float(np.mean(resampled)):.2f}% ({len(resampled)} x {args.comparisons} "
              f"comparisons; Monte Carlo SE {100 * float(np.std(resampled, ddof=1)) / math.sqrt(len(resampled)):.2f})")


if __name__ == "__main__":
    main()
