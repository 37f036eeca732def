"""The method adapter interface: what a W2S student method may change, and nothing more.

A method sees the student before training (``setup``) and the loss of every training step
(``loss``). It picks which labels the student learns from: the weak teacher's soft labels
(``labels = "teacher"``, every W2S method) or the gold labels of the same pairs
(``labels = "gold"``, the ceiling). Parameters are a pydantic model that rejects unknown keys, so
``--param`` typos fail before any work is done.
"""
from __future__ import annotations

import typing
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, ValidationError
from torch import nn

from bench.errors import BadParamsError


class NoParams(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass
class Step:
    """One training step: rewards of each side, the target P(a preferred), and what produced them."""

    r_a: torch.Tensor                  # (B,) reward of response a
    r_b: torch.Tensor                  # (B,) reward of response b
    target: torch.Tensor               # (B,) soft label q = P(a > b), or the gold 0/1
    batch: dict[str, torch.Tensor]     # input_ids, attention_mask, token_type_ids, response_mask; a rows then b rows
    hidden_states: tuple[torch.Tensor, ...] | None   # (embeddings, layer 1, ..., layer L) when the method asks


class Method:
    name: ClassVar[str]
    summary: ClassVar[str]
    labels: ClassVar[Literal["teacher", "gold"]] = "teacher"
    needs_hidden_states: ClassVar[bool] = False
    Params: ClassVar[type[BaseModel]] = NoParams

    def __init__(self, params: BaseModel | None = None):
        self.params = params if params is not None else self.Params()

    def setup(self, student: nn.Module) -> None:
        """Called once with the freshly loaded student, before the first step."""

    def loss(self, step: Step) -> tuple[torch.Tensor, dict[str, float]]:
        raise NotImplementedError


def soft_bt_loss(r_a: torch.Tensor, r_b: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Soft-label Bradley-Terry cross-entropy -[q log s(d) + (1-q) log s(-d)], d = r_a - r_b, batch mean."""
    return F.binary_cross_entropy_with_logits(r_a - r_b, target)


def describe_params(cls: type[Method]) -> str:
    fields = cls.Params.model_fields
    if not fields:
        return "(none)"
    parts = []
    for name, info in fields.items():
        choices = typing.get_args(info.annotation) if typing.get_origin(info.annotation) is typing.Literal else ()
        annotation = "|".join(map(str, choices)) if choices else getattr(info.annotation, "__name__", str(info.annotation))
        parts.append(f"{name}: {annotation} = {info.default!r}")
    return ", ".join(parts)


def parse_params(cls: type[Method], values: dict[str, object]) -> BaseModel:
    """Validate ``values`` (strings from the command line are coerced) against the method's params."""
    try:
        return cls.Params(**values)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}" for e in error.errors())
        raise BadParamsError(f"bad params for method {cls.name!r}: {problems}. "
                         f"Valid params: {describe_params(cls)}") from None
