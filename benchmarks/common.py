"""What the benchmarks share: the data they train on, interleaved timing, and how they report.

Timings on a shared machine drift with the load, so compared variants run INTERLEAVED in one
process (A, B, A, B, ...: each round runs every variant once, in the same thread count) and each
comparison is the median of the per-round ratios, with their min and max as the spread.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# The real hh-rlhf helpful test rows: $SHIFTBENCH_HH_HELPFUL, else the project's shared realdata beside the checkout.
REALDATA = Path(os.environ.get("SHIFTBENCH_REALDATA", ROOT.parent / "shared" / "realdata"))
HH_HELPFUL = Path(os.environ.get("SHIFTBENCH_HH_HELPFUL", REALDATA / "hh_rlhf_helpful" / "test.jsonl.gz"))


def parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--threads", type=int, default=1, help="torch threads (default 1: the numbers in docs/performance.md)")
    p.add_argument("--repeats", type=int, default=5, help="interleaved rounds (default 5)")
    return p


def setup(threads: int) -> None:
    """Fix the thread count and print what the numbers were measured on."""
    import torch

    torch.set_num_threads(threads)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    print(f"# torch {torch.__version__}, {threads} thread(s) of {os.cpu_count()} cores, device {device}, "
          f"load average at start {load:.1f}, command: {' '.join(sys.argv)}", flush=True)


def tiny_strong(num_layers: int | None = None):
    """The offline MiniLM student of the tiny pair (optionally cut to its first layers)."""
    import dataclasses

    from bench.core.protocols import MODEL_PAIRS

    spec = MODEL_PAIRS.get("tiny").strong
    return dataclasses.replace(spec, num_layers=num_layers) if num_layers else spec


def strong_of(pair: str, num_layers: int | None = None):
    """A model pair's student (optionally cut to its first layers: the speed ratios between training
    loops do not depend on depth, every layer doing the same work)."""
    import dataclasses

    from bench.core.protocols import MODEL_PAIRS

    spec = MODEL_PAIRS.get(pair).strong
    return dataclasses.replace(spec, num_layers=num_layers) if num_layers else spec


def formatter(spec, max_length: int):
    from bench.stages.models import formatter_for, load_tokenizer

    return formatter_for(spec, load_tokenizer(spec), max_length)


def mini_pairs(source: str, n: int, split: str = "train") -> list:
    from bench.core.data import load_pairs
    from bench.core.protocols import DATASETS

    spec = DATASETS.get(source)
    return load_pairs(spec, spec.train_split if split == "train" else spec.test_split, n).pairs


def hh_pairs(limit: int | None = None) -> list:
    """The real hh-rlhf helpful-base test split (2,348 usable pairs), read with the project's own rule."""
    from bench.core.data import Pair
    from bench.datasets.hh import normalize

    if not HH_HELPFUL.exists():
        sys.exit(f"no hh-rlhf sample at {HH_HELPFUL}; set SHIFTBENCH_HH_HELPFUL to Anthropic/hh-rlhf "
                 f"helpful-base/test.jsonl.gz")
    pairs = []
    with gzip.open(HH_HELPFUL, "rt") as lines:
        for line in lines:
            pair = normalize(json.loads(line))
            if isinstance(pair, Pair):
                pairs.append(pair)
            if limit and len(pairs) == limit:
                break
    return pairs


def gold_examples(pairs: list, fmt, seed: int = 0) -> list:
    """Training examples on gold labels, each pair in a seeded random (a, b) order, as the ceiling trains."""
    from bench.stages.train import TrainExample

    rng = random.Random(seed)
    out = []
    for p in pairs:
        a_first = rng.random() < 0.5
        a, b = (p.chosen, p.rejected) if a_first else (p.rejected, p.chosen)
        out.append(TrainExample(fmt.encode(p.prompt, a), fmt.encode(p.prompt, b), 1.0 if a_first else 0.0))
    return out


def interleave(variants: dict[str, Callable[[], dict]], repeats: int, warmup: bool = True) -> dict[str, list[dict]]:
    """Run every variant once per round, ``repeats`` rounds, alternating the order each round; first
    (``warmup``) one untimed round, as the first runs in a process pay for allocator and kernel set-up."""
    runs: dict[str, list[dict]] = {name: [] for name in variants}
    names = list(variants)
    if warmup:
        for name in names:
            variants[name]()
        print("  (warm-up round done, not counted)", flush=True)
    for round_ in range(repeats):
        for name in (names if round_ % 2 == 0 else names[::-1]):
            runs[name].append(variants[name]())
            print(f"  round {round_ + 1} {name}: " + ", ".join(f"{k}={v:.4g}" for k, v in runs[name][-1].items()
                                                              if isinstance(v, (int, float))), flush=True)
    return runs


def ratio(numerator: list[float], denominator: list[float]) -> str:
    """Median of the per-round ratios, with the min and max, e.g. '1.52x (1.41-1.60, 5 rounds)'."""
    ratios = [a / b for a, b in zip(numerator, denominator)]
    return f"{statistics.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f}, {len(ratios)} rounds)"


def median(values: list[float]) -> float:
    return statistics.median(values)


def peak_rss_mb() -> float:
    """This process's peak resident memory so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class PeakMemory:
    """The highest resident memory while the block runs, sampled every 5 ms by a thread (torch's
    kernels release the GIL, so it samples during them), and the memory when the block began."""

    def __enter__(self):
        import threading

        self.start_mb = self.peak_mb = rss_mb()
        self._stop = threading.Event()

        def sample():
            while not self._stop.wait(0.005):
                self.peak_mb = max(self.peak_mb, rss_mb())

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak_mb = max(self.peak_mb, rss_mb())


class Timer:
    def __enter__(self):
        self.start = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.start


def flop_counter():
    """torch's FlopCounterMode (matrix products), plus the CPU's fused attention, for which torch
    has no formula and would count 0: the full query-key and probability-value products, forward
    2·b·h·Tq·Tk·(d_qk + d_v), backward twice that, whatever the mask (they are computed)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    def forward(query, key, value, *args, out_shape=None, **kwargs):
        (b, h, tq, dq), tk, dv = query, key[-2], value[-1]   # heads from the query: grouped keys repeat
        return 2 * b * h * tq * tk * (dq + dv)

    def backward(grad_out, query, key, value, *args, out_shape=None, **kwargs):
        return 2 * forward(query, key, value)

    aten = torch.ops.aten
    return FlopCounterMode(display=False, custom_mapping={
        aten._scaled_dot_product_flash_attention_for_cpu: forward,
        aten._scaled_dot_product_flash_attention_for_cpu_backward: backward})
