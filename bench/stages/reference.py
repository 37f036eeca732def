"""The pretrained student's hidden states, as a penalty like ANCHOR's compares the student with them.

One interface, ``pretrained_reference(student, layers, examples, batch_size, shared) -> Reference``:
``reference.states(step)`` are the pretrained states of a training batch's response tokens at the
given layers (per layer a (tokens, hidden size) tensor, in the order ``hidden[l][response_mask]``
gives) and ``reference.info`` says how they were obtained (what a training log records). Two ways
behind it, the same states to float rounding (tests/test_speed_features.py):

- ``ReferenceStates``: computed once, before the first step: one inference pass of the pretrained
  student over every training sequence, in length-sorted batches, keeping only the given layers at
  response tokens. Steps look their rows up (by the batch's ``example_index``), so training runs
  no second forward and holds no second model. With a ``shared`` cache (a bench.core.cache.SharedWork,
  which a pipeline run passes) they are stored there, keyed by the student, its formatter, the
  exact training sequences, the layers and the device: every other run on the same cell's data
  (each point of a lam sweep, a rerun with another lam) reads them instead of recomputing.
- ``FrozenReference``: the frozen pretrained model run on every batch, where the rows are not known
  (a lone step) or the states would take more than ``SHIFTBENCH_ANCHOR_CACHE_GB`` (default 4) of memory.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import time
from typing import TYPE_CHECKING, Protocol

import torch
from torch import nn

from bench.core.anatomy import is_lora_model
from bench.stages.batches import collate, forward, uses_pair_rows
from bench.stages.models import frozen_copy
from bench.stages.pair_rows import collate_pairs, response_states, row_length, sequence_sizes

if TYPE_CHECKING:
    from bench.core.cache import SharedWork
    from methods.api import Step


class Reference(Protocol):
    info: dict

    def states(self, step: Step) -> list[torch.Tensor]:
        """Per layer, the pretrained states of the batch's response tokens, in ``hidden[l][mask]`` order."""


def pretrained_reference(student: nn.Module, layers: tuple[int, ...], examples: list | None = None,
                         batch_size: int = 1, shared: SharedWork | None = None) -> Reference:
    """The pretrained ``student``'s states at ``layers`` (indices into hidden_states). Given the training
    ``examples`` (bench.stages.train.TrainExample), computed once in batches of ``batch_size`` (or read from
    ``shared``) when they fit in ``SHIFTBENCH_ANCHOR_CACHE_GB``; else a frozen model runs on every batch.
    Make it before the first training step."""
    started = time.perf_counter()
    if examples is not None and estimated_bytes(student, examples, layers) <= cache_limit_bytes():
        reference, reused = ReferenceStates.build(student, examples, layers, batch_size, shared)
        reference.info = {"kind": "precomputed states", "bytes": reference.nbytes, "reused_from_cache": reused}
    else:
        reference = FrozenReference(student, layers)
        reference.info = {"kind": "frozen model on every batch"}
    reference.info["seconds"] = time.perf_counter() - started
    return reference


# --- precomputed states ---------------------------------------------------------------------------
def cache_limit_bytes() -> float:
    return float(os.environ.get("SHIFTBENCH_ANCHOR_CACHE_GB", "4")) * 2**30


def training_sequences(examples: list) -> list:
    """Sequence i is example i's a, sequence n + i its b: the order the states are kept in."""
    return [ex.a for ex in examples] + [ex.b for ex in examples]


def response_tokens(sequence) -> int:
    return sum(sequence.arrays()[2])


def estimated_bytes(model: nn.Module, examples: list, layers: tuple[int, ...]) -> int:
    tokens = sum(response_tokens(s) for s in training_sequences(examples))
    return tokens * model.config.hidden_size * len(layers) * model.get_input_embeddings().weight.element_size()


def sequences_digest(sequences: list) -> str:
    """sha256 of the sequences' token ids, segment ids and response masks, in order."""
    digest = hashlib.sha256()
    for sequence in sequences:
        for values in sequence.arrays():
            digest.update(values.tobytes())
            digest.update(b"|")
    return digest.hexdigest()


