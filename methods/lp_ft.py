"""LP-FT: fit the reward head on frozen pretrained features first, then fine-tune everything."""
from __future__ import annotations

import dataclasses

from pydantic import Field

from methods.api import MethodParams, head_parameter_names
from methods.naive import Naive


class LPFT(Naive):
    """
    name: lp-ft
    idea: linear probe (head only, backbone frozen) then full fine-tuning, so the random head does not distort features
    paper: Kumar et al. 2022, "Fine-Tuning can Distort Pretrained Features and Underperform Out-of-Distribution"
    aliases: lpft

    Phase 1 (LP): only the reward head (the parameters outside ``model.base_model``) trains, for
    ``lp_epochs`` epochs at learning rate ``lp_lr``, on the same soft labels and loss as ``naive``.
    Phase 2 (FT): every parameter the model pair trains, with the pair's student settings, starting
    from the probed head. Both phases use a fresh optimizer and the pair's warm-up/decay schedule.
    The FT phase costs what ``naive`` costs; LP adds forward passes with a cheap backward.
    """

    class Params(MethodParams):
        lp_epochs: int = Field(1, ge=1)
        lp_lr: float = Field(1e-3, gt=0.0, allow_inf_nan=False)

    def fit(self, student, examples, cfg, train):
        probe = train_head_only(student, examples, dataclasses.replace(cfg, learning_rate=self.params.lp_lr,
                                                                       epochs=self.params.lp_epochs), train)
        return {**train(student, examples, cfg), "linear_probe": probe}


def train_head_only(student, examples, cfg, train) -> dict:
    """A linear probe: ``train(student, examples, cfg)`` with only the reward head trainable (the loop's
    optimizer takes the parameters that require grad), then every parameter's requires_grad as it was,
    so that a phase after it trains what the model pair trains. Used by ``lp-ft`` and ``probe``."""
    head = head_parameter_names(student)
    trainable = {name: p.requires_grad for name, p in student.named_parameters()}
    for name, p in student.named_parameters():
        p.requires_grad_(name in head)
    log = train(student, examples, cfg)
    for name, p in student.named_parameters():
        p.requires_grad_(trainable[name])
    return log
