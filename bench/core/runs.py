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
from weakref import WeakKeyDictionary

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
    seeds - 1 (one source's noise dominates) and runs - sources (all alike); with a control (a variant) a little
    fewer (its slope's degree of freedom), and never below 1.
    Interval: estimate +- boundary x SE, the boundary being the protocol's sequential plan's at this many
    seeds (bench.core.sequential: a repeated confidence interval, valid at whichever look one stops), or the
    t quantile (0.975, df) with one look. Decided when the interval excludes 0.
    Where a variant applies a control (CONTROL_FROM set; the rule sets none), B's replicates (B#1, ...: ``controls``)
    in every cell first correct each d by their A/A difference, a control variate (``stratified``)."""

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
    per_run: tuple[float, ...]           # the runs' differences d, before any control's correction
    controls: int = 0                    # B's replicates whose A/A difference corrected each d (0: none)


def cell_value(cell: Cell, metric: str) -> float:
    """A cell's WRG, AOG or NTS (bench.core.metrics), averaged over its targets (its near ones: a far target is
    reported apart, never in these). Computed once per cell and metric (a Cell is frozen): the board compares every
    method with naive, and each comparison reads naive's cells again."""
    from bench.core.metrics import cell_metrics

    known = _VALUES.setdefault(cell, {})
    if metric not in known:
        acc = {e.name: {"teacher": 100.0 * float(e.teacher.mean()), "student": 100.0 * float(e.student.mean())}
               for e in cell.eval_sets if e.role != "far"}
        per_target = cell_metrics(acc, cell.source)
        known[metric] = float(np.mean([m[metric] for m in per_target.values()]))
    return known[metric]


_VALUES: WeakKeyDictionary[Cell, dict[str, float]] = WeakKeyDictionary()   # gone with its cell


def paired(a: Cell, b: Cell) -> bool:
    """Whether two cells were scored on the same test pairs, in the same order, by the same teacher."""
    return len(a.eval_sets) == len(b.eval_sets) and all(
        ea.name == eb.name and ea.pair_ids == eb.pair_ids and np.array_equal(ea.teacher, eb.teacher)
        for ea, eb in zip(a.eval_sets, b.eval_sets))


def runs_delta(a: Sequence[Cell], b: Sequence[Cell], metric: str = "nts", looks: tuple[int, int] | None = None,
               level: float = LEVEL, controls: Sequence[Sequence[Cell]] = ()) -> RunsDelta:
    """``RunsDelta`` of A's cells against B's, on the seeds both sides hold for every source of either.
    ``controls``: the cells of B's replicates (B#1, B#2, ...), each replicate's list apart; those that ran every
    cell of those seeds correct the differences (``stratified``), the others are not used."""

    by_a, by_b = {(c.seed, c.source): c for c in a}, {(c.seed, c.source): c for c in b}
    sources = sorted({c.source for c in (*a, *b)})
    seeds = sorted(whole_seeds(a, set(sources)) & whole_seeds(b, set(sources)))
    if len(seeds) < 2:
        raise ValueError(f"a paired comparison over runs needs two whole seeds (every source on both sides); "
                         f"these have {len(seeds)}")
    for j in seeds:
        for s in sources:
            if not paired(by_a[j, s], by_b[j, s]):
                raise ValueError(f"seed {j} {s}: {by_a[j, s].method} and {by_b[j, s].method} were not scored on the "
                                 f"same test pairs by the same teacher: their runs are not paired")
    # a replicate is a control where it ran every cell of these seeds, paired with B's (one not paired is not used)
    replicates = [r for r in ({(c.seed, c.source): c for c in cells} for cells in controls)
                  if all((j, s) in r and paired(r[j, s], by_b[j, s]) for j in seeds for s in sources)]
    diffs = {s: [cell_value(by_a[j, s], metric) - cell_value(by_b[j, s], metric) for j in seeds] for s in sources}
    control = {s: [float(np.mean([cell_value(r[j, s], metric) for r in replicates])) - cell_value(by_b[j, s], metric)
                   for j in seeds] for s in sources} if replicates else None
    used = control is not None and control_leverage(control) is not None
    return RunsDelta(metric, *stratified(diffs, looks, level, control),
                     tuple(diffs[s][j] for j in range(len(seeds)) for s in sources), len(replicates) if used else 0)


def whole_seeds(cells: Sequence[Cell], sources: set[str]) -> set[int]:
    """The seeds at which ``cells`` hold a cell of every one of ``sources``."""
    held: dict[int, set[str]] = {}
    for c in cells:
        held.setdefault(c.seed, set()).add(c.source)
    return {seed for seed, got in held.items() if got >= sources}


def control_slope(diffs: Mapping[str, Sequence[float]], controls: Mapping[str, Sequence[float]]) -> float:
    """The least-squares slope of the differences on the controls, both centred on their source's mean (one slope
    for every source: the control's part of the difference is naive's own run noise, alike in every source)."""
    d = {s: np.asarray(v, dtype=np.float64) for s, v in diffs.items()}
    x = {s: np.asarray(controls[s], dtype=np.float64) for s in diffs}
    sxx = sum(float(np.sum((x[s] - x[s].mean()) ** 2)) for s in d)
    sxy = sum(float(np.sum((x[s] - x[s].mean()) * (d[s] - d[s].mean()))) for s in d)
    return sxy / sxx if sxx > 0 else 0.0


# The rule applies no control (None): the baseline's replicates as each run's control, the rule from 2026-12-02 to
# 2026-12-07, carry the skew of naive's runs into an A/A difference, which a difference of two alike runs cancels, and
# kept the A/A rate above 5% on the committed pool of naive's runs (docs/statistics.md, "The control, measured and
# dropped"). The benchmarks that measure it as a variant set CONTROL_FROM to VARIANT_CONTROL_FROM, the seeds it
# waited for.
CONTROL_FROM: int | None = None
VARIANT_CONTROL_FROM = 5   # as plans mini-v2-reference v2 and v3 fixed it


def control_applied() -> int:
    """The seeds from which a control corrects, for a caller that measures the control as a variant: a ValueError
    where CONTROL_FROM is the rule's None, under which its controls would silently change nothing."""
    if CONTROL_FROM is None:
        raise ValueError("the control is applied only where bench.core.runs.CONTROL_FROM is set (a variant: "
                         "VARIANT_CONTROL_FROM); the rule sets none, so these controls would change nothing")
    return CONTROL_FROM


def control_leverage(controls: Mapping[str, Sequence[float]]) -> tuple[np.ndarray, float] | None:
    """Each source's share of Sxx (the controls' within-source sum of squares) and Sxx, or None where the
    controls are not used: always under the rule (CONTROL_FROM None), else before CONTROL_FROM seeds, or where they do
    not vary within sources (whole seeds: every list of one length). Why not before 5 seeds where a variant applies
    them: the slope's leverage lands on the noisiest source, whose variance has only seeds - 1 degrees of freedom, and
    at 3 seeds the first look's boundary, extreme in the t's tail, grows several-fold with the df lost
    (benchmarks/control_variate.py --width-at; docs/results/mini-v2.md, "Why the control waits for 5 seeds")."""
    x = [np.asarray(v, dtype=np.float64) for v in controls.values()]
    seeds = len(x[0])
    sxx = sum(float(np.sum((v - v.mean()) ** 2)) for v in x)
    if CONTROL_FROM is None or seeds < CONTROL_FROM or sxx <= 0:
        return None
    return np.array([float(np.sum((v - v.mean()) ** 2)) / sxx for v in x]), sxx


def stratified(diffs: Mapping[str, Sequence[float]], looks: tuple[int, int] | None = None, level: float = LEVEL,
               controls: Mapping[str, Sequence[float]] | None = None, variances: str = "solved",
               beta: float | None = None) -> tuple[float, float, float, int, int, int, int, float, float, bool]:
    """RunsDelta's numbers from per-source lists of per-run differences, each list in seed order and of one
    length (whole seeds, at least 2): estimate, low, high, runs, seeds, sources, df, sd, boundary, decided.

    ``controls``: per run, a difference whose mean is 0 by construction and whose noise the run's difference
    shares (the baseline's replicates' mean minus the baseline's run: an A/A difference). The rule passes them and
    uses none (CONTROL_FROM None); where a variant sets CONTROL_FROM, from that many seeds on each difference d
    becomes d − β x, β = ``control_slope``: a fixed β would leave the estimate unbiased (x's mean is known), and
    the fitted one does too for normal runs (it reads within-source deviations only, independent of the source
    means), while it takes the baseline run's own noise out of the difference (a control variate; a regression
    estimator with the control's mean known). Fitting β is paid for: each source's
    variance is solved from E[RSS_s] = v_s (seeds − 1 − 2 h_s) + h_s sum_t h_t v_t (h_s: the source's share of Sxx,
    its leverage), its degrees of freedom are seeds − 1 − h_s, and β's variance, sum_t h_t v_t / Sxx, enters the SE
    times the mean control's square.

    ``variances``: "solved", the control as the rule applied it until 2026-12-07 (the equations above, a negative
    solution taken as 0), or "bound", each
    v_s as RSS_s / (seeds − 1 − 2 h_s), which drops the other sources' share and so is never below the solved
    one (nor, in expectation, below v_s). Its Welch df follows its variances and can rise, so its interval is
    not always the wider one. A variant the rule does not use, measured by benchmarks/aa_test.py --variances.

    ``beta``: a fixed slope in place of the fitted one, at every look and whatever CONTROL_FROM says: asked for, it
    is applied (a variant the rule does not use, measured by
    benchmarks/aa_test.py --beta and benchmarks/rule_variant.py --beta). Nothing is fitted, so each corrected
    difference d − β x has the difference's mean (x's is 0) and the plain rule applies to them as they are, with no
    degree of freedom paid; its error rate is the plain rule's on values spread otherwise than d's. β = R / (R + 1),
    R the replicates x averages, compares the method's run with the mean of all R + 1 of the baseline's runs."""
    seeds, sources = len(next(iter(diffs.values()))), len(diffs)
    n = seeds * sources
    d = {s: np.asarray(v, dtype=np.float64) for s, v in diffs.items()}
    dof = np.full(sources, seeds - 1.0)   # each source's variance's degrees of freedom
    leverage, sxx, x_mean = np.zeros(sources), 0.0, 0.0
    if controls is not None and beta is not None:   # fixed: the plain rule on the corrected differences
        d = {s: d[s] - beta * np.asarray(controls[s], dtype=np.float64) for s in d}
        controls = None
    fit = control_leverage({s: controls[s] for s in d}) if controls is not None else None
    if fit is not None:
        x = {s: np.asarray(controls[s], dtype=np.float64) for s in d}
        leverage, sxx = fit
        beta = control_slope(d, x)
        d = {s: d[s] - beta * x[s] for s in d}
        dof, x_mean = dof - leverage, float(np.mean([v.mean() for v in x.values()]))
    rss = np.array([float(np.sum((v - v.mean()) ** 2)) for v in d.values()])
    if variances not in ("solved", "bound"):
        raise ValueError(f"variances {variances!r}: one of solved, bound")
    if fit is None:
        v = rss / dof
    elif variances == "bound":
        v = rss / (seeds - 1 - 2 * leverage)
    else:   # E[rss] = (diag(seeds - 1 - 2h) + h h^T) v
        v = np.maximum(np.linalg.solve(np.diag(seeds - 1 - 2 * leverage) + np.outer(leverage, leverage), rss), 0.0)
    sd = float(math.sqrt(v.mean()))
    estimate = float(np.mean([np.mean(values) for values in d.values()]))
    beta_var = x_mean ** 2 * float(v @ leverage) / sxx if sxx > 0 else 0.0
    se = math.sqrt(sd ** 2 / n + beta_var)
    # Welch-Satterthwaite: the t's degrees of freedom when each source's variance is estimated apart
    share = v / seeds
    df = int(math.floor(share.sum() ** 2 / np.sum(share ** 2 / dof))) if share.sum() > 0 else n - sources
    first, last = looks or (seeds, seeds)
    boundary = SequentialPlan(first, max(first, last), 1 - level).boundary(seeds, sources, max(1, df))
    low, high = estimate - boundary * se, estimate + boundary * se
    return estimate, low, high, n, seeds, sources, max(1, df), sd, boundary, bool(low > 0 or high < 0)
