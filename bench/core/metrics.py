"""Accuracies and the weak-to-strong shift metrics, in accuracy points (0-100).

A pair is correct when r(chosen) > r(rejected); an exact tie counts one half, so a model that
scores every response the same gets 50 and ties never favour either side.

For one source S, target T and one seed:
  WRG = Acc_student(S) - Acc_teacher(S)                 (gain in distribution)
  AOG = Acc_student(T) - Acc_teacher(T)                 (gain out of distribution)
  NTS = AOG - max(0, Acc_teacher(S) - Acc_student(S))   (OOD gain, less any ID loss)

Best-of-N (bench/core/candidates.py): a candidate set is a prompt with N responses r_1..r_N and gold
grades g_1..g_N. A model selects the response it scores highest; with T the candidates tied at the
top score and B the gold-best ones (the top grade), a set earns |T ∩ B| / |T|: 1 when the single
top-scored candidate is gold-best, a share when scores tie at the top (two candidates tied, one of
them gold-best, earn 1/2: the pair rule's half, and a set of two candidates is scored exactly as a
pair), 0 otherwise. Grades below the top never count.
  BoN = 100 * mean over the eval set's candidate sets of |T ∩ B| / |T|
  BoN gain ID  = BoN_student(S) - BoN_teacher(S)
  BoN gain OOD = BoN_student(T) - BoN_teacher(T)
  BoN NTS      = BoN gain OOD - max(0, BoN_teacher(S) - BoN_student(S))
The three are WRG, AOG and NTS of BoN accuracies in place of pair accuracies (``bon_cell_metrics``).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np


def accuracy(r_chosen: Sequence[float], r_rejected: Sequence[float]) -> float:
    chosen = np.asarray(r_chosen, dtype=np.float64)
    rejected = np.asarray(r_rejected, dtype=np.float64)
    if chosen.shape != rejected.shape or chosen.size == 0:
        raise ValueError(f"need two equal, non-empty score arrays, got {chosen.shape} and {rejected.shape}")
    wins = (chosen > rejected).sum() + 0.5 * (chosen == rejected).sum()
    return float(100.0 * wins / chosen.size)


def shift_metrics(teacher_id: float, student_id: float, teacher_ood: float, student_ood: float) -> dict[str, float]:
    wrg = student_id - teacher_id
    aog = student_ood - teacher_ood
    return {"wrg": wrg, "aog": aog, "nts": aog - max(0.0, teacher_id - student_id)}


def cell_metrics(accuracies: dict[str, dict[str, float]], source: str) -> dict[str, dict[str, float]]:
    """``{target: {wrg, aog, nts}}`` for every target, from ``{eval_set: {"teacher": acc, "student": acc}}``."""
    own = accuracies[source]
    return {
        target: shift_metrics(own["teacher"], own["student"], acc["teacher"], acc["student"])
        for target, acc in accuracies.items() if target != source
    }


def bon_credit(scores: Sequence[float], grades: Sequence[float]) -> float:
    """One candidate set's credit, |T ∩ B| / |T| (module docstring): T the top-scored candidates, B the gold-best."""
    score = np.asarray(scores, dtype=np.float64)
    grade = np.asarray(grades, dtype=np.float64)
    if score.ndim != 1 or score.shape != grade.shape or score.size < 2:
        raise ValueError(f"a candidate set needs two or more scores with one grade each, got {score.shape} scores "
                         f"and {grade.shape} grades")
    if not (np.isfinite(score).all() and np.isfinite(grade).all()):
        raise ValueError("candidate scores and grades must be finite (a NaN has no rank)")
    top = score == score.max()
    return float((top & (grade == grade.max())).sum() / top.sum())


