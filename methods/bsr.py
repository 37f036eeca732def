"""BSR (Hong et al. 2025): Bradley-Terry plus a pull of each batch's reward sum towards zero."""
from __future__ import annotations

import torch
from pydantic import Field

from methods.api import MethodParams, Step
from methods.naive import Naive


class BSR(Naive):
    """
    name: bsr
    idea: batch-wise sum-to-zero regularisation: BT + lam * B * (batch mean reward)^2, against extreme rewards
    paper: Hong et al. 2025 (ICML), "On the Robustness of Reward Models for Language Model Alignment"

    With B the pairs of the batch and the 2B rewards of both sides:

      loss = BT(q) + lam * B * ( (1 / 2B) * sum_i (r_a,i + r_b,i) )^2

    What we followed: their code, github.com/LinkedIn-XFACT/RM-Robustness,
    modules/trainers/reward_trainer.py (RewardTrainer.compute_loss, ``use_batch_sum``): the squared mean
    of torch.cat([rewards_chosen, rewards_rejected]), every reward of the batch, chosen and rejected,
    times bsr_lambda, which RewardTrainer.__init__ multiplies by the per-device train batch size (in
    pairs); hence the factor B. Default lam = 1e-3, their RewardConfig default (modules/modules.py) and
    their recipe's (recipes/skywork-bsr/rm.yaml). Here B is this step's pairs on this process: the
    reference's per-device batch size, except on a smaller last batch. BT is the soft-label BT on the
    teacher's q (theirs has hard chosen/rejected labels). Its gradient on each reward is lam * mean.
    """

    class Params(MethodParams):
        lam: float = Field(1e-3, ge=0.0, allow_inf_nan=False)

    def loss(self, step: Step):
        bt, logs = super().loss(step)
        mean = torch.cat([step.r_a, step.r_b]).mean()
        penalty = self.params.lam * step.r_a.numel() * mean.square()
        return bt + penalty, {**logs, "reward_mean": mean.detach(), "bsr_penalty": penalty.detach()}
