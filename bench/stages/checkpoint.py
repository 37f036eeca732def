"""A student trained outside the harness, as ``bench evaluate`` takes it: where its checkpoint (and a
LoRA adapter) is, local or on the Hub at a pinned revision (``resolve``, ``expand``), what is checked
before any teacher or score (``check_student``: safetensors weights, a trained reward head, the pair's
strong model and tokenizer), and loading it (``load_student``)."""
from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.core.errors import BenchError
from bench.core.io import sha256_file

WEIGHTS = "*.safetensors"
# What a checkpoint from the Hub needs: config, tokenizer files, safetensors weights (never pickles).
HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja", "*.tiktoken"]
PLACEHOLDERS = ("seed", "source", "cell")
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")



# --- where a checkpoint is -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Checkpoint:
    folder: Path                 # a local folder holding it (a hub snapshot is one)
    record: dict[str, Any]       # what the result records: source, path or hub id and commit, weights' sha256


def _public(where: str) -> str:
    """A local path as results record it: absolute paths and paths with '..' by their last component
    (bench.submissions.commands' rule for commands), others as given."""
    from bench.submissions.commands import last_component

    if where.startswith(("/", "\\", "~")) or re.match(r"[A-Za-z]:[/\\]", where) or ".." in re.split(r"[/\\]+", where):
        return last_component(where)
    return where


def _weights(folder: Path) -> dict[str, str]:
    return {p.name: sha256_file(p) for p in sorted(folder.glob(WEIGHTS))}


def resolve(where: str, revision: str | None, option: str) -> Checkpoint:
    """``where`` as a local folder, else as a hub id downloaded (config, tokenizer, safetensors) at
    ``revision``; refused when it holds no safetensors weights."""
    local = Path(where).expanduser()
    if local.exists() or where.startswith(("/", "./", "../", "~")):
        if not local.is_dir():
            raise BenchError(f"{option} {where}: not a folder. Fix: give the folder the model was saved to "
                             "(save_pretrained / trainer.save_model) or a hub id (org/name)")
        if revision is not None:
            raise BenchError(f"{option} {where} is a local folder; --revision pins a hub id's commit. Fix: drop "
                             "--revision, or give the hub id")
        folder, record = local, {"source": "local", "path": _public(where)}
    else:
        from huggingface_hub import snapshot_download

        try:
            folder = Path(snapshot_download(where, revision=revision, allow_patterns=HUB_FILES))
        except Exception as error:  # noqa: BLE001 -- hub, network and validation errors alike: say which
            at = f" at revision {revision}" if revision else ""
            raise BenchError(f"{option} {where}: no local folder of that name, and the Hub gives no model {where}{at} "
                             f"({type(error).__name__}: {str(error).splitlines()[0][:200] if str(error) else ''}). "
                             "Fix: give a local folder, or a hub id and revision that exist (gated models need "
                             "`huggingface-cli login`; offline, the model must be in the Hub cache)") from None
        record = {"source": "hub", "hub_id": where, "requested_revision": revision, "commit": folder.name}
    files = _weights(folder)
    if not files:
        pickled = sorted(p.name for p in folder.glob("*.bin")) + sorted(p.name for p in folder.glob("*.pt"))
        raise BenchError(f"{option} {where}: no safetensors weights in it" + (
            f" (it has {', '.join(pickled[:3])}: pickled weights run code when loaded, so bench evaluate does not "
            "load them)" if pickled else "") + ". Fix: save the model with save_pretrained(DIR) (safetensors is "
            "its default) or convert the weights to safetensors")
    digest = hashlib.sha256("".join(f"{name}:{sha}\n" for name, sha in files.items()).encode()).hexdigest()
    return Checkpoint(folder, {**record, "weights_sha256": digest, "files": files})


