"""Benchmark: how precisely the reference submissions pin down Δ NTS against naive, and what it would take.

From the per-pair scores of every reference submission in submissions/mini/tiny (bench/core/stats.py):
  1. Δ NTS (and Δ AOG, Δ WRG) of every method vs naive: the paired bootstrap interval and p-value,
     the t-interval over the per-seed differences, and the nested bootstrap's interval for comparison.
  2. The 95% half-width of Δ NTS, (high - low) / 2, as a function of the seeds used (every subset of
     1, 2 or 3 seeds, averaged) and of the test pairs per eval set (100, 200: --repeats random subsets
     of each test split, the same for every seed, method and source; 400: the whole split).
  3. The variance of Δ NTS from the bootstrap resampling only seeds, only pairs, or both; and a crossed
     random-effects model fitted from it:
         Var(S, n) = s2_seed / S + s2_pair * 400 / n + s2_inter * 400 / (S n)
     s2_inter: from pairs-only bootstraps on one seed (V1 = s2_pair + s2_inter) and on all 3 seeds
     (V3 = s2_pair + s2_inter / 3); s2_seed: the sample variance of the per-seed Δ less s2_inter (its
     test-pair part); all at n = 400. Then the seeds S and pairs n that give 1.96 sqrt(Var) <= 1 point.
No timings: every number is a pure function of the scores and the recorded bootstrap seed.

    python benchmarks/bench_power.py [--root submissions/mini/tiny] [--n-boot 2000] [--repeats 5]
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.core.cells import Cell, load_cells  # noqa: E402
from bench.core.sequential import t_quantile  # noqa: E402
from bench.core.stats import BOOTSTRAP_SEED, Board  # noqa: E402

SUBSET_SEED = 20261130      # the random test-pair subsets of part 2
BASELINE = "naive"
TARGET = 1.0                # half-width goal, NTS points
Z = 1.959964


def table(header: list[str], rows: list[list], title: str) -> None:
    rows = [[f"{v:+.2f}" if isinstance(v, float) else str(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    print(f"\n{title}")
    for i, row in enumerate([header, *rows]):
        print("  ".join(v.ljust(w) if k == 0 else v.rjust(w) for k, (v, w) in enumerate(zip(row, widths))))
        if i == 0:
            print("-" * (sum(widths) + 2 * len(widths) - 2))


def subsample(cells: list[Cell], keep: dict[str, np.ndarray]) -> list[Cell]:
    """The cells on a subset of each test split's pairs (the same subset wherever the split is used)."""
    def cut(e):
        idx = keep[e.name]
        return dataclasses.replace(e, pair_ids=tuple(e.pair_ids[i] for i in idx), teacher=e.teacher[idx],
                                   student=e.student[idx])
    return [dataclasses.replace(c, eval_sets=tuple(cut(e) for e in c.eval_sets)) for c in cells]


def half_widths(board: Board, methods: list[str]) -> dict[str, tuple[float, float]]:
    """method -> (bootstrap half-width, t half-width) of Δ NTS vs the baseline."""
    out = {}
    for m in methods:
        d = board.compare(m, BASELINE).deltas["nts"]
        out[m] = ((d.high - d.low) / 2, (d.t_high - d.t_low) / 2)
    return out


