"""Reward models: a transformers backbone with a scalar head, loaded, initialised and described.

``AutoModelForSequenceClassification(num_labels=1)`` is the reward model for both families. Where
its head reads is the spec's readout (``READOUTS``): by default encoders read the first token
([CLS]); decoders the last token whose id is not the pad id, and the pad id is one the tokenizer
can never produce (``bench.core.formatting.dedicated_pad_id``), so with right padding that is always the
sequence's last real token (``bench.core.formatting.READOUTS``). Every forward that needs rewards goes
through ``bench.stages.batches.reward_forward``. Dropout is switched off everywhere,
in training as well as scoring (as TRL's RewardTrainer does by default): scores are then a pure
function of the weights, and ANCHOR's penalty is exactly zero before the first step.
The token layout (what a model reads) lives in ``bench.core.formatting``, running a model on batches in
``bench.stages.batches``; the pretrained reference a
penalty compares the student with (ANCHOR's), in ``bench.stages.reference``.
"""
from __future__ import annotations

import copy
import functools
import hashlib
import warnings
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from torch import nn

from bench.core.anatomy import head_of, inner_model
from bench.core.errors import BenchError
from bench.core.formatting import (  # noqa: F401 (re-exported)
    READOUTS,
    DecoderFormatter,
    Encoded,
    EncoderFormatter,
    dedicated_pad_id,
    formatter_for,
    prompt_text,
    readout_of,
)
from bench.core.io import sha256_file
from bench.core.registry import import_object
from bench.core.specs import ModelSpec


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
        from bench.smollm2 import source_of

        revision = {"source": "local", "path": spec.path, "weights_sha256": _folder_weights_sha256(str(path)),
                    "requested_revision": spec.revision}
        converted = source_of(path)   # a folder converted from another format (the smol pair's GGUF)
        return {**revision, "converted_from": converted} if converted else revision
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(spec.path, revision=spec.revision)
    return {"source": "hub", "path": spec.path, "requested_revision": spec.revision,
            "commit": getattr(config, "_commit_hash", None)}


def max_positions(spec: ModelSpec) -> int | None:
    """The longest sequence the model can read (its position table), when its config says."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(resolve_path(spec), revision=spec.revision)
    return getattr(config, "max_position_embeddings", None)


def disable_dropout(model: nn.Module) -> nn.Module:
    for module in model.modules():
        if isinstance(module, nn.Dropout):
            module.p = 0.0
    return model


def load_tokenizer(spec: ModelSpec):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(resolve_path(spec), revision=spec.revision)


def resolve_dtype(name: str) -> torch.dtype:
    """``auto``: bfloat16 on a CUDA device that supports it, else float32 (bf16 on CPU is slow and
    fp16 overflows in training). The resolved dtype is what to record in results."""
    if name == "auto":
        return torch.bfloat16 if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else torch.float32
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
        raise BenchError(f"dtype {name!r} is not a torch floating-point type; use float32, bfloat16, float16 or auto")
    return dtype


class LoraSettings(BaseModel):
    """ModelSpec.lora, checked. ``target_modules``: module names as peft matches them (e.g. q_proj, v_proj)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    r: int = Field(gt=0)
    alpha: float = Field(gt=0)
    dropout: float = Field(0.0, ge=0.0, lt=1.0)   # dropout is switched off everywhere anyway (see above)
    target_modules: tuple[str, ...] = Field(min_length=1)


def lora_settings(spec: ModelSpec) -> LoraSettings | None:
    if spec.lora is None:
        return None
    try:
        return LoraSettings(**dict(spec.lora))
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise BenchError(f"model {spec.name!r}: bad lora settings ({problems}); expected "
                         f"r=int, alpha=float, dropout=float, target_modules=tuple of module names") from None


def _float32_head(model: nn.Module) -> None:
    """Keep the reward head in float32 when the backbone is not: its updates are small against its
    weights, and bf16 would round many of them away. Its input is cast up on the way in."""
    _, head = head_of(model)
    head.float()
    head.register_forward_pre_hook(lambda module, args: tuple(a.float() if torch.is_tensor(a) else a for a in args))


def _apply_lora(model: nn.Module, spec: ModelSpec, settings: LoraSettings) -> nn.Module:
    """peft LoRA on the backbone; the head is trained in full (``modules_to_save``). peft keeps the
    adapters in float32 over a bf16 backbone (``autocast_adapter_dtype``)."""
    try:
        from peft import LoraConfig, TaskType, get_peft_model
    except ImportError:
        raise BenchError(f"model {spec.name!r} asks for LoRA, which needs peft: pip install -e '.[lora]'") from None
    head_name, _ = head_of(model)
    config = LoraConfig(task_type=TaskType.SEQ_CLS, r=settings.r, lora_alpha=settings.alpha,
                        lora_dropout=settings.dropout, target_modules=list(settings.target_modules),
                        modules_to_save=[head_name])
    try:
        with warnings.catch_warnings():  # peft still asks transformers 5 by the deprecated name
            warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
            return get_peft_model(model, config)
    except ValueError as error:  # e.g. target modules not found in the model
        raise BenchError(f"model {spec.name!r}: LoRA could not be applied: {error}") from None


