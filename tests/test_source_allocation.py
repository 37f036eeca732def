"""benchmarks/source_allocation.py: the share of runs an allocation over sources needs, against one run per source."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import source_allocation as allocation  # noqa: E402


def variance(sd, runs):
    """The stratified mean's variance, (1/S^2) sum sd_s^2 / n_s."""
    return float(np.sum(sd ** 2 / runs)) / len(sd) ** 2


def test_the_shares_are_the_variance_ratios_of_the_allocations():
    """Allocated by its own SDs a method needs the Neyman share; equal SDs or weights change nothing; an allocation
    by another method's SDs is the ratio of the two variances at the same number of runs, above 1 when the
    noise sits elsewhere."""
    sd, other = np.array([6.0, 5.0, 3.0, 4.0, 2.0, 1.0]), np.array([1.0, 2.0, 2.0, 3.0, 5.0, 6.0])
    total = 600
    equal = variance(sd, np.full(6, total / 6))
    assert allocation.allocated_share(sd, sd) == pytest.approx(allocation.neyman_share(sd))
    assert allocation.neyman_share(sd) == pytest.approx(variance(sd, total * sd / sd.sum()) / equal)
    assert allocation.allocated_share(sd, other) == pytest.approx(variance(sd, total * other / other.sum()) / equal)
    assert allocation.allocated_share(sd, other) > 1 > allocation.neyman_share(sd)
    assert allocation.allocated_share(sd, np.ones(6)) == pytest.approx(1) and allocation.neyman_share(np.ones(6)) == 1
