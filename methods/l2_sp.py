"""L2-SP: an L2 pull of the backbone weights towards their pretrained values."""
from __future__ import annotations

import torch
from pydantic import Field

from methods.api import MethodParams, Step, backbone_parameters, head_parameter_names
from methods.naive import Naive


class L2SP(Naive):
    """
    name: l2-sp
    idea: BT + alpha/2 * ||w - w_pretrained||^2 over the backbone (+ beta/2 * ||w_head||^2)
    paper: Li et al. 2018, "Explicit Inductive Bias for Transfer Learning with Convolutional Networks"
    aliases: l2sp

    loss = BT(q) + alpha/2 * sum over trainable backbone weights (w - w0)^2 + beta/2 * sum over head weights w^2,
    w0 the pretrained weights (a detached copy taken before the first step). Sums, not means, as in the
    paper, so alpha's scale depends on the model's size; a model pair may set its own default.
    """

    class Params(MethodParams):
        alpha: float = Field(0.01, ge=0.0, allow_inf_nan=False)
        beta: float = Field(0.0, ge=0.0, allow_inf_nan=False)

    def setup(self, student):
        self.backbone = {name: p for name, p in backbone_parameters(student).items() if p.requires_grad}
        self.start = {name: p.detach().clone() for name, p in self.backbone.items()}
        head = head_parameter_names(student)
        self.head = [p for name, p in student.named_parameters() if name in head]

    def loss(self, step: Step):
        bt, logs = super().loss(step)
        drift = torch.stack([((p - self.start[name]) ** 2).sum() for name, p in self.backbone.items()]).sum()
        head = torch.stack([(p ** 2).sum() for p in self.head]).sum()
        total = bt + 0.5 * self.params.alpha * drift + 0.5 * self.params.beta * head
        return total, {**logs, "sq_drift": drift.detach(), "head_sq_norm": head.detach()}

    def finish(self, student):
        del self.backbone, self.start, self.head