def expand(template: str, protocol: str, models: str, seed: int, source: str) -> str:
    """``template`` with {seed}, {source} (the short name, e.g. recipes) and {cell}
    (<protocol>/<models>/seed<N>/<source folder>, the layout of bench labels) filled in."""
    values = {"seed": seed, "source": source.split("/", 1)[-1],
              "cell": f"{protocol}/{models}/seed{seed}/{source.replace('/', '__')}"}
    try:
        return template.format_map(values)
    except (KeyError, ValueError, IndexError) as error:
        raise BenchError(f"{template!r}: bad placeholder ({error}); the placeholders are "
                         f"{', '.join('{' + p + '}' for p in PLACEHOLDERS)}") from None


# --- checking and loading a checkpoint ------------------------------------------------------------------
@dataclass
class Student:
    """A checked checkpoint of one cell, ready to load."""

    checkpoint: Checkpoint | None      # the model (None: the pair's strong model is the adapter's base)
    adapter: Checkpoint | None
    spec: Any                          # the ModelSpec the formatter and loader read (the pair's strong, relocated)
    formatter: Any                     # the protocol's formatter for its architecture, on its own tokenizer
    head: str                          # the head's module name (classifier, score)
    label: str                         # how to name it in messages


def _config(folder: Path, label: str, revision: str | None = None):
    from transformers import AutoConfig

    try:
        return AutoConfig.from_pretrained(str(folder), revision=revision, trust_remote_code=False)
    except (OSError, ValueError, KeyError) as error:
        raise BenchError(f"{label}: no usable config.json ({str(error).splitlines()[0][:200]}). Fix: save the model "
                         "with save_pretrained, which writes its config, tokenizer and weights") from None


def _weight_keys(folder: Path) -> dict[str, list[int]]:
    from safetensors import safe_open

    keys = {}
    for file in sorted(folder.glob(WEIGHTS)):
        with safe_open(str(file), "pt") as handle:
            for key in handle.keys():
                keys[key] = list(handle.get_slice(key).get_shape())
    return keys


def _head_keys(keys: dict[str, list[int]], head: str) -> dict[str, list[int]]:
    return {k: shape for k, shape in keys.items() if head in k.split(".") and k.endswith(("weight", "bias"))}


def _head_name(config) -> str:
    """The reward head's module name in this architecture, from a weightless copy of the model."""
    import torch
    from transformers import AutoModelForSequenceClassification

    from bench.core.anatomy import head_of

    one = copy.deepcopy(config)
    one.num_labels = 1
    with torch.device("meta"):
        model = AutoModelForSequenceClassification.from_config(one, trust_remote_code=False)
    return head_of(model)[0]


def _shape(config) -> dict[str, Any]:
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return {"model_type": config.model_type, "layers": getattr(text, "num_hidden_layers", None),
            "hidden_size": getattr(text, "hidden_size", None)}


