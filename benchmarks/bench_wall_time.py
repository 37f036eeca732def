"""Benchmark 6: wall time of `bench run` and how it splits between teacher, labelling, student and scoring.

Reads the ``timings_s`` every cell writes into its result.json (results folder) and prints, per
method (and params), the cells' total time and its split: teacher training, teacher labelling
and teacher scoring (zero in a cell whose teacher came from the cache), the ANCHOR reference
pass where there is one, student training, student scoring, and the rest (loading, splitting,
encoding, writing). Cached teacher work shows up twice: as the zeros in the cells that reused it,
and as "teacher work reused", the time it took when it was first done (each cache entry records
it). ``--as-fresh`` adds that back, to give what the same run costs with an empty cache.

``--run`` first runs the default command itself (``bench run --method anchor``, into fresh
temporary results and cache folders unless --out/--cache-dir are given) and reports its wall
time and peak memory, then the split of what it wrote. That is the full mini protocol: minutes.

    python benchmarks/bench_wall_time.py --out results                # split of an existing results folder
    OMP_NUM_THREADS=1 python benchmarks/bench_wall_time.py --run      # run the default command, then split it
    OMP_NUM_THREADS=1 python benchmarks/bench_wall_time.py --flops --peak 35 --cores 2   # its FLOPs, and a floor

``--flops`` runs the same command in this process (``--jobs 1``, empty temporary folders) under
torch's FlopCounterMode (common.flop_counter: matrix products and attention; elementwise work is
not counted) over everything the run computes (teacher and student training with their backward
passes, ANCHOR's reference pass, labelling, scoring), and prints the total and the least wall
time any machine with ``--cores`` cores whose one-thread fp32 matmul peak is ``--peak`` GFLOP/s
could take for it: total / (cores x peak), every operation at the peak, every core busy all the
time (the default run's cells run one worker process per core). The counter slows the run; its
own wall time means nothing.
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

PARTS = ("teacher_train", "teacher_label", "teacher_score", "anchor_reference", "student_train", "student_score")


def cell_parts(result: dict) -> dict[str, float]:
    """One cell's seconds by part; the student's training excludes ANCHOR's reference pass (shown apart)."""
    t = result.get("timings_s", {})
    reference = (result.get("student", {}).get("train", {}).get("anchor_reference") or {}).get("seconds", 0.0)
    parts = {k: t.get(k, 0.0) for k in PARTS if k != "anchor_reference"}
    parts["student_train"] -= reference
    parts["anchor_reference"] = reference
    parts["other"] = t.get("total", 0.0) - sum(parts.values())
    parts["total"] = t.get("total", 0.0)
    recorded = result.get("teacher", {}).get("timings_s", {}) if result.get("teacher", {}).get("reused") else {}
    for k in ("teacher_train", "teacher_label", "teacher_score"):  # what the cached teacher took when it was made
        parts[f"reused_{k}"] = recorded.get(k, 0.0)
    parts["teacher_reused"] = sum(recorded.values())
    return parts


def split(out: Path, as_fresh: bool = False) -> None:
    groups: dict[str, list[dict]] = defaultdict(list)
    for path in sorted(out.rglob("result.json")):
        result = json.loads(path.read_text())
        params = ", ".join(f"{k}={v}" for k, v in result["method"]["params"].items())
        groups[f"{result['method']['name']}({params}) seed {result['seed']}"].append(cell_parts(result))
    if not groups:
        sys.exit(f"no result.json under {out}")
    for name, cells in groups.items():
        total = {k: sum(c[k] for c in cells) for k in cells[0]}
        whole = total["total"] + (total["teacher_reused"] if as_fresh else 0.0)
        shares = {k: total[k] for k in (*PARTS, "other")}
        if as_fresh:  # the reused teachers' recorded time, part by part
            for k in ("teacher_train", "teacher_label", "teacher_score"):
                shares[k] += total[f"reused_{k}"]
        line = "; ".join(f"{k.replace('_', ' ')} {v:.0f} s ({100 * v / whole:.0f}%)" for k, v in shares.items() if v > 0.5)
        print(f"{name}: {len(cells)} cells, {whole:.0f} s = {whole / 60:.1f} min{' with an empty cache' if as_fresh else ''}"
              f"\n  {line}\n  teacher work reused from the cache: {total['teacher_reused']:.0f} s"
              f" in {sum(c['teacher_reused'] > 0 for c in cells)} of {len(cells)} cells")


def run_default(out: Path, cache: Path, extra: list[str]) -> None:
    command = [sys.executable, "-m", "bench", "run", "--method", "anchor", "--out", str(out), "--cache-dir", str(cache),
               *extra]
    print(f"# running: {' '.join(command)}", flush=True)
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(f"wall time {seconds:.0f} s = {int(seconds // 60)} min {seconds % 60:.0f} s; peak memory {peak:.0f} MB")


def count_flops(extra: list[str], peak: float, cores: int) -> None:
    from common import flop_counter

    from bench import cli

    with tempfile.TemporaryDirectory() as tmp:
        argv = ["run", "--method", "anchor", "--out", f"{tmp}/results", "--cache-dir", f"{tmp}/cache", *extra, "--jobs", "1"]
        print(f"# counting: bench {' '.join(argv)}", flush=True)
        with flop_counter() as counter:
            code = cli.main(argv)
        if code:
            sys.exit(code)
    total = counter.get_total_flops()
    floor = total / (cores * peak * 1e9)
    print(f"FLOPs of the run (matrix products and attention): {total / 1e12:.1f} TFLOP")
    print(f"floor at {cores} cores x {peak:g} GFLOP/s (1-thread fp32 matmul peak), all at peak: "
          f"{floor:.0f} s = {floor / 60:.1f} min")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, help="results folder to split (with --run: where to write; default a temp folder)")
    p.add_argument("--cache-dir", type=Path, help="with --run: the teacher cache (default: a fresh temp folder)")
    p.add_argument("--run", action="store_true", help="run `bench run --method anchor` first (the full mini protocol)")
    p.add_argument("--flops", action="store_true", help="count the default command's FLOPs in this process (slow)")
    p.add_argument("--peak", type=float, default=35.0, help="with --flops: a machine's 1-thread fp32 matmul peak, GFLOP/s")
    p.add_argument("--cores", type=int, default=2, help="with --flops: that machine's cores")
    p.add_argument("--as-fresh", action="store_true", help="count reused teacher work as if the cache were empty")
    p.add_argument("extra", nargs=argparse.REMAINDER, help="with --run: more `bench run` arguments after --")
    args = p.parse_args()
    extra = [a for a in args.extra if a != "--"]
    if args.flops:
        count_flops(extra, args.peak, args.cores)
    elif args.run:
        with tempfile.TemporaryDirectory() as tmp:
            out, cache = args.out or Path(tmp) / "results", args.cache_dir or Path(tmp) / "cache"
            run_default(out, cache, extra)
            split(out, args.as_fresh)
    elif args.out:
        split(args.out, args.as_fresh)
    else:
        p.error("give --out RESULTS to split an existing run, or --run to run the default command")


if __name__ == "__main__":
    main()
