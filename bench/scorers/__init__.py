"""How a trained student's rewards r(x) on the eval sets are computed (``--scorer``).

- ``hf`` (default): ``bench.models.score``, the trained model itself, in length-sorted batches.
- ``vllm``: vLLM's pooling runner (``bench/scorers/vllm.py``, ``pip install -e '.[vllm]'``), for
  decoder reward models of 7-8B on a GPU: the same token ids, read at the same last token.

A scorer is ``scorer(model, sequences, batch_size, desc, *, spec) -> list[float]``, one reward per
sequence in order (``spec``: the model's ModelSpec). The teacher is always scored with ``hf``
(its scores are cached and shared by every method).
"""
from __future__ import annotations

from typing import Callable

from bench.registry import Registry

Scorer = Callable[..., list[float]]


def score_with_model(model, sequences, batch_size: int, desc: str = "scoring", *, spec=None) -> list[float]:
    from bench.models import score

    return score(model, sequences, batch_size, desc=desc)


SCORERS: Registry[Scorer] = Registry("scorer")
SCORERS.register("hf", score_with_model)
SCORERS.register("vllm", "bench.scorers.vllm:score_with_vllm")
