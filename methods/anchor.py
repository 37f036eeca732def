"""ANCHOR: soft-label BT plus a pull of the student's hidden states towards the pretrained ones.

The pretrained ("reference") states are computed once, before the first step: one inference pass of
the pretrained student over every training sequence, in length-sorted batches, keeping only the
anchored layers at response tokens (all the penalty reads). Steps look their rows up, so training
runs no second forward and holds no second model. Where those states would take more than
``SHIFTBENCH_ANCHOR_CACHE_GB`` (default 4) of memory, a frozen reference runs on every batch
instead. Both give the same penalty to float rounding (tests/test_speed_features.py).

In a pipeline run the states go into the run's cache (``Method.shared``), keyed by the student, its
formatter, the exact training sequences, the layers and the device: every other run on the same
cell's data (each point of a lam sweep, a rerun with another lam) reads them instead of recomputing.
"""
from __future__ import annotations

import contextlib
import hashlib
import math
import os
import time
from typing import Literal

import torch
from pydantic import BaseModel, ConfigDict, Field

from bench.models import collate, frozen_reference, is_lora_model, model_inputs, num_layers
from methods.base import Step
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


def cache_limit_bytes() -> float:
    return float(os.environ.get("SHIFTBENCH_ANCHOR_CACHE_GB", "4")) * 2**30


def training_sequences(examples: list) -> list:
    """Sequence i is example i's a, sequence n + i its b: the order the states are kept in."""
    return [ex.a for ex in examples] + [ex.b for ex in examples]


def response_tokens(sequence) -> int:
    return sum(sequence.arrays()[2])


def sequences_digest(sequences: list) -> str:
    """sha256 of the sequences' token ids, segment ids and response masks, in order."""
    digest = hashlib.sha256()
    for sequence in sequences:
        for values in sequence.arrays():
            digest.update(values.tobytes())
            digest.update(b"|")
    return digest.hexdigest()


class ReferenceStates:
    """The pretrained model's states at the anchored layers on the response tokens of every training
    sequence (``training_sequences`` order), kept on the CPU in the model's dtype: the rows of
    sequence i are ``offsets[i]`` to ``offsets[i] + counts[i]``."""

    def __init__(self, examples: list):
        self.sequences = training_sequences(examples)
        self.n = len(examples)
        self.lengths = torch.tensor([len(s) for s in self.sequences])
        self.counts = torch.tensor([response_tokens(s) for s in self.sequences])
        self.offsets = self.counts.cumsum(0) - self.counts
        self.states: list[torch.Tensor] = []

    @classmethod
    def build(cls, model, examples: list, layers: tuple[int, ...], batch_size: int, shared=None
              ) -> tuple["ReferenceStates", bool]:
        """The states, and whether they came from ``shared`` (a bench.cache.SharedWork: runs on the same
        student and sequences, e.g. every point of a lam sweep, compute them once)."""
        reference = cls(examples)
        if shared is None:
            reference.states = reference.compute(model, layers, batch_size)
            return reference, False
        inputs = {"layers": list(layers), "batch_size": batch_size, "sequences": sequences_digest(reference.sequences),
                  "dtype": str(model.get_input_embeddings().weight.dtype), "lora": is_lora_model(model)}
        tensors, reused = shared.tensors("anchor-reference", inputs, lambda: {
            f"layer{layer}": states for layer, states in zip(layers, reference.compute(model, layers, batch_size))})
        reference.states = [tensors[f"layer{layer}"] for layer in layers]
        if any(states.shape[0] != int(reference.counts.sum()) for states in reference.states):
            raise RuntimeError("anchor: cached reference states do not hold one row per response token of these examples")
        return reference, reused

    def compute(self, model, layers: tuple[int, ...], batch_size: int) -> list[torch.Tensor]:
        """One inference pass of the pretrained model over every training sequence, in length-sorted
        batches (little padding): per anchored layer, the states of all response tokens."""
        dtype = model.get_input_embeddings().weight.dtype
        states = [torch.empty(int(self.counts.sum()), model.config.hidden_size, dtype=dtype) for _ in layers]
        device = next(model.parameters()).device
        order = self.lengths.argsort(stable=True).tolist()
        adapters_off = model.disable_adapter() if is_lora_model(model) else contextlib.nullcontext()
        with torch.no_grad(), adapters_off:
            for start in range(0, len(order), batch_size):
                rows = order[start:start + batch_size]
                batch = collate([self.sequences[i] for i in rows], model.config.pad_token_id)
                batch = {k: v.to(device) for k, v in batch.items()}
                hidden = model(**model_inputs(batch), output_hidden_states=True).hidden_states
                keep = batch["response_mask"].bool()
                for layer_states, layer in zip(states, layers):
                    for row, i in enumerate(rows):
                        start_row = int(self.offsets[i])
                        layer_states[start_row:start_row + int(self.counts[i])] = hidden[layer][row, keep[row]].cpu()
        return states

    @property
    def nbytes(self) -> int:
        return sum(s.numel() * s.element_size() for s in self.states)

    def lookup(self, batch: dict[str, torch.Tensor], host_batch: dict[str, torch.Tensor] | None = None
               ) -> list[torch.Tensor]:
        """The reference states of a training batch's response tokens, in the order ``hidden[mask]`` gives.
        ``host_batch``, the same batch still on the CPU, spares a wait for the device."""
        host = {k: v.cpu() for k, v in batch.items()} if host_batch is None else host_batch
        index = host["example_index"]
        half = len(index) // 2
        keys = index + torch.cat([torch.zeros(half, dtype=torch.long), torch.full((half,), self.n)])
        counts = host["response_mask"].sum(1)
        lengths = host["attention_mask"].sum(1)
        if not (torch.equal(counts, self.counts[keys]) and torch.equal(lengths, self.lengths[keys])):
            raise RuntimeError("anchor: a batch's rows are not the sequences its reference states were computed for")
        row_start = counts.cumsum(0) - counts
        tokens = torch.repeat_interleave(self.offsets[keys] - row_start, counts) + torch.arange(int(counts.sum()))
        device = batch["response_mask"].device
        return [states[tokens].to(device, non_blocking=True) for states in self.states]


