"""Reward models: a transformers backbone with a scalar head, and the exact token layout they read.

``AutoModelForSequenceClassification(num_labels=1)`` is the reward model for both families:
encoders read the first token ([CLS]); decoders the last non-pad token. Dropout is switched off
everywhere, in training as well as scoring (as TRL's RewardTrainer does by default): scores are
then a pure function of the weights, and ANCHOR's penalty is exactly zero before the first step.
"""
from __future__ import annotations

import copy
import functools
import hashlib
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from bench.data import Message
from bench.errors import BenchError
from bench.io import sha256_file
from bench.registry import import_object
from bench.specs import ModelSpec


def resolve_path(spec: ModelSpec) -> str:
    """A local folder from the resolver when there is one (offline packages), else the hub id."""
    if spec.path_resolver:
        try:
            return str(import_object(spec.path_resolver)())
        except ImportError as error:
            raise BenchError(f"model {spec.name!r} needs {spec.path_resolver!r}: {error}. "
                              f"Install the package that provides it (pip install -e .)") from None
    return spec.path


@functools.lru_cache(maxsize=None)
def _folder_weights_sha256(folder: str) -> str:
    """sha256 over the names and sha256s of a folder's weight files (hashed once per process)."""
    files = sorted(p for p in Path(folder).iterdir() if p.suffix in (".safetensors", ".bin"))
    return hashlib.sha256("".join(f"{f.name}:{sha256_file(f)}\n" for f in files).encode()).hexdigest()


def weights_revision(spec: ModelSpec) -> dict:
    """What exactly was loaded: the hub commit, or for a local folder the sha256 of its weight files."""
    path = Path(resolve_path(spec))
    if path.is_dir():
        return {"source": "local", "path": spec.path, "weights_sha256": _folder_weights_sha256(str(path)),
                "requested_revision": spec.revision}
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(spec.path, revision=spec.revision)
    return {"source": "hub", "path": spec.path, "requested_revision": spec.revision,
            "commit": getattr(config, "_commit_hash", None)}


def disable_dropout(model: nn.Module) -> nn.Module:
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return model


def load_tokenizer(spec: ModelSpec):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_path(spec), revision=spec.revision)


def load_reward_model(spec: ModelSpec, seed: int) -> nn.Module:
    """The backbone with a freshly initialised scalar head; ``seed`` fixes the head's initial weights."""
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging

    overrides = {"num_hidden_layers": spec.num_layers} if spec.num_layers else {}
    torch.manual_seed(seed)
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()  # cutting layers and adding a head are intended, not news
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            resolve_path(spec), revision=spec.revision, num_labels=1, dtype=getattr(torch, spec.dtype), **overrides)
    finally:
        logging.set_verbosity(verbosity)
    if model.config.pad_token_id is None:
        raise BenchError(f"model {spec.name!r} has no pad token id; decoder support sets one (see issue 3)")
    return disable_dropout(model)


def frozen_copy(model: nn.Module) -> nn.Module:
    reference = copy.deepcopy(model).eval()
    reference.requires_grad_(False)
    return reference


def num_layers(model: nn.Module) -> int:
    return int(model.config.num_hidden_layers)


# --- token layout ---------------------------------------------------------------------------------
@dataclass(slots=True)
class Encoded:
    """One (prompt, response) sequence: ``response_mask`` is 1 exactly on the response's own tokens."""

    input_ids: list[int]
    token_type_ids: list[int]
    response_mask: list[int]
    truncated: bool


def prompt_text(prompt: tuple[Message, ...]) -> str:
    """Chat messages as plain text for an encoder: a lone user turn as is, otherwise 'role: content' lines."""
    if len(prompt) == 1 and prompt[0][0] == "user":
        return prompt[0][1]
    return "\n".join(f"{role}: {content}" for role, content in prompt)


class EncoderFormatter:
    """[CLS] prompt [SEP] response [SEP] (or the tokenizer's own pair template), built from token ids.

    The prompt and the response are tokenized separately and joined by the tokenizer's post-processor,
    so the response mask is exact: it comes from the post-processor's sequence ids, not from
    re-tokenizing a concatenated string. Truncation: the prompt from the left (the latest turn is
    kept) down to a quarter of the budget, then the response from the right.
    """

    def __init__(self, tokenizer, max_length: int):
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise TypeError("encoder reward models need a fast (tokenizers-backed) tokenizer")
        self.backend = copy.deepcopy(backend)
        self.backend.no_truncation()
        self.backend.no_padding()
        self.max_length = max_length
        self.budget = max_length - self.backend.num_special_tokens_to_add(True)
        if self.budget < 8:
            raise BenchError(f"max_length {max_length} leaves no room for a prompt and a response")

    def encode(self, prompt: tuple[Message, ...], response: str) -> Encoded:
        p = self.backend.encode(prompt_text(prompt), add_special_tokens=False)
        r = self.backend.encode(response, add_special_tokens=False)
        excess = len(p.ids) + len(r.ids) - self.budget
        if excess > 0:
            keep_prompt = max(len(p.ids) - excess, min(len(p.ids), self.budget // 4))
            p.truncate(keep_prompt, direction="left")
            r.truncate(self.budget - keep_prompt, direction="right")
        full = self.backend.post_process(p, r, add_special_tokens=True)
        return Encoded(input_ids=list(full.ids), token_type_ids=list(full.type_ids),
                       response_mask=[int(s == 1) for s in full.sequence_ids], truncated=excess > 0)


def formatter_for(spec: ModelSpec, tokenizer, max_length: int) -> EncoderFormatter:
    if spec.architecture == "encoder":
        return EncoderFormatter(tokenizer, max_length)
    raise BenchError(f"model {spec.name!r}: decoder reward models (chat templates) are not supported yet")


def collate(sequences: list[Encoded], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad to the longest sequence; padding is masked out of attention and of the response mask."""
    width = max(len(s.input_ids) for s in sequences)

    def pad(rows: list[list[int]], value: int) -> torch.Tensor:
        return torch.tensor([row + [value] * (width - len(row)) for row in rows], dtype=torch.long)

    return {
        "input_ids": pad([s.input_ids for s in sequences], pad_id),
        "attention_mask": pad([[1] * len(s.input_ids) for s in sequences], 0),
        "token_type_ids": pad([s.token_type_ids for s in sequences], 0),
        "response_mask": pad([s.response_mask for s in sequences], 0),
    }


def model_inputs(batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}


@torch.no_grad()
def score(model: nn.Module, sequences: list[Encoded], batch_size: int, desc: str = "scoring") -> list[float]:
    """r(x) for each sequence, in order. Sorted by length so batches carry little padding; the
    attention mask keeps padding out, so scores do not depend on the batch size (to float rounding)."""
    from tqdm.auto import tqdm

    model.eval()
    pad_id = model.config.pad_token_id
    order = sorted(range(len(sequences)), key=lambda i: len(sequences[i].input_ids))
    rewards = [0.0] * len(sequences)
    for start in tqdm(range(0, len(order), batch_size), desc=desc, unit="batch", leave=False):
        index = order[start:start + batch_size]
        batch = collate([sequences[i] for i in index], pad_id)
        logits = model(**model_inputs(batch)).logits[:, 0].float().tolist()
        for i, value in zip(index, logits):
            rewards[i] = value
    return rewards