def load_reward_model(spec: ModelSpec, seed: int) -> nn.Module:
    """The backbone with a freshly initialised scalar head; ``seed`` fixes the head's (and LoRA's) initial weights.

    Decoders get the dedicated pad id (the embedding matrix grows by the rows needed to hold it,
    which are never attended to) and no KV cache. Options from the spec: dtype, gradient
    checkpointing (non-reentrant, so frozen embeddings and LoRA need no input-grad hooks), LoRA.
    """
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging

    dtype = resolve_dtype(spec.dtype)
    settings = lora_settings(spec)
    overrides = {"num_hidden_layers": spec.num_layers} if spec.num_layers else {}
    torch.manual_seed(seed)
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()  # cutting layers and adding a head are intended, not news
    try:
        model = AutoModelForSequenceClassification.from_pretrained(
            resolve_path(spec), revision=spec.revision, num_labels=1, dtype=dtype, **overrides)
    finally:
        logging.set_verbosity(verbosity)
    if spec.architecture == "decoder":
        pad_id = dedicated_pad_id(load_tokenizer(spec))
        if pad_id >= model.get_input_embeddings().num_embeddings:
            model.resize_token_embeddings(pad_id + 1, mean_resizing=False)
        model.config.pad_token_id = pad_id
        model.config.use_cache = False
    elif model.config.pad_token_id is None:
        raise BenchError(f"model {spec.name!r} has no pad token id; set one in its config")
    if dtype != torch.float32:
        _float32_head(model)
        if settings is None:
            warnings.warn(f"model {spec.name!r}: its {spec.dtype} weights ({dtype}) will be trained in full; AdamW "
                          f"updates below that dtype's resolution are lost. Use LoRA (ModelSpec.lora) or float32",
                          stacklevel=2)
    mark_reward_model(model, spec)
    if spec.gradient_checkpointing:  # transformers 5 renamed it; 4.x has the old name only
        enable = getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable
        enable({"use_reentrant": False})
    if settings is not None:
        model = _apply_lora(model, spec, settings)
    return disable_dropout(model)


def frozen_copy(model: nn.Module) -> nn.Module:
    reference = copy.deepcopy(model).eval()
    reference.requires_grad_(False)
    return reference


def num_layers(model: nn.Module) -> int:
    return int(model.config.num_hidden_layers)


LM_HEAD_NAMES = ("lm_head.weight", "embed_out.weight")   # a causal LM's output matrix in its checkpoint


def pretrained_lm_head(model: nn.Module) -> tuple[torch.Tensor, str]:
    """A decoder reward model's language-modelling head, which AutoModelForSequenceClassification does
    not have: the (vocab, hidden) matrix whose product with the last layer's (final-norm) states gives the
    pretrained causal LM's next-token logits, and where it came from. Tied (``tie_word_embeddings``, as in
    SmolLM2, Qwen2.5-0.5B, Llama-3.2-1B): the model's own input embeddings, detached. Untied (Qwen2.5-7B,
    Llama-3.1-8B): ``lm_head.weight`` read once from the checkpoint's safetensors (the sequence-classification
    load drops it), in the embeddings' dtype and on their device. Either way only the checkpoint's own
    vocabulary rows: the dedicated pad row ``load_reward_model`` may add is no token the LM predicts."""
    from transformers import AutoConfig

    inner = inner_model(model)
    config = inner.config
    path, revision = config._name_or_path, getattr(config, "_commit_hash", None)
    embeddings = inner.get_input_embeddings().weight
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    if getattr(text, "tie_word_embeddings", False):
        pretrained = AutoConfig.from_pretrained(path, revision=revision)
        vocab = (pretrained.get_text_config() if hasattr(pretrained, "get_text_config") else pretrained).vocab_size
        return embeddings.detach()[:vocab], "tied: the input embeddings"
    name, weight = _checkpoint_tensor(path, revision, LM_HEAD_NAMES)
    return weight.to(device=embeddings.device, dtype=embeddings.dtype), f"untied: {name} from the checkpoint"


def _checkpoint_tensor(path: str, revision: str | None, names: tuple[str, ...]) -> tuple[str, torch.Tensor]:
    """The first of ``names`` found in a checkpoint's safetensors (one file or shards with an index), read
    alone: only the file holding it is opened, and only that tensor is loaded."""
    import json

    from safetensors import safe_open
    from transformers.utils import cached_file

    def fetch(filename: str) -> str | None:
        return cached_file(path, filename, revision=revision, _raise_exceptions_for_missing_entries=False,
                           _raise_exceptions_for_connection_errors=False)

    index = fetch("model.safetensors.index.json")
    if index is not None:
        weight_map = json.loads(Path(index).read_text())["weight_map"]
        files = {name: weight_map[name] for name in names if name in weight_map}
    else:
        files = {name: "model.safetensors" for name in names}
    for name, filename in files.items():
        resolved = fetch(filename)
        if resolved is None:
            continue
        with safe_open(resolved, framework="pt") as f:
            if name in f.keys():
                return name, f.get_tensor(name)
    raise BenchError(f"model {path!r}: its language-modelling head ({' or '.join(names)}) is not in its safetensors "
                     f"checkpoint, and its config does not tie it to the input embeddings. Use a decoder checkpoint "
                     f"saved as safetensors with its LM head (e.g. save the AutoModelForCausalLM with save_pretrained)")


def model_provenance(spec: ModelSpec) -> dict[str, Any]:
    """How a model is loaded beyond its spec: the dtype ``auto`` resolved to on this machine."""
    return {"dtype": str(resolve_dtype(spec.dtype)).removeprefix("torch.")}


def mark_reward_model(model: nn.Module, spec: ModelSpec) -> nn.Module:
    """What ``load_reward_model`` sets on the models it loads, for a reward model loaded elsewhere
    (bench.stages.evaluate, a checkpoint trained outside the harness): where its reward is read, and whether
    it scores a pair as one shared-prompt row (decoders)."""
    model.shiftbench_readout = readout_of(spec)
    # Decoders read a pair as one row with its prompt computed once; encoders attend both ways, so a
    # pair's responses cannot share a row (bench.stages.pair_rows).
    model.shiftbench_pair_rows = spec.architecture == "decoder"
    return model
