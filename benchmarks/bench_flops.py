"""Benchmark 4: compute efficiency -- achieved FLOP/s of a training step over the measured matmul peak.

FLOPs of one step (forward, backward) are counted by torch.utils.flop_counter.FlopCounterMode
(matrix products and attention, as "model FLOPs" are usually counted); the step's time is the
median of several steps of the shared loop's body (bench/train.py) on the tiny pair's student.
The peak is the best of fp32 matrix products measured here, at the same thread count: a square
2048 product and the model's own shapes. A torch.profiler table says where a step's time goes.

    OMP_NUM_THREADS=1 python benchmarks/bench_flops.py [--threads 1] [--steps 6]
"""
from __future__ import annotations

import statistics
import time

import torch

from common import formatter, gold_examples, hh_pairs, mini_pairs, parser, setup, tiny_strong

CATEGORIES = {  # profiler op name fragments -> where the time goes
    "matrix products": ("mm", "addmm", "bmm", "linear", "matmul"),
    "attention": ("scaled_dot_product", "_flash_attention", "attention"),
    "optimizer": ("adam", "_foreach", "clip_grad", "norm_"),
    "norms, activations, elementwise": ("layer_norm", "gelu", "softmax", "add", "mul", "div", "tanh", "copy_",
                                        "native_dropout", "sub", "pow", "fill_", "zero_"),
    "embeddings, indexing": ("embedding", "index", "gather", "scatter", "masked"),
}


def matmul_peak(shapes: list[tuple[int, int, int]], repeats: int = 5) -> dict[str, float]:
    out = {}
    for m, k, n in shapes:
        a, b = torch.randn(m, k), torch.randn(k, n)
        a @ b
        best = min(_timed(lambda: a @ b) for _ in range(repeats))
        out[f"{m}x{k} @ {k}x{n}"] = 2 * m * k * n / best
    return out


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def step_parts(examples: list, batch_size: int):
    """A model, optimizer and one batch, as the shared loop builds them."""
    from bench.models import collate, load_reward_model, model_inputs
    from bench.specs import TrainConfig
    from bench.train import apply_freezing

    model = load_reward_model(tiny_strong(), seed=0)
    apply_freezing(model, TrainConfig(learning_rate=1e-4, epochs=1, batch_size=batch_size, freeze_word_embeddings=True))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    chunk = examples[:batch_size]
    batch = collate([ex.a for ex in chunk] + [ex.b for ex in chunk], model.config.pad_token_id)
    target = torch.tensor([ex.target for ex in chunk])

    def step():
        rewards = model(**model_inputs(batch)).logits[:, 0]
        loss = torch.nn.functional.binary_cross_entropy_with_logits(rewards[:batch_size] - rewards[batch_size:], target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    model.train()
    return step, batch


def main() -> None:
    from torch.utils.flop_counter import FlopCounterMode

    p = parser(__doc__)
    p.add_argument("--steps", type=int, default=6, help="timed steps per workload (default 6, after one warm-up)")
    args = p.parse_args()
    setup(args.threads)
    peaks = matmul_peak([(2048, 2048, 2048), (2048, 384, 1536), (2048, 1536, 384), (2048, 384, 384)])
    peak = max(peaks.values())
    print("## matmul peak (fp32, best of 5): " + "; ".join(f"{k}: {v / 1e9:.1f} GFLOP/s" for k, v in peaks.items()))
    workloads = {
        "mini/recipes, 16 pairs, max length 64 (the tiny pair's student step)":
            (gold_examples(mini_pairs("mini/recipes", 64), formatter(tiny_strong(), 64)), 16),
        "hh-rlhf, 8 pairs, max length 256 (longest batch of a length-sorted epoch's middle)":
            (sorted(gold_examples(hh_pairs(400), formatter(tiny_strong(), 256)),
                    key=lambda ex: max(len(ex.a.input_ids), len(ex.b.input_ids)))[196:], 8),
    }
    for name, (examples, batch_size) in workloads.items():
        step, batch = step_parts(examples, batch_size)
        with FlopCounterMode(display=False) as counter:
            step()
        flops = counter.get_total_flops()
        times = [_timed(step) for _ in range(args.steps)]
        achieved = flops / statistics.median(times)
        real = int(batch["attention_mask"].sum())
        print(f"## {name}: batch {tuple(batch['input_ids'].shape)}, {real} real tokens; "
              f"{flops / 1e9:.1f} GFLOP per step, step {statistics.median(times):.3f} s (median of {args.steps}; "
              f"min {min(times):.3f}, max {max(times):.3f})")
        print(f"achieved {achieved / 1e9:.1f} GFLOP/s = {achieved / peak:.2f} of the measured peak "
              f"{peak / 1e9:.1f} GFLOP/s")
        profile(step)
    again = matmul_peak([(2048, 384, 1536)])
    print(f"## matmul peak again at the end: {max(again.values()) / 1e9:.1f} GFLOP/s (the machine's load moves it)")


def profile(step) -> None:
    """Self CPU time of one step by kind of op."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    totals: dict[str, float] = {}
    for event in prof.key_averages():
        name = event.key.lower()
        kind = next((k for k, parts in CATEGORIES.items() if any(p in name for p in parts)), "other")
        totals[kind] = totals.get(kind, 0.0) + event.self_cpu_time_total
    whole = sum(totals.values())
    print("  where a step's time goes (self CPU time, torch.profiler): " +
          "; ".join(f"{k} {100 * v / whole:.0f}%" for k, v in sorted(totals.items(), key=lambda kv: -kv[1])))


if __name__ == "__main__":
    main()
