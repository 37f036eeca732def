"""EleutherAI w2s's "entropy" loss: the confidence loss with the student's soft, unhardened prediction."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field

from methods.api import MethodParams, Step
from methods.confidence import mixing_weight
from methods.naive import Naive


class Entropy(Naive):
    """
    name: entropy
    idea: the confidence loss without hardening: blend q with the student's own soft prediction (detached)
    paper: EleutherAI w2s (github.com/EleutherAI/w2s, w2s/loss.py: log_confidence_loss with harden=False)

    On a pair, d = r_a - r_b and p = sigmoid(d) = P(a > b). Each step:

      alpha_t = alpha * min(1, t / warmup)                  (t = training progress in [0, 1))
      target = (1 - alpha_t) * q + alpha_t * stopgrad(p)
      loss = -[target log p + (1 - target) log (1 - p)]     (batch mean)

    What we followed: w2s/sft.py calls log_confidence_loss(harden=False) for the loss named "entropy";
    there target = labels * (1 - coef) + softmax(logits).detach() * coef, coef = aux_coef *
    min(1, step / warmup_steps), cross-entropy with that target, batch mean. Defaults: alpha = 0.5, its
    logconf_weight. Its warm-up is 100 optimizer steps; here it is a fraction of training, 0.1 as for
    ``confidence``, so that it scales with the run. Its balance_batch option (off by default) is not offered.

    What it amounts to: the student's part of the target is detached, so the gradient in d is
    p - target = (1 - alpha_t)(p - q), naive's gradient scaled by (1 - alpha_t); the loss value is
    (1 - alpha_t) BT(q) + alpha_t H(p), H the entropy of the student's prediction (hence the name), but
    H is not differentiated. Under AdamW a constant gradient scale hardly changes the update, so expect
    numbers close to naive's. This is the reference's definition, kept as it is.
    """

    class Params(MethodParams):
        alpha: float = Field(0.5, ge=0.0, le=1.0)
        warmup: float = Field(0.1, ge=0.0, le=1.0)

    def loss(self, step: Step):
        d = step.r_a - step.r_b
        weight = mixing_weight(step.progress, self.params.alpha, self.params.warmup, "linear")
        target = (1.0 - weight) * step.target + weight * torch.sigmoid(d).detach()
        loss = F.binary_cross_entropy_with_logits(d, target)
        return loss, {"entropy_loss": loss.detach(), "alpha_t": weight}
