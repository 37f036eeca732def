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

    python benchmarks/coverage.py FOLDER --method anchor_lam=1.0 [--baseline naive] [--seeds-per-comparison 3]
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

from bench.core.cells import load_cells  # noqa: E402
from bench.core.runs import cell_value, stratified  # noqa: E402

DRAW_SEED = 20261202


def paired(folder: Path, method: str, baseline: str, metric: str) -> tuple[dict, tuple[int, int] | None]:
    """{source: {seed: A - B}} over the cells both runs hold, and the protocol's looks."""
    from bench.core.store import cell_folders

    value: dict[tuple[str, int, str], float] = {}
    looks = None
    for cell in load_cells(cell_folders(folder)):
        if cell.method in (method, baseline):
            if not cell.independent:
                raise SystemExit(f"{folder}: {cell.method} seed {cell.seed} {cell.source} is on a protocol whose "
                                 "sources share their seeds: its runs are not independent")
            value[cell.method, cell.seed, cell.source] = cell_value(cell, metric)
            looks = cell.looks
    diffs: dict[str, dict[int, float]] = defaultdict(dict)
    for (run, seed, source), v in value.items():
        if run == method and (baseline, seed, source) in value:
            diffs[source][seed] = v - value[baseline, seed, source]
    return dict(diffs), looks


def one_check(diffs: dict, seeds: list[int], rng, k: int, looks) -> tuple[bool, float]:
    """Whether the interval of ``k`` drawn seeds covers the held-out seeds' mean, and the chance that a right
    interval with this draw's boundary and df would: (estimate - truth) / SE_K is a t with the draw's df
    scaled by sqrt(1 + n_K / n_H)."""
    from scipy.stats import t

    drawn = set(rng.choice(seeds, size=k, replace=False).tolist())
    inside = {s: [d[j] for j in seeds if j in drawn] for s, d in diffs.items()}
    held = [np.mean([d[j] for j in seeds if j not in drawn]) for d in diffs.values()]
    _, low, high, n, _, _, df, _, boundary, _ = stratified(inside, looks)
    n_held = (len(seeds) - k) * len(diffs)
    return bool(low <= float(np.mean(held)) <= high), float(2 * t.cdf(boundary / math.sqrt(1 + n / n_held), df) - 1)


def coverage(diffs: dict, seeds: list[int], k: int, looks, comparisons: int, rng) -> tuple[float, float]:
    """Of ``comparisons`` checks of ``k`` seeds drawn from ``seeds``: the share whose interval covers the
    rest's mean, and the share a right interval would (the mean of one_check's chances)."""
    found = np.array([one_check(diffs, seeds, rng, k, looks) for _ in range(comparisons)])
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
    args = p.parse_args()
    diffs, looks = paired(args.folder, args.method, args.baseline, args.metric)
    if not diffs:
        raise SystemExit(f"{args.folder}: no cell holds both {args.method} and {args.baseline}")
    seeds = sorted(set.intersection(*(set(d) for d in diffs.values())))
    k = args.seeds_per_comparison
    if len(seeds) < k + 2:
        raise SystemExit(f"{len(seeds)} whole seeds hold both; a check draws {k} and holds out at least 2")
    plan = None if args.fixed else (looks or (k, k))
    rng = np.random.default_rng(DRAW_SEED)

    def rate(pool: list[int]) -> float:
        return coverage(diffs, pool, k, plan, args.comparisons, rng)[0]

    found, expected = coverage(diffs, seeds, k, plan, args.comparisons, rng)
    n = len(seeds)
    leave_one_out = [rate([j for j in seeds if j != out]) for out in seeds] if n > k + 2 else []
    jackknife = math.sqrt((n - 1) / n * sum((r - np.mean(leave_one_out)) ** 2 for r in leave_one_out)) \
        if leave_one_out else math.nan
    print(f"coverage of {args.method} - {args.baseline} ({args.metric}): {len(seeds)} seeds x {len(diffs)} sources; "
          f"{args.comparisons} checks of {k} seeds against the mean of the {len(seeds) - k} held out")
    print(f"covered: {100 * found:.1f}%  (binomial SE {100 * math.sqrt(found * (1 - found) / args.comparisons):.1f}"
          + (f"; jackknife over seeds {100 * jackknife:.1f}" if leave_one_out else "")
          + f"); a right interval covers this noisy truth about {100 * expected:.1f}%")


if __name__ == "__main__":
    main()
