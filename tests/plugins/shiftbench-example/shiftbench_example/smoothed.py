"""Soft-label Bradley-Terry with the teacher's labels pulled towards 1/2: a one-line W2S method."""
from pydantic import Field

from methods.api import MethodParams, Step, soft_bt_loss
from methods.naive import Naive


class Smoothed(Naive):
    """
    name: smoothed
    idea: soft-label BT on teacher labels shrunk towards 1/2 (trust the weak teacher less)
    paper: none (an example for docs/adding-a-method.md)

    target = (1 - eps) * q + eps / 2; loss = soft-label BT on that target.
    """

    class Params(MethodParams):
        eps: float = Field(0.2, ge=0.0, le=1.0)

    def loss(self, step: Step):
        target = (1 - self.params.eps) * step.target + self.params.eps / 2
        loss = soft_bt_loss(step.r_a, step.r_b, target)
        return loss, {"bt_smoothed": loss.detach()}
