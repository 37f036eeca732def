"""The machine's fp32 matmul peak, the number every absolute time in the docs is quoted beside.

    python benchmarks/matmul_peak.py            # GFLOP/s with 1 thread and with every core

Machines of the same size differ by 2x (two 2-core machines measured 64 and 132 GFLOP/s), so a
time means something only next to this number; compare by ratios measured in one run.
"""
from __future__ import annotations

import os

import torch
from bench_flops import matmul_peak


def main() -> None:
    shapes = [(1024, 1024, 1024), (2048, 384, 1536)]
    for threads in dict.fromkeys((1, os.cpu_count() or 1)):
        torch.set_num_threads(threads)
        best = max(matmul_peak(shapes, torch.float32).values())
        print(f"fp32 matmul peak, {threads} thread{'s' if threads > 1 else ''}: {best / 1e9:.1f} GFLOP/s")


if __name__ == "__main__":
    main()
