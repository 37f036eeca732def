"""Accuracies and the weak-to-strong shift metrics, in accuracy points (0-100).

A pair is correct when r(chosen) > r(rejected); an exact tie counts one half, so a model that
scores every response the same gets 50 and ties never favour either side.

For one source S, target T and one seed:
  WRG = Acc_student(S) - Acc_teacher(S)                 (gain in distribution)
  AOG = Acc_student(T) - Acc_teacher(T)                 (gain out of distribution)
  NTS = AOG - max(0, Acc_teacher(S) - Acc_student(S))   (OOD gain, less any ID loss)
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
