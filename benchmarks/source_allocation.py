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

An allocation fitted on each comparison's own runs is adaptive; one fixed in advance would come from
other runs. ``--allocate-by METHOD`` also prints, for every method, the share of runs it needs when the
runs are allocated by METHOD's SDs (n_s proportional to METHOD's sd_s), sum_s(sd_s^2 / w_s) / (S sum_s sd_s^2)
with w_s those weights; above 1 it needs more runs than equal allocation.

    python benchmarks/source_allocation.py submissions/mini/tiny extra-seeds/mini/tiny [--baseline naive]
                                           [--allocate-by naive#1]
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
from bench.core.runs import cell_value  # noqa: E402
from bench.core.store import cell_folders  # noqa: E402


def neyman_share(sd: np.ndarray) -> float:
    """The runs Neyman allocation needs for equal allocation's interval: mean(sd)^2 / mean(sd^2)."""
    return float(sd.mean() ** 2 / (sd ** 2).mean())


def allocated_share(sd: np.ndarray, by: np.ndarray) -> float:
    """The same with the runs allocated in proportion to ``by`` (another method's SDs): sum(sd^2 / w) / (S sum(sd^2))."""
    w = by / by.sum()
    return float(np.sum(sd ** 2 / w) / (len(sd) * np.sum(sd ** 2)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", type=Path, help="folders holding finished cells (result.json files)")
    parser.add_argument("--baseline", default="naive")
    parser.add_argument("--metric", default="nts")
    parser.add_argument("--allocate-by", metavar="METHOD", help="also the share under METHOD's allocation")
    args = parser.parse_args()
    folders = [c for root in args.roots for c in cell_folders(root)]
    values: dict[str, dict[tuple[int, str], float]] = defaultdict(dict)
    for cell in load_cells(folders):
        values[cell.method][cell.seed, cell.source] = cell_value(cell, args.metric)
    base = values.pop(args.baseline)
    sources = sorted({source for _, source in base})
    print(f"# per-source SD of one run's paired Δ {args.metric.upper()} against {args.baseline}; "
          "share = mean(sd)^2 / mean(sd^2), the runs Neyman allocation needs for the same interval")
    by = f" | share allocated by {args.allocate_by}" if args.allocate_by else ""
    print("method | seeds | " + " | ".join(s.split("/")[-1] for s in sources) + " | share" + by)
    rows = []
    for method, cells in values.items():
        per = {s: [x - base[k] for k, x in cells.items() if k[1] == s and k in base] for s in sources}
        if min(map(len, per.values())) < 2:
            continue
        sd = np.array([np.std(per[s], ddof=1) for s in sources])
        rows.append((min(map(len, per.values())), neyman_share(sd), method, sd))
    by = None
    if args.allocate_by:
        found = [sd for _, _, method, sd in rows if method == args.allocate_by]
        if not found:
            raise SystemExit(f"--allocate-by {args.allocate_by}: no such method with 2+ seeds against {args.baseline}")
        by = found[0]
    for seeds, share, method, sd in sorted(rows, key=lambda r: (-r[0], r[1])):
        fixed = f" | {allocated_share(sd, by):.2f}" if by is not None else ""
        print(f"{method} | {seeds} | " + " | ".join(f"{x:.1f}" for x in sd) + f" | {share:.2f}" + fixed)


if __name__ == "__main__":
    main()
