"""Batches through a reward model: padding a batch (``collate``), the forward pass (``forward``,
``reward_forward``, with the hidden states ANCHOR reads), where the reward is read (``read_response``),
and scoring many sequences in length-sorted batches whose rewards do not depend on the batch size
(``score``). Loading the models is bench.stages.models'."""
from __future__ import annotations

import torch
from torch import nn

from bench.core.anatomy import head_of, inner_model
from bench.core.errors import BenchError
from bench.core.formatting import Encoded
from bench.stages.pair_rows import additive_mask, collate_pairs, row_length


# --- batches ----------------------------------------------------------------------------------------
def collate(sequences: list[Encoded], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad to the longest sequence; padding is masked out of attention and of the response mask."""
    width = max(len(s) for s in sequences)
    out = {"input_ids": torch.full((len(sequences), width), pad_id, dtype=torch.long),
           "attention_mask": torch.zeros((len(sequences), width), dtype=torch.long),
           "token_type_ids": torch.zeros((len(sequences), width), dtype=torch.long),
           "response_mask": torch.zeros((len(sequences), width), dtype=torch.long)}
    for row, sequence in enumerate(sequences):
        n = len(sequence)
        if n == 0:
            continue
        ids, types, mask = (torch.frombuffer(a, dtype=d) for a, d in zip(sequence.arrays(), (torch.int32, torch.int8, torch.int8)))
        out["input_ids"][row, :n] = ids
        out["attention_mask"][row, :n] = 1
        out["token_type_ids"][row, :n] = types
        out["response_mask"][row, :n] = mask
    return out


def model_inputs(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The forward's arguments. token_type_ids go only when some are non-zero: all zeros is what
    every encoder assumes without them, and decoders (all zeros) have no such input."""
    inputs = {"input_ids": batch["input_ids"], "attention_mask": batch["attention_mask"]}
    if "token_type_ids" in batch and bool(batch["token_type_ids"].any()):
        inputs["token_type_ids"] = batch["token_type_ids"]
    return inputs


def forward(model: nn.Module, batch: dict[str, torch.Tensor], output_hidden_states: bool = False,
            run: nn.Module | None = None):
    """The transformers forward on a batch of either layout: sequences (``collate``) or shared-prompt
    pair rows (``bench.stages.pair_rows.collate_pairs``: a prepared 4D mask and the positions). ``run`` is
    what to call when it wraps ``model`` (a DDP wrapper)."""
    if "pair_attention" not in batch:
        return (run or model)(**model_inputs(batch), output_hidden_states=output_hidden_states)
    attention = getattr(model.config, "_attn_implementation", None) or ""
    if attention.startswith("flash"):
        raise BenchError(f"shared-prompt pair rows need an attention that takes a 4D mask, and {attention} takes "
                         f"none: load the model with attn_implementation='sdpa' (the default) or 'eager'")
    dtype = model.get_input_embeddings().weight.dtype
    return (run or model)(input_ids=batch["input_ids"], attention_mask=additive_mask(batch["pair_attention"], dtype),
                          position_ids=batch["position_ids"], output_hidden_states=output_hidden_states)


def reward_forward(model: nn.Module, batch: dict[str, torch.Tensor], output_hidden_states: bool = False,
                   run: nn.Module | None = None) -> tuple[torch.Tensor, tuple[torch.Tensor, ...] | None]:
    """One forward: the rewards (float32; one per sequence, or for pair rows every a's then every b's)
    read where the model's readout says, and every layer's hidden states when asked."""
    readout = getattr(model, "shiftbench_readout", None)
    if "pair_attention" in batch:   # the head on the last layer's state at a's and b's last tokens
        if output_hidden_states or run is not None or torch.is_grad_enabled():
            out = forward(model, batch, True, run)
            last, hidden = out.hidden_states[-1], (out.hidden_states if output_hidden_states else None)
        else:   # scoring: the backbone's last layer alone, without holding every layer's states
            last, hidden = forward(inner_model(model).base_model, batch).last_hidden_state, None
        rows = torch.arange(len(batch["readout"]), device=batch["readout"].device)
        _, head = head_of(inner_model(model))
        ends = torch.cat([last[rows, batch["readout"][:, 0]], last[rows, batch["readout"][:, 1]]])
        return head(ends)[:, 0].float(), hidden
    pooled = readout in ("response_mean", "response_last")
    out = forward(model, batch, output_hidden_states or pooled, run)
    hidden = out.hidden_states if output_hidden_states else None
    if not pooled:
        return out.logits[:, 0].float(), hidden
    return read_response(inner_model(model), out.hidden_states[-1], batch["response_mask"], readout), hidden


def uses_pair_rows(model: nn.Module) -> bool:
    """Whether the model reads pairs as shared-prompt rows (decoders; ``bench.stages.pair_rows``)."""
    return bool(getattr(model, "shiftbench_pair_rows", False))


def collate_examples(model: nn.Module, pairs: list[tuple[Encoded, Encoded]]) -> dict[str, torch.Tensor]:
    """A batch of preference pairs in the model's layout: one shared-prompt row per pair on decoders,
    else the a sequences then the b sequences."""
    pad_id = model.config.pad_token_id
    if uses_pair_rows(model):
        return collate_pairs(pairs, pad_id)
    return collate([a for a, _ in pairs] + [b for _, b in pairs], pad_id)


def read_response(model: nn.Module, last: torch.Tensor, response_mask: torch.Tensor, readout: str) -> torch.Tensor:
    """The reward from the last layer's states at the response: their mean or the last one, then the
    model's pooler (when it has one) and head. A row without response tokens reads zeros."""
    mask = response_mask.to(last.dtype).unsqueeze(-1)
    if readout == "response_mean":
        vector = (last * mask).sum(1) / mask.sum(1).clamp(min=1)
    else:
        positions = torch.arange(last.shape[1], device=last.device)
        index = (response_mask * positions).argmax(1)  # the largest masked position
        vector = last[torch.arange(last.shape[0], device=last.device), index] * mask.amax(1)
    pooler = getattr(model.base_model, "pooler", None)
    if pooler is not None:
        vector = pooler.activation(pooler.dense(vector))
    _, head = head_of(model)
    return head(vector)[:, 0].float()


@torch.no_grad()
def score(model: nn.Module, sequences: list[Encoded], batch_size: int, desc: str = "scoring",
          pairs: bool = False) -> list[float]:
    """r(x) for each sequence, in order. Sorted by length so batches carry little padding; the
    attention mask keeps padding out, so scores do not depend on the batch size (to float rounding).
    ``pairs``: sequence i and sequence n/2 + i are a pair (the same prompt), which a decoder scores
    as one shared-prompt row (``batch_size`` still counts sequences)."""
    from tqdm.auto import tqdm

    model.eval()
    device = next(model.parameters()).device  # where training left it (a GPU under accelerate)
    paired = pairs and uses_pair_rows(model)
    if paired:
        n = len(sequences) // 2
        units = [(sequences[i], sequences[n + i]) for i in range(n)]
        size, per_unit = (lambda u: row_length(*u)), max(1, batch_size // 2)
    else:
        units = [(s,) for s in sequences]
        size, per_unit = (lambda u: len(u[0])), batch_size
    order = sorted(range(len(units)), key=lambda i: size(units[i]))
    rewards = [0.0] * len(sequences)
    for start in tqdm(range(0, len(order), per_unit), desc=desc, unit="batch", leave=False):
        index = order[start:start + per_unit]
        if paired:
            batch = collate_pairs([units[i] for i in index], model.config.pad_token_id)
            targets = index + [len(units) + i for i in index]
        else:
            batch = collate([units[i][0] for i in index], model.config.pad_token_id)
            targets = index
        batch = {k: v.to(device) for k, v in batch.items()}
        for i, value in zip(targets, reward_forward(model, batch)[0].tolist()):
            rewards[i] = value
    return rewards


