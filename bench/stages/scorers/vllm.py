"""Scoring a decoder reward model with vLLM's pooling runner (``--scorer vllm``).

The trained student is written to a temporary folder (LoRA adapters merged into the weights),
moved off the GPU, and loaded by vLLM as a sequence-classification model (``runner="pooling"``).
Each sequence goes in as the exact token ids our ``DecoderFormatter`` made (no re-tokenizing, no
chat template applied again), and its reward is the ``classify`` output with no activation: the
score head on the last token, which is the readout our HF models use. Results match
``bench.stages.batches.score`` up to the kernels' rounding (the head runs in the model's dtype in vLLM,
in float32 here). Needs vLLM with ``PoolingParams(use_activation=...)`` and a CUDA GPU;
tests/test_speed_features.py compares it with HF where both exist and is skipped elsewhere (it
has not run on the development machine, which has no GPU).
"""
from __future__ import annotations

import gc
import tempfile

import torch

from bench.core.errors import BenchError


def export_for_vllm(model, spec, folder: str) -> None:
    """The model as a plain transformers checkpoint (LoRA merged) with its tokenizer."""
    from bench.core.anatomy import is_lora_model
    from bench.stages.models import load_tokenizer

    plain = model.merge_and_unload() if is_lora_model(model) else model
    plain.save_pretrained(folder)
    load_tokenizer(spec).save_pretrained(folder)


def check_vllm(spec) -> None:
    """What --scorer vllm needs, checked before any work: a decoder student, vLLM installed and a CUDA GPU."""
    import importlib.util

    if spec.architecture != "decoder":
        raise BenchError(f"--scorer vllm scores decoder reward models; {spec.name!r} is an {spec.architecture}. "
                         f"Use --scorer hf")
    if importlib.util.find_spec("vllm") is None:
        raise BenchError("--scorer vllm needs vLLM: pip install -e '.[vllm]' on a machine with a CUDA GPU")
    if not torch.cuda.is_available():
        raise BenchError("--scorer vllm needs a CUDA GPU; use --scorer hf on this machine")


def score_with_vllm(model, sequences, batch_size: int, desc: str = "scoring", *, spec, pairs: bool = False
                    ) -> list[float]:
    """Rewards of ``sequences`` in order (vLLM batches them itself, and its prefix cache finds the
    prompts pairs share; ``batch_size`` and ``pairs`` are the HF scorer's)."""
    check_vllm(spec)
    try:
        from vllm import LLM, PoolingParams
    except ImportError as error:  # installed but broken (a CUDA or torch mismatch): say so
        raise BenchError(f"--scorer vllm: vLLM is installed but does not import ({error}); reinstall it with "
                         "pip install -e '.[vllm]'") from None
    dtype = str(model.get_input_embeddings().weight.dtype).removeprefix("torch.")
    with tempfile.TemporaryDirectory(prefix="shiftbench-vllm-") as folder:
        export_for_vllm(model, spec, folder)
        model.to("cpu")  # vLLM takes most of the GPU's memory for itself
        torch.cuda.empty_cache()
        llm = LLM(model=folder, runner="pooling", dtype=dtype, max_model_len=max(len(s.input_ids) for s in sequences),
                  enforce_eager=True, seed=0)
        try:
            try:  # the raw logit: no sigmoid (vLLM's default for a one-label classifier)
                params = PoolingParams(use_activation=False)
            except TypeError:  # vLLM releases before the flag's rename
                params = PoolingParams(activation=False)
            outputs = llm.encode([{"prompt_token_ids": s.input_ids} for s in sequences], pooling_task="classify",
                                 pooling_params=params, use_tqdm=True)
            return [float(out.outputs.data.reshape(-1)[0]) for out in outputs]
        finally:
            del llm
            gc.collect()
            torch.cuda.empty_cache()
