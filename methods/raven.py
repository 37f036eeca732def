"""RAVEN: learn which weak teachers to trust, jointly with the student."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from pydantic import BaseModel, Field

from bench.core.errors import BenchError
from methods.api import LabelInputs, Labels, MethodParams, Step
from methods.naive import Naive

LOGIT_EPS = 1e-6   # teachers' labels are clamped to [eps, 1 - eps] before their logit: a label of exactly 0 or 1
WEIGHT_FLOOR = 1e-6   # the reference's clamp after each weight update, before renormalising


def combined_targets(teacher_labels: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """sigmoid(sum_k w_k * logit(q^(k))) per pair: the teachers' reward gaps combined with ``weights``."""
    return torch.sigmoid(torch.logit(teacher_labels, eps=LOGIT_EPS) @ weights)


def weight_step(weights: torch.Tensor, teacher_labels: torch.Tensor, d: torch.Tensor, lr: float) -> torch.Tensor:
    """One update of the teachers' weights: a gradient step on naive's loss at the student's reward gaps
    ``d`` (held fixed), then clamped at WEIGHT_FLOOR and renormalised to sum 1, as the reference's
    ``ensemble_weights_update_callback``. With several processes the gradient is averaged over them
    (each its shard's mean), so that every process keeps the same weights."""
    from bench.core.distributed import launched, state

    w = weights.detach().clone().requires_grad_(True)
    loss = F.binary_cross_entropy_with_logits(d.detach(), combined_targets(teacher_labels, w))
    (grad,) = torch.autograd.grad(loss, w)
    if launched():
        torch.distributed.all_reduce(grad)
        grad = grad / state().num_processes
    stepped = (w.detach() - lr * grad).clamp(min=WEIGHT_FLOOR)
    return stepped / stepped.sum()


class Raven(Naive):
    """
    name: raven
    idea: the target is a learned convex combination of K weak teachers, its weights trained jointly with the student
    paper: Jeon et al. 2025, "Weak-to-Strong Generalization under Distribution Shifts" (NeurIPS 2025, arXiv 2510.21332; github.com/mlbio-epfl/raven)

    Label stage (bench/stages/label_stage.py): the soft labels q^(k) of K teachers on half B (the cell's
    teacher and K - 1 more trained on half A with seeds of their own, as ``teacher-ensemble``'s), every
    pair's K labels handed to the loss (Step.teacher_labels). With z^(k) = logit(q^(k)) = r_k(a) - r_k(b),
    teacher k's reward gap, and weights w on the simplex (w_k >= 0, sum 1, uniform at the start), each step

      target_i = sigmoid(sum_k w_k z_i^(k))
      loss     = -[target_i log s(d_i) + (1 - target_i) log s(-d_i)], batch mean, d_i = r_a - r_b (naive's)

    and, once a share ``hold`` of training is done, w <- normalise(max(w - lr * dloss/dw, 1e-6)) with the
    student's rewards held fixed: the weights move towards the teachers the student agrees with. The
    student's loss uses the weights as they were before the step's update.

    The reference (rw2s/NLP/src/llamafactory/train/tc/ensemble.py and trainer.py, the text
    classification RAVEN): ``Ensemble.forward`` combines the teachers' logits with its weights and
    softmaxes them (the sigmoid above, for two classes); the weights are a plain parameter trained by
    SGD at ``ens_lr`` on the student's loss, clamped at 1e-6 and renormalised after every step (not a
    softmax parametrisation), detached before ``easy_hard`` epochs; its RAVEN config uses ens_lr = 1e-2,
    easy_hard = 0.2 of 2 epochs and 3 teachers: the defaults ``lr`` = 1e-2, ``hold`` = 0.1, ``k`` = 3.
    ``lr`` keeps the reference's meaning per training pair: it updates the weights once per batch of 2
    pairs over 2 epochs, as many updates as training pairs; here they are updated once per batch of ``batch_size``
    pairs over ``epochs``, so each update steps lr * batch_size / epochs (0.16 for tiny's batch 16 and
    one epoch), and the weights move as far per training pair as the reference's. At lr itself they would move
    16x less: over mini's ~50 steps, barely off uniform (a loss called by hand, outside ``fit``, steps lr).
    With early stopping (TrainConfig.early_stopping) the
    held-out pairs are scored against the stage's targets, the combination at the uniform start, not
    the learned one. One difference: the reference calls backward on the loss once for the weights (retain_graph) and
    again for the model, so the model's gradient is doubled on those steps; here the student's gradient
    is the loss's, once. The label digest records the targets at the uniform start.
    """

    class Params(MethodParams):
        k: int = Field(3, ge=2, le=16)
        lr: float = Field(1e-2, ge=0.0, allow_inf_nan=False)
        hold: float = Field(0.1, ge=0.0, lt=1.0)

    def __init__(self, params: BaseModel | None = None):
        super().__init__(params)
        self.weights = torch.full((self.params.k,), 1.0 / self.params.k)
        self.after_step: list[torch.Tensor] = []
        self.step_lr = self.params.lr   # fit scales it to the run's batches (the docstring)

    def relabel(self, inputs: LabelInputs) -> Labels:
        per_pair = [list(labels) for labels in zip(*inputs.teachers(self.params.k))]
        start = combined_targets(torch.tensor(per_pair, dtype=torch.float64),
                                 torch.full((self.params.k,), 1.0 / self.params.k, dtype=torch.float64))
        return Labels(start.tolist(), teacher_labels=per_pair, info={"teachers_k": self.params.k})

    def setup(self, student):
        device = next(student.parameters()).device
        self.weights = torch.full((self.params.k,), 1.0 / self.params.k, device=device)
        self.after_step: list[torch.Tensor] = []   # the weights after each step, for the checkpoint early stopping keeps

    def fit(self, student, examples, cfg, train):
        scaled = self.step_lr = self.params.lr * cfg.batch_size / cfg.epochs
        try:
            log = super().fit(student, examples, cfg, train)
        finally:
            self.step_lr = self.params.lr   # outside fit, as the docstring says
        chosen = (log.get("early_stopping") or {}).get("chosen_step")
        weights = self.after_step[chosen - 1] if chosen else self.weights   # the student's weights are that step's
        return {**log, "raven_weights": weights.tolist(), "raven_step_lr": scaled}

    def loss(self, step: Step):
        labels = step.teacher_labels
        if labels is None or labels.dim() != 2 or labels.shape[1] != self.params.k:
            got = "none" if labels is None else f"shape {tuple(labels.shape)}"
            raise BenchError(f"raven needs each pair's {self.params.k} teacher labels in Step.teacher_labels (its label "
                             f"stage gives them in a pipeline run), got {got}. Run it with bench run, or pass "
                             f"teacher_labels of shape (batch, {self.params.k})")
        weights = self.weights.to(labels.device)
        d = step.r_a - step.r_b
        target = combined_targets(labels, weights)
        loss = F.binary_cross_entropy_with_logits(d, target)
        if step.progress >= self.params.hold and self.params.lr > 0:
            self.weights = weight_step(weights, labels, d, self.step_lr)
        self.after_step.append(self.weights.detach())
        return loss, {"bt": loss.detach(), **{f"w{k}": self.weights[k].detach() for k in range(self.params.k)}}
