"""Deciding the zoo's best three on the seeds that chose them: how often a method no better than naive
comes out "better", simulated.

The v2 plan runs every method at the protocol's three seeds, picks the three best by NTS, and grows
their comparisons against naive until decided (benchmarks/v2_reference_plan.sh, ``decide``). A method
picked because its first seeds happened to favour it carries that luck into any interval that counts
those seeds. This script draws K methods that are all exactly as good as naive (per-run differences
normal with the given source SDs, one per source and seed; a ``--naive-share`` of each difference's
variance is naive's own run, the same in every method's difference at that seed and source, so it
shifts every method alike and the pick reads the rest), picks the best ``--top`` by the mean over
the first ``--chosen-on`` seeds, and grows each pick's comparison seed by seed as `bench compare
--until-decided` does (benchmarks/sequential_designs.py's loop, the harness's bench.core.runs.stratified):
  - "reused": the comparison starts at seed 0, the choosing seeds counted;
  - "fresh": it starts after them (`--fresh-from 3`), its looks counting the fresh seeds only, and ends
    where the plan's seeds (a submission's) end, its later looks not taken.
It prints the share of picks decided "better" (a false positive: at most 2.5% for a valid 95% rule,
within its Monte Carlo error), the mean seeds run after the choosing ones, and their CPU-hours at
--run-cost CPU-seconds per run.

    python benchmarks/selection_bias.py [--methods 20] [--top 3] [--chosen-on 3] [--trials 500]
        [--naive-share 0.5] [--source-sds 5.7 7.1 4.7 1.0 2.4 2.1] [--looks 3 20] [--run-cost 120]
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sequential_designs import grow  # noqa: E402

DRAW_SEED = 20261203


def picked(draws: np.ndarray, top: int, chosen: int, looks: tuple[int, int]) -> dict[str, list[tuple[bool, int]]]:
    """One zoo's ``draws`` (methods x seeds x sources, per-run differences against naive): its best ``top`` by the
    mean over the first ``chosen`` seeds, each grown both ways: (decided better, seeds run after the pick)."""
    out: dict[str, list[tuple[bool, int]]] = {"reused": [], "fresh": []}
    for k in np.argsort(draws[:, :chosen].mean(axis=(1, 2)), kind="stable")[-top:]:
        for name, start in (("reused", 0), ("fresh", chosen)):   # both end at the plan's last seed (a submission's)
            decided, _, seeds = grow(draws[k, start:], looks, None, stop=looks[1] - start)
            out[name].append((decided and bool(draws[k, start:start + seeds].mean() > 0), start + seeds - chosen))
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--methods", type=int, default=20, help="methods the best are picked from (the zoo stage, ANCHOR apart)")
    p.add_argument("--top", type=int, default=3)
    p.add_argument("--chosen-on", type=int, default=3, help="seeds the pick is made on (the protocol's)")
    p.add_argument("--trials", type=int, default=500, help="zoos drawn")
    p.add_argument("--source-sds", type=float, nargs="+", default=[5.7, 7.1, 4.7, 1.0, 2.4, 2.1])
    p.add_argument("--naive-share", type=float, default=0.5, help="the share of a run difference's variance that is "
                   "naive's run (0.5: the two runs equally noisy; naive's replicates as a control, a variant of the rule, lower it)")
    p.add_argument("--looks", type=int, nargs=2, default=[3, 20])
    p.add_argument("--run-cost", type=float, default=120.0, help="CPU-seconds of one run")
    args = p.parse_args(argv)
    sds, looks, chosen = np.asarray(args.source_sds), tuple(args.looks), args.chosen_on
    rng = np.random.default_rng(DRAW_SEED)
    results: dict[str, list[tuple[bool, int]]] = {"reused": [], "fresh": []}
    for _ in range(args.trials):
        shape = (args.methods, looks[1], len(sds))   # every Δ is 0: method runs minus naive's
        draws = (rng.standard_normal(shape) * math.sqrt(1 - args.naive_share)
                 - rng.standard_normal(shape[1:]) * math.sqrt(args.naive_share)) * sds
        for name, rows in picked(draws, args.top, chosen, looks).items():
            results[name] += rows
    print(f"{args.trials} zoos of {args.methods} methods no better than naive; the best {args.top} by NTS at "
          f"{chosen} seeds; source SDs {' '.join(f'{s:g}' for s in sds)}, naive's run {args.naive_share:g} of the "
          f"variance; looks {looks[0]}..{looks[1]}; seed {DRAW_SEED}")
    print(f"{'decided on':>10} {'decided better':>16} {'seeds after the pick':>21} {'CPU-h':>6}")
    for name, rows in results.items():
        out = np.array(rows, dtype=np.float64)
        rate = out[:, 0].mean()
        mc = math.sqrt(max(rate * (1 - rate), 1e-9) / len(out))
        extra = out[:, 1].mean()
        print(f"{name:>10} {100 * rate:>7.1f}% ± {100 * mc:.1f} {extra:>21.1f} "
              f"{extra * len(sds) * args.run_cost / 3600:>6.2f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
