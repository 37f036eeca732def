"""Benchmark: how many tokens shared-prompt pair rows save on real data (no model is run).

For every pair of a real split, encoded with a pair's student formatter at a max length: the two
sequences' real tokens (len a + len b), the two sequences padded apart (2 x the longer, what a
batch of separate chosen/rejected rows holds at best), and the one shared-prompt row (len a +
len b - shared prefix; bench/stages/pair_rows.py). Real rows: hh-rlhf helpful test (all) and the
UltraFeedback test_prefs rows of ../shared/realdata.

Then, per batch layout, what one epoch of training batches (``--batch-size`` pairs, the loop's seeded
``epoch_batches``) processes: tokens (real tokens / processed tokens, padding included) and attention
(query-key pairs a layer needs / computes: a row of width T computes T^2 whatever its mask says, as
eager and SDPA attention with a mask do). Layouts: TRL's (two sequences per pair, random batches);
two sequences, length-grouped; pair rows, random or length-grouped; and pair rows PACKED: the batch's
rows placed first-fit-decreasing into as few rows as hold them at the batch's widest row's width, a
block-diagonal mask keeping pairs apart (what packing several pairs per row would buy).

    python benchmarks/bench_pair_tokens.py [--models smol] [--max-length 256 1024] [--batch-size 16]
"""
from __future__ import annotations

import gzip
import json

from common import REALDATA, formatter, hh_pairs, parser, setup, strong_of


def ultrafeedback_pairs() -> list:
    from bench.core.data import Pair
    from bench.datasets.ultrafeedback import normalize

    path = REALDATA / "ultrafeedback_binarized" / "test_prefs.first500.jsonl.gz"
    with gzip.open(path, "rt") as lines:
        return [p for p in (normalize(json.loads(line)) for line in lines) if isinstance(p, Pair)]


def first_fit_decreasing(lengths: list[int], width: int) -> list[list[int]]:
    """Rows of at most ``width`` tokens holding every length, longest placed first."""
    bins: list[list[int]] = []
    for n in sorted(lengths, reverse=True):
        for b in bins:
            if sum(b) + n <= width:
                b.append(n)
                break
        else:
            bins.append([n])
    return bins


def batch_costs(encoded: list, batch_size: int, layout: str) -> tuple[float, float]:
    """One seeded epoch of ``layout``'s batches: (real / processed tokens, needed / computed attention)."""
    import torch

    from bench.stages.pair_rows import row_length
    from bench.stages.train import epoch_batches

    two_seq = layout.startswith("two")
    rows = [(len(a), len(b)) if two_seq else (row_length(a, b),) for a, b in encoded]
    grouped = "grouped" in layout
    lengths = [max(r) if two_seq else r[0] for r in rows]
    real = processed = needed = computed = 0
    for batch in epoch_batches(lengths, batch_size, torch.Generator().manual_seed(0), grouped):
        pieces = [n for i in batch for n in rows[i]]
        width = max(pieces)
        packed = first_fit_decreasing(pieces, width) if "packed" in layout else [[n] for n in pieces]
        real += sum(pieces)
        needed += sum(n * n for n in pieces)   # a pair row's a and b do not attend each other: an upper bound
        processed += len(packed) * width
        computed += len(packed) * width * width
    return real / processed, needed / computed


LAYOUTS = ("two sequences, random (TRL)", "two sequences, grouped", "pair rows, random", "pair rows, grouped",
           "pair rows, random, packed", "pair rows, grouped, packed")


def main() -> None:
    from bench.stages.pair_rows import row_length

    p = parser(__doc__)
    p.add_argument("--models", default="smol", help="whose student formatter (default smol: SmolLM2's template)")
    p.add_argument("--max-length", type=int, nargs="+", default=[256, 1024])
    p.add_argument("--batch-size", type=int, default=16, help="pairs per training batch (default 16: smol's)")
    args = p.parse_args()
    setup(args.threads)
    data = {"hh-rlhf helpful test": hh_pairs(), "UltraFeedback test_prefs (first 500)": ultrafeedback_pairs()}
    print("| data | pairs | max length | real tokens / row tokens | padded-apart / row tokens | truncated sequences |")
    print("|---|---|---|---|---|---|")
    layouts = {}
    for max_length in args.max_length:
        fmt = formatter(strong_of(args.models), max_length)
        for name, pairs in data.items():
            encoded = [(fmt.encode(q.prompt, q.chosen), fmt.encode(q.prompt, q.rejected)) for q in pairs]
            real = sum(len(a) + len(b) for a, b in encoded)
            padded = sum(2 * max(len(a), len(b)) for a, b in encoded)
            rows = sum(row_length(a, b) for a, b in encoded)
            truncated = sum(a.truncated + b.truncated for a, b in encoded)
            print(f"| {name} | {len(pairs)} | {max_length} | {real / rows:.2f}x | {padded / rows:.2f}x | "
                  f"{truncated} of {2 * len(pairs)} |", flush=True)
            layouts[max_length, name] = {layout: batch_costs(encoded, args.batch_size, layout) for layout in LAYOUTS}
    print(f"\nPer training batch of {args.batch_size} pairs, one seeded epoch: real / processed tokens "
          "(needed / computed attention)")
    print("| data | max length | " + " | ".join(LAYOUTS) + " |")
    print("|---|---|" + "---|" * len(LAYOUTS))
    for (max_length, name), costs in layouts.items():
        print(f"| {name} | {max_length} | " + " | ".join(f"{t:.2f} ({a:.2f})" for t, a in costs.values()) + " |")


if __name__ == "__main__":
    main()
