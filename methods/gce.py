"""Generalised cross-entropy (Zhang & Sabuncu 2018) on the teacher's soft labels: a noise-robust BT."""
from __future__ import annotations

import torch.nn.functional as F
from pydantic import Field

from methods.api import MethodParams, Step
from methods.naive import Naive


class GCE(Naive):
    """
    name: gce
    idea: generalised cross-entropy on the soft label: between BT and MAE, robust to the teacher's wrong labels
    paper: Zhang & Sabuncu 2018, "Generalized Cross Entropy Loss for Training Deep Neural Networks with Noisy Labels"

    The paper's L_k(f(x), y) = (1 - f_y(x)^k) / k, taken in expectation over the outcome under the soft
    label: with d = r_a - r_b, p = sigmoid(d) and k = ``exponent``,

      loss = mean_i [ q_i (1 - p_i^k) / k + (1 - q_i) (1 - (1 - p_i)^k) / k ]

    k -> 0 gives naive's cross-entropy, k = 1 the mean absolute error q (1 - p) + (1 - q) p. Its gradient
    is the cross-entropy's times p_y^k, so a pair the student confidently gets "wrong" by the teacher's
    label (small p_y) pulls less than under BT. Default k = 0.7, the paper's. Its truncated variant
    (L_trunc, with pruning) is not included. p^k is computed as exp(k log sigmoid(d)), which stays finite
    where p rounds to 0 or 1. Named ``exponent``, the paper's q, not to clash with the soft label q.
    """

    class Params(MethodParams):
        exponent: float = Field(0.7, gt=0.0, le=1.0)

    def loss(self, step: Step):
        d, q, k = step.r_a - step.r_b, step.target, self.params.exponent
        a_power = (k * F.logsigmoid(d)).exp()       # p^k
        b_power = (k * F.logsigmoid(-d)).exp()      # (1 - p)^k
        loss = (q * (1.0 - a_power) / k + (1.0 - q) * (1.0 - b_power) / k).mean()
        return loss, {"gce": loss.detach()}
