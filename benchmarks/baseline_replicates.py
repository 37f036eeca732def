"""Would a baseline of several naive runs per cell make a decision cheaper?

naive's runs are shared by every comparison on the board, so their cost is not a method's. A method's
run shares its student's init and batch-order seeds with naive's first run in a cell (replicate 0), not
with the replicates naive#1, naive#2, ... (bench run --replicate R). For every method M on the folder's
cells, over the (seed, source) cells where M, naive and every replicate ran, this prints the run SD
(bench.core.runs.stratified's sd: the pooled within-source SD) of three differences, and the runs of M a
fixed-sample ±1 interval would need at each, (1.96 sd)²:
  - "paired":   M − naive                       (the harness's rule)
  - "all":      M − mean(naive, naive#1, ...)   (every naive run of the cell)
  - "others":   M − mean(naive#1, ...)          (the runs M shares no seed with)
  - "control":  (M − naive) − β (mean(naive#1, ...) − naive), β fitted by least squares within sources
                (bench.core.runs.stratified's controls, as the rule applied them until 2026-12-07):
                the replicates' A/A difference has mean 0 by construction, so it is a control variate
                (any fixed β leaves the estimate unbiased), and the fitted one removes the part of the
                paired difference's noise that is naive's own run's. Never worse than "paired" but for
                the fitted β's degree of freedom.
Pairing helps a method whose runs move with naive's (its run covaries with naive's); averaging helps
one whose runs do not. The A/A row, naive#1 − naive, is the noise of two independent runs.

    python benchmarks/baseline_replicates.py FOLDER [FOLDER ...] [--metric nts] [--control-from SEEDS]
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bench.core.runs as runs_module  # noqa: E402
from bench.core.cells import load_cells  # noqa: E402
from bench.core.runs import cell_value, control_slope, stratified  # noqa: E402

BASELINE = "naive"


def values(folders: list[Path], metric: str) -> dict[str, dict[tuple[int, str], float]]:
    """{run name (slug, replicates as naive#R): {(seed, source): the cell's metric}}."""
    from bench.core.store import cell_folders

    found: dict[str, dict[tuple[int, str], float]] = defaultdict(dict)
    for cell in load_cells([c for f in folders for c in cell_folders(f)]):
        if not cell.independent:
            raise SystemExit(f"{cell.method} seed {cell.seed} {cell.source} is on a protocol whose sources share "
                             "their seeds: its runs are not independent")
        found[cell.method][cell.seed, cell.source] = cell_value(cell, metric)
    return dict(found)


def sd_of(diffs: dict[tuple[int, str], float], controls: dict[tuple[int, str], float] | None = None
          ) -> tuple[float, int, int] | None:
    """(run SD as bench.core.runs.stratified reports it, runs, whole seeds) of per-cell differences, on whole seeds
    only; with ``controls``, corrected by them as the rule did until 2026-12-07 (from --control-from seeds, the slope paid for)."""
    if controls:
        runs_module.control_applied()   # else the "control" column would be the plain rule's again
    sources = sorted({s for _, s in diffs})
    seeds = sorted(j for j in {j for j, _ in diffs} if all((j, s) in diffs for s in sources))
    if len(seeds) < 2:
        return None
    given = {s: [controls[j, s] for j in seeds] for s in sources} if controls else None
    _, _, _, runs, n_seeds, _, _, sd, _, _ = stratified({s: [diffs[j, s] for j in seeds] for s in sources},
                                                        controls=given)
    return sd, runs, n_seeds


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folders", type=Path, nargs="+")
    p.add_argument("--metric", default="nts", choices=["nts", "aog", "wrg"])
    p.add_argument("--control-from", type=int, default=runs_module.VARIANT_CONTROL_FROM, metavar="SEEDS",
                   help="apply the control from this many seeds (as the rule did until 2026-12-07: "
                        "bench.core.runs.VARIANT_CONTROL_FROM; the rule now applies none); lower it to measure what "
                        "the control would buy on fewer seeds")
    args = p.parse_args()
    runs_module.CONTROL_FROM = args.control_from
    runs = values(args.folders, args.metric)
    replicates = sorted(name for name in runs if name.startswith(f"{BASELINE}#"))
    if BASELINE not in runs or not replicates:
        raise SystemExit(f"need {BASELINE} and its replicates ({BASELINE}#1, ...: bench run --replicate R) in the folders")
    naives = [BASELINE, *replicates]
    cells = [key for key in runs[BASELINE] if all(key in runs[r] for r in replicates)]
    print(f"baseline: {', '.join(naives)} on {len(cells)} cells; run SD of Δ {args.metric.upper()} (pooled within "
          "source) and the runs of the method a fixed-sample ±1 interval needs, (1.96 sd)²")
    print(f"{'method':<46} {'runs':>5} {'seeds':>5}  {'paired':>13} {'all':>13} {'others':>13} {'control':>13} {'β':>5}")
    aa = sd_of({key: runs[replicates[0]][key] - runs[BASELINE][key] for key in cells})
    if aa:
        print(f"{replicates[0] + ' − ' + BASELINE + ' (A/A)':<46} {aa[1]:>5} {aa[2]:>5}  {aa[0]:>6.2f} ({(1.96 * aa[0]) ** 2:>4.0f})")
    for method in sorted(m for m in runs if m not in naives and "#" not in m):
        keys = [key for key in cells if key in runs[method]]
        found = [sd_of({k: runs[method][k] - base(k) for k in keys}) for base in (
            lambda k: runs[BASELINE][k],
            lambda k: float(np.mean([runs[r][k] for r in naives])),
            lambda k: float(np.mean([runs[r][k] for r in replicates])))]
        if found[0] is None:
            continue
        d = {k: runs[method][k] - runs[BASELINE][k] for k in keys}
        x = {k: float(np.mean([runs[r][k] for r in replicates])) - runs[BASELINE][k] for k in keys}
        by_source = sorted({s for _, s in keys})
        beta = control_slope({s: [d[k] for k in keys if k[1] == s] for s in by_source},
                             {s: [x[k] for k in keys if k[1] == s] for s in by_source})
        found.append(sd_of(d, x))
        columns = " ".join(f"{sd:>6.2f} ({(1.96 * sd) ** 2:>4.0f})" for sd, _, _ in found)
        print(f"{method:<46} {found[0][1]:>5} {found[0][2]:>5}  {columns} {beta:>+5.2f}")


if __name__ == "__main__":
    main()
