"""AdaptConf (Guo et al. 2024): a per-pair balance of the teacher's label and the student's own hard prediction."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import Field

from methods.api import MethodParams, Step
from methods.naive import Naive


class AdaptConf(Naive):
    """
    name: adaptconf
    idea: per-pair weight of the teacher's label vs the student's hard prediction, from the student's CE to each
    paper: Guo et al. 2024, "Vision Superalignment: Weak-to-Strong Generalization for Vision Foundation Models"
    aliases: adapt-conf

    On a pair, d = r_a - r_b, p = sigmoid(d), l(d, y) = -[y log p + (1 - y) log (1 - p)]. Each step:

      h_s = 1[p >= 1/2], h_w = 1[q >= 1/2]             (the student's and the teacher's hard labels)
      CE_s = l(d, h_s), CE_w = l(d, h_w)
      beta = exp(CE_s / T) / (exp(CE_s / T) + exp(CE_w / T))
           = exp(-CE_w / T) / (exp(-CE_s / T) + exp(-CE_w / T)) = sigmoid((CE_s - CE_w) / T)   (detached)
      loss = mean_i [(1 - beta_i) l(d_i, q_i) + beta_i l(d_i, h_s,i)]

    beta is the weight of the student's own hard label. Where the student's hard label is the teacher's,
    CE_s = CE_w and beta = 1/2; where they differ, CE_s - CE_w = -|d|, so beta = sigmoid(-|d| / T) < 1/2:
    the more confidently the student disagrees with the teacher, the more the teacher's label weighs.
    (A tie p = 1/2 or q = 1/2 goes to a, as torch.argmax over [P(a), P(b)] picks the first.)

    Paper: arXiv 2402.03749. What we followed: the authors' code, github.com/ggjy/vision_weak_to_strong,
    classification/distillers/adaptconf.py (AdaptConf.forward) and noisy_labels_learning/utils_sel/kd_loss.py
    (adapt_conf_loss): ce_self = CE(student, argmax student), ce_teacher = CE(student, argmax teacher),
    both exp(ce / superalignment_threshold), alpha = ce_self / (ce_self + ce_teacher) detached, loss =
    (1 - alpha) * KD + alpha * CE(student, argmax student), batch means. The paper's own text was not
    reachable from here, so the formula above is the code's. Two differences: the code's KD term is
    KL(teacher softmax || student softmax) at a temperature, here the soft-label BT cross-entropy with the
    teacher's q (the same gradient as that KL at temperature 1; this harness keeps q, not the teacher's
    logits); and the classification distiller has no warm-up of alpha (the noisy-label one ramps it over
    the first 25% of epochs), nor has this. ``temperature`` T default 0.5: the superalignment threshold of
    the README's CIFAR commands and of the noisy-label configs (its ImageNet transfer command uses 4.0).
    """

    class Params(MethodParams):
        temperature: float = Field(0.5, gt=0.0, allow_inf_nan=False)

    def loss(self, step: Step):
        d = step.r_a - step.r_b
        with torch.no_grad():
            own = (d >= 0).to(d.dtype)                      # p >= 1/2 exactly when d >= 0
            teacher = (step.target >= 0.5).to(d.dtype)
            ce_own = F.binary_cross_entropy_with_logits(d, own, reduction="none")
            ce_teacher = F.binary_cross_entropy_with_logits(d, teacher, reduction="none")
            beta = torch.sigmoid((ce_own - ce_teacher) / self.params.temperature)
        from_teacher = F.binary_cross_entropy_with_logits(d, step.target, reduction="none")
        from_self = F.binary_cross_entropy_with_logits(d, own, reduction="none")
        loss = ((1.0 - beta) * from_teacher + beta * from_self).mean()
        return loss, {"adaptconf_loss": loss.detach(), "beta_mean": beta.mean()}
