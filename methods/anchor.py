"""ANCHOR: soft-label BT plus a pull of the student's hidden states towards the pretrained ones."""
from __future__ import annotations

import math
from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field

from bench.models import frozen_copy, model_inputs, num_layers
from methods.base import Step
from methods.naive import Naive


def anchor_layers(depth: int, which: str) -> tuple[int, ...]:
    """Indices into hidden_states (0 = embeddings, depth = last layer)."""
    if which == "last":
        return (depth,)
    return tuple(sorted({max(1, math.floor(f * depth + 0.5)) for f in (0.5, 0.75)}))


def masked_hidden_mse(hidden: tuple[torch.Tensor, ...], reference: tuple[torch.Tensor, ...],
                      mask: torch.Tensor, layers: tuple[int, ...]) -> torch.Tensor:
    selected = mask.unsqueeze(-1).to(hidden[0].dtype)
    count = selected.sum() * hidden[0].shape[-1]
    if count == 0:
        return hidden[0].new_zeros(())
    per_layer = [(((hidden[l] - reference[l]) ** 2) * selected).sum() / count for l in layers]
    return torch.stack(per_layer).mean()


class Anchor(Naive):
    """
    name: anchor
    idea: BT + lam * masked MSE to the frozen pretrained student's hidden states (response tokens)
    paper: "When In-Distribution Gains Fail: Evaluating Weak-to-Strong Reward Models under Preference Shift" (2026)

    loss = BT(q) + lam * MSE, where MSE compares the student's hidden states with those of a frozen
    copy of the pretrained student on the same batch, over response tokens only (prompt, special and
    padding tokens excluded), for the responses a and b alike:

      MSE = mean over anchored layers l of  sum_{tokens t in responses} ||h_l(t) - h_ref_l(t)||^2 / (n_tokens * d)

    i.e. the mean over the selected tokens and the hidden dimensions, then the mean over layers.
    ``layers=last`` anchors the final layer's output; ``layers=mid`` anchors the layers at 50% and 75%
    of depth (layer round(0.5 L) and round(0.75 L), halves rounded up; 3 and 5 of 6, 16 and 24 of 32).
    Dropout is off, so the penalty is exactly zero before the first update.
    lam = 1e-4 was best for the paper's 8B students (the default here; model pairs may set their own).
    """
    needs_hidden_states = True

    class Params(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        lam: float = Field(1e-4, ge=0.0, allow_inf_nan=False)
        layers: Literal["last", "mid"] = "last"

    def setup(self, student):
        self.reference = frozen_copy(student)
        self.layers = anchor_layers(num_layers(student), self.params.layers)

    def loss(self, step: Step):
        bt, logs = super().loss(step)
        with torch.no_grad():
            reference = self.reference(**model_inputs(step.batch), output_hidden_states=True).hidden_states
        penalty = masked_hidden_mse(step.hidden_states, reference, step.batch["response_mask"], self.layers)
        return bt + self.params.lam * penalty, {**logs, "anchor_mse": penalty.item()}

    def finish(self, student):
        del self.reference  # the frozen copy is as large as the student


class AnchorMid(Anchor):
    """
    name: anchor-mid
    idea: ANCHOR on the layers at 50% and 75% of depth instead of the last one
    paper: "When In-Distribution Gains Fail: Evaluating Weak-to-Strong Reward Models under Preference Shift" (2026)

    The paper's mid-layer variant: ``anchor`` with ``layers=mid`` as its default.
    """

    class Params(Anchor.Params):
        layers: Literal["last", "mid"] = "mid"
