"""A linear probe: the reward head alone learns the teacher's labels on the frozen pretrained backbone."""
from __future__ import annotations

import dataclasses

from pydantic import Field

from methods.api import MethodParams
from methods.lp_ft import train_head_only
from methods.naive import Naive


class Probe(Naive):
    """
    name: probe
    idea: linear probe: only the reward head trains, on frozen pretrained features (zero backbone drift)
    paper: Kumar et al. 2022, "Fine-Tuning can Distort Pretrained Features and Underperform Out-of-Distribution"
    aliases: linear-probe

    LP-FT's LP phase alone. The backbone stays exactly pretrained: the zero-drift end of the axis along
    which ANCHOR, l2-sp and wise-ft hold the student near its start, naive being the other end.
    loss = naive's soft-label BT, -[q log s(d) + (1 - q) log s(-d)], d = r_a - r_b; only the head's
    parameters are in the optimizer (methods.lp_ft.train_head_only, the mechanism of lp-ft's first
    phase). ``lr`` and ``epochs`` replace the pair's student settings; defaults 1e-3 and 1 are lp-ft's
    lp_lr and lp_epochs, so that ``probe`` is exactly where lp-ft's fine-tuning starts (the pair's
    fine-tuning rate is sized for the whole model and barely moves a fresh head).
    """

    class Params(MethodParams):
        lr: float = Field(1e-3, gt=0.0, allow_inf_nan=False)
        epochs: int = Field(1, ge=1)

    def fit(self, student, examples, cfg, train):
        return train_head_only(student, examples, dataclasses.replace(cfg, learning_rate=self.params.lr,
                                                                      epochs=self.params.epochs), train)
