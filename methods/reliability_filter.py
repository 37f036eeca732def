"""Reliability filtering: the student does not see the weak labels that are least likely to be right."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from methods.api import LabelInputs, Labels, MethodParams, drop_share
from methods.naive import Naive


class ReliabilityFilter(Naive):
    """
    name: reliability-filter
    idea: drop the least reliable share of weak labels (low teacher confidence, or disagreement across K teachers)
    paper: Guo & Yang 2024, "Improving Weak-to-Strong Generalization with Reliability-Aware Alignment" (arXiv 2406.19032)

    Label stage (bench/stages/label_stage.py): each half-B pair gets an unreliability score, and the
    floor(share * n) pairs with the highest are dropped (ties: the earlier pair first); the student
    trains on the others with the cell's teacher's labels q_i and naive's loss.

      by=confidence (default):  unreliability_i = -|q_i - 1/2|, the teacher's own confidence
      by=disagreement:          unreliability_i = (1/K) * sum_k (q_i^(k) - mean_k q_i^(k))^2, the variance
                                of K teachers' labels (the cell's teacher and K - 1 more, trained on half A
                                with seeds of their own: the teacher-ensemble's teachers, reused)

    Guo & Yang query the weak supervisor for several answers and filter the data whose answers are
    uncertain (or re-weight the reliable); here the several answers are the K teachers' (or, with
    ``by=confidence``, the one teacher's probability). ``share`` default 0.1; ``k`` (K, default 3) is
    used only by ``by=disagreement``.
    """

    class Params(MethodParams):
        share: float = Field(0.1, ge=0.0, le=0.5)
        by: Literal["confidence", "disagreement"] = "confidence"
        k: int = Field(3, ge=2, le=16)

    def relabel(self, inputs: LabelInputs) -> Labels:
        q = inputs.soft_labels
        if self.params.by == "confidence":
            unreliability = [-abs(qi - 0.5) for qi in q]
        else:
            unreliability = [sum((x - sum(labels) / len(labels)) ** 2 for x in labels) / len(labels)
                             for labels in zip(*inputs.teachers(self.params.k))]
        kept = drop_share(unreliability, self.params.share)
        return Labels([q[i] for i in kept], kept=kept, info={"by": self.params.by, "dropped": len(q) - len(kept)})
