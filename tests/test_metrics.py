import math

import pytest

from bench.metrics import accuracy, cell_metrics, shift_metrics


def test_accuracy_counts_wins_and_half_ties():
    # wins: 1st, 3rd; tie: 2nd; loss: 4th  -> (2 + 0.5) / 4
    assert accuracy([1.0, 0.5, 2.0, -1.0], [0.0, 0.5, 1.0, 0.0]) == pytest.approx(62.5)
    assert accuracy([0.0] * 3, [0.0] * 3) == 50.0


def test_accuracy_rejects_mismatched_or_empty():
    with pytest.raises(ValueError):
        accuracy([1.0], [1.0, 2.0])
    with pytest.raises(ValueError):
        accuracy([], [])


def test_shift_metrics_by_hand():
    # student gains 5 ID, 2 OOD: no ID loss, NTS = AOG
    assert shift_metrics(80.0, 85.0, 60.0, 62.0) == {"wrg": 5.0, "aog": 2.0, "nts": 2.0}
    # student loses 3 ID and gains 4 OOD: NTS = 4 - 3
    m = shift_metrics(80.0, 77.0, 60.0, 64.0)
    assert m["wrg"] == -3.0 and m["aog"] == 4.0 and m["nts"] == 1.0


def test_cell_metrics_per_target():
    acc = {"s": {"teacher": 70.0, "student": 75.0}, "t1": {"teacher": 60.0, "student": 55.0},
           "t2": {"teacher": 50.0, "student": 58.0}}
    m = cell_metrics(acc, "s")
    assert set(m) == {"t1", "t2"}
    assert m["t1"] == {"wrg": 5.0, "aog": -5.0, "nts": -5.0}
    assert math.isclose(m["t2"]["nts"], 8.0)
