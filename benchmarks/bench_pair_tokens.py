"""Benchmark: how many tokens shared-prompt pair rows save on real data (no model is run).

For every pair of a real split, encoded with a pair's student formatter at a max length: the two
sequences' real tokens (len a + len b), the two sequences padded apart (2 x the longer, what a
batch of separate chosen/rejected rows holds at best), and the one shared-prompt row (len a +
len b - shared prefix; bench/pair_rows.py). Real rows: hh-rlhf helpful test (all) and the
UltraFeedback test_prefs rows of ../shared/realdata.

    python benchmarks/bench_pair_tokens.py [--models smol] [--max-length 256 1024]
"""
from __future__ import annotations

import gzip
import json

from common import REALDATA, formatter, hh_pairs, parser, setup, strong_of


def ultrafeedback_pairs() -> list:
    from bench.data import Pair
    from bench.datasets.ultrafeedback import normalize

    path = REALDATA / "ultrafeedback_binarized" / "test_prefs.first500.jsonl.gz"
    with gzip.open(path, "rt") as lines:
        return [p for p in (normalize(json.loads(line)) for line in lines) if isinstance(p, Pair)]


def main() -> None:
    from bench.pair_rows import row_length

    p = parser(__doc__)
    p.add_argument("--models", default="smol", help="whose student formatter (default smol: SmolLM2's template)")
    p.add_argument("--max-length", type=int, nargs="+", default=[256, 1024])
    args = p.parse_args()
    setup(args.threads)
    data = {"hh-rlhf helpful test": hh_pairs(), "UltraFeedback test_prefs (first 500)": ultrafeedback_pairs()}
    print("| data | pairs | max length | real tokens / row tokens | padded-apart / row tokens | truncated sequences |")
    print("|---|---|---|---|---|---|")
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


if __name__ == "__main__":
    main()