def bon_credits(scores: Sequence[float], grades: Sequence[float], sizes: Sequence[int]) -> np.ndarray:
    """``bon_credit`` of each of ``len(sizes)`` candidate sets laid end to end, as one array: set i is the next
    ``sizes[i]`` entries of ``scores`` and ``grades``. With s_max and g_max a set's top score and top grade,
    its credit is #{j: s_j = s_max and g_j = g_max} / #{j: s_j = s_max}, the very division bon_credit does
    (two whole counts, one rounding), so each credit is bon_credit's to the bit. A set that bon_credit
    refuses (fewer than two candidates, a number not finite) raises its error, for the first such set."""
    score = np.asarray(scores, dtype=np.float64)
    grade = np.asarray(grades, dtype=np.float64)
    size = np.asarray(sizes, dtype=np.int64)
    if score.ndim != 1 or score.shape != grade.shape or size.ndim != 1 or (size < 0).any() or size.sum() != score.size:
        raise ValueError(f"need scores and grades laid end to end in sets of the given sizes, got {score.shape} "
                         f"scores, {grade.shape} grades and sizes adding up to {size.sum()}")
    if size.size == 0:
        return np.zeros(0)
    if (size < 2).any() or not (np.isfinite(score).all() and np.isfinite(grade).all()):
        ends = np.cumsum(size)[:-1]
        for one_score, one_grade in zip(np.split(score, ends), np.split(grade, ends)):
            bon_credit(one_score, one_grade)   # raises for the first set it refuses
    starts = np.cumsum(size) - size
    of_set = np.repeat(np.arange(size.size), size)
    top = score == np.maximum.reduceat(score, starts)[of_set]
    best = grade == np.maximum.reduceat(grade, starts)[of_set]
    return np.add.reduceat(top & best, starts, dtype=np.int64) / np.add.reduceat(top, starts, dtype=np.int64)


def bon_accuracy_of_credits(credits: np.ndarray) -> float:
    """BoN = 100 * mean of the sets' credits, as ``bon_accuracy`` takes it: the credits added one by one in set
    order with Python's sum (np.sum adds pairwise, and the last bit of a float sum depends on the order)."""
    values = np.asarray(credits, dtype=np.float64).tolist()
    if not values:
        raise ValueError("need the credits of a non-empty list of candidate sets, got none")
    return float(100.0 * sum(values) / len(values))


def bon_accuracy(scores: Sequence[Sequence[float]], grades: Sequence[Sequence[float]]) -> float:
    """BoN accuracy of an eval set; ``scores[i][j]``, ``grades[i][j]``: candidate j of set i (N may differ by set).
    The sets' credits come from one ``bon_credits`` over all of them; sets that are not each a 1-D row of scores
    with a grade each are left to ``bon_credit``, set by set, which says what is wrong with the first."""
    if len(scores) != len(grades) or len(scores) == 0:
        raise ValueError(f"need scores and grades for the same, non-empty list of candidate sets, got {len(scores)} "
                         f"and {len(grades)}")
    try:
        score = [np.asarray(s, dtype=np.float64) for s in scores]
        grade = [np.asarray(g, dtype=np.float64) for g in grades]
        laid_out = all(s.ndim == 1 and s.shape == g.shape for s, g in zip(score, grade))
    except Exception:   # bon_credit converts them the same way: it raises the same, in set order
        laid_out = False
    if not laid_out:
        return float(100.0 * sum(bon_credit(s, g) for s, g in zip(scores, grades)) / len(scores))
    return bon_accuracy_of_credits(bon_credits(np.concatenate(score), np.concatenate(grade), [s.size for s in score]))


BON_METRICS = {"wrg": "bon_gain_id", "aog": "bon_gain_ood", "nts": "bon_nts"}


def bon_cell_metrics(bon_accuracies: dict[str, dict[str, float]], source: str) -> dict[str, dict[str, float]]:
    """``{target: {bon_gain_id, bon_gain_ood, bon_nts}}`` from ``{eval_set: {"teacher": bon, "student": bon}}``:
    ``cell_metrics`` of BoN accuracies, renamed."""
    return {target: {BON_METRICS[k]: v for k, v in m.items()}
            for target, m in cell_metrics(bon_accuracies, source).items()}
