"""The unbiased loss of robust DPO (Chowdhury et al. 2024): BT corrected for a known label-flip rate."""
from __future__ import annotations

from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from pydantic import BaseModel, Field

from bench.core.errors import BenchError
from methods.api import LabelInputs, Labels, MethodParams, Step
from methods.naive import Naive


class Unbiased(Naive):
    """
    name: unbiased
    idea: the teacher's hard labels as noisy labels with flip rate eps (its held-out error): rDPO's unbiased BT loss
    paper: Chowdhury et al. 2024, "Provably Robust DPO: Aligning Language Models with Noisy Feedback" (arXiv 2403.00409)
    aliases: rdpo

    rDPO treats each preference label as the true one flipped with a known probability eps and corrects
    the log-sigmoid loss for it. Here the noisy labels are the teacher's hard labels y_i = 1[q_i > 1/2]
    (1/2 on a tie) and eps is the teacher's error rate, so the label stage (bench/stages/label_stage.py) gives
    the student y_i and finds eps once per cell. With d = r_a - r_b and
    l(d, y) = -[y log sigmoid(d) + (1 - y) log sigmoid(-d)]:

      loss = mean_i [(1 - eps) l(d_i, y_i) - eps l(d_i, 1 - y_i)] / (1 - 2 eps)

    the paper's loss (its eq. for the unbiased estimator, with l the DPO log-sigmoid). It equals BT
    with the target (y - eps) / (1 - 2 eps), which lies outside [0, 1]: a pair's loss falls without
    bound as its margin grows the teacher's way, as in the paper. The soft labels q are not used as
    targets: q is already the teacher's expected label, and correcting it again for flips would count
    the teacher's uncertainty twice.

    ``eps`` default ``auto``: the teacher's error rate on gold-labelled pairs it was not trained on
    (``LabelInputs.teacher_error``: the same teacher trained on half A less about 20% of its prompt groups,
    scored on those, so on prompts it never saw, as half B's are),
    recorded in the cell's label stage; ``eps=<float>`` in [0, 0.5) sets it by hand. A teacher whose
    held-out error is 1/2 or more carries no signal the correction can use: the run stops and says so.
    """

    class Params(MethodParams):
        eps: Literal["auto"] | Annotated[float, Field(ge=0.0, lt=0.5)] = "auto"

    def __init__(self, params: BaseModel | None = None):
        super().__init__(params)
        self.eps: float | None = None if self.params.eps == "auto" else self.params.eps

    def relabel(self, inputs: LabelInputs) -> Labels:
        eps = inputs.teacher_error() if self.params.eps == "auto" else self.params.eps
        if eps >= 0.5:
            raise BenchError(f"unbiased: the teacher's held-out error is {eps:.3f}, at least 1/2, so its labels "
                             f"are no better than chance and the flip correction divides by 1 - 2 eps <= 0. "
                             f"The run stops at this cell. Give a flip rate by hand for every cell (--param eps=0.3), or a "
                             f"stronger teacher")
        hard = [1.0 if q > 0.5 else 0.0 if q < 0.5 else 0.5 for q in inputs.soft_labels]
        return Labels(hard, info={"eps": eps, "eps_from": "teacher held-out error" if self.params.eps == "auto"
                                  else "param"})

    def relabelled(self, info: dict) -> None:
        self.eps = float(info["eps"])

    def loss(self, step: Step):
        if self.eps is None:
            raise BenchError("unbiased with eps=auto takes its flip rate from its label stage (bench run does it); "
                             "outside a run give it: --param eps=0.2")
        d, y = step.r_a - step.r_b, step.target
        eps = torch.tensor(self.eps, dtype=d.dtype, device=d.device)
        as_labelled = F.binary_cross_entropy_with_logits(d, y, reduction="none")
        flipped = F.binary_cross_entropy_with_logits(d, 1.0 - y, reduction="none")
        loss = ((1.0 - eps) * as_labelled - eps * flipped).mean() / (1.0 - 2.0 * eps)
        return loss, {"unbiased": loss.detach(), "eps": eps}
