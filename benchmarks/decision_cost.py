"""What a method's runs cost in all, from its cells' own stage timers: every run a comparison rests on, the
protocol's seeds as well as the ones a comparison grown until decided added (``bench compare --until-decided``
prints only what that command spent, so not the protocol's first seeds).

    python benchmarks/decision_cost.py extra-seeds/mini-v2/tiny-lr3e-4 [SLUG ...]   # default: every method
    python benchmarks/decision_cost.py extra-seeds/mini-v2/tiny-lr3e-4 warm_members=3 --seeds 3 15   # those seeds only

``--seeds FIRST LAST`` counts only the runs of those seeds (both included): what a comparison grown from seed
FIRST (``--fresh-from``) cost, or the seeds one session added.

A run's cost is the stages a method's run pays when its teacher is cached: the teacher's labels, the student's
training, and the scoring of its test pairs and candidate sets (``timings_s``). Each stage runs on one torch
thread, one cell per core, as every reference run, so its wall seconds are CPU-seconds, as long as nothing
else ran on those cores; the teacher's training and scores, which every method shares, are left out. Replicates (``naive#1``) are rows of their own.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.core.results import find_cells, params_slug, replicate_slug  # noqa: E402

OWN_STAGES = ("teacher_label", "student_train", "student_score", "student_candidates")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="a results folder of one protocol x model pair")
    parser.add_argument("slugs", nargs="*", help="methods by their folder names (default: all)")
    parser.add_argument("--seeds", nargs=2, type=int, metavar=("FIRST", "LAST"),
                        help="count only the runs of seeds FIRST to LAST, both included (default: every seed)")
    args = parser.parse_intermixed_args(argv)   # method names may come after --seeds too
    first, last = args.seeds or (None, None)
    if first is not None and first > last:
        parser.error(f"--seeds {first} {last}: the first seed is after the last; give them in order")
    runs: dict[str, dict[int, list[float]]] = {}
    for cell in find_cells(args.folder):
        slug = replicate_slug(params_slug(cell.method.name, cell.method.params), cell.replicate)
        if (not args.slugs or slug in args.slugs) and (first is None or first <= cell.seed <= last):
            cost = sum(cell.timings_s.get(stage, 0.0) for stage in OWN_STAGES)
            runs.setdefault(slug, {}).setdefault(cell.seed, []).append(cost)
    if not runs:
        print(f"no finished cells under {args.folder}" + (f" of {', '.join(args.slugs)}" if args.slugs else "")
              + (f" at seeds {first} to {last}" if first is not None else ""), file=sys.stderr)
        return 1
    print(f"{'method':50s} {'runs':>5s} {'seeds':>6s} {'CPU-s per run (median)':>23s} {'CPU-hours in all':>17s}")
    for slug, seeds in sorted(runs.items()):
        costs = [c for per_seed in seeds.values() for c in per_seed]
        print(f"{slug:50s} {len(costs):5d} {len(seeds):6d} {statistics.median(costs):23.0f} {sum(costs) / 3600:17.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
