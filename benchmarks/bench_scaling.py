"""Benchmark 5: how cost grows -- training time against the number of pairs, memory against dataset size.

Time: one epoch of the shared loop (the tiny pair's student settings, batch 16) on 32 to 256
mini/recipes pairs, sizes interleaved round by round; a least-squares line t = a + b * pairs, its
R^2, and the time per pair at each size. Memory: for each dataset size, a fresh process encodes
that many hh-rlhf pairs (the 2,348 real ones, cycled) as the pipeline does, then runs 4 training
steps; it prints the resident memory with the data held and the peak while training. The same is
measured with each pair's token ids held as Python lists (``lists``: the representation before
``bench.core.formatting.Encoded`` stored compact arrays) for the ratio.

    OMP_NUM_THREADS=1 python benchmarks/bench_scaling.py [--sizes 32 64 128 256] [--memory-sizes 500 2000 8000 32000]
"""
from __future__ import annotations

import argparse
import subprocess
import sys

from common import (
    PeakMemory,
    Timer,
    formatter,
    gold_examples,
    hh_pairs,
    interleave,
    median,
    mini_pairs,
    parser,
    rss_mb,
    setup,
    tiny_strong,
)


def train_time(examples: list) -> float:
    from bench.core.protocols import MODEL_PAIRS
    from bench.stages.models import load_reward_model
    from bench.stages.train import train_reward_model
    from methods.naive import Naive

    tiny = MODEL_PAIRS.get("tiny")
    model = load_reward_model(tiny.strong, seed=0)
    with Timer() as t:
        train_reward_model(model, examples, tiny.student_train, Naive(), seed=1, desc=f"{len(examples)} pairs")
    return t.seconds


def fit_line(xs: list[float], ys: list[float]) -> tuple[float, float, float]:
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    a = my - b * mx
    total = sum((y - my) ** 2 for y in ys)
    r2 = 1 - sum((y - a - b * x) ** 2 for x, y in zip(xs, ys)) / total if total else 1.0
    return a, b, r2


def memory_of(n: int, threads: int, as_lists: bool = False) -> None:
    """In a fresh process: encode n pairs, train 4 steps, print memory."""
    import dataclasses
    import itertools

    from bench.core.protocols import MODEL_PAIRS
    from bench.stages.models import load_reward_model
    from bench.stages.train import train_reward_model
    from methods.naive import Naive

    setup(threads)
    fmt = formatter(tiny_strong(), 256)
    base = rss_mb()
    pairs = list(itertools.islice(itertools.cycle(hh_pairs()), n))
    examples = gold_examples(pairs, fmt)  # fresh encodings for every pair, as the pipeline holds them
    if as_lists:  # what the pipeline held before: three Python lists of ints per sequence
        examples = examples[:32] + [[(s.input_ids, s.token_type_ids, s.response_mask) for s in (ex.a, ex.b)]
                                    for ex in examples[32:]]
    held = rss_mb()
    model = load_reward_model(tiny_strong(), seed=0)
    cfg = dataclasses.replace(MODEL_PAIRS.get("tiny").student_train, batch_size=8)
    with PeakMemory() as memory:
        train_reward_model(model, examples[:32], cfg, Naive(), seed=1, desc="4 steps")
    print(f"MEMORY {n} {base:.1f} {held:.1f} {memory.peak_mb:.1f}")


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--sizes", type=int, nargs="+", default=[32, 64, 128, 256], help="pairs per timed epoch")
    p.add_argument("--memory-sizes", type=int, nargs="+", default=[500, 2000, 8000, 32000])
    p.add_argument("--memory-only", action="store_true", help="skip the timing part")
    p.add_argument("--memory-of", type=int, help=argparse.SUPPRESS)
    p.add_argument("--as-lists", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.memory_of:
        memory_of(args.memory_of, args.threads, args.as_lists)
        return
    setup(args.threads)
    if not args.memory_only:
        time_against_pairs(args)
    memory_against_size(args)


def time_against_pairs(args) -> None:
    examples = gold_examples(mini_pairs("mini/recipes", max(args.sizes)), formatter(tiny_strong(), 64))
    print(f"## time: one epoch, batch 16, mini/recipes, sizes {args.sizes} interleaved")
    runs = interleave({str(n): (lambda n=n: {"seconds": train_time(examples[:n])}) for n in args.sizes}, args.repeats)
    times = {int(n): median([r["seconds"] for r in rs]) for n, rs in runs.items()}
    a, b, r2 = fit_line(list(times), list(times.values()))
    print("; ".join(f"{n} pairs: {t:.1f} s ({1000 * t / n:.0f} ms/pair)" for n, t in times.items()))
    print(f"least squares: t = {a:.2f} s + {1000 * b:.1f} ms x pairs, R^2 = {r2:.4f}; "
          f"t({max(times)}) / t({min(times)}) = {times[max(times)] / times[min(times)]:.2f} "
          f"for {max(times) / min(times):.0f}x the pairs")


def memory_against_size(args) -> None:
    print("## memory: encode N hh-rlhf pairs (max length 256), then 4 training steps; each N in a fresh process")
    slopes = {}
    for variant in ("arrays", "lists"):
        rows = []
        for n in args.memory_sizes:
            flags = ["--as-lists"] if variant == "lists" else []
            out = subprocess.run([sys.executable, __file__, "--memory-of", str(n), "--threads", str(args.threads), *flags],
                                 capture_output=True, text=True, check=True).stdout
            _, base, held, peak = out.split("MEMORY ")[1].split()
            rows.append((n, float(base), float(held), float(peak)))
            print(f"{variant}, N={n}: {float(held) - float(base):.0f} MB for the encoded pairs; "
                  f"peak while training {float(peak):.0f} MB")
        a, b, r2 = fit_line([n for n, *_ in rows], [held - base for _, base, held, _ in rows])
        slopes[variant] = b
        print(f"{variant}: encoded pairs held = {a:.0f} MB + {1024 * b:.2f} KB x pairs (R^2 {r2:.3f})")
        a, b, r2 = fit_line([n for n, *_ in rows], [peak for *_, peak in rows])
        print(f"{variant}: peak memory = {a:.0f} MB + {1024 * b:.2f} KB x pairs (R^2 {r2:.3f})")
    print(f"memory per pair held, lists / arrays: {slopes['lists'] / slopes['arrays']:.1f}x")


if __name__ == "__main__":
    main()
