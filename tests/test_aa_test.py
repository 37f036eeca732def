"""The A/A test's fresh pools (benchmarks/aa_test.py --fresh): drawn from a pool's run deviations, each source's
runs keep its own spread, and every comparison gets a pool of its own."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import aa_test as aa  # noqa: E402


def test_fresh_pools_keep_each_sources_run_spread_and_are_drawn_anew():
    rng = np.random.default_rng(5)
    spreads = {"mini/chat": 8.0, "mini/travel": 2.0}
    # 3 runs a cell around cell means far apart: the deviations must drop the means and keep the runs' SD
    runs = {(seed, s): (100 * seed + rng.normal(0, sd, 3)).tolist() for seed in range(4000) for s, sd in spreads.items()}
    spread = aa.run_deviations(runs, sorted(spreads))
    for s, sd in spreads.items():
        assert len(spread[s]) == 3 * 4000
        assert abs(float(np.mean(spread[s]))) < 0.05 * sd
        assert float(np.std(spread[s])) == pytest.approx(sd, rel=0.03)   # sqrt(3/2) undoes the mean's pull
    first, second = (aa.fresh_pool(spread, 20, 3, rng) for _ in range(2))
    assert sorted(first) == sorted((seed, s) for seed in range(20) for s in spreads)
    assert all(len(v) == 3 for v in first.values())
    assert first != second


def test_a_symmetrized_pool_keeps_each_cells_mean_and_spread_and_flips_its_skew_at_random():
    """--symmetric: each cell's runs as they are or reflected about their mean, about half of each; a skewed pool's
    cells come out skewed one way or the other, so the pool's skew is gone."""
    rng = np.random.default_rng(9)
    runs = {(seed, "s"): [10.0, 10.0, 1.0] for seed in range(2000)}   # one run down: skewed
    flipped = aa.symmetrized(runs, rng)
    assert sorted(flipped) == sorted(runs)
    for v in flipped.values():
        assert np.mean(v) == pytest.approx(7.0) and np.std(v) == pytest.approx(np.std([10.0, 10.0, 1.0]))
        assert sorted(v) in ([1.0, 10.0, 10.0], [4.0, 4.0, 13.0])
    share = np.mean([max(v) == 13.0 for v in flipped.values()])
    assert 0.45 < share < 0.55


@pytest.mark.parametrize("argv, why", [
    (["--symmetric"], "--symmetric draws its own pool per comparison"),
    (["--sequential", "--symmetric", "--fresh"], "--symmetric draws its own pool per comparison"),
    (["--control-from", "8"], "--control-from changes the control: give --control"),
    (["--beta", "0.5"], "--beta and --variances change the control: give --control"),
])
def test_options_that_change_nothing_alone_are_refused(monkeypatch, tmp_path, argv, why):
    monkeypatch.setattr(sys, "argv", ["aa_test.py", str(tmp_path), *argv])
    monkeypatch.setattr(aa, "pool", lambda folder, method: ({}, (3, 20)))
    with pytest.raises(SystemExit, match=why):
        aa.main()


def test_the_control_is_refused_where_the_rule_would_ignore_it():
    """one_comparison with the control, outside main (which sets CONTROL_FROM): an error, not the plain rule again."""
    runs = {(seed, s): [1.0, 2.0, 4.0] for seed in range(3) for s in "ab"}
    with pytest.raises(ValueError, match="CONTROL_FROM is set"):
        aa.one_comparison(runs, [0, 1, 2], ["a", "b"], np.random.default_rng(0), 3, None, False, control=True)


def test_the_pooled_skewness_of_the_runs_deviations_reads_the_skew_and_its_interval_holds_it():
    """--shape's pooled skewness: runs with one low run in a cell now and then read negative, their reflection the
    opposite, and the interval over resampled seeds holds the estimate."""
    rng = np.random.default_rng(4)
    runs = {}
    for seed in range(400):
        for s, sd in (("a", 1.0), ("b", 5.0)):
            runs[seed, s] = list(sd * (rng.standard_normal(3) - 3 * (rng.random(3) < 0.1)))
    low, estimate, high = aa.pooled_skewness(runs, ["a", "b"], np.random.default_rng(0), n_boot=200)
    assert low < estimate < high < 0
    flipped = {key: [-x for x in v] for key, v in runs.items()}
    assert aa.pooled_skewness(flipped, ["a", "b"], np.random.default_rng(0), n_boot=200)[1] == pytest.approx(-estimate)
