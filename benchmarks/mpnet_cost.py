"""What a cell of w2s-real-v1 costs on a CPU: CPU-seconds of the mpnet pair's training steps and scoring forwards.

A cell's time is almost all its models': training steps (16 pairs a step, two epochs of a half of the train
pool) and forwards over the eval sets (``score_batch_size`` sequences a batch, sorted by length). This times
both on real hh-rlhf helpful pairs (``common.hh_pairs``) at the protocol's 256 tokens, in CPU-seconds of this
process (``time.process_time``: what a machine shared with other work still measures) and wall seconds, with the
peak resident memory. The steps are the shared loop's body (``bench_flops.step_parts``: forward, BT loss,
backward, clipping, AdamW) on the first batches of an epoch drawn as the loop draws them
(``bench.stages.train.epoch_batches``, grouped by length when the pair's training config says so); the forward is
``bench.stages.batches.score`` on the middle batch of the length-sorted sequences. ``--model weak`` times the
teacher (MiniLM-L6) with its own training config.

    OMP_NUM_THREADS=1 python benchmarks/mpnet_cost.py [--model strong|weak] [--steps 3] [--threads 1]
"""
from __future__ import annotations

import statistics
import time

import torch
from bench_flops import step_parts
from common import formatter, gold_examples, hh_pairs, parser, peak_rss_mb, setup


def timed(fn) -> tuple[float, float]:
    """(CPU-seconds, wall seconds) of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--model", choices=["strong", "weak"], default="strong", help="the student (default) or the teacher")
    p.add_argument("--steps", type=int, default=3, help="timed training steps, after one warm-up (default 3)")
    p.add_argument("--max-length", type=int, default=256, help="tokens per sequence (default 256, w2s-real-v1's)")
    args = p.parse_args()
    setup(args.threads)
    from bench.core.protocols import MODEL_PAIRS
    from bench.stages.batches import score
    from bench.stages.train import epoch_batches, pair_lengths

    pair = MODEL_PAIRS.get("mpnet")
    spec, train = (pair.strong, pair.student_train) if args.model == "strong" else (pair.weak, pair.teacher_train)
    examples = gold_examples(hh_pairs(), formatter(spec, args.max_length))
    cut = sum(ex.a.truncated or ex.b.truncated for ex in examples)
    batches = epoch_batches(pair_lengths(examples), train.batch_size, torch.Generator().manual_seed(0),
                            train.group_by_length)
    print(f"# {spec.name}: {len(examples)} hh-rlhf helpful pairs at {args.max_length} tokens, {cut} with a side cut "
          f"({100 * cut / len(examples):.0f}%); batches of {train.batch_size} pairs"
          f"{', grouped by length' if train.group_by_length else ''}, scoring {pair.score_batch_size} sequences a "
          f"batch", flush=True)
    model, runs = None, []
    for i, batch_of in enumerate(batches[:args.steps + 1]):   # the epoch's first batches; the first is a warm-up
        step, batch = step_parts([examples[j] for j in batch_of], train.batch_size, "float32", spec, model)
        model = step.model
        cpu, wall = timed(step)
        if i:
            runs.append((cpu, wall, batch["input_ids"].shape[1]))
    print(f"## training step: {statistics.median(c for c, _, _ in runs):.1f} CPU-s, median of {len(runs)} (each: "
          + ", ".join(f"{c:.1f} CPU-s / {w:.1f} s wall at width {n}" for c, w, n in runs) + ")")
    sequences = sorted((s for ex in examples for s in (ex.a, ex.b)), key=lambda s: len(s.input_ids))
    middle = sequences[len(sequences) // 2:len(sequences) // 2 + pair.score_batch_size]
    score(model, middle, pair.score_batch_size, desc="warm-up")
    cpu, wall = timed(lambda: score(model, middle, pair.score_batch_size, desc="forward"))
    mean = statistics.mean(len(s.input_ids) for s in sequences)
    print(f"## one scoring forward: {cpu:.1f} CPU-s ({wall:.1f} s wall) for {len(middle)} sequences of "
          f"{len(middle[-1].input_ids)} tokens (the middle of the length-sorted sequences; their mean length {mean:.0f})")
    print(f"## peak resident memory: {peak_rss_mb():.0f} MB")


if __name__ == "__main__":
    main()
