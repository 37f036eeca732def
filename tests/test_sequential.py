"""Group-sequential decisions (bench/core/sequential.py) and the interval over independent runs (bench.core.stats)."""
import math

import numpy as np
import pytest

import bench.core.runs
from bench.core.runs import VARIANT_CONTROL_FROM, stratified
from bench.core.sequential import SequentialPlan, obf_spending, t_boundary, t_quantile, z_boundaries


def test_boundaries_spend_the_error_rate_look_by_look():
    """Under the null, the chance of first crossing at look k is what the spending function gives it
    (simulated Brownian motion observed at the looks; 400,000 paths, a fixed seed)."""
    looks = (3, 4, 6, 9)
    c = np.array(z_boundaries(looks))
    steps = np.diff((0,) + looks)
    paths = np.random.default_rng(7).standard_normal((400_000, len(looks))) * np.sqrt(steps)
    z = paths.cumsum(1) / np.sqrt(looks)
    crossed = np.abs(z) > c
    first = np.where(crossed.any(1), crossed.argmax(1), -1)
    spent = [obf_spending(n / looks[-1], 0.05) for n in looks]
    for k in range(len(looks)):
        expected = spent[k] - (spent[k - 1] if k else 0.0)
        assert abs((first == k).mean() - expected) < 4 * math.sqrt(expected / 400_000) + 1e-4
    assert abs((first >= 0).mean() - 0.05) < 0.002


def test_one_look_is_the_fixed_sample_interval():
    assert z_boundaries((5,)) == pytest.approx((1.959964,), abs=1e-5)
    assert SequentialPlan(3, 3).boundary(3, 6, 12) == pytest.approx(t_quantile(0.975, 12), rel=1e-6)
    assert t_boundary(1.959964, 10) == pytest.approx(t_quantile(0.975, 10), rel=1e-5)


def test_before_the_first_look_nothing_is_decided():
    plan = SequentialPlan(3, 10)
    assert plan.boundary(2, 6, 6) == math.inf
    assert plan.boundary(3, 6, 12) > plan.boundary(10, 6, 54) > t_quantile(0.975, 54)


def test_plan_refuses_nonsense():
    with pytest.raises(ValueError):
        SequentialPlan(1, 5)
    with pytest.raises(ValueError):
        SequentialPlan(5, 4)


def _aa_trial(rng, plan, sources=6, heavy=False):
    """One A/A comparison grown seed by seed and stopped at the first look that decides: True if it decides."""
    spread = rng.uniform(1, 5, sources)   # sources differ in noise; the difference is 0 in every one
    draws = (rng.standard_t(3, (plan.last, sources)) / math.sqrt(3) if heavy
             else rng.standard_normal((plan.last, sources))) * spread
    for seeds in plan.looks:
        diffs = {str(s): draws[:seeds, s] for s in range(sources)}
        if stratified(diffs, (plan.first, plan.last))[-1]:
            return True
    return False


@pytest.mark.parametrize("heavy", [False, True])
def test_stopping_when_decided_keeps_the_error_rate(heavy):
    """A/A: grow a comparison until it looks decided (or runs out of looks). With the sequential boundaries
    at most 5% of 2,000 such comparisons decide (within 3 binomial SEs), sources differing five-fold in
    noise and, in one case, heavy-tailed (t with 3 df); with the fixed-sample interval at every look, far more do."""
    rng = np.random.default_rng(20261202)
    plan = SequentialPlan(3, 10)
    trials = 2000
    rate = np.mean([_aa_trial(rng, plan, heavy=heavy) for _ in range(trials)])
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials)
    naive_rate = 0
    for _ in range(1000):   # the same stopping rule with fixed-sample intervals: optional stopping inflates it
        draws = rng.standard_normal((plan.last, 6))
        naive_rate += any(stratified({str(s): draws[:k, s] for s in range(6)})[-1] for k in plan.looks)
    assert naive_rate / 1000 > 0.1


