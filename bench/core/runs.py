"""Decisions over independent runs: on a protocol seeded per source (ProtocolSpec.seeding
"per-source") every (seed, source) run of a method is independent of the others, so a paired
comparison's unit is the run. ``runs_delta`` takes each run's difference A - B (both methods on the
same seed and source), ``stratified`` its mean over sources and the interval: the per-source means'
variance from within-source spreads, degrees of freedom by Welch-Satterthwaite, and the boundary of
the protocol's sequential plan (bench.core.sequential) at the number of seeds held."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from bench.core.cells import Cell
from bench.core.sequential import LEVEL, SequentialPlan


@dataclass(frozen=True)
class RunsDelta:
    """A - B over independent training runs, one per (seed, source) cell, stratified by source.

    d_sj = A's value minus B's in the cell of source s and seed j (a cell's value: the mean over its
    targets); estimate = the mean over sources of each source's mean d; sd = the SD of one run's d about
    its source's mean: sources differ several-fold in noise, so each source's variance v_s is estimated on its
    own, sd^2 = the mean of the v_s, SE^2 = sum_s v_s / n_s / sources^2 = sd^2 / runs, and the degrees of freedom
    are Welch-Satterthwaite's, (sum_s v_s/n_s)^2 / sum_s (v_s/n_s)^2 / (n_s - 1), rounded down: between
    seeds - 1 (one source's noise dominates) and runs - sources (all alike).
    Interval: estimate +- boundary x SE, the boundary being the protocol's sequential plan's at this many
    seeds (bench.core.sequential: a repeated confidence interval, valid at whichever look one stops), or the
    t quantile (0.975, df) with one look. Decided when the interval excludes 0."""

    metric: str
    estimate: float
    low: float
    high: float
    runs: int
    seeds: int                           # whole seeds: both sides ran every source
    sources: int
    df: int
    sd: float
    boundary: float
    decided: bool
    per_run: tuple[float, ...]


def cell_value(cell: Cell, metric: str) -> float:
    """A cell's WRG, AOG or NTS (bench.core.metrics), averaged over its targets."""
    from bench.core.metrics import cell_metrics

    acc = {e.name: {"teacher": 100.0 * float(e.teacher.mean()), "student": 100.0 * float(e.student.mean())}
           for e in cell.eval_sets}
    per_target = cell_metrics(acc, cell.source)
    return float(np.mean([m[metric] for m in per_target.values()]))


def runs_delta(a: Sequence[Cell], b: Sequence[Cell], metric: str = "nts", looks: tuple[int, int] | None = None,
               level: float = LEVEL) -> RunsDelta:
    """``RunsDelta`` of A's cells against B's, on the seeds both sides hold for every source of either."""

    by_a, by_b = {(c.seed, c.source): c for c in a}, {(c.seed, c.source): c for c in b}
    sources = sorted({c.source for c in (*a, *b)})
    seeds = sorted(seed for seed in {c.seed for c in (*a, *b)}
                   if all((seed, s) in by_a and (seed, s) in by_b for s in sources))
    if len(seeds) < 2:
        raise ValueError(f"a paired comparison over runs needs two whole seeds (every source on both sides); "
                         f"these have {len(seeds)}")
    for j in seeds:
        for s in sources:
            for ea, eb in zip(by_a[j, s].eval_sets, by_b[j, s].eval_sets):
                if ea.name != eb.name or ea.pair_ids != eb.pair_ids or not np.array_equal(ea.teacher, eb.teacher):
                    raise ValueError(f"seed {j} {s}: {by_a[j, s].method} and {by_b[j, s].method} were not scored on "
                                     f"the same test pairs by the same teacher ({ea.name}): their runs are not paired")
    diffs = {s: [cell_value(by_a[j, s], metric) - cell_value(by_b[j, s], metric) for j in seeds] for s in sources}
    return RunsDelta(metric, *stratified(diffs, looks, level),
                     tuple(diffs[s][j] for j in range(len(seeds)) for s in sources))


def stratified(diffs: Mapping[str, Sequence[float]], looks: tuple[int, int] | None = None, level: float = LEVEL
               ) -> tuple[float, float, float, int, int, int, int, float, float, bool]:
    """RunsDelta's numbers from per-source lists of per-run differences, each list in seed order and of one
    length (whole seeds, at least 2): estimate, low, high, runs, seeds, sources, df, sd, boundary, decided."""
    seeds, sources = len(next(iter(diffs.values()))), len(diffs)
    n = seeds * sources
    variances = np.array([np.var(d, ddof=1) for d in diffs.values()])   # sources differ in noise, several-fold
    sd = float(math.sqrt(variances.mean()))
    estimate = float(np.mean([np.mean(d) for d in diffs.values()]))
    se = sd / math.sqrt(n)
    # Welch-Satterthwaite: the t's degrees of freedom when each source's variance is estimated apart
    share = variances / seeds
    df = int(math.floor(share.sum() ** 2 / np.sum(share ** 2 / (seeds - 1)))) if share.sum() > 0 else n - sources
    first, last = looks or (seeds, seeds)
    boundary = SequentialPlan(first, max(first, last), 1 - level).boundary(seeds, sources, df)
    low, high = estimate - boundary * se, estimate + boundary * se
    return estimate, low, high, n, seeds, sources, df, sd, boundary, bool(low > 0 or high < 0)
