"""Running under ``accelerate launch`` (or ``torchrun``): who writes, who waits, which rows are whose.

One process is the ordinary case and costs nothing here. With several, every process runs the
same pipeline on the same data in the same seeded order; the training loop gives each process its
contiguous shard of every batch and accelerate's DDP all-reduces the gradients (bench/stages/train.py).
Everything else (loading, teacher labels, scoring) is done by every process alike, and only the
main process writes results and cache entries, while the others wait for it at a barrier.
"""
from __future__ import annotations

import os
from typing import Callable, TypeVar

T = TypeVar("T")


def launched() -> bool:
    """Whether this process is one of several started by a launcher (accelerate, torchrun)."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1


def on_cpu() -> bool:
    """No GPU: accelerate then joins several processes over gloo (it needs to be told: ``cpu=True``)."""
    import torch

    return not torch.cuda.is_available()


def state():
    """accelerate's process state; it sets up the process group (gloo on CPU) on first use."""
    from accelerate import PartialState

    return PartialState(cpu=on_cpu())


def is_main_process() -> bool:
    return not launched() or state().is_main_process


def wait_for_everyone() -> None:
    if launched():
        state().wait_for_everyone()


def on_main_process(write: Callable[[], T]) -> T | None:
    """``write()`` on the main process only; every process returns once it is done."""
    result = write() if is_main_process() else None
    wait_for_everyone()
    return result


def shard(n: int, rank: int, world: int) -> tuple[int, int]:
    """The [start, stop) rows of ``n`` that process ``rank`` of ``world`` takes: contiguous, sizes
    differing by at most one."""
    return n * rank // world, n * (rank + 1) // world
