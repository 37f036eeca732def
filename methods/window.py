"""EleutherAI w2s's confidence-window loss: learn only the pairs the student is still unsure about."""
from __future__ import annotations

from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from pydantic import BaseModel, Field

from bench.core.errors import BenchError
from methods.api import MethodParams, Step
from methods.naive import Naive


def median_confidence(targets: list[float]) -> float:
    """The median over training pairs of the teacher's confidence |q - 1/2|; torch's median, which for
    an even count is the lower of the two middle values (the reference's ``confs.median()``)."""
    if not targets:
        raise BenchError("window: radius=median needs the training pairs' labels, and there are none")
    return torch.tensor(targets, dtype=torch.float64).sub(0.5).abs().median().item()


class Window(Naive):
    """
    name: window
    idea: BT only on the pairs where the student is still uncertain, |p - 1/2| < radius; confident pairs add 0
    paper: EleutherAI w2s (github.com/EleutherAI/w2s, w2s/loss.py: confidence_window_loss)

    On a pair, d = r_a - r_b, p = sigmoid(d), l = -[q log p + (1 - q) log (1 - p)] (naive's loss). Each step:

      u_i = 1[|p_i - 1/2| < radius]                   (not differentiated)
      loss = (1 / B) * sum_i u_i * l_i                 (B = every pair in the batch, confident ones included)

    So a confident pair counts in the mean as a zero, as in the reference, which sums the uncertain
    pairs' cross-entropy and divides by the batch size (its "max softmax < 0.5 + radius" is
    |p - 1/2| < radius). A batch where every pair is confident gives a loss of exactly 0 that still
    has a graph (zero gradients), never an empty mean's NaN.

    ``radius`` default 0.15, the reference's. ``radius=median``: the median over the training pairs of
    the teacher's confidence |q - 1/2|, set once before training from all of them, as the reference's
    "midweak" (w2s/sft.py) does.
    """

    class Params(MethodParams):
        radius: Literal["median"] | Annotated[float, Field(gt=0.0, le=0.5)] = 0.15

    def __init__(self, params: BaseModel | None = None):
        super().__init__(params)
        # a number now; "median" only once fit has seen the training labels
        self.radius: float | None = None if self.params.radius == "median" else self.params.radius

    def fit(self, student, examples, cfg, train):
        if self.params.radius == "median":
            self.radius = median_confidence([ex.target for ex in examples])
        log = super().fit(student, examples, cfg, train)
        return {**log, "window_radius": self.radius}

    def loss(self, step: Step):
        if self.radius is None:
            raise BenchError("window: radius=median is set from the training labels when training starts (fit); "
                             "give a number to call loss() on its own")
        d = step.r_a - step.r_b
        per_pair = F.binary_cross_entropy_with_logits(d, step.target, reduction="none")
        uncertain = ((torch.sigmoid(d.detach()) - 0.5).abs() < self.radius).to(per_pair.dtype)
        loss = (uncertain * per_pair).sum() / d.numel()
        return loss, {"window_bt": loss.detach(), "uncertain_rate": uncertain.mean(), "radius": self.radius}