def estimated_bytes(model, examples: list, layers: tuple[int, ...]) -> int:
    tokens = sum(response_tokens(s) for s in training_sequences(examples))
    return tokens * model.config.hidden_size * len(layers) * model.get_input_embeddings().weight.element_size()


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
    moves the last bits; see the module's docstring). That changes the cost, not the loss.
    lam = 1e-4 was best for the paper's 8B students (the default here; model pairs may set their own).
    """
    needs_hidden_states = True

    class Params(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        lam: float = Field(1e-4, ge=0.0, allow_inf_nan=False)
        layers: Literal["last", "mid"] = "last"

    def setup(self, student):
        """The reference for steps without known rows (a lone step): a frozen model run on each batch."""
        self.layers = anchor_layers(num_layers(student), self.params.layers)
        self.reference = frozen_reference(student)

    def fit(self, student, examples, cfg, train):
        self.layers = anchor_layers(num_layers(student), self.params.layers)
        started = time.perf_counter()
        if estimated_bytes(student, examples, self.layers) <= cache_limit_bytes():
            self.reference, reused = ReferenceStates.build(student, examples, self.layers, 2 * cfg.batch_size, self.shared)
            info = {"kind": "precomputed states", "bytes": self.reference.nbytes, "reused_from_cache": reused}
        else:
            self.reference = frozen_reference(student)
            info = {"kind": "frozen model on every batch"}
        info["seconds"] = time.perf_counter() - started
        log = train(student, examples, cfg)
        self.finish(student)
        return {**log, "anchor_reference": info}

    def loss(self, step: Step):
        bt, logs = super().loss(step)
        keep = step.batch["response_mask"].bool()
        hidden = [step.hidden_states[l][keep] for l in self.layers]
        if isinstance(self.reference, ReferenceStates):
            reference = self.reference.lookup(step.batch, step.host_batch)
        else:
            states = self.reference.hidden_states(step.batch)
            reference = [states[l][keep] for l in self.layers]
        penalty = response_mse(hidden, reference)
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
