"""How much allocating runs across sources by their noise would save (Neyman allocation).

A decision over independent runs is stratified by source (bench.core.runs.stratified): its variance is
(1/S^2) sum_s sd_s^2 / n_s, for S sources, n_s runs of source s and sd_s the SD of one run's
paired difference A - B there. With the same n runs in every source (what bench compare
--until-decided grows: one run per source per seed), N = S n runs give (1/(S N)) sum sd_s^2; with
n_s proportional to sd_s (Neyman 1934), the least variance N runs can give, (sum sd_s)^2 / (S^2 N).
The ratio of the two, mean(sd)^2 / mean(sd^2), is the share of runs Neyman allocation needs for
the same interval. This prints it per method against naive, from per-source SDs over seeds of
finished cells; with few seeds the SDs are noisy, and noise in them makes the ratio look better
than it is, so the methods with the most seeds are the ones to read.

    python benchmarks/source_allocation.py submissions/mini/tiny extra-seeds/mini/tiny [--baseline naive]
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.core.cells import load_cells  # noqa: E402
from bench.core.result_schema import RESULT_FILE  # noqa: E402
from bench.core.runs import cell_value  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", type=Path, help="folders holding finished cells (result.json files)")
    parser.add_argument("--baseline", default="naive")
    parser.add_argument("--metric", default="nts")
    args = parser.parse_args()
    folders = [p.parent for root in args.roots for p in sorted(root.rglob(RESULT_FILE))]
    values: dict[str, dict[tuple[int, str], float]] = defaultdict(dict)
    for cell in load_cells(folders):
        values[cell.method][cell.seed, cell.source] = cell_value(cell, args.metric)
    base = values.pop(args.baseline)
    sources = sorted({source for _, source in base})
    print(f"# per-source SD of one run's paired Δ {args.metric.upper()} against {args.baseline}; "
          "share = mean(sd)^2 / mean(sd^2), the runs Neyman allocation needs for the same interval")
    print("method | seeds | " + " | ".join(s.split("/")[-1] for s in sources) + " | share")
    rows = []
    for method, cells in values.items():
        per = {s: [x - base[k] for k, x in cells.items() if k[1] == s and k in base] for s in sources}
        if min(map(len, per.values())) < 2:
            continue
        sd = np.array([np.std(per[s], ddof=1) for s in sources])
        rows.append((min(map(len, per.values())), (sd.mean() ** 2) / (sd ** 2).mean(), method, sd))
    for seeds, share, method, sd in sorted(rows, key=lambda r: (-r[0], r[1])):
        print(f"{method} | {seeds} | " + " | ".join(f"{x:.1f}" for x in sd) + f" | {share:.2f}")


if __name__ == "__main__":
    main()
