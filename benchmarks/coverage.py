"""The coverage check: do intervals from a few seeds cover what many seeds say?

A folder that holds many seeds of a method A and of naive (B) on a protocol whose runs are independent
gives, for every (seed, source) cell, one paired difference A - B of a metric (NTS by default). One check:
  1. draws K whole seeds (without replacement): the seeds a submission would have;
  2. computes the harness's interval on them (bench.core.runs.stratified: over independent runs,
     stratified by source; at the plan's boundary for K seeds, or with --fixed the fixed-sample one);
  3. takes the held-out seeds' stratified mean as the truth it should cover, and records whether it does.
The held-out mean is itself noisy: with n_K runs drawn and n_H held out, estimate - truth has variance
sd^2 (1/n_K + 1/n_H), so even a right 95% interval covers it less often than 95%. The script prints
that expected rate beside the one found (per draw, a t with the draw's df and boundary, scaled by
sqrt(1 + n_K / n_H); an early look's wider boundary covers more).
The draws share seeds, so their Monte Carlo error is shown from a jackknife over the folder's seeds too
(the rate again without each seed in turn).

With --control each run's difference is first corrected by the baseline's replicates in the folder (B#1, ...: their
mean minus B), the control the rule applied until 2026-12-07, from bench.core.runs.VARIANT_CONTROL_FROM seeds
(bench.core.runs.stratified); the truth is then the held-out seeds' corrected estimate, so that its noise per run
is the interval's (both estimate the same difference: the control's mean is 0). It needs 5 seeds on both sides.

    python benchmarks/coverage.py FOLDER --method anchor_lam=1.0 [--baseline naive] [--seeds-per-comparison 3]
    python benchmarks/coverage.py FOLDER --method anchor_lam=1.0 --fixed --seeds-per-comparison 8 --control
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
from bench.core.results import replicates_of  # noqa: E402
from bench.core.runs import VARIANT_CONTROL_FROM, cell_value, stratified  # noqa: E402

DRAW_SEED = 20261202


def paired(folder: Path, method: str, baseline: str, metric: str) -> tuple[dict, tuple[int, int] | None, dict]:
    """{source: {seed: A - B}} over the cells both runs hold, the protocol's looks, and {source: {seed: x}} where
    B's replicates ran the cell too: x = their mean minus B (the control's A/A difference)."""
    from bench.core.store import cell_folders

    value: dict[tuple[str, int, str], float] = {}
    replicates: dict[tuple[int, str], list[float]] = defaultdict(list)
    looks = None
    cells = load_cells(cell_folders(folder))
    others = set(replicates_of({c.method for c in cells}, baseline)) - {method}   # B's replicates but A
    for cell in cells:
        if cell.method in others:
            replicates[cell.seed, cell.source].append(cell_value(cell, metric))
        elif cell.method in (method, baseline):
            if not cell.independent:
                raise SystemExit(f"{folder}: {cell.method} seed {cell.seed} {cell.source} is on a protocol whose "
                                 "sources share their seeds: its runs are not independent")
            value[cell.method, cell.seed, cell.source] = cell_value(cell, metric)
            looks = cell.looks
    diffs: dict[str, dict[int, float]] = defaultdict(dict)
    controls: dict[str, dict[int, float]] = defaultdict(dict)
    for (run, seed, source), v in value.items():
        if run == method and (baseline, seed, source) in value:
            diffs[source][seed] = v - value[baseline, seed, source]
            if replicates.get((seed, source)):
                controls[source][seed] = float(np.mean(replicates[seed, source])) - value[baseline, seed, source]
    return dict(diffs), looks, dict(controls)


def one_check(diffs: dict, seeds: list[int], rng, k: int, looks, controls: dict | None = None) -> tuple[bool, float]:
    """Whether the interval of ``k`` drawn seeds covers the held-out seeds' mean, and the chance that a right
    interval with this draw's boundary and df would: (estimate - truth) / SE_K is a t with the draw's df
    scaled by sqrt(1 + n_K / n_H)."""
    from scipy.stats import t

    drawn = set(rng.choice(seeds, size=k, replace=False).tolist())
    def part(values: dict, chosen: bool) -> dict:
        return {s: [v[j] for j in seeds if (j in drawn) == chosen] for s, v in values.items()}

    controls = controls or None
    if controls:
        bench.core.runs.control_applied()   # else both sides would be the plain rule's again
    _, low, high, n, _, _, df, _, boundary, _ = stratified(part(diffs, True), looks,
                                                           controls=part(controls, True) if controls else None)
    # the truth: the held-out seeds' estimate by the same estimator (with the control, corrected as the drawn ones
    # are), so that its noise per run is the interval's
    truth = stratified(part(diffs, False), controls=part(controls, False) if controls else None)[0]
    n_held = (len(seeds) - k) * len(diffs)
    return bool(low <= truth <= high), float(2 * t.cdf(boundary / math.sqrt(1 + n / n_held), df) - 1)


def coverage(diffs: dict, seeds: list[int], k: int, looks, comparisons: int, rng, controls: dict | None = None
             ) -> tuple[float, float]:
    """Of ``comparisons`` checks of ``k`` seeds drawn from ``seeds``: the share whose interval covers the
    rest's mean, and the share a right interval would (the mean of one_check's chances)."""
    found = np.array([one_check(diffs, seeds, rng, k, looks, controls) for _ in range(comparisons)])
    return float(found[:, 0].mean()), float(found[:, 1].mean())


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    p.add_argument("--method", required=True, help="the row name of A, e.g. anchor_lam=1.0")
    p.add_argument("--baseline", default="naive")
    p.add_argument("--metric", default="nts")
    p.add_argument("--seeds-per-comparison", type=int, default=3)
    p.add_argument("--comparisons", type=int, default=400)
    p.add_argument("--fixed", action="store_true", help="the fixed-sample interval (one look at K seeds)")
    p.add_argument("--control", action="store_true", help="correct each run's difference by the baseline's "
                   "replicates (the rule until 2026-12-07), from VARIANT_CONTROL_FROM seeds, on the seeds they ran")
    args = p.parse_args()
    diffs, looks, controls = paired(args.folder, args.method, args.baseline, args.metric)
    if not diffs:
        raise SystemExit(f"{args.folder}: no cell holds both {args.method} and {args.baseline}")
    seeds = sorted(set.intersection(*(set(d) for d in diffs.values())))
    if args.control:
        bench.core.runs.CONTROL_FROM = VARIANT_CONTROL_FROM
        seeds = [j for j in seeds if all(j in controls.get(s, {}) for s in diffs)]
        if min(args.seeds_per_comparison, len(seeds) - args.seeds_per_comparison) < VARIANT_CONTROL_FROM:
            raise SystemExit(f"--control corrects from {VARIANT_CONTROL_FROM} seeds: with {len(seeds)} seeds its "
                             f"replicates ran, {args.seeds_per_comparison} drawn would leave the interval or the held-out "
                             f"truth uncorrected while the other is; draw {VARIANT_CONTROL_FROM} to "
                             f"{len(seeds) - VARIANT_CONTROL_FROM}")
    else:
        controls = {}
    k = args.seeds_per_comparison
    if len(seeds) < k + 2:
        raise SystemExit(f"{len(seeds)} whole seeds hold both; a check draws {k} and holds out at least 2")
    plan = None if args.fixed else (looks or (k, k))
    rng = np.random.default_rng(DRAW_SEED)

    def rate(pool: list[int]) -> float:
        return coverage(diffs, pool, k, plan, args.comparisons, rng, controls)[0]

    found, expected = coverage(diffs, seeds, k, plan, args.comparisons, rng, controls)
    n = len(seeds)
    leave_one_out = [rate([j for j in seeds if j != out]) for out in seeds] if n > k + 2 else []
    jackknife = math.sqrt((n - 1) / n * sum((r - np.mean(leave_one_out)) ** 2 for r in leave_one_out)) \
        if leave_one_out else math.nan
    print(f"coverage of {args.method} - {args.baseline} ({args.metric}{', with the control' if controls else ''}): "
          f"{len(seeds)} seeds x {len(diffs)} sources; "
          f"{args.comparisons} checks of {k} seeds against the mean of the {len(seeds) - k} held out")
    print(f"covered: {100 * found:.1f}%  (binomial SE {100 * math.sqrt(found * (1 - found) / args.comparisons):.1f}"
          + (f"; jackknife over seeds {100 * jackknife:.1f}" if leave_one_out else "")
          + f"); a right interval covers this noisy truth about {100 * expected:.1f}%")


if __name__ == "__main__":
    main()
