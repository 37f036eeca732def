"""Shared-prompt rows for decoders: a preference pair as one row, its prompt computed once.

In a pair the two responses share their prompt, and a causal decoder's states over the prompt do not
depend on what follows. So a pair is one row ``[prefix, rest of a, rest of b]``: a's tokens attend
causally as in a's own sequence; b's tokens after the shared prefix attend to the prefix and causally
to themselves, never to a, and take the positions they have in b's own sequence (continuing from the
end of the prefix). Every state of a's and b's tokens is then the state the two-sequence path gives
(to float rounding), and so are the rewards, read at the last token of a and of b, and the gradients.

The prefix is the longest common token prefix of a and b that ends before either response begins:
the whole templated prompt when both were encoded alike, less when truncation cut their prompts
differently (then the rows are longer, never wrong). Encoders attend both ways, so they keep the
two-sequence path (``bench.stages.batches.collate``).

A batch of pair rows carries, beside the ids: ``pair_attention`` (n, T, T), True where a query
token may attend to a key; ``position_ids``; ``response_mask`` over a's and b's response tokens;
``segment`` (1 on a's tokens and the prefix, 2 on b's own tokens, 0 on padding); ``readout`` (n, 2),
the positions of a's and b's last tokens; and per sequence (a's of every pair, then b's) its length
and response-token count, which is what a lookup keyed by sequences needs.
"""
from __future__ import annotations

import torch

from bench.core.formatting import Encoded


def shared_prefix(a: Encoded, b: Encoded) -> int:
    """How many leading tokens a and b share before either's response begins."""
    ids_a, _, mask_a = a.arrays()
    ids_b, _, mask_b = b.arrays()
    limit = min(_response_start(mask_a), _response_start(mask_b))
    n = 0
    while n < limit and ids_a[n] == ids_b[n]:
        n += 1
    return n


def _response_start(mask) -> int:
    for i, m in enumerate(mask):
        if m:
            return i
    return len(mask)


def row_length(a: Encoded, b: Encoded) -> int:
    return len(a) + len(b) - shared_prefix(a, b)


def collate_pairs(pairs: list[tuple[Encoded, Encoded]], pad_id: int) -> dict[str, torch.Tensor]:
    """One right-padded row per pair (the module docstring has the layout and the keys)."""
    prefixes = [shared_prefix(a, b) for a, b in pairs]
    width = max(len(a) + len(b) - p for (a, b), p in zip(pairs, prefixes))
    n = len(pairs)
    ids = torch.full((n, width), pad_id, dtype=torch.long)
    positions = torch.zeros((n, width), dtype=torch.long)
    response = torch.zeros((n, width), dtype=torch.long)
    segment = torch.zeros((n, width), dtype=torch.long)
    attention = torch.zeros((n, width, width), dtype=torch.bool)
    readout = torch.zeros((n, 2), dtype=torch.long)
    causal = torch.ones((width, width), dtype=torch.bool).tril()
    for row, ((a, b), p) in enumerate(zip(pairs, prefixes)):
        la, lb = len(a), len(b)
        end = la + lb - p   # the row's real tokens are [0, end)
        ids_a, _, mask_a = (torch.frombuffer(x, dtype=d) for x, d in zip(a.arrays(), (torch.int32, torch.int8, torch.int8)))
        ids_b, _, mask_b = (torch.frombuffer(x, dtype=d) for x, d in zip(b.arrays(), (torch.int32, torch.int8, torch.int8)))
        ids[row, :la] = ids_a
        ids[row, la:end] = ids_b[p:]
        positions[row, :la] = torch.arange(la)
        positions[row, la:end] = torch.arange(p, lb)
        response[row, :la] = mask_a
        response[row, la:end] = mask_b[p:]
        segment[row, :la] = 1
        segment[row, la:end] = 2
        attention[row, :la, :la] = causal[:la, :la]            # a (with the prefix): causal, as alone
        attention[row, la:end, :p] = True                      # b: the shared prefix...
        attention[row, la:end, la:end] = causal[:end - la, :end - la]   # ...and itself, causally; never a
        pad = torch.arange(end, width)
        attention[row, pad, pad] = True   # padding attends to itself only: finite, and read by nothing
        readout[row] = torch.tensor([la - 1, end - 1])
    lengths = torch.tensor([len(a) for a, _ in pairs] + [len(b) for _, b in pairs])
    counts = torch.tensor([sum(a.arrays()[2]) for a, _ in pairs] + [sum(b.arrays()[2]) for _, b in pairs])
    return {"input_ids": ids, "pair_attention": attention, "position_ids": positions, "response_mask": response,
            "segment": segment, "readout": readout, "sequence_lengths": lengths, "sequence_response_counts": counts}


def additive_mask(attention: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The (n, 1, T, T) float mask transformers takes as a prepared 4D mask: 0 where a token attends,
    the dtype's lowest value where it does not (every attention backend that takes a mask adds it)."""
    mask = torch.zeros(attention.shape, dtype=dtype, device=attention.device)
    return mask.masked_fill(~attention, torch.finfo(dtype).min).unsqueeze(1)


def response_states(hidden: torch.Tensor, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """A layer's states at the batch's response tokens, (tokens, hidden size), in the order of the
    two-sequence path: every a sequence's tokens, then every b's, each in row order."""
    keep = batch["response_mask"].bool()
    if "segment" not in batch:
        return hidden[keep]
    segment = batch["segment"]
    return torch.cat([hidden[keep & (segment == 1)], hidden[keep & (segment == 2)]])


def sequence_sizes(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Per sequence of the batch (a's, then b's), its response-token count and its length."""
    if "sequence_lengths" in batch:
        return batch["sequence_response_counts"], batch["sequence_lengths"]
    return batch["response_mask"].sum(1), batch["attention_mask"].sum(1)