def test_stratified_interval_by_hand():
    diffs = {"a": [1.0, 3.0], "b": [-2.0, 0.0], "c": [4.0, 4.0]}
    estimate, low, high, runs, seeds, sources, df, sd, boundary, decided = stratified(diffs)
    # per-source variances 2, 2, 0; Welch-Satterthwaite df = (1 + 1 + 0)^2 / (1 + 1 + 0) = 2
    assert (runs, seeds, sources, df) == (6, 2, 3, 2)
    assert estimate == pytest.approx((2.0 - 1.0 + 4.0) / 3)
    assert sd == pytest.approx(math.sqrt((2 + 2 + 0) / 3))
    half = t_quantile(0.975, 2) * sd / math.sqrt(6)
    assert (low, high) == pytest.approx((estimate - half, estimate + half))
    assert decided == (low > 0 or high < 0)


@pytest.fixture
def variant(monkeypatch):
    """The control as a variant applies it (the rule until 2026-12-07): from VARIANT_CONTROL_FROM seeds."""
    monkeypatch.setattr(bench.core.runs, "CONTROL_FROM", VARIANT_CONTROL_FROM)


def test_the_rule_uses_no_control():
    """Under the rule (CONTROL_FROM None) controls change nothing, at any look; a fixed slope, asked for, still does."""
    rng = np.random.default_rng(11)
    for seeds in (3, 5, 12):
        diffs = {s: list(rng.standard_normal(seeds) * (1 + k)) for k, s in enumerate("abc")}
        controls = {s: list(0.7 * np.array(diffs[s]) + rng.standard_normal(seeds)) for s in "abc"}
        assert bench.core.runs.CONTROL_FROM is None
        assert stratified(diffs, (3, 20), controls=controls) == stratified(diffs, (3, 20))
        assert stratified(diffs, (3, 20), controls=controls, beta=0.5) != stratified(diffs, (3, 20))


def test_a_control_corrects_each_difference_by_hand(variant):
    """stratified with controls, from VARIANT_CONTROL_FROM seeds (a variant): β = Sxy / Sxx within sources; each source's variance solved
    from E[RSS_s] = v_s (seeds - 1 - 2 h_s) + h_s sum_t h_t v_t, its df seeds - 1 - h_s; β's variance in the SE."""
    assert VARIANT_CONTROL_FROM == 5
    diffs = {"a": [3.5, 1.0, 1.5, 3.0, 1.0], "b": [1.0, 1.0, 4.0, 2.0, 2.0]}
    controls = {"a": [1.0, 0.0, -1.0, 2.0, -2.0], "b": [1.0] * 5}    # only a's vary: leverage 1 and 0
    # β = (1.5 * 1 + 0 + -0.5 * -1 + 1 * 2 + -1 * -2) / 10 = 0.6; a's residuals 0.9, -1, 0.1, -0.2, 0.2: RSS 1.9
    # on (4 - 2 + 1) = 3, df 3; b shifted by 0.6 (RSS 6 on 4, df 4). Estimate (2 + 1.4) / 2; the mean control 0.5
    # adds 0.5^2 x (1.9 / 3) / 10 to SE^2 = sd^2 / 10 with sd^2 = (1.9 / 3 + 1.5) / 2
    estimate, low, high, runs, seeds, sources, df, sd, boundary, decided = stratified(diffs, controls=controls)
    v = (1.9 / 3, 1.5)
    share = (v[0] / 5, v[1] / 5)
    assert df == math.floor(sum(share) ** 2 / (share[0] ** 2 / 3 + share[1] ** 2 / 4)) == 6
    assert (runs, seeds, sources) == (10, 5, 2) and estimate == pytest.approx(1.7)
    assert sd == pytest.approx(math.sqrt(sum(v) / 2))
    half = t_quantile(0.975, 6) * math.sqrt(sum(v) / 2 / 10 + 0.25 * v[0] / 10)
    assert (low, high) == pytest.approx((1.7 - half, 1.7 + half)) and decided
    # controls that do not vary leave the plain interval, and so does a comparison of fewer seeds
    assert stratified(diffs, controls={"a": [0.0] * 5, "b": [0.0] * 5}) == stratified(diffs)
    four = {k: v[:4] for k, v in diffs.items()}
    assert stratified(four, controls={k: v[:4] for k, v in controls.items()}) == stratified(four)

    # the bound: each v_s as RSS_s / (seeds - 1 - 2 h_s): a's 1.9 / 2 (h = 1) and b's 6 / 4 (h = 0)
    bound = stratified(diffs, controls=controls, variances="bound")
    assert bound[0] == estimate and bound[7] == pytest.approx(math.sqrt((1.9 / 2 + 1.5) / 2))


