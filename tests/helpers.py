"""Helpers shared by several test modules (fixtures live in conftest.py)."""
from __future__ import annotations

import torch

from methods.api import Step


def step_of(r_a, r_b, q, index=0, total=1, grad=False, dtype=torch.float32) -> Step:
    """One training step's inputs from plain numbers: rewards ``r_a``, ``r_b`` (with a gradient when
    ``grad``) and targets ``q``, at step ``index`` of ``total``."""
    return Step(r_a=torch.tensor(r_a, requires_grad=grad, dtype=dtype), r_b=torch.tensor(r_b, dtype=dtype),
                target=torch.tensor(q, dtype=dtype), batch={}, hidden_states=None, index=index, total=total)


def train_examples(spec, n: int, targets, max_length: int = 64) -> list:
    """``n`` train pairs of mini/recipes encoded for model ``spec`` (chosen as a, rejected as b), pair i
    with soft label ``targets[i % len(targets)]``."""
    from bench.core.data import load_pairs
    from bench.core.protocols import DATASETS
    from bench.stages.models import formatter_for, load_tokenizer
    from bench.stages.train import TrainExample

    fmt = formatter_for(spec, load_tokenizer(spec), max_length)
    pairs = load_pairs(DATASETS.get("mini/recipes"), "train", n).pairs
    return [TrainExample(fmt.encode(p.prompt, p.chosen), fmt.encode(p.prompt, p.rejected), targets[i % len(targets)])
            for i, p in enumerate(pairs)]