def check_student(ctx, checkpoint: Checkpoint | None, adapter: Checkpoint | None, label: str) -> Student:
    """Everything about a checkpoint that can be checked without the teacher or its weights loaded."""
    from transformers import AutoTokenizer

    from bench.core.formatting import DEFAULT_READOUTS, readout_of
    from bench.stages.models import formatter_for, resolve_path

    strong = ctx.models.strong
    # the model: the checkpoint, or (an adapter without --student) the pair's strong model at its revision
    base_folder = checkpoint.folder if checkpoint is not None else Path(resolve_path(strong))
    base_revision = None if checkpoint is not None else strong.revision
    config = _config(base_folder, label, base_revision)
    if checkpoint is not None and adapter is None:
        architectures = list(getattr(config, "architectures", None) or [])
        if architectures and not any(a.endswith("ForSequenceClassification") for a in architectures):
            raise BenchError(f"{label} is a {', '.join(architectures)}: a backbone without a reward head. Fix: give "
                             "the reward model (AutoModelForSequenceClassification with num_labels=1) saved after "
                             "training, or its peft adapter with --adapter")
        if config.num_labels != 1:
            raise BenchError(f"{label} has {config.num_labels} labels ({config.id2label}); a reward model has one "
                             "(one score per sequence). Fix: train and save it with num_labels=1")
    head = _head_name(config)
    readout = readout_of(strong)
    if readout != DEFAULT_READOUTS[strong.architecture]:
        raise BenchError(f"pair {ctx.models.name!r} reads its students' rewards at {readout!r}; an "
                         "AutoModelForSequenceClassification reads its own at the "
                         f"{DEFAULT_READOUTS[strong.architecture]!r} token, as it was trained. Fix: evaluate it under "
                         f"a pair with the {DEFAULT_READOUTS[strong.architecture]!r} readout")
    # the pair's strong model is what the board compares: the same model type, depth and width
    wanted = _shape(_config(Path(resolve_path(strong)), f"the pair's strong model {strong.name}", strong.revision))
    if strong.num_layers:
        wanted["layers"] = strong.num_layers
    got = _shape(config)
    if checkpoint is None:
        got["layers"] = wanted["layers"]   # the pair's own model, cut as the pair cuts it
    if got != wanted:
        differ = ", ".join(f"{k} {got[k]} (the pair's: {wanted[k]})" for k in wanted if got[k] != wanted[k])
        raise BenchError(f"{label} is not the strong model of pair {ctx.models.name!r} ({strong.name}): {differ}. "
                         f"Fix: evaluate it under a pair whose strong model it is (--models weak=WEAK,strong=ITS_BASE), "
                         "or train the pair's strong model")
    # a trained head: in the checkpoint's weights, or in the adapter's
    keys = _head_keys(_weight_keys(checkpoint.folder), head) if checkpoint is not None else {}
    if adapter is not None:
        adapter_config = _adapter_config(adapter, label)
        keys.update(_head_keys(_weight_keys(adapter.folder), head))
        if adapter_config.get("task_type") != "SEQ_CLS":
            raise BenchError(f"{label}: the adapter's task_type is {adapter_config.get('task_type')!r}, not SEQ_CLS, so "
                             "it holds no reward head. Fix: train it with LoraConfig(task_type=TaskType.SEQ_CLS)")
    if not keys:
        where = "neither the adapter's weights nor the model's hold" if adapter is not None else "its weights hold no"
        raise BenchError(f"{label}: {where} trained reward head ({head}.*): scores would come from a "
                         "randomly initialised head. Fix: save the reward model after training (with a peft adapter, "
                         f"keep the head trainable: modules_to_save=[{head!r}], which task_type SEQ_CLS does)")
    outputs = {shape[0] for k, shape in keys.items() if k.endswith("weight") and shape}
    if outputs != {1}:
        raise BenchError(f"{label}: its reward head {head} has {sorted(outputs)} outputs; a reward model has one. "
                         "Fix: train and save it with num_labels=1")
    # the tokenizer: the adapter's, else the model's, else (an adapter on the pair's model) the pair's
    sources = [c.folder for c in (adapter, checkpoint) if c is not None] + ([] if checkpoint else [base_folder])
    tokenizer, tried = None, []
    for folder in sources:
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(folder), revision=None if folder != base_folder else
                                                      base_revision, trust_remote_code=False)
            break
        except (OSError, ValueError, KeyError, TypeError) as error:
            tried.append(f"{folder.name}: {str(error).splitlines()[0][:120]}")
    if tokenizer is None:
        raise BenchError(f"{label}: no tokenizer ({'; '.join(tried)}). Fix: save the tokenizer beside the model "
                         "(tokenizer.save_pretrained(DIR); a trainer given processing_class saves it)")
    vocab = (config.get_text_config() if hasattr(config, "get_text_config") else config).vocab_size
    largest = max(tokenizer.get_vocab().values())
    if vocab is not None and largest >= vocab:
        raise BenchError(f"{label}: its tokenizer has token ids up to {largest} but its config's vocabulary has "
                         f"{vocab} embeddings, so those tokens have none: tokenizer and model do not belong together. "
                         "Fix: save the tokenizer the model was trained with, or resize the embeddings "
                         "(model.resize_token_embeddings(len(tokenizer))) before training and saving")
    spec = dataclasses.replace(strong, name=label, path=str(base_folder), path_resolver=None, revision=base_revision,
                               num_layers=None if checkpoint is not None else strong.num_layers, lora=None)
    limit = getattr(config.get_text_config() if hasattr(config, "get_text_config") else config,
                    "max_position_embeddings", None)
    length = min(ctx.protocol.max_length, limit or ctx.protocol.max_length)
    try:
        formatter = formatter_for(spec, tokenizer, length)
    except TypeError as error:  # an encoder's slow tokenizer
        raise BenchError(f"{label}: {error}. Fix: save the fast tokenizer (tokenizer.json) with the model") from None
    return Student(checkpoint, adapter, spec, formatter, head, label)


