"""Benchmark 4: compute efficiency -- achieved FLOP/s of a training step over the measured matmul peak.

FLOPs of one step (forward, backward) are counted by torch.utils.flop_counter.FlopCounterMode
(matrix products and attention, as "model FLOPs" are usually counted); the step's time is the
median of several steps of the shared loop's body (bench/train.py) on the tiny pair's student.
The peak is the best of matrix products measured here in the step's dtype (on a CPU at the same
thread count): a square product and the model's own shapes. A torch.profiler table says where a
step's time goes. On a CUDA GPU it runs there (timed with synchronisation), in float32 (the tiny
pair's dtype) and with ``--dtype bfloat16`` in bf16, and adds larger batches.

    OMP_NUM_THREADS=1 python benchmarks/bench_flops.py [--threads 1] [--steps 6] [--dtype float32|bfloat16]
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


DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def matmul_peak(shapes: list[tuple[int, int, int]], dtype: torch.dtype, repeats: int = 5) -> dict[str, float]:
    out = {}
    for m, k, n in shapes:
        a, b = torch.randn(m, k, device=DEVICE, dtype=dtype), torch.randn(k, n, device=DEVICE, dtype=dtype)
        a @ b
        inner = 1 if DEVICE == "cpu" else 20  # a GPU product takes microseconds: time a run of them
        best = min(_timed(lambda: [a @ b for _ in range(inner)]) for _ in range(repeats)) / inner
        out[f"{m}x{k} @ {k}x{n}"] = 2 * m * k * n / best
    return out


def _sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def _timed(fn) -> float:
    _sync()
    start = time.perf_counter()
    fn()
    _sync()
    return time.perf_counter() - start


def step_parts(examples: list, batch_size: int, dtype: str = "float32"):
    """A model, optimizer and one batch, as the shared loop builds them."""
    from bench.models import collate, load_reward_model, model_inputs
    from bench.specs import TrainConfig
    from bench.train import apply_freezing

    import dataclasses

    model = load_reward_model(dataclasses.replace(tiny_strong(), dtype=dtype), seed=0).to(DEVICE)
    apply_freezing(model, TrainConfig(learning_rate=1e-4, epochs=1, batch_size=batch_size, freeze_word_embeddings=True))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    chunk = examples[:batch_size]
    batch = collate([ex.a for ex in chunk] + [ex.b for ex in chunk], model.config.pad_token_id)
    batch = {k: v.to(DEVICE) for k, v in batch.items()}
    target = torch.tensor([ex.target for ex in chunk], device=DEVICE)

    def step():
        rewards = model(**model_inputs(batch)).logits[:, 0].float()
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
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                   help="the model's and the peak's dtype (default float32, the tiny pair's)")
    args = p.parse_args()
    setup(args.threads)
    dtype = getattr(torch, args.dtype)
    side = 2048 if DEVICE == "cpu" else 8192
    peaks = matmul_peak([(side, side, side), (2048, 384, 1536), (2048, 1536, 384), (2048, 384, 384)], dtype)
    peak = max(peaks.values())
    print(f"## matmul peak ({args.dtype} on {DEVICE}, best of 5"
          f"{', TF32 off' if DEVICE == 'cuda' and dtype == torch.float32 else ''}): "
          + "; ".join(f"{k}: {v / 1e9:.1f} GFLOP/s" for k, v in peaks.items()))
    mini = gold_examples(mini_pairs("mini/recipes", 512), formatter(tiny_strong(), 64))
    by_length = sorted(gold_examples(hh_pairs(400), formatter(tiny_strong(), 256)),
                       key=lambda ex: max(len(ex.a.input_ids), len(ex.b.input_ids)))
    workloads = {
        "mini/recipes, 16 pairs, max length 64 (the tiny pair's student step)": (mini, 16),
        "hh-rlhf, 8 pairs, max length 256 (longest batch of a length-sorted epoch's middle)": (by_length[196:], 8),
    }
    if DEVICE == "cuda":  # a 22M-parameter model needs far larger batches to occupy a GPU
        workloads["mini/recipes, 256 pairs, max length 64"] = (mini, 256)
        workloads["hh-rlhf, 128 pairs, max length 256 (the longest of 400)"] = (by_length[-128:], 128)
    for name, (examples, batch_size) in workloads.items():
        step, batch = step_parts(examples, batch_size, args.dtype)
        step()  # warm-up: allocator, kernels
        with FlopCounterMode(display=False) as counter:
            step()
        flops = counter.get_total_flops()
        times = [_timed(step) for _ in range(args.steps)]
        achieved = flops / statistics.median(times)
        real = int(batch["attention_mask"].sum())
        print(f"## {name}: batch {tuple(batch['input_ids'].shape)}, {real} real tokens; "
              f"{flops / 1e9:.1f} GFLOP per step, step {statistics.median(times):.4f} s (median of {args.steps}; "
              f"min {min(times):.4f}, max {max(times):.4f})")
        print(f"achieved {achieved / 1e9:.1f} GFLOP/s = {achieved / peak:.3f} of the measured peak "
              f"{peak / 1e9:.1f} GFLOP/s")
        profile(step)
    again = matmul_peak([(2048, 384, 1536)], dtype)
    print(f"## matmul peak again at the end: {max(again.values()) / 1e9:.1f} GFLOP/s (the machine's load moves it)")


def profile(step) -> None:
    """Self time of one step by kind of op: CPU time on a CPU, GPU kernel time on a GPU."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if DEVICE == "cuda" else [])
    with torch_profile(activities=activities) as prof:
        step()
        _sync()
    totals: dict[str, float] = {}
    for event in prof.key_averages():
        name = event.key.lower()
        kind = next((k for k, parts in CATEGORIES.items() if any(p in name for p in parts)), "other")
        spent = event.self_device_time_total if DEVICE == "cuda" else event.self_cpu_time_total
        totals[kind] = totals.get(kind, 0.0) + spent
    whole = sum(totals.values())
    what = "GPU kernel time" if DEVICE == "cuda" else "self CPU time"
    print(f"  where a step's time goes ({what}, torch.profiler; {whole / 1e3:.1f} ms in all): " +
          "; ".join(f"{k} {100 * v / whole:.0f}%" for k, v in sorted(totals.items(), key=lambda kv: -kv[1])))


if __name__ == "__main__":
    main()
