"""An ensemble of weak teachers: the student learns the mean of K teachers' soft labels."""
from __future__ import annotations

from pydantic import Field

from methods.api import LabelInputs, Labels, MethodParams
from methods.naive import Naive


class TeacherEnsemble(Naive):
    """
    name: teacher-ensemble
    idea: soft-label BT on the mean soft label of K weak teachers trained on half A with different seeds
    paper: none (the weak-ensemble baseline; RAVEN, Jeon et al. 2025, arXiv 2510.21332, compares against one)
    aliases: ensemble

    Label stage (bench/stages/label_stage.py): teachers k = 0 .. K-1, each trained on half A with gold
    labels like the cell's teacher but with seeds of its own (k = 0 is the cell's teacher, reused from
    the cache; the others are teacher-stage entries of their own, keyed by their member index, so every
    method and rerun that asks for them reuses them). On half-B pair i,

      q_i = (1 / K) * sum_k q_i^(k),   q_i^(k) = sigmoid(r_k(a_i) - r_k(b_i)),

    the mean of the teachers' probabilities, and the student trains on it with naive's loss. (RAVEN's
    uniform ensemble averages the teachers' logits instead: ``raven`` with ``lr=0``.) ``k`` = K,
    default 3; the extra teachers cost K - 1 teacher trainings once per cell.
    """

    class Params(MethodParams):
        k: int = Field(3, ge=2, le=16)

    def relabel(self, inputs: LabelInputs) -> Labels:
        teachers = inputs.teachers(self.params.k)
        return Labels([sum(labels) / len(labels) for labels in zip(*teachers)], info={"teachers_k": self.params.k})