def _adapter_config(adapter: Checkpoint, label: str) -> dict:
    try:
        config = json.loads((adapter.folder / "adapter_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        raise BenchError(f"{label}: --adapter has no readable adapter_config.json, so it is not a peft adapter. "
                         "Fix: give the folder peft's save_pretrained wrote") from None
    if not isinstance(config, dict):
        raise BenchError(f"{label}: the adapter's adapter_config.json is not a JSON object")
    return config


def load_student(student: Student):
    """The checked checkpoint as a scoring model: its dtype the pair's, dropout off, decoders given the
    harness's dedicated pad id (bench.core.formatting) so the readout is the last real token."""
    from transformers import AutoModelForSequenceClassification
    from transformers.utils import logging

    from bench.stages.models import (
        dedicated_pad_id,
        disable_dropout,
        mark_reward_model,
        resolve_dtype,
    )

    dtype = resolve_dtype(student.spec.dtype)
    overrides = {"num_hidden_layers": student.spec.num_layers} if student.spec.num_layers else {}
    if student.checkpoint is None or student.adapter is not None:
        overrides["num_labels"] = 1   # an adapter's base: its head comes from the adapter
    verbosity = logging.get_verbosity()
    logging.set_verbosity_error()   # what is missing is checked below, not printed
    try:
        model, info = AutoModelForSequenceClassification.from_pretrained(
            student.spec.path, revision=student.spec.revision, dtype=dtype, use_safetensors=True,
            trust_remote_code=False, output_loading_info=True,
            **overrides)
    except (OSError, ValueError, RuntimeError) as error:
        raise BenchError(f"{student.label}: its weights do not load as a reward model "
                         f"({str(error).splitlines()[0][:300]}). Fix: save it with save_pretrained after training") from None
    finally:
        logging.set_verbosity(verbosity)
    missing = sorted(k for k in info["missing_keys"] if student.head not in k.split("."))
    if missing or info.get("mismatched_keys"):
        shown = ", ".join(map(str, (missing or sorted(info["mismatched_keys"]))[:3]))
        raise BenchError(f"{student.label}: its weights lack or mis-shape {len(missing) or len(info['mismatched_keys'])} "
                         f"of the model's tensors (e.g. {shown}), which would be random. Fix: give the full checkpoint "
                         "save_pretrained wrote")
    if student.spec.architecture == "decoder":
        pad_id = dedicated_pad_id(student.formatter.tokenizer)
        if pad_id >= model.get_input_embeddings().num_embeddings:
            model.resize_token_embeddings(pad_id + 1, mean_resizing=False)
        model.config.pad_token_id = pad_id
        model.config.use_cache = False
    elif model.config.pad_token_id is None:
        raise BenchError(f"{student.label}: its config has no pad_token_id. Fix: set config.pad_token_id to the "
                         "tokenizer's pad id and save it again")
    mark_reward_model(model, student.spec)   # read as the harness reads its own students of this architecture
    if student.adapter is not None:
        from peft import PeftModel

        try:
            with warnings.catch_warnings():  # peft still asks transformers 5 by the deprecated name
                warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
                model = PeftModel.from_pretrained(model, str(student.adapter.folder))
        except (OSError, ValueError, RuntimeError, KeyError) as error:
            raise BenchError(f"{student.label}: the adapter does not load on its base "
                             f"({str(error).splitlines()[0][:300]}). Fix: give the base it was trained on "
                             "(--student), or none for the pair's strong model") from None
    model.requires_grad_(False)
    from bench.core.distributed import state

    return disable_dropout(model).to(state().device).eval(), str(dtype).removeprefix("torch.")


