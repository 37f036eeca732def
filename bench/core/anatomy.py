"""A reward model's parts, as the harness and the method API find them: its scalar head, and the
transformers model inside a LoRA (peft) wrapper. No loading and no stage here, so methods/api.py can
ask for them."""
from __future__ import annotations

from torch import nn

from bench.core.errors import BenchError


def head_of(model: nn.Module) -> tuple[str, nn.Module]:
    """The scalar reward head: ``score`` on decoders, ``classifier`` on BERT-style encoders."""
    for name in ("score", "classifier"):
        if isinstance(getattr(model, name, None), nn.Module):
            return name, getattr(model, name)
    raise BenchError(f"{type(model).__name__} has no score or classifier head to train as a reward head")


def inner_model(model: nn.Module) -> nn.Module:
    """The transformers model inside a peft wrapper (peft keeps it at ``base_model.model``)."""
    inner = getattr(getattr(model, "base_model", None), "model", None)
    return inner if inner is not None and hasattr(model, "peft_config") else model


def is_lora_model(model: nn.Module) -> bool:
    try:
        from peft import PeftModel
    except ImportError:
        return False
    return isinstance(model, PeftModel)
