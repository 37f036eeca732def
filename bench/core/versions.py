"""What version of the code and of the platform made a cached stage or a finished cell.

A cache entry or a result is reused only when everything that decides its numbers is the same, and
that includes the code that computed them and the platform it ran on: the teacher's per-pair scores
changed (by up to 7.7e-5) between two commits whose cache key was the same, and float results
depend on the torch build, the device and the number of threads. Each key therefore holds a digest
of the source of the modules that decide its stage (``code_version``) and the platform
(``platform_version``); changing either computes the stage again instead of silently reusing it.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import inspect
from typing import Callable

# The teacher's weights, labels and scores: how pairs are split and ordered (bench.core.data), turned into
# tokens (bench.core.formatting), how the model is loaded and initialised (bench.stages.models) and run on batches (bench.stages.batches), trained
# (bench.stages.train, with its batches sharded by bench.core.distributed) and with which loss (soft-label BT from
# the method API, methods.api), the stage itself (bench.stages.teacher) and how eval sets are scored
# (bench.stages.scorers). The pipeline (the student stage) is not in it: changing it retrains no teacher.
TEACHER_CODE = ("bench.core.data", "bench.core.formatting", "bench.stages.models", "bench.core.anatomy", "bench.stages.batches", "bench.stages.train",
                "bench.core.distributed", "methods.api", "bench.stages.teacher", "bench.stages.scorers")
# The code that decides a label-stage entry: bench.stages.label_stage, and the teacher's code (the extra teachers
# are trained by it; the pretrained strong model is loaded and read by bench.stages.models and bench.core.formatting,
# which are in it too). The method's own source is in the key apart, as it is in a cell's.
LABEL_CODE = TEACHER_CODE + ("bench.stages.label_stage", "bench.core.metrics")   # metrics: the held-out error in the record
# ANCHOR's pretrained reference states: computed by bench.stages.reference from sequences of bench.core.formatting
# with the model of bench.stages.models, run by bench.stages.batches (its collate and model_inputs).
REFERENCE_CODE = ("bench.stages.reference", "bench.stages.models", "bench.core.anatomy", "bench.stages.batches", "bench.core.formatting")
# A cell's numbers: the teacher's code, the whole pipeline (student stage, misfit, writing), the
# metrics, the reference states a method may use and the scorers. The method's own file is in the
# cell key apart (``method_code``), and each dataset's loader module is added by the pipeline.
CELL_CODE = TEACHER_CODE + ("bench.stages.pipeline", "bench.core.metrics", "bench.stages.reference", "bench.stages.scorers.vllm")


@functools.lru_cache(maxsize=None)
def _module_source(name: str) -> bytes:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin or not spec.has_location:
        return f"<no source for {name}>".encode()
    with open(spec.origin, "rb") as handle:
        return handle.read()


@functools.lru_cache(maxsize=None)
def code_version(modules: tuple[str, ...], functions: tuple[Callable, ...] = ()) -> str:
    """sha256 (24 hex digits) of the source of ``modules`` (dotted names) and of ``functions``, in order."""
    digest = hashlib.sha256()
    for name in modules:
        digest.update(name.encode() + b"\0" + _module_source(name) + b"\0")
    for function in functions:
        digest.update(f"{function.__module__}.{function.__qualname__}".encode() + b"\0")
        digest.update(inspect.getsource(function).encode() + b"\0")
    return digest.hexdigest()[:24]


def platform_version() -> dict:
    """What float results depend on besides the code: the torch and transformers builds, the device
    (a GPU by its name: kernels differ between models) and torch's intra-op thread count."""
    import torch

    from bench.core.distributed import state

    device = state().device
    name = device.type
    if device.type == "cuda":
        name = f"cuda: {torch.cuda.get_device_name(device)}"
    try:
        from importlib.metadata import version
        transformers = version("transformers")
    except Exception:  # noqa: BLE001 -- a missing distribution is not an error here
        transformers = None
    return {"torch": torch.__version__, "transformers": transformers, "device": name,
            "threads": torch.get_num_threads()}
