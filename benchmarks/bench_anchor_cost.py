"""Benchmark 2: what ANCHOR costs over naive -- step time and peak memory.

Three variants train the tiny pair's student (all-MiniLM-L6-v2) with the pair's student settings on
the same mini pairs, interleaved: ``naive``; ``anchor`` as shipped (the pretrained states computed
once before training, bench/stages/reference.py); and ``anchor-live``, the paper's way (a frozen copy of the
student runs a second forward on every batch; forced with SHIFTBENCH_ANCHOR_CACHE_GB=0). It prints
the per-step time ratios over naive, the one-off precompute, the whole training's ratio, and the
peak memory of each variant measured in its own process.

    OMP_NUM_THREADS=1 python benchmarks/bench_anchor_cost.py [--pairs 128] [--repeats 5] [--threads 1]
"""
from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys

from common import (
    PeakMemory,
    Timer,
    formatter,
    gold_examples,
    interleave,
    median,
    mini_pairs,
    parser,
    ratio,
    setup,
    tiny_strong,
)

VARIANTS = {"naive": ("naive", None), "anchor": ("anchor", "4"), "anchor-live": ("anchor", "0")}


def train_once(variant: str, examples: list, memory: PeakMemory | None = None) -> dict:
    import math

    from bench.core.protocols import MODEL_PAIRS
    from bench.stages.models import load_reward_model
    from bench.stages.train import train_student
    from methods import make_method

    tiny = MODEL_PAIRS.get("tiny")
    method_name, cache_gb = VARIANTS[variant]
    if cache_gb is not None:
        os.environ["SHIFTBENCH_ANCHOR_CACHE_GB"] = cache_gb
    method = make_method(method_name, {}, tiny.defaults_for(method_name))
    import torch

    model = load_reward_model(tiny.strong, seed=0)
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    with Timer() as t, (memory or contextlib.nullcontext()):
        log = train_student(model, examples, tiny.student_train, method, seed=1, desc=variant)
    gpu = {"gpu_peak_added_mb": (torch.cuda.max_memory_allocated() - base) / 2**20} if cuda else {}
    del model
    steps = math.ceil(len(examples) / tiny.student_train.batch_size) * tiny.student_train.epochs
    precompute = log.get("anchor_reference", {}).get("seconds", 0.0)
    return {"total_s": t.seconds, "precompute_s": precompute, "step_s": (t.seconds - precompute) / steps,
            "final_loss": log["final_loss"], **gpu}


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--pairs", type=int, default=128, help="training pairs (default 128: 8 steps of 16 pairs)")
    p.add_argument("--memory-of", choices=list(VARIANTS), help=argparse.SUPPRESS)
    p.add_argument("--skip-memory", action="store_true", help="skip the per-variant peak memory runs")
    args = p.parse_args()
    setup(args.threads)
    examples = gold_examples(mini_pairs("mini/recipes", args.pairs), formatter(tiny_strong(), 64))
    if args.memory_of:  # one variant in a fresh process: its peak memory is its own
        memory = PeakMemory()
        train_once(args.memory_of, examples, memory)
        print(f"PEAK {memory.start_mb:.1f} {memory.peak_mb:.1f}")
        return

    print(f"## step time: {args.pairs} mini/recipes pairs, batch 16, 1 epoch, max length 64, interleaved")
    runs = interleave({v: (lambda v=v: train_once(v, examples)) for v in VARIANTS}, args.repeats)
    step = {v: [r["step_s"] for r in rs] for v, rs in runs.items()}
    total = {v: [r["total_s"] for r in rs] for v, rs in runs.items()}
    for v in VARIANTS:
        print(f"{v:12s} step {median(step[v]):.3f} s (median), precompute "
              f"{median([r['precompute_s'] for r in runs[v]]):.2f} s, whole training {median(total[v]):.2f} s, "
              f"final loss {runs[v][-1]['final_loss']:.6f}"
              + (f", GPU memory added in training {median([r['gpu_peak_added_mb'] for r in runs[v]]):.0f} MB (peak "
                 f"allocated over the model)" if "gpu_peak_added_mb" in runs[v][0] else ""))
    for v in ("anchor", "anchor-live"):
        print(f"{v} / naive: step time {ratio(step[v], step['naive'])}; whole training incl. precompute "
              f"{ratio(total[v], total['naive'])}")

    if args.skip_memory:
        return
    print("## peak memory during training (each variant alone in a fresh process; resident memory sampled every 5 ms)")
    for v in VARIANTS:
        out = subprocess.run([sys.executable, __file__, "--memory-of", v, "--pairs", str(args.pairs),
                              "--threads", str(args.threads)], capture_output=True, text=True, check=True).stdout
        before, peak = map(float, out.split("PEAK ")[1].split())
        print(f"{v:12s} peak {peak:.0f} MB, of which training added {peak - before:.0f} MB (the process held {before:.0f} MB "
              f"with the model and data loaded)")


if __name__ == "__main__":
    main()
