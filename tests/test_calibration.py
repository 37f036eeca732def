"""The calibration scripts' arithmetic (benchmarks/coverage.py) on draws whose truth is known."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import coverage  # noqa: E402


@pytest.mark.parametrize("looks", [None, (3, 8)])
def test_coverage_of_normal_runs_is_what_a_right_interval_gives(looks):
    """Independent runs, sources differing four-fold in noise: over 200 pools of 20 seeds, intervals of 3
    seeds cover the mean of the held-out 17 as often as one_check's chances say (within 2 points; the
    checks of one pool share its runs, so the pools, not the checks, are the independent units)."""
    rng = np.random.default_rng(0)
    found, expected = [], []
    for _ in range(200):
        diffs = {s: dict(enumerate(0.5 + sd * rng.standard_normal(20))) for s, sd in (("a", 1), ("b", 2), ("c", 4))}
        f, e = coverage.coverage(diffs, list(range(20)), 3, looks, 20, rng)
        found.append(f)
        expected.append(e)
    assert (0.9 < np.mean(expected) < 0.95) if looks is None else np.mean(expected) > 0.95   # an early look is wider
    assert abs(np.mean(found) - np.mean(expected)) < 0.02


def test_a_shifted_truth_is_not_covered():
    """Runs whose first seeds sit far from the rest (a drift the interval cannot know) are caught."""
    diffs = {s: {j: (10.0 if j < 3 else 0.0) + 0.1 * ((j * 7 + i) % 5) for j in range(12)}
             for i, s in enumerate("ab")}
    found, _ = coverage.coverage(diffs, list(range(12)), 3, None, 500, np.random.default_rng(2))
    assert found < 0.9


def test_with_the_control_the_truth_is_corrected_as_the_interval_is(monkeypatch):
    """--control: the drawn seeds' interval and the held-out truth are both corrected by the controls. Where the
    control carries most of each difference's noise, the corrected interval is narrow; against a truth corrected alike
    it covers as often as one_check's chances say (within 3 points over 100 pools), where against the plain held-out
    mean it would cover far less."""
    import bench.core.runs

    monkeypatch.setattr(bench.core.runs, "CONTROL_FROM", 5)
    rng = np.random.default_rng(8)
    found, expected = [], []
    for _ in range(100):
        x = {s: rng.standard_normal(20) * sd for s, sd in (("a", 2), ("b", 4), ("c", 8))}
        diffs = {s: dict(enumerate(0.5 + x[s] + 0.5 * rng.standard_normal(20))) for s in x}
        controls = {s: dict(enumerate(x[s])) for s in x}
        f, e = coverage.coverage(diffs, list(range(20)), 8, None, 20, rng, controls)
        found.append(f)
        expected.append(e)
    assert 0.8 < np.mean(expected) < 0.95 and abs(np.mean(found) - np.mean(expected)) < 0.03


def test_a_replicates_control_is_the_other_replicates_never_its_own():
    """paired() on naive's committed A/A pool: naive#1 − naive's control is naive#2 − naive, cell by cell."""
    from bench.core.cells import load_cells
    from bench.core.runs import cell_value
    from bench.core.store import cell_folders

    folder = Path(__file__).resolve().parents[1] / "submissions" / "mini-v2" / "tiny-lr3e-4" / "naive"
    diffs, _, controls = coverage.paired(folder, "naive#1", "naive", "nts")
    value = {(c.method, c.seed, c.source): cell_value(c, "nts") for c in load_cells(cell_folders(folder))}
    assert sum(len(v) for v in controls.values()) == sum(len(v) for v in diffs.values()) == 120
    for source, by_seed in controls.items():
        for seed, x in by_seed.items():
            assert x == value["naive#2", seed, source] - value["naive", seed, source]
            assert diffs[source][seed] == value["naive#1", seed, source] - value["naive", seed, source]
