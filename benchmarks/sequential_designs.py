"""What a sequential plan costs and whether it keeps its 5%: simulated comparisons grown seed by seed.

`bench compare A B --until-decided` adds one run per source per seed and stops when the interval over
runs decides, when its half-width is within +-1 point, or at the plan's last look. This script runs that
loop on simulated per-run differences (one per source and seed; normal, or with --heavy a t with 3 df
scaled to the same SD) under plans with the same looks:
  - "fixed": the harness's rule (bench.core.runs.stratified), alpha spent by seeds / last;
  - "sd": an internal pilot (Wittes & Brittain 1990): at every look the plan is cut to end at the fewest
    seeds whose last look would give +-1 point at the run SD measured so far, and alpha is spent by
    seeds / that end. Its end depends on the SD alone, never on the mean difference;
  - "sd80": the same, from the SD's 80% upper confidence bound (chi-square, the look's df), so that an SD
    underestimated at a few seeds cuts the plan less;
  - with --sparse S1 S2 ..., "sparse": looks at those seed counts only (the last the most), alpha spent by
    seeds / the last, the same O'Brien-Fleming-type function (bench.core.sequential.z_boundaries).
For each true difference it prints the share of comparisons decided (at 0: the false-positive rate, to be
at most 5% within its Monte Carlo error), how many stopped at +-1, the mean seeds at the stop, and the mean
CPU-hours of one method's runs at --run-cost CPU-seconds per run (naive's runs are shared, so not counted).

    python benchmarks/sequential_designs.py [--source-sds 5.7 7.1 4.7 1.0 2.4 2.1] [--looks 3 20]
        [--deltas 0 1 2 5] [--comparisons 2000] [--run-cost 120] [--heavy] [--sparse 3 5 8 12 16 20]

The default source SDs are the run SDs of reliability-filter's paired Δ NTS against naive over seven seeds,
by source (docs/statistics.md, "Where the noise is: sources"): a pooled run SD of 4.4.
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.core.runs import stratified  # noqa: E402
from bench.core.sequential import t_boundary, z_boundaries  # noqa: E402

DRAW_SEED = 20261202
PRECISION = 1.0   # points: bench compare --until-decided's default --precision
PLANS = {"fixed": None, "sd": 0.5, "sd80": 0.2}   # plan -> the SD's upper-bound tail its length is cut by (None: not cut)


def end(looks: tuple[int, int], sources: int, seeds: int, df: int, sd: float) -> int:
    """The fewest seeds from the first look to the last at which the last look's interval would be within
    +-PRECISION at run SD ``sd`` (df growing with the seeds at the rate it has so far); the last look if none."""
    first, last = looks
    for s in range(first, last + 1):
        z = z_boundaries(tuple(k * sources for k in range(first, s + 1)))[-1]
        if t_boundary(z, max(1, math.floor(df / (seeds - 1) * (s - 1)))) * sd / math.sqrt(s * sources) <= PRECISION:
            return s
    return last


def grow(draws: np.ndarray, looks: tuple[int, int], tail: float | None,
         sparse: tuple[int, ...] | None = None, stop: int | None = None) -> tuple[bool, bool, int]:
    """One comparison grown seed by seed over ``draws`` (seeds x sources): (decided, stopped at +-1, seeds).
    ``sparse``: looked at only at those seed counts (``looks`` and ``tail`` unused). ``stop``: the last look
    taken, before the plan's last (the plan's boundaries kept: bench compare --fresh-from's end)."""
    from scipy.stats import chi2

    first, last = (sparse[0], sparse[-1]) if sparse else (looks[0], min(looks[1], stop or looks[1]))
    for seeds in sparse or range(first, last + 1):
        diffs = {str(s): draws[:seeds, s] for s in range(draws.shape[1])}
        estimate, low, high, runs, _, sources, df, sd, *_ = stratified(diffs, looks)
        if sparse:
            z = z_boundaries(tuple(k * sources for k in sparse))[sparse.index(seeds)]
            half = t_boundary(z, df) * sd / math.sqrt(runs)
            low, high = estimate - half, estimate + half
        elif tail is not None:   # the same interval under the plan cut where +-1 is in reach
            cut = end(looks, sources, seeds, df, sd * math.sqrt(df / chi2.ppf(tail, df)))
            estimate, low, high, *_ = stratified(diffs, (first, cut))
        decided = bool(low > 0 or high < 0)
        if decided or (high - low) / 2 <= PRECISION or seeds == last:
            return decided, not decided and (high - low) / 2 <= PRECISION, seeds
    raise AssertionError("unreachable")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--source-sds", type=float, nargs="+", default=[5.7, 7.1, 4.7, 1.0, 2.4, 2.1])
    p.add_argument("--looks", type=int, nargs=2, default=[3, 20])
    p.add_argument("--deltas", type=float, nargs="+", default=[0.0, 1.0, 2.0, 5.0])
    p.add_argument("--comparisons", type=int, default=2000)
    p.add_argument("--run-cost", type=float, default=120.0, help="CPU-seconds of one run")
    p.add_argument("--heavy", action="store_true", help="t-distributed differences (3 df) instead of normal")
    p.add_argument("--sparse", type=int, nargs="+", help="also a plan that looks at these seed counts only")
    args = p.parse_args()
    plans = {name: (tail, None) for name, tail in PLANS.items()}
    if args.sparse:
        plans["sparse"] = (None, tuple(args.sparse))
    sds, looks = np.asarray(args.source_sds), tuple(args.looks)
    print(f"{len(sds)} sources, run SDs {' '.join(f'{s:g}' for s in sds)} (pooled {math.sqrt(np.mean(sds ** 2)):.2f}); "
          f"looks at {looks[0]}..{looks[1]} seeds; {args.comparisons} comparisons per row, "
          f"{'t (3 df)' if args.heavy else 'normal'} differences; seed {DRAW_SEED}")
    print(f"{'true Δ':>7} {'plan':>6} {'decided':>16} {'at ±1':>7} {'seeds':>6} {'CPU-h':>6}")
    for delta in args.deltas:
        rng = np.random.default_rng([DRAW_SEED, int(round(delta * 1000))])
        shape = (args.comparisons, max(looks[1], *(args.sparse or [0])), len(sds))
        noise = rng.standard_t(3, shape) / math.sqrt(3) if args.heavy else rng.standard_normal(shape)
        draws = delta + noise * sds
        for name, (tail, sparse) in plans.items():   # the same draws for every plan: their difference is the plan's
            out = np.array([grow(d, looks, tail, sparse) for d in draws])
            rate = out[:, 0].mean()
            mc = math.sqrt(max(rate * (1 - rate), 1e-9) / len(out))
            seeds = out[:, 2].mean()
            print(f"{delta:>+7.1f} {name:>6} {100 * rate:>7.1f}% ± {100 * mc:.1f} {100 * out[:, 1].mean():>6.1f}% "
                  f"{seeds:>6.1f} {seeds * len(sds) * args.run_cost / 3600:>6.2f}", flush=True)


if __name__ == "__main__":
    main()