def test_the_bound_on_the_controls_variances_is_never_below_the_solved_ones(variant):
    """variances="bound" drops the other sources' share from each source's RSS, so its SD is never below the solved
    one's (300 random comparisons); where no control is used it is the plain rule; a wrong name is refused."""
    rng = np.random.default_rng(20261207)
    for _ in range(300):
        seeds = int(rng.integers(VARIANT_CONTROL_FROM, 12))
        spread = rng.uniform(0.5, 8, 6)
        diffs = {str(s): list(rng.standard_normal(seeds) * spread[s]) for s in range(6)}
        controls = {str(s): list(0.6 * np.array(diffs[str(s)]) + rng.standard_normal(seeds) * spread[s]) for s in range(6)}
        assert stratified(diffs, controls=controls, variances="bound")[7] >= stratified(diffs, controls=controls)[7] - 1e-12
    few = {k: v[:VARIANT_CONTROL_FROM - 1] for k, v in diffs.items()}
    assert stratified(few, controls={k: v[:VARIANT_CONTROL_FROM - 1] for k, v in controls.items()}, variances="bound") == stratified(few)
    with pytest.raises(ValueError, match="one of solved, bound"):
        stratified(diffs, controls=controls, variances="pooled")


def test_a_fixed_slope_is_the_plain_rule_on_the_corrected_differences_at_every_look():
    """beta=b: each difference d - b x, then the plain rule (nothing fitted, no degree of freedom paid), from the
    first look on; without controls beta changes nothing."""
    rng = np.random.default_rng(3)
    for seeds in (3, VARIANT_CONTROL_FROM, 9):
        diffs = {s: list(rng.standard_normal(seeds) * (1 + k)) for k, s in enumerate("abc")}
        controls = {s: list(rng.standard_normal(seeds)) for s in "abc"}
        corrected = {s: [d - 2 / 3 * x for d, x in zip(diffs[s], controls[s])] for s in "abc"}
        assert stratified(diffs, (3, 10), controls=controls, beta=2 / 3) == stratified(corrected, (3, 10))
        assert stratified(diffs, (3, 10), beta=2 / 3) == stratified(diffs, (3, 10))

def _controlled_trial(rng, plan, rho, sources=6, replicates=2):
    """One A/A comparison with the baseline's replicates as control, grown until decided: the method's run shares a
    part ``rho`` of the baseline run's noise (its student seeds), sources differ in noise; the difference is 0."""
    spread = rng.uniform(1, 5, sources)
    naive = rng.standard_normal((replicates + 1, plan.last, sources)) * spread
    method = rho * naive[0] + math.sqrt(1 - rho * rho) * rng.standard_normal((plan.last, sources)) * spread
    d, x = method - naive[0], naive[1:].mean(0) - naive[0]
    for seeds in plan.looks:
        if stratified({str(s): d[:seeds, s] for s in range(sources)}, (plan.first, plan.last),
                      controls={str(s): x[:seeds, s] for s in range(sources)})[-1]:
            return True
    return False


@pytest.mark.parametrize("rho", [0.0, 0.8])
def test_a_control_keeps_the_error_rate_and_narrows_the_interval(rho, variant):
    """Corrected by the replicates' A/A difference, A/A comparisons grown until decided still decide at most 5% of
    the time (1,000, within 3 binomial SEs), and a method that shares little of naive's noise gets a narrower
    interval on average (200 draws at 10 seeds): the control removes naive's own run noise from the difference."""
    rng = np.random.default_rng(20261203)
    plan = SequentialPlan(3, 10)
    trials = 1000
    rate = np.mean([_controlled_trial(rng, plan, rho) for _ in range(trials)])
    assert rate <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / trials)
    if rho == 0.0:
        ratios = []
        for _ in range(200):
            naive = rng.standard_normal((3, 10, 6)) * rng.uniform(1, 5, 6)
            d, x = rng.standard_normal((10, 6)) - naive[0], naive[1:].mean(0) - naive[0]
            plain = stratified({str(s): d[:, s] for s in range(6)})
            controlled = stratified({str(s): d[:, s] for s in range(6)}, controls={str(s): x[:, s] for s in range(6)})
            ratios.append((controlled[2] - controlled[1]) / (plain[2] - plain[1]))
        assert np.mean(ratios) < 0.95
