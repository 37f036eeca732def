"""What computing a board's metrics a few methods at a time saves: a synthetic group of mini-v2's shape (3 seeds x 6
sources, each cell's source and two targets of 200 test pairs, 3 runs independent per source) with M methods, whose
NTS decision table (``bench.core.compare.decision_table``: every method's intervals and the rank intervals) is
computed with ``bench.core.stats.METHODS_PER_STEP`` at each value given, alternately, in one process.

    python benchmarks/board_steps.py --methods 100 200 --steps 32 4 --repeats 2

Prints, per M and step: CPU seconds of each repeat and the ratio to the first step's; and checks that every step
gives the same table (the numbers are per method, so a step size cannot move them). Peak memory is per process and
so not printed here (``benchmarks/board_scale.py time`` measures the whole board's).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SOURCES = ("chat", "cyber", "pharmacy", "recipes", "techsupport", "travel")
PAIRS = 200


def cells(n_methods: int, seed: int = 0) -> list:
    from bench.core.cells import Cell, EvalSet

    rng = np.random.default_rng(seed)
    teacher = {(s, d): rng.integers(0, 2, PAIRS) * 1.0 for s in range(3) for d in SOURCES}   # one teacher per cell
    out = []
    for m in range(n_methods):
        for s in range(3):
            for k, source in enumerate(SOURCES):
                names = (source, SOURCES[(k + 1) % 6], SOURCES[(k + 2) % 6])
                sets = tuple(EvalSet(f"mini/{d}", "id" if i == 0 else "ood", tuple(f"{d}-{j}" for j in range(PAIRS)),
                                     teacher[s, d], rng.integers(0, 2, PAIRS) * 1.0) for i, d in enumerate(names))
                out.append(Cell(f"m{m:04d}", s, f"mini/{source}", "helpful" if k % 2 else "harmless", sets,
                                independent=True, looks=(3, 20), name="m"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--methods", type=int, nargs="+", default=[100, 200])
    parser.add_argument("--steps", type=int, nargs="+", default=[32, 4])
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()

    import bench.core.stats as stats
    from bench.core.compare import decision_table

    for n in args.methods:
        group = cells(n)
        seconds: dict[int, list[float]] = {step: [] for step in args.steps}
        tables = {}
        for _ in range(args.repeats):
            for step in args.steps:
                stats.METHODS_PER_STEP = step
                start = time.process_time()
                table = decision_table(stats.Board(group))
                seconds[step].append(time.process_time() - start)
                tables[step] = table.to_csv()
        same = len(set(tables.values())) == 1
        first = min(seconds[args.steps[0]])
        for step in args.steps:
            print(f"{n} methods, {step} a step: {', '.join(f'{s:.2f}' for s in seconds[step])} CPU-s "
                  f"(best {min(seconds[step]) / first:.2f}x of {args.steps[0]} a step)")
        print(f"{n} methods: the same decision table at every step: {same}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
