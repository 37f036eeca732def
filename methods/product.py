"""The product loss of Burns et al. 2023: a target that multiplies the student's belief by the teacher's."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field

from methods.api import MethodParams, Step
from methods.naive import Naive


class Product(Naive):
    """
    name: product
    idea: target proportional to student^beta * teacher^alpha over the two outcomes (detached), normalised
    paper: Burns et al. 2023, "Weak-to-Strong Generalization" (openai/weak-to-strong, product_loss_fn)

    On a pair, d = r_a - r_b and p = sigmoid(d) = P(a > b). Each step:

      t = p^beta q^alpha / (p^beta q^alpha + (1 - p)^beta (1 - q)^alpha)    (detached)
        = sigmoid(beta * d + alpha * logit(q))
      loss = -[t log p + (1 - t) log (1 - p)]                               (batch mean)

    The second form is the first divided through by its second term (log p - log(1 - p) = d); it is
    what is computed, because it has no 0/0 where p saturates in float. With alpha = 0 the teacher
    drops out (q^0 = 1, as torch.pow gives the reference; xlogy keeps 0 * log 0 at 0).

    What we followed: product_loss_fn.__call__: target = softmax(logits)^beta * labels^alpha,
    normalised over the classes, detached, cross-entropy, batch mean. Defaults alpha = beta = 1, the
    reference's. Its warmup_frac is stored but never used in its __call__, so there is no warm-up here either.
    """

    class Params(MethodParams):
        alpha: float = Field(1.0, ge=0.0, allow_inf_nan=False)   # weight of the weak teacher
        beta: float = Field(1.0, ge=0.0, allow_inf_nan=False)    # weight of the strong student

    def loss(self, step: Step):
        d = step.r_a - step.r_b
        q, alpha = step.target, torch.tensor(self.params.alpha, dtype=step.target.dtype, device=step.target.device)
        teacher_logit = torch.xlogy(alpha, q) - torch.xlogy(alpha, 1.0 - q)   # alpha * logit(q), 0 when alpha = 0
        target = torch.sigmoid(self.params.beta * d.detach() + teacher_logit)
        loss = F.binary_cross_entropy_with_logits(d, target)
        return loss, {"product_loss": loss.detach(), "target_mean": target.mean()}
