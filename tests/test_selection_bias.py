"""benchmarks/selection_bias.py: a pick decided on its choosing seeds against one decided on fresh seeds."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import selection_bias  # noqa: E402


def test_fresh_seeds_leave_the_luck_that_chose_a_method_out():
    """Method 1's first three seeds are lucky (+6 points a run), its later runs no better than naive: counting
    the lucky seeds decides it better; starting after them does not. Method 0, the worse, is not picked."""
    rng = np.random.default_rng(0)
    draws = rng.standard_normal((2, 3 + 20, 6)) * 0.5
    draws[1, :3] += 6.0
    got = selection_bias.picked(draws, top=1, chosen=3, looks=(3, 20))
    (reused_better, reused_seeds), = got["reused"]
    (fresh_better, fresh_seeds), = got["fresh"]
    assert reused_better and not fresh_better
    assert reused_seeds == 0 and 3 <= fresh_seeds < 20   # decided at the first look; fresh ran seeds until ±1


def test_it_prints_both_ways(capsys):
    assert selection_bias.main(["--trials", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("3 zoos of 20 methods no better than naive; the best 3 by NTS at 3 seeds")
    assert [line.split()[0] for line in lines[2:]] == ["reused", "fresh"]
