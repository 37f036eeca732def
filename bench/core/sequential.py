"""Decisions that may look as runs come in: group-sequential boundaries and repeated confidence intervals.

A paired comparison on a protocol whose runs are independent (ProtocolSpec.seeding "per-source")
grows in whole seeds, one run per source each, and may be looked at after every seed: at seeds
S_1 < S_2 < ... < S_K (the protocol's SequentialPlan), n_k = S_k x sources runs. Stopping at the
first look whose interval excludes 0 would make a fixed-sample 95% interval wrong far more often
than 5% of the time; these boundaries keep the chance that *any* look decides a zero difference at
alpha, wherever one stops.

  - The error rate is spent over the looks by an O'Brien-Fleming-type function of the information
    fraction t_k = n_k / n_K (Lan & DeMets 1983):  alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t)).
    Early looks spend little, so the last look's boundary is close to the fixed-sample one.
  - z boundaries c_1..c_K: P(|Z_1| > c_1) = alpha(t_1), and P(no exit before k, |Z_k| > c_k) =
    alpha(t_k) - alpha(t_{k-1}) under the null, for the statistics' joint normal law (the score
    S_k = Z_k sqrt(n_k) has independent increments): the density of S_k on the continuation region
    is integrated look by look on a grid (Armitage, McPherson & Rowe 1969), each c_k by bisection.
  - With an estimated variance each look's statistic is a t with df_k degrees of freedom: c_k
    becomes the t quantile with the same two-sided tail probability, P(|T_df_k| > c^t_k) = P(|Z| > c_k).
  - The repeated confidence interval at look k is estimate +- c^t_k x SE_k (Jennison & Turnbull
    1989): the difference is decided at look k when it excludes 0. With one look (K = 1) all of this
    is the fixed-sample t-interval.
Every number here is a deterministic function of the plan; tests/test_sequential.py checks the
error rate by simulation, stopping as soon as a look decides.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

LEVEL = 0.95       # the confidence level of every interval the harness reports
GRID = 1201        # points of the continuation region per look (odd: Simpson's rule)
NORMAL = NormalDist()


def obf_spending(t: float, alpha: float) -> float:
    """The O'Brien-Fleming-type spending function: the error rate spent by information fraction t."""
    if t <= 0:
        return 0.0
    return min(alpha, 2.0 - 2.0 * NORMAL.cdf(NORMAL.inv_cdf(1 - alpha / 2) / math.sqrt(t)))


def _simpson(x: np.ndarray) -> np.ndarray:
    """Simpson's weights on an evenly spaced odd-sized grid."""
    w = np.ones(len(x))
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w * (x[1] - x[0]) / 3.0


@functools.lru_cache(maxsize=64)
def z_boundaries(looks: tuple[int, ...], alpha: float = 0.05) -> tuple[float, ...]:
    """Two-sided z boundaries c_1..c_K for looks at ``looks`` observations (increasing)."""
    from scipy.special import ndtr

    if not looks or any(b <= a for a, b in zip(looks, looks[1:])) or looks[0] < 1:
        raise ValueError(f"looks must be increasing positive counts, got {looks}")
    info = np.asarray(looks, dtype=np.float64)
    spent = [obf_spending(n / info[-1], alpha) for n in info]
    bounds: list[float] = []
    grid = density = None
    for k, n in enumerate(info):
        share = spent[k] - (spent[k - 1] if k else 0.0)
        if k == 0:
            c = NORMAL.inv_cdf(1 - share / 2) if share > 0 else math.inf
        else:
            sd, weights = math.sqrt(n - info[k - 1]), density * _simpson(grid)

            def exit_chance(c: float) -> float:
                b = c * math.sqrt(n)
                return float(weights @ (ndtr((grid - b) / sd) + ndtr((-b - grid) / sd)))

            if share <= 0:
                c = math.inf
            else:
                low, high = 0.0, 40.0
                for _ in range(80):
                    mid = (low + high) / 2
                    low, high = (low, mid) if exit_chance(mid) < share else (mid, high)
                c = (low + high) / 2
        bounds.append(c)
        if k == len(info) - 1:
            break
        b = min(c, 12.0) * math.sqrt(n)    # the continuation region; past 12 SDs no mass is left
        new = np.linspace(-b, b, GRID)
        if k == 0:
            density = np.exp(-0.5 * new ** 2 / n) / math.sqrt(2 * math.pi * n)
        else:
            kernel = np.exp(-0.5 * ((new[:, None] - grid[None, :]) / sd) ** 2) / (sd * math.sqrt(2 * math.pi))
            density = kernel @ (density * _simpson(grid))
        grid = new
    return tuple(bounds)


@functools.lru_cache(maxsize=4096)
def t_boundary(z: float, df: int) -> float:
    """The t quantile with the two-sided tail probability of the z boundary ``z`` at ``df`` degrees of freedom."""
    from scipy.stats import t as student_t

    if math.isinf(z):
        return math.inf
    return float(student_t.isf(NORMAL.cdf(-z), df))


@dataclass(frozen=True)
class SequentialPlan:
    """When a comparison may be looked at: after every whole seed from ``first`` to ``last`` (the most
    seeds it may grow to), spending ``alpha`` over those looks. ``first == last`` is one fixed look."""

    first: int = 3
    last: int = 3
    alpha: float = 0.05

    def __post_init__(self) -> None:
        if not (isinstance(self.first, int) and isinstance(self.last, int) and 2 <= self.first <= self.last):
            raise ValueError(f"a sequential plan needs 2 <= first <= last seeds, got {self.first}, {self.last}")

    @property
    def looks(self) -> tuple[int, ...]:
        return tuple(range(self.first, self.last + 1))

    def boundary(self, seeds: int, sources: int, df: int) -> float:
        """The t boundary at ``seeds`` seeds (a look of the plan), or inf before the first look; past the
        last look, the last look's (the plan's error rate is spent: more seeds than planned decide nothing new)."""
        if seeds < self.first:
            return math.inf
        looks = self.looks
        k = looks.index(min(seeds, self.last))
        return t_boundary(z_boundaries(tuple(s * sources for s in looks), self.alpha)[k], df)


def t_quantile(q: float, df: int) -> float:
    """Student t quantile for integer df (closed-form CDF, Abramowitz & Stegun 26.7.3-4, by bisection)."""
    def two_sided(theta: float) -> float:          # P(|T| < sqrt(df) tan(theta))
        s, c, term, total = math.sin(theta), math.cos(theta), 1.0, 1.0
        for k in range(2 if df % 2 == 0 else 3, df - 1 if df % 2 else df, 2):
            term *= (k - 1) / k * c * c
            total += term
        return s * total if df % 2 == 0 else 2 / math.pi * (theta + (s * c * total if df > 1 else 0.0))
    lo, hi, target = 0.0, math.pi / 2, 2 * q - 1
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if two_sided(mid) < target else (lo, mid)
    return math.sqrt(df) * math.tan((lo + hi) / 2)
