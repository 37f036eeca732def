"""Does correcting each run's difference by the baseline's replicates keep the 5%, and what does it buy?

Simulated A/A comparisons, grown from the first look to the last and stopped at the first that decides (what
bench compare --until-decided does, without the ±1 stop), judged twice on the same draws: by the plain interval
over runs (bench.core.runs.stratified) and with the baseline's replicates as each run's control (its
``controls``). Per (seed, source) cell: naive's run and R replicates, each N(0, spread_s²); the method's run
shares a part rho of naive's first run's noise (its student seeds) and is otherwise its own; the true
difference is 0. Sources differ in noise: spread_s is drawn from 1 to 5 per comparison, or is given (--spreads: one
SD per source, e.g. the A/A run SDs measured per source on mini-v2's naive pool).
It prints both false-positive rates with their binomial SE, the comparisons only one rule decided, and the mean
width of the two intervals at the last look (what the control buys).
With --width-at S1 S2 ... it prints instead, per seed count, how often the deciding interval at that look of the
plan --looks would be wider with the control applied than without (the control forced on at any seed count:
why it waited for bench.core.runs.VARIANT_CONTROL_FROM seeds), and the median width ratio. The rule applies no
control (docs/statistics.md, "The control, measured and dropped"); this measures it as a variant.

    python benchmarks/control_variate.py [--rho 0 0.8] [--comparisons 10000] [--looks 3 10] [--replicates 2]
    python benchmarks/control_variate.py --width-at 3 5 10 --looks 3 20 --rho 0 --comparisons 1000
    python benchmarks/control_variate.py --looks 3 20 --spreads 10.7 9.0 9.6 2.7 2.8 2.7   # the rule as used, v2's SDs
"""
from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bench.core.runs as runs_module  # noqa: E402
from bench.core.runs import stratified  # noqa: E402

DRAW_SEED = 20261202


def comparison(rng, looks: tuple[int, int], rho: float, replicates: int, spreads: list[float] | None = None):
    """(plain decided, controlled decided, plain width, controlled width at the last look) of one A/A comparison."""
    runs_module.control_applied()   # else the "controlled" column would be the plain rule's again
    first, last = looks
    sources = len(spreads) if spreads else 6
    spread = np.asarray(spreads) if spreads else rng.uniform(1, 5, sources)
    naive = rng.standard_normal((replicates + 1, last, sources)) * spread
    method = rho * naive[0] + math.sqrt(1 - rho * rho) * rng.standard_normal((last, sources)) * spread
    d, x = method - naive[0], naive[1:].mean(0) - naive[0]
    out = []
    for control in (False, True):
        decided = False
        for seeds in range(first, last + 1):
            found = stratified({str(s): d[:seeds, s] for s in range(sources)}, looks,
                               controls={str(s): x[:seeds, s] for s in range(sources)} if control else None)
            decided = decided or found[-1]
        out.append((decided, found[2] - found[1]))
    return out[0][0], out[1][0], out[0][1], out[1][1]


def widths(rng, looks: tuple[int, int], seeds: int, rho: float, replicates: int, sources: int = 6) -> float:
    """The controlled deciding interval's width over the plain one's, at ``seeds`` seeds of the plan ``looks``."""
    runs_module.control_applied()
    spread = rng.uniform(1, 5, sources)
    naive = rng.standard_normal((replicates + 1, seeds, sources)) * spread
    method = rho * naive[0] + math.sqrt(1 - rho * rho) * rng.standard_normal((seeds, sources)) * spread
    d, x = method - naive[0], naive[1:].mean(0) - naive[0]
    diffs, controls = {str(s): d[:, s] for s in range(sources)}, {str(s): x[:, s] for s in range(sources)}
    plain, ctrl = stratified(diffs, looks), stratified(diffs, looks, controls=controls)
    return (ctrl[2] - ctrl[1]) / (plain[2] - plain[1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rho", type=float, nargs="+", default=[0.0, 0.8])
    p.add_argument("--comparisons", type=int, default=10000)
    p.add_argument("--looks", type=int, nargs=2, default=[3, 10])
    p.add_argument("--replicates", type=int, default=2)
    p.add_argument("--width-at", type=int, nargs="+", metavar="SEEDS")
    p.add_argument("--spreads", type=float, nargs="+", metavar="SD", help="each source's run SD (default: drawn)")
    args = p.parse_args()
    # the rule applies no control: this measures it as a variant, from the seeds it waited for (or, --width-at, from
    # any seed count: what applying it there would do)
    runs_module.CONTROL_FROM = 2 if args.width_at else runs_module.VARIANT_CONTROL_FROM
    if args.width_at:
        print(f"{args.comparisons} comparisons per row, plan {args.looks[0]}..{args.looks[1]} seeds, 6 sources (SDs "
              f"from 1 to 5), {args.replicates} replicates; seed {DRAW_SEED}")
        for rho in args.rho:
            for seeds in args.width_at:
                rng = np.random.default_rng([DRAW_SEED, int(round(rho * 100)), seeds])
                ratio = np.array([widths(rng, tuple(args.looks), seeds, rho, args.replicates)
                                  for _ in range(args.comparisons)])
                print(f"rho {rho:.1f}, {seeds:>2} seeds: the control widens {100 * np.mean(ratio > 1):.0f}% "
                      f"({100 * np.mean(ratio > 2):.0f}% more than twofold); median width ratio {np.median(ratio):.2f}")
        return
    sds = f"SDs {', '.join(map(str, args.spreads))}" if args.spreads else "SDs from 1 to 5"
    print(f"{args.comparisons} A/A comparisons per row, looks {args.looks[0]}..{args.looks[1]} seeds, "
          f"{len(args.spreads) if args.spreads else 6} sources ({sds}), {args.replicates} replicates of naive per cell; "
          f"seed {DRAW_SEED}")
    print(f"{'rho':>4} {'plain decided':>16} {'controlled':>16} {'only plain':>11} {'only ctrl':>10} {'width ratio':>12}")
    for rho in args.rho:
        rng = np.random.default_rng([DRAW_SEED, int(round(rho * 100))])
        out = np.array([comparison(rng, tuple(args.looks), rho, args.replicates, args.spreads) for _ in range(args.comparisons)])
        n = len(out)
        plain, ctrl = out[:, 0].mean(), out[:, 1].mean()
        se = [math.sqrt(r * (1 - r) / n) for r in (plain, ctrl)]
        only_plain = float(np.mean(out[:, 0].astype(bool) & ~out[:, 1].astype(bool)))
        only_ctrl = float(np.mean(out[:, 1].astype(bool) & ~out[:, 0].astype(bool)))
        print(f"{rho:>4.1f} {100 * plain:>8.2f}% ± {100 * se[0]:.2f} {100 * ctrl:>8.2f}% ± {100 * se[1]:.2f} "
              f"{100 * only_plain:>10.2f}% {100 * only_ctrl:>9.2f}% {np.mean(out[:, 3]) / np.mean(out[:, 2]):>12.3f}",
              flush=True)


if __name__ == "__main__":
    main()
