"""The ceiling's gap over its teacher on a protocol with far targets (w2s-real-v1), per source: ID, near and far.

ceiling - teacher in distribution is the ceiling's WRG, out of distribution its AOG: the same test pairs scored by
both, so each is a paired difference, and its 95% interval is the board's (bench.core.stats.Board: the
hierarchical bootstrap over seeds and test pairs). The far target is kept out of the board's numbers
(bench.core.protocols.far_targets); its AOG is read the same way from the cells with their far target in the
near targets' place (``far_view``). Also each source's runs' mean and SD of the ID gap (independent runs,
seeding per source).

    python benchmarks/real_rows_gap.py results/w2s-real-v1/mpnet [--method ceiling]
"""
from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.core.cells import Cell, load_cells  # noqa: E402
from bench.core.runs import cell_value  # noqa: E402
from bench.core.stats import Board  # noqa: E402
from bench.core.store import cell_folders  # noqa: E402


def far_view(cell: Cell) -> Cell:
    """The cell with its far targets as its OOD sets and its near targets left out: the board's AOG is then the far AOG."""
    kept = [dataclasses.replace(e, role="ood") if e.role == "far" else e for e in cell.eval_sets if e.role != "ood"]
    return dataclasses.replace(cell, eval_sets=tuple(kept))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folder", type=Path, help="a protocol/model-pair results folder, e.g. results/w2s-real-v1/mpnet")
    p.add_argument("--method", default="ceiling", help="the method folder's name (default ceiling)")
    args = p.parse_args(argv)
    cells = load_cells(cell_folders(args.folder / args.method))   # cell folders, or a store's cells
    if not cells:
        print(f"no finished cells under {args.folder / args.method}", file=sys.stderr)
        return 1
    print(f"{args.method} - teacher on {args.folder}: points, 95% bootstrap interval over seeds and test pairs")
    print(f"{'source':18s} {'runs':>4s}  {'ID (WRG)':>24s}  {'near OOD (AOG)':>24s}  {'far OOD (far AOG)':>24s}  ID per run")
    for source in sorted({c.source for c in cells}):
        own = [c for c in cells if c.source == source]
        near = Board(own).stats(own[0].method, ceiling=None).metrics
        far = Board([far_view(c) for c in own]).stats(own[0].method, ceiling=None).metrics
        runs = [cell_value(c, "wrg") for c in own]
        spread = f", SD {statistics.stdev(runs):.1f}" if len(runs) > 1 else ""
        print(f"{source:18s} {len(own):4d}  " + "  ".join(
            f"{m.estimate:+6.1f} [{m.low:+6.1f}, {m.high:+6.1f}]".rjust(24) for m in (near["wrg"], near["aog"], far["aog"]))
            + f"  {', '.join(f'{r:+.1f}' for r in runs)}{spread}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