class ReferenceStates:
    """The pretrained model's states at the given layers on the response tokens of every training
    sequence (``training_sequences`` order), kept on the CPU in the model's dtype: the rows of
    sequence i are ``offsets[i]`` to ``offsets[i] + counts[i]`` of each tensor of ``layer_states``."""

    info: dict

    def __init__(self, examples: list):
        self.sequences = training_sequences(examples)
        self.n = len(examples)
        self.lengths = torch.tensor([len(s) for s in self.sequences])
        self.counts = torch.tensor([response_tokens(s) for s in self.sequences])
        self.offsets = self.counts.cumsum(0) - self.counts
        self.layer_states: list[torch.Tensor] = []

    @classmethod
    def build(cls, model: nn.Module, examples: list, layers: tuple[int, ...], batch_size: int,
              shared: SharedWork | None = None) -> tuple[ReferenceStates, bool]:
        """The states, and whether they came from ``shared`` (runs on the same student and sequences,
        e.g. every point of a lam sweep, compute them once)."""
        reference = cls(examples)
        if shared is None:
            reference.layer_states = reference.compute(model, layers, batch_size)
            return reference, False
        inputs = {"layers": list(layers), "batch_size": batch_size, "sequences": sequences_digest(reference.sequences),
                  "dtype": str(model.get_input_embeddings().weight.dtype), "lora": is_lora_model(model)}
        tensors, reused = shared.tensors("anchor-reference", inputs, lambda: {
            f"layer{layer}": states for layer, states in zip(layers, reference.compute(model, layers, batch_size))})
        reference.layer_states = [tensors[f"layer{layer}"] for layer in layers]
        if any(states.shape[0] != int(reference.counts.sum()) for states in reference.layer_states):
            raise RuntimeError("anchor: cached reference states do not hold one row per response token of these examples")
        return reference, reused

    def compute(self, model: nn.Module, layers: tuple[int, ...], batch_size: int) -> list[torch.Tensor]:
        """One inference pass of the pretrained model over every training sequence, in length-sorted
        batches (little padding), as shared-prompt pair rows on decoders: per layer, the states of all
        response tokens."""
        dtype = model.get_input_embeddings().weight.dtype
        states = [torch.empty(int(self.counts.sum()), model.config.hidden_size, dtype=dtype) for _ in layers]
        device = next(model.parameters()).device
        if uses_pair_rows(model):   # unit i: pair i, whose sequences are i and n + i
            units = [(i, self.n + i) for i in range(self.n)]
            width = [row_length(self.sequences[i], self.sequences[j]) for i, j in units]
            per_batch = max(1, batch_size // 2)
        else:
            units = [(i,) for i in range(len(self.sequences))]
            width = self.lengths.tolist()
            per_batch = batch_size
        order = sorted(range(len(units)), key=lambda u: width[u])
        adapters_off = model.disable_adapter() if is_lora_model(model) else contextlib.nullcontext()
        with torch.no_grad(), adapters_off:
            for start in range(0, len(order), per_batch):
                chosen = [units[u] for u in order[start:start + per_batch]]
                if len(chosen[0]) == 2:
                    batch = collate_pairs([(self.sequences[i], self.sequences[j]) for i, j in chosen],
                                          model.config.pad_token_id)
                else:
                    batch = collate([self.sequences[i] for i, in chosen], model.config.pad_token_id)
                batch = {k: v.to(device) for k, v in batch.items()}
                hidden = forward(model, batch, output_hidden_states=True).hidden_states
                # the batch's sequences in response_states' order: every unit's first, then every second
                sequences = [unit[0] for unit in chosen] + [unit[1] for unit in chosen if len(unit) == 2]
                for layer_states, layer in zip(states, layers):
                    rows = response_states(hidden[layer], batch).cpu()
                    at = 0
                    for i in sequences:
                        count = int(self.counts[i])
                        start_row = int(self.offsets[i])
                        layer_states[start_row:start_row + count] = rows[at:at + count]
                        at += count
        return states

    @property
    def nbytes(self) -> int:
        return sum(s.numel() * s.element_size() for s in self.layer_states)

    def states(self, step: Step) -> list[torch.Tensor]:
        return self.lookup(step.batch, step.host_batch)

    def lookup(self, batch: dict[str, torch.Tensor], host_batch: dict[str, torch.Tensor] | None = None
               ) -> list[torch.Tensor]:
        """The reference states of a training batch's response tokens, in the order ``hidden[mask]`` gives.
        ``host_batch``, the same batch still on the CPU, spares a wait for the device."""
        host = {k: v.cpu() for k, v in batch.items()} if host_batch is None else host_batch
        index = host["example_index"]
        half = len(index) // 2
        keys = index + torch.cat([torch.zeros(half, dtype=torch.long), torch.full((half,), self.n)])
        counts, lengths = sequence_sizes(host)
        if not (torch.equal(counts, self.counts[keys]) and torch.equal(lengths, self.lengths[keys])):
            raise RuntimeError("anchor: a batch's rows are not the sequences its reference states were computed for")
        row_start = counts.cumsum(0) - counts
        tokens = torch.repeat_interleave(self.offsets[keys] - row_start, counts) + torch.arange(int(counts.sum()))
        device = batch["response_mask"].device
        return [states[tokens].to(device, non_blocking=True) for states in self.layer_states]


# --- a frozen model on every batch ----------------------------------------------------------------
class FrozenReference:
    """The pretrained model's hidden states on a batch, without gradients.

    For a LoRA model it is the same model with its adapters switched off (the backbone is frozen
    under LoRA, so that is exactly the pretrained model) and holds no second copy of the weights;
    otherwise it holds a frozen deep copy taken when it is made, i.e. before training.
    """

    info: dict

    def __init__(self, model: nn.Module, layers: tuple[int, ...] = ()):
        self.shares_weights = is_lora_model(model)
        self.model = model if self.shares_weights else frozen_copy(model)
        self.layers = layers

    @torch.no_grad()
    def hidden_states(self, batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
        """Every layer's states on the whole batch: (embeddings, layer 1, ..., layer L)."""
        switch = self.model.disable_adapter() if self.shares_weights else contextlib.nullcontext()
        with switch:
            return forward(self.model, batch, output_hidden_states=True).hidden_states

    def states(self, step: Step) -> list[torch.Tensor]:
        hidden = self.hidden_states(step.batch)
        return [response_states(hidden[layer], step.batch) for layer in self.layers]