def delta_var(board: Board, methods: list[str]) -> dict[str, float]:
    reps = board.replicates("nts")
    return {m: float(np.var(reps[m] - reps[BASELINE], ddof=1)) for m in methods}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--root", type=Path, default=ROOT / "submissions" / "mini" / "tiny")
    p.add_argument("--n-boot", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=5, help="random test subsets per size below the full split")
    args = p.parse_args()
    folders = sorted(f.parent for f in args.root.glob("*/cells/seed*/*/result.json"))
    cells = load_cells(folders)
    board = Board(cells, n_boot=args.n_boot)
    methods = [m for m in board.methods if m != BASELINE]
    seeds, n_full = board.seeds, min(board.datasets.values())
    print(f"# {len(board.methods)} methods, {len(cells)} cells, seeds {list(seeds)}, test pairs per eval set "
          f"{sorted(set(board.datasets.values()))}, {args.n_boot} bootstrap replicates (seed {BOOTSTRAP_SEED}), "
          f"crossed pair resampling; command: python benchmarks/bench_power.py "
          f"{' '.join(sys.argv[1:])}".rstrip())

    # 1. every method vs naive
    nested = Board(cells, n_boot=args.n_boot, nested=True)
    ranks = {r.method: r for r in board.ranks()}
    rows = []
    for m in sorted(board.methods, key=lambda m: ranks[m].rank):
        s = board.stats(m).metrics["nts"]
        r = ranks[m]
        if m == BASELINE:
            rows.append([m, f"{s.estimate:+.2f} [{s.low:+.2f}, {s.high:+.2f}]", f"{r.rank} [{r.low}-{r.high}]",
                         *[""] * 6])
            continue
        d, dn = board.compare(m, BASELINE).deltas["nts"], nested.compare(m, BASELINE).deltas["nts"]
        rows.append([m, f"{s.estimate:+.2f} [{s.low:+.2f}, {s.high:+.2f}]", f"{r.rank} [{r.low}-{r.high}]",
                     d.estimate, f"[{d.low:+.2f}, {d.high:+.2f}]", d.p_text, f"[{d.t_low:+.2f}, {d.t_high:+.2f}]",
                     f"[{dn.low:+.2f}, {dn.high:+.2f}]", " ".join(f"{v:+.2f}" for v in d.per_seed)])
    table(["method", "NTS [bootstrap 95%]", "rank [95%]", "Δ NTS", "bootstrap 95%", "p", "t 95% (2 df)",
           "nested bootstrap", "per-seed Δ"], rows, f"1. NTS and Δ NTS vs {BASELINE} (all seeds, all pairs)")
    rows = []
    for m in sorted(methods, key=lambda m: ranks[m].rank):
        c = board.compare(m, BASELINE).deltas
        rows.append([m, *(x for k in ("aog", "wrg") for x in (c[k].estimate, f"[{c[k].low:+.2f}, {c[k].high:+.2f}]",
                                                               c[k].p_text, f"[{c[k].t_low:+.2f}, {c[k].t_high:+.2f}]"))])
    table(["method", "Δ AOG", "bootstrap 95%", "p", "t 95%", "Δ WRG", "bootstrap 95%", "p", "t 95%"], rows,
          f"   Δ AOG and Δ WRG vs {BASELINE}")

    # 2a. half-width vs the number of seeds (every subset, averaged)
    by_seeds = {}
    for k in range(1, len(seeds) + 1):
        subsets = [Board([c for c in cells if c.seed in sub], n_boot=args.n_boot)
                   for sub in itertools.combinations(seeds, k)]
        widths = [half_widths(b, methods) for b in subsets]
        by_seeds[k] = {m: (float(np.mean([w[m][0] for w in widths])), float(np.mean([w[m][1] for w in widths])))
                       for m in methods}
        if k == 1:
            v1 = {m: float(np.mean([delta_var(b, [m])[m] for b in subsets])) for m in methods}
    last = len(seeds)
    table(["method", *(f"boot S={k}" for k in by_seeds), *(f"t S={k}" for k in by_seeds if k > 1), f"boot/t S={last}"],
          [[m, *(f"{by_seeds[k][m][0]:.2f}" for k in by_seeds), *(f"{by_seeds[k][m][1]:.2f}" for k in by_seeds if k > 1),
            f"{by_seeds[last][m][0] / by_seeds[last][m][1]:.2f}"] for m in methods],
          "2a. 95% half-width of Δ NTS vs the seeds used (mean over all subsets of that size; n = 400)")

    # 2b. half-width vs test pairs per eval set
    rng = np.random.default_rng(SUBSET_SEED)
    sizes = [n for n in (100, 200, 400) if n <= n_full]
    by_n = {}
    for n in sizes:
        repeats = 1 if n == n_full else args.repeats
        widths = []
        for _ in range(repeats):
            keep = {d: np.sort(rng.choice(size, n, replace=False)) for d, size in board.datasets.items()}
            widths.append(half_widths(Board(subsample(cells, keep), n_boot=args.n_boot), methods))
        by_n[n] = {m: float(np.mean([w[m][0] for w in widths])) for m in methods}
    table(["method", *(f"n={n}" for n in sizes)], [[m, *(f"{by_n[n][m]:.2f}" for n in sizes)] for m in methods],
          f"2b. 95% bootstrap half-width of Δ NTS vs test pairs per eval set (3 seeds; {args.repeats} random "
          f"subsets below {n_full}, averaged)")

    # 3. variance decomposition and the model
    v_both, v_seed = delta_var(board, methods), delta_var(Board(cells, n_boot=args.n_boot, resample="seeds"), methods)
    v3 = delta_var(Board(cells, n_boot=args.n_boot, resample="pairs"), methods)
    S = len(seeds)
    rows, needs = [], []
    for m in methods:
        per_seed = np.array(board.compare(m, BASELINE).deltas["nts"].per_seed)
        inter = max(0.0, (v1[m] - v3[m]) * S / (S - 1))
        pair = max(0.0, v1[m] - inter)
        seed = max(0.0, float(per_seed.var(ddof=1)) - inter)

        def var(s, n):
            return seed / s + pair * n_full / n + inter * n_full / (s * n)

        seeds_needed = next((s for s in range(1, 10001) if Z * math.sqrt(var(s, n_full)) <= TARGET), None)
        seeds_t = seeds_needed and next((s for s in range(max(2, seeds_needed), 10 ** 5)   # t >= z: start there
                                        if t_quantile(0.975, s - 1) * math.sqrt(var(s, n_full)) <= TARGET), None)
        n_at = {s: next((n for n in range(50, 10 ** 6 + 1, 50) if Z * math.sqrt(var(s, n)) <= TARGET), None)
                for s in (3, 10)}
        share = v_seed[m] / (v_seed[m] + v3[m]) if v_seed[m] + v3[m] > 0 else float("nan")
        rows.append([m, *(f"{math.sqrt(v):.2f}" for v in (v_both[m], v_seed[m], v3[m])), f"{share:.0%}",
                     *(f"{math.sqrt(v):.2f}" for v in (seed, pair, inter)), f"{Z * math.sqrt(var(S, n_full)):.2f}",
                     f"{t_quantile(0.975, S - 1) * math.sqrt(var(S, n_full)):.2f}"])
        needs.append([m, *(x if x is not None else "never" for x in (seeds_needed, seeds_t, n_at[3], n_at[10]))])
    table(["method", "sd both", "sd seeds", "sd pairs", "seed share", "s_seed", "s_pair", "s_inter",
           "model ± (z)", "model ± (t)"],
          rows, "3. Δ NTS standard deviation: bootstrap resampling both, only seeds, only pairs (seed share = "
                "seeds / (seeds + pairs)); model components at n = 400 (s_seed unbiased, from the per-seed Δ)")
    table(["method", "seeds (z)", "seeds (t)", "n at S=3", "n at S=10"], needs,
          f"   to reach a 95% half-width <= {TARGET} NTS point: seeds at n = {n_full} (z: 1.96, t: t(0.975, S-1)), "
          f"and test pairs per eval set n with 3 or 10 seeds (z); never: the other term alone is already wider")


if __name__ == "__main__":
    main()
