"""ANCHOR: soft-label BT plus a pull of the student's hidden states towards the pretrained ones.

The pretrained states (computed once before training and shared across a lam sweep, or a frozen
model run on every batch) come from ``bench.stages.reference``; this file is the penalty.
"""
from __future__ import annotations

import math
from typing import Literal

import torch
from pydantic import Field

from bench.stages.models import num_layers
from bench.stages.pair_rows import response_states
from bench.stages.reference import pretrained_reference
from methods.api import MethodParams, Step
from methods.naive import Naive


def anchor_layers(depth: int, which: str) -> tuple[int, ...]:
    """Indices into hidden_states (0 = embeddings, depth = last layer)."""
    if which == "last":
        return (depth,)
    return tuple(sorted({max(1, math.floor(f * depth + 0.5)) for f in (0.5, 0.75)}))


def response_mse(hidden: list[torch.Tensor], reference: list[torch.Tensor]) -> torch.Tensor:
    """Per layer the mean squared difference over the selected tokens' hidden dims (in float32), then the
    mean over layers; each tensor is (tokens, hidden size), one per anchored layer."""
    if hidden[0].numel() == 0:
        return hidden[0].new_zeros((), dtype=torch.float32)
    return torch.stack([((h.float() - r.float()) ** 2).mean() for h, r in zip(hidden, reference)]).mean()


def masked_hidden_mse(hidden: tuple[torch.Tensor, ...], reference: tuple[torch.Tensor, ...],
                      mask: torch.Tensor, layers: tuple[int, ...]) -> torch.Tensor:
    keep = mask.bool()
    return response_mse([hidden[l][keep] for l in layers], [reference[l][keep] for l in layers])


class Anchor(Naive):
    """
    name: anchor
    idea: BT + lam * masked MSE to the frozen pretrained student's hidden states (response tokens)
    paper: "When In-Distribution Gains Fail: Evaluating Weak-to-Strong Reward Models under Preference Shift" (2026)

    loss = BT(q) + lam * MSE, where MSE compares the student's hidden states with those of the
    pretrained student on the same sequences, over response tokens only (prompt, special and
    padding tokens excluded), for the responses a and b alike:

      MSE = mean over anchored layers l of  sum_{tokens t in responses} ||h_l(t) - h_ref_l(t)||^2 / (n_tokens * d)

    i.e. the mean over the selected tokens and the hidden dimensions, then the mean over layers.
    ``layers=last`` anchors the final layer's output; ``layers=mid`` anchors the layers at 50% and 75%
    of depth (layer round(0.5 L) and round(0.75 L), halves rounded up; 3 and 5 of 6, 16 and 24 of 32).
    Dropout is off, so the penalty is zero before the first update (to float rounding: the pretrained
    states are computed once before training, in other batches than the training ones, and padding
    moves the last bits; see bench/stages/reference.py). That changes the cost, not the loss.
    lam = 1e-4 was best for the paper's 8B students (the default here; model pairs may set their own).
    """
    needs_hidden_states = True

    class Params(MethodParams):
        lam: float = Field(1e-4, ge=0.0, allow_inf_nan=False)
        layers: Literal["last", "mid"] = "last"

    def setup(self, student):
        """A lone step's reference (its rows are not known): the frozen pretrained model on each batch."""
        self.layers = anchor_layers(num_layers(student), self.params.layers)
        self.reference = pretrained_reference(student, self.layers)

    def fit(self, student, examples, cfg, train):
        """Training's reference: the pretrained states of every training sequence, computed once before the
        first step (or read from ``train.shared``, where a sweep's first point left them; bench/stages/reference.py)."""
        self.layers = anchor_layers(num_layers(student), self.params.layers)
        self.reference = pretrained_reference(student, self.layers, examples, 2 * cfg.batch_size, train.shared)
        log = {**train(student, examples, cfg), "anchor_reference": self.reference.info}
        self.finish(student)
        return log

    def loss(self, step: Step):
        bt, logs = super().loss(step)
        hidden = [response_states(step.hidden_states[l], step.batch) for l in self.layers]
        penalty = response_mse(hidden, self.reference.states(step))
        return bt + self.params.lam * penalty, {**logs, "anchor_mse": penalty.detach()}

    def finish(self, student):
        del self.reference  # a frozen copy is as large as the student; precomputed states can be larger


class AnchorMid(Anchor):
    """
    name: anchor-mid
    idea: ANCHOR on the layers at 50% and 75% of depth instead of the last one
    paper: "When In-Distribution Gains Fail: Evaluating Weak-to-Strong Reward Models under Preference Shift" (2026)

    The paper's mid-layer variant: ``anchor`` with ``layers=mid`` as its default.
    """

    class Params(Anchor.Params):
        layers: Literal["last", "mid"] = "mid"
