"""The auxiliary confidence loss of Burns et al. 2023, adapted to preference pairs."""
from __future__ import annotations

from typing import Literal

import torch
import torch.nn.functional as F
from pydantic import Field

from methods.api import MethodParams, Step
from methods.naive import Naive


def hardened_predictions(p: torch.Tensor, mean_q: torch.Tensor) -> torch.Tensor:
    """The student's own predictions P(a > b), hardened to 0/1 with a per-batch threshold such that
    the share of 1s matches the weak labels' batch mean: 1 where p >= quantile(p, 1 - mean_q).
    (The reference code's ``preds[:, 0] >= quantile(preds[:, 0], mean_weak[1])`` with class 0 = "a".)"""
    threshold = torch.quantile(p, 1.0 - mean_q)
    return (p >= threshold).to(p.dtype)


def mixing_weight(progress: float, alpha: float, warmup: float, schedule: str) -> float:
    """alpha(t): how much of the target is the student's own hardened prediction."""
    if schedule == "reference":  # openai/weak-to-strong logconf: t until warm-up ends, then 1 (0.05 -> 0.5 jump)
        return alpha * (1.0 if progress > warmup else progress)
    return alpha * (min(1.0, progress / warmup) if warmup > 0 else 1.0)


class Confidence(Naive):
    """
    name: confidence
    idea: W2S auxiliary confidence loss: blend the teacher's label with the student's own hardened prediction
    paper: Burns et al. 2023, "Weak-to-Strong Generalization" (openai/weak-to-strong, logconf_loss_fn)
    aliases: logconf

    On a pair the two logits are [d, 0] with d = r_a - r_b, so P(a > b) = p = sigmoid(d). Each step:

      h = 1[p >= quantile_batch(p, 1 - mean_batch(q))]     (detached; the share of 1s follows the weak labels)
      target = (1 - alpha_t) * q + alpha_t * h
      loss = -[target log p + (1 - target) log (1 - p)]     (batch mean)

    Schedule of alpha_t over training progress t in [0, 1):
    ``schedule=linear`` (default): alpha * min(1, t / warmup), a linear warm-up to alpha.
    ``schedule=reference``: the reference code exactly, alpha * (t if t <= warmup else 1); with its
    defaults (alpha 0.5, warmup 0.1) it climbs to 0.05 and then jumps to 0.5 at 10% of training.
    Defaults alpha = 0.5, warmup = 0.1 are the reference's.
    """

    class Params(MethodParams):
        alpha: float = Field(0.5, ge=0.0, le=1.0)
        warmup: float = Field(0.1, ge=0.0, le=1.0)
        schedule: Literal["linear", "reference"] = "linear"

    def loss(self, step: Step):
        d = step.r_a - step.r_b
        weight = mixing_weight(step.progress, self.params.alpha, self.params.warmup, self.params.schedule)
        with torch.no_grad():
            hard = hardened_predictions(torch.sigmoid(d), step.target.mean())
        target = (1.0 - weight) * step.target + weight * hard
        loss = F.binary_cross_entropy_with_logits(d, target)
        return loss, {"conf_loss": loss.detach(), "alpha_t": weight, "hard_positive_rate": hard.mean().detach()}
