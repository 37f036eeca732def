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
