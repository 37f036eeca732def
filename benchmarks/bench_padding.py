"""Benchmark 3: padding waste -- real tokens / processed tokens -- on the real hh-rlhf samples.

Every batch is right-padded to its longest row, and the model processes the padding too. For the
2,348 usable pairs of hh-rlhf helpful-base (test split), encoded as the tiny pair's student reads
them, this counts real and processed tokens over one epoch of training batches (a rows and b rows
of each pair in one forward, as bench/stages/train.py does), for random batches (the default), for
length-grouped batches (TrainConfig.group_by_length; mega-batches of 50 batches, and other sizes
for comparison), and for scoring (bench.stages.batches.score sorts all sequences by length). Pure
counting: no model runs, so the numbers are exact and need no repeats (and max length 1024, past
MiniLM's 512 positions, only stands for the real protocol's 1024-token budget, tokenized by MiniLM).

    python benchmarks/bench_padding.py [--max-length 256 512 1024] [--batch-size 8 16 32]
"""
from __future__ import annotations

import statistics

import torch
from common import formatter, hh_pairs, mini_pairs, parser, setup, tiny_strong


def efficiency(batches: list[list[int]], lengths: list[int]) -> float:
    real = sum(lengths[i] for b in batches for i in b)
    processed = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    return real / processed


def training_batches(a_len: list[int], b_len: list[int], batch_size: int, mega: int | None, seed: int = 0):
    """The loop's batches; a batch's width is its longest sequence, a or b."""
    from bench.stages.train import epoch_batches

    pair_len = [max(a, b) for a, b in zip(a_len, b_len)]
    generator = torch.Generator().manual_seed(seed)
    if mega is None:
        return epoch_batches(pair_len, batch_size, generator)
    return epoch_batches(pair_len, batch_size, generator, group_by_length=True, mega_batches=mega)


def train_efficiency(a_len, b_len, batches) -> float:
    real = sum(a_len[i] + b_len[i] for b in batches for i in b)
    processed = sum(2 * len(b) * max(max(a_len[i], b_len[i]) for i in b) for b in batches)
    return real / processed


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--max-length", type=int, nargs="+", default=[256, 512, 1024])
    p.add_argument("--batch-size", type=int, nargs="+", default=[8, 16, 32], help="pairs per training batch")
    args = p.parse_args()
    setup(args.threads)
    datasets = {"hh-rlhf helpful test (real)": hh_pairs(),
                "mini/recipes train (generated)": mini_pairs("mini/recipes", 1600)}
    for name, pairs in datasets.items():
        for max_length in args.max_length if "hh" in name else [64]:
            fmt = formatter(tiny_strong(), max_length)
            a_len = [len(fmt.encode(p.prompt, p.chosen).input_ids) for p in pairs]
            b_len = [len(fmt.encode(p.prompt, p.rejected).input_ids) for p in pairs]
            seqs = a_len + b_len
            print(f"## {name}: {len(pairs)} pairs, max length {max_length}; sequence length mean "
                  f"{statistics.mean(seqs):.0f}, median {statistics.median(seqs):.0f}, "
                  f"{100 * sum(n == max_length for n in seqs) / len(seqs):.0f}% cut at the max")
            # the best any batching can do while a pair's a and b rows share one forward (one width):
            # every pair padded only to its own longer response
            bound = (sum(a_len) + sum(b_len)) / sum(2 * max(a, b) for a, b in zip(a_len, b_len))
            print(f"bound with a and b of a pair at one width: {bound:.3f}")
            for batch_size in args.batch_size:
                cells = []
                for label, mega in (("random (default)", None), ("grouped, mega 50 (the option)", 50),
                                    ("grouped, mega 8", 8), ("grouped, whole epoch sorted", 10**9)):
                    values = [train_efficiency(a_len, b_len, training_batches(a_len, b_len, batch_size, mega, seed))
                              for seed in range(5)]
                    cells.append(f"{label} {statistics.mean(values):.3f}")
                print(f"training, batch {batch_size} pairs (mean of 5 seeds): " + "; ".join(cells))
            order = sorted(range(len(seqs)), key=lambda i: seqs[i])
            scoring = efficiency([order[s:s + 64] for s in range(0, len(order), 64)], seqs)
            print(f"scoring (length-sorted, batch 64): {scoring:.3f}")


if __name__ == "__main__":
    main()
