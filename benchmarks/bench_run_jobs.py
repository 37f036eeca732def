"""Benchmark: cells of the default run in one process with every core's threads, against one worker
process per core with one thread each (what ``bench run`` does by default on a CPU-only machine).

Both variants run ``bench run --method anchor`` on the same cells, each from an empty cache and
results folder of its own, one after the other, ``--rounds`` times alternating which goes first;
the machine's matmul peak is printed first, as every absolute time should be quoted beside it.

    python benchmarks/bench_run_jobs.py [--source recipes travel] [--rounds 1]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed_run(sources: list[str], jobs: int, folder: Path) -> float:
    command = [sys.executable, "-m", "bench", "run", "--method", "anchor", "--source", *sources, "--jobs", str(jobs),
               "--out", str(folder / "results"), "--cache-dir", str(folder / "cache")]
    env = {key: value for key, value in os.environ.items() if key not in ("OMP_NUM_THREADS", "SHIFTBENCH_JOBS")}
    start = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env={**env, "HF_HUB_OFFLINE": "1"}, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--source", nargs="+", default=["recipes", "travel"], help="the cells' sources (seed 0)")
    p.add_argument("--rounds", type=int, default=1)
    args = p.parse_args()
    cores = os.cpu_count() or 1
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "matmul_peak.py")], check=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"# {len(args.source)} cells of `bench run --method anchor`, {cores} cores, load average at start {load:.1f}")
    variants = {f"one process, {cores} threads (--jobs 1)": 1,
                f"{min(cores, len(args.source))} processes, 1 thread each (the default)": min(cores, len(args.source))}
    ratios = []
    for round_ in range(args.rounds):
        order = list(variants.items()) if round_ % 2 == 0 else list(reversed(variants.items()))
        times = {}
        for name, jobs in order:
            with tempfile.TemporaryDirectory() as folder:
                times[name] = timed_run(args.source, jobs, Path(folder))
            print(f"  round {round_ + 1} {name}: {times[name]:.0f} s", flush=True)
        first, second = variants
        ratios.append(times[first] / times[second])
    print(f"default / --jobs 1 speed-up: {statistics.median(ratios):.2f}x (min {min(ratios):.2f}, max {max(ratios):.2f})")


if __name__ == "__main__":
    main()
