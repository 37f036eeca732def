import math

import pytest

from bench.core.metrics import (
    accuracy,
    bon_accuracy,
    bon_cell_metrics,
    bon_credit,
    cell_metrics,
    shift_metrics,
)


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


def test_bon_credit_by_hand():
    # gold-best is candidate 0 (grade 2); the top score picks it
    assert bon_credit([0.9, 0.1, 0.5, 0.3], [2, 0, 1, 0]) == 1.0
    # the top score picks candidate 2, graded below the best: no credit, whatever its grade
    assert bon_credit([0.4, 0.1, 0.5, 0.3], [2, 0, 1, 0]) == 0.0
    # three tied at the top, one of them gold-best: a third
    assert bon_credit([0.7, 0.7, 0.7, 0.2], [1, 0, 0, 0]) == pytest.approx(1 / 3)
    # a tie at the top between two wrong candidates: nothing
    assert bon_credit([0.1, 0.7, 0.7, 0.2], [1, 0, 0, 0]) == 0.0
    # every score equal: the chance share, 1/N
    assert bon_credit([0.0] * 4, [1, 0, 0, 0]) == 0.25
    # two gold-best (where a rule allows it) tied at the top with one wrong: two thirds
    assert bon_credit([0.7, 0.7, 0.7, 0.2], [1, 1, 0, 0]) == pytest.approx(2 / 3)


def test_bon_accuracy_by_hand_and_ragged_sets():
    scores = [[0.9, 0.1, 0.5, 0.3], [0.7, 0.7, 0.1, 0.0], [0.0, 1.0, 0.5], [2.0, 1.0]]
    grades = [[1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0], [0, 1]]
    # credits 1, 1/2, 0, 0 -> 1.5 / 4
    assert bon_accuracy(scores, grades) == pytest.approx(37.5)


def test_bon_of_two_candidate_sets_is_pair_accuracy():
    chosen, rejected = [1.0, 0.5, 2.0, -1.0], [0.0, 0.5, 1.0, 0.0]
    as_sets = [[c, r] for c, r in zip(chosen, rejected)]
    assert bon_accuracy(as_sets, [[1, 0]] * 4) == accuracy(chosen, rejected) == pytest.approx(62.5)


def test_bon_does_not_depend_on_candidate_order():
    scores, grades = [0.3, 0.8, 0.8, 0.1, 0.5], [0, 1, 0, 0, 0]
    for shift in range(5):
        assert bon_credit(scores[shift:] + scores[:shift], grades[shift:] + grades[:shift]) == 0.5


def test_bon_rejects_bad_sets():
    with pytest.raises(ValueError, match="two or more"):
        bon_credit([1.0], [1])
    with pytest.raises(ValueError, match="two or more"):
        bon_credit([1.0, 2.0], [1, 0, 0])
    with pytest.raises(ValueError, match="finite"):
        bon_credit([float("nan"), 0.0], [1, 0])
    with pytest.raises(ValueError, match="non-empty"):
        bon_accuracy([], [])
    with pytest.raises(ValueError, match="same"):
        bon_accuracy([[1.0, 0.0]], [[1, 0], [1, 0]])


def test_bon_cell_metrics_by_hand():
    bon = {"s": {"teacher": 60.0, "student": 55.0}, "t1": {"teacher": 40.0, "student": 52.0},
           "t2": {"teacher": 45.0, "student": 40.0}}
    m = bon_cell_metrics(bon, "s")
    # ID loss of 5 comes off each OOD gain
    assert m["t1"] == {"bon_gain_id": -5.0, "bon_gain_ood": 12.0, "bon_nts": 7.0}
    assert m["t2"] == {"bon_gain_id": -5.0, "bon_gain_ood": -5.0, "bon_nts": -10.0}
    # a student that gains in distribution loses nothing off its OOD gain
    gain = bon_cell_metrics({"s": {"teacher": 50.0, "student": 58.0}, "t": {"teacher": 30.0, "student": 33.0}}, "s")
    assert gain == {"t": {"bon_gain_id": 8.0, "bon_gain_ood": 3.0, "bon_nts": 3.0}}
