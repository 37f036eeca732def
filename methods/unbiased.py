"""The unbiased loss of robust DPO (Chowdhury et al. 2024): BT corrected for a known label-flip rate."""
from __future__ import annotations

from typing import Annotated, Literal

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, Field

from methods.base import Step
from methods.naive import Naive


class Unbiased(Naive):
    """
    name: unbiased
    idea: rDPO's unbiased loss: BT on the teacher's label minus BT on the flipped label, rescaled, for a flip rate eps
    paper: Chowdhury et al. 2024, "Provably Robust DPO: Aligning Language Models with Noisy Feedback" (arXiv 2403.00409)

    With d = r_a - r_b and l(d, y) = -[y log sigmoid(d) + (1 - y) log sigmoid(-d)], the soft-label BT
    cross-entropy (the paper's l is the same log-sigmoid loss on a hard label):

      loss = mean_i [(1 - eps) l(d_i, q_i) - eps l(d_i, 1 - q_i)] / (1 - 2 eps)

    l is linear in its label, so this is the paper's loss in expectation over a hard label drawn from q.
    It equals BT with the target (q - eps) / (1 - 2 eps), q "un-smoothed": where q < eps or q > 1 - eps
    that target leaves [0, 1], and the loss of that pair falls without bound as its margin grows the
    teacher's way, as the paper's loss does on hard labels.

    ``eps`` default ``auto``: the teacher's expected flip rate on these pairs by its own soft labels,
    mean over the batch of min(q, 1 - q) (if q is calibrated, the teacher's hard label is wrong with
    probability min(q, 1 - q)). The issue asked for the teacher's held-out error on half A, which needs
    a label stage that does not exist yet; ``eps=<float>`` sets the rate by hand, in [0, 0.5).
    ``auto`` reaches 1/2 only on a batch whose every q is exactly 1/2; there l(d, q) = l(d, 1 - q) and
    the loss is l(d, q) for every eps < 1/2, which is what eps = 0 gives, so that batch uses 0 (no 0/0,
    and no wait for the device to check). A batch of labels all near 1/2 gives an eps near 1/2 and a
    large 1 / (1 - 2 eps): small batches make ``auto`` noisy.
    """

    class Params(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        eps: Literal["auto"] | Annotated[float, Field(ge=0.0, lt=0.5)] = "auto"

    def loss(self, step: Step):
        d, q = step.r_a - step.r_b, step.target
        if self.params.eps == "auto":
            eps = torch.minimum(q, 1.0 - q).mean()
            eps = torch.where(eps < 0.5, eps, torch.zeros_like(eps))   # every q = 1/2: any eps gives l(d, q)
        else:
            eps = torch.tensor(self.params.eps, dtype=q.dtype, device=q.device)
        as_labelled = F.binary_cross_entropy_with_logits(d, q, reduction="none")
        flipped = F.binary_cross_entropy_with_logits(d, 1.0 - q, reduction="none")
        loss = ((1.0 - eps) * as_labelled - eps * flipped).mean() / (1.0 - 2.0 * eps)
        return loss, {"unbiased": loss.detach(), "eps": eps.detach()}
