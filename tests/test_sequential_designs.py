"""benchmarks/sequential_designs.py: the --until-decided loop it simulates and the plan cut it measures."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import sequential_designs as designs  # noqa: E402


def test_the_loop_stops_as_bench_compare_does():
    """A large difference is decided at the first look; a zero one with tiny noise stops at ±1, undecided, at the
    first look too; a noisy zero one runs to the last look."""
    rng = np.random.default_rng(0)
    looks = (3, 6)
    assert designs.grow(10 + 0.1 * rng.standard_normal((6, 4)), looks, None) == (True, False, 3)
    assert designs.grow(0.01 * rng.standard_normal((6, 4)), looks, None)[1:] == (True, 3)
    decided, at_precision, seeds = designs.grow(50 * rng.standard_normal((6, 4)), looks, None)
    assert seeds == 6 or decided


def test_the_cut_plan_ends_where_the_sd_gives_the_precision():
    """The plan is cut at the first look when the SD is tiny, runs to its last when ±1 is out of reach, and in
    between ends at the first seed count whose last-look half-width is within ±1."""
    from bench.core.sequential import t_boundary, z_boundaries

    assert designs.end((3, 20), 6, 3, 12, 0.01) == 3
    assert designs.end((3, 20), 6, 3, 12, 100.0) == 20
    s = designs.end((3, 20), 6, 3, 12, 3.0)
    assert 3 < s < 20

    def half(k):
        return t_boundary(z_boundaries(tuple(j * 6 for j in range(3, k + 1)))[-1], 6 * (k - 1)) * 3.0 / (6 * k) ** 0.5

    assert half(s) <= designs.PRECISION < half(s - 1)
