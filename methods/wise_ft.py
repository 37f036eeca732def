"""WiSE-FT: average the fine-tuned and the pretrained backbone weights."""
from __future__ import annotations

import torch
from pydantic import Field

from methods.api import MethodParams, backbone_parameters
from methods.naive import Naive


class WiseFT(Naive):
    """
    name: wise-ft
    idea: fine-tune as naive, then interpolate the backbone weights back towards the pretrained ones
    paper: Wortsman et al. 2022, "Robust fine-tuning of zero-shot models"
    aliases: wiseft

    After training: theta = (1 - alpha) * theta_pretrained + alpha * theta_finetuned for every
    backbone parameter (alpha = 1 is naive, 0 the pretrained backbone). The reward head has no
    pretrained counterpart (it starts random), so it keeps its fine-tuned weights. Training costs
    what naive costs, plus one copy of the backbone weights held during training.
    """

    class Params(MethodParams):
        alpha: float = Field(0.5, ge=0.0, le=1.0)

    def setup(self, student):
        self.pretrained = {name: p.detach().clone() for name, p in backbone_parameters(student).items()
                           if p.requires_grad}  # frozen weights stay pretrained anyway

    @torch.no_grad()
    def finish(self, student):
        for name, p in backbone_parameters(student).items():
            if name in self.pretrained:
                p.lerp_(self.pretrained[name], 1.0 - self.params.alpha)  # p + (1 - alpha) * (p0 - p)
        del self.pretrained
