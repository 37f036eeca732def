"""Benchmark 4: compute efficiency -- achieved FLOP/s of a training step over the measured matmul peak.

FLOPs of one step (forward, backward) are counted by torch.utils.flop_counter.FlopCounterMode
(matrix products, and attention through common.flop_counter, as "model FLOPs" are usually counted); the step's time is the
median of several steps of the shared loop's body (bench/stages/train.py) on the tiny pair's student.
The peak is the best of matrix products measured here in the step's dtype (on a CPU at the same
thread count): a square product and the model's own shapes. A torch.profiler table says where a
step's time goes. On a CUDA GPU it runs there (timed with synchronisation), in float32 (the tiny
pair's dtype) and with ``--dtype bfloat16`` in bf16, and adds larger batches. ``--models smol``
measures the decoder instead (SmolLM2 with its LoRA, optionally cut to ``--layers``): a batch of 16
real hh-rlhf pairs as shared-prompt rows (bench/stages/pair_rows.py), the middle batch of the pairs sorted
by their two sequences' length, at ``--max-length`` (default 1,024, §8's throughput command's), with
the peak measured at the decoder's own matrix shapes.

    OMP_NUM_THREADS=1 python benchmarks/bench_flops.py [--threads 1] [--steps 6] [--dtype float32|bfloat16]
    OMP_NUM_THREADS=1 python benchmarks/bench_flops.py --models smol --layers 4 --steps 3
"""
from __future__ import annotations

import statistics
import time

import torch
from common import (
    flop_counter,
    formatter,
    gold_examples,
    hh_pairs,
    mini_pairs,
    parser,
    setup,
    strong_of,
    tiny_strong,
)

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


def step_parts(examples: list, batch_size: int, dtype: str = "float32", spec=None, model=None):
    """A model (``model``, when given, for another batch), optimizer and one batch, as the shared loop builds
    them (a decoder's as pair rows)."""
    import dataclasses

    from bench.core.specs import TrainConfig
    from bench.stages.batches import collate_examples, reward_forward
    from bench.stages.models import load_reward_model
    from bench.stages.train import apply_freezing

    model = model or load_reward_model(dataclasses.replace(spec or tiny_strong(), dtype=dtype), seed=0).to(DEVICE)
    apply_freezing(model, TrainConfig(learning_rate=1e-4, epochs=1, batch_size=batch_size, freeze_word_embeddings=True))
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    chunk = examples[:batch_size]
    batch = collate_examples(model, [(ex.a, ex.b) for ex in chunk])
    batch = {k: v.to(DEVICE) for k, v in batch.items()}
    target = torch.tensor([ex.target for ex in chunk], device=DEVICE)

    def step():
        rewards = reward_forward(model, batch)[0]   # every a's reward, then every b's
        loss = torch.nn.functional.binary_cross_entropy_with_logits(rewards[:batch_size] - rewards[batch_size:], target)
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    model.train()
    step.model = model   # for the next batch's step_parts
    return step, batch


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--steps", type=int, default=6, help="timed steps per workload (default 6, after one warm-up)")
    p.add_argument("--dtype", choices=["float32", "bfloat16"], default="float32",
                   help="the model's and the peak's dtype (default float32, the tiny pair's)")
    p.add_argument("--models", choices=["tiny", "smol"], default="tiny", help="whose student (default tiny)")
    p.add_argument("--layers", type=int, help="with --models smol: cut it to its first N layers")
    p.add_argument("--max-length", type=int, default=1024, help="with --models smol: tokens per sequence (1,024)")
    args = p.parse_args()
    setup(args.threads)
    dtype = getattr(torch, args.dtype)
    side = 2048 if DEVICE == "cpu" else 8192
    hidden, ffn = {"tiny": (384, 1536), "smol": (576, 1536)}[args.models]   # the student's widths (its config)
    peaks = matmul_peak([(side, side, side), (2048, hidden, ffn), (2048, ffn, hidden), (2048, hidden, hidden)], dtype)
    peak = max(peaks.values())
    print(f"## matmul peak ({args.dtype} on {DEVICE}, best of 5"
          f"{', TF32 off' if DEVICE == 'cuda' and dtype == torch.float32 else ''}): "
          + "; ".join(f"{k}: {v / 1e9:.1f} GFLOP/s" for k, v in peaks.items()))
    spec = strong_of("smol", args.layers) if args.models == "smol" else tiny_strong()
    if args.models == "smol":
        by_length = sorted(gold_examples(hh_pairs(400), formatter(spec, args.max_length)),
                           key=lambda ex: len(ex.a.input_ids) + len(ex.b.input_ids))
        workloads = {f"smol{f' ({args.layers} layers)' if args.layers else ''}, hh-rlhf, 16 pairs as shared-prompt "
                     f"rows, max length {args.max_length} (the middle batch of a length-sorted epoch)": (by_length[192:], 16)}
    else:
        mini = gold_examples(mini_pairs("mini/recipes", 512), formatter(spec, 64))
        by_length = sorted(gold_examples(hh_pairs(400), formatter(spec, 256)),
                           key=lambda ex: max(len(ex.a.input_ids), len(ex.b.input_ids)))
        workloads = {
            "mini/recipes, 16 pairs, max length 64 (the tiny pair's student step)": (mini, 16),
            "hh-rlhf, 8 pairs, max length 256 (longest batch of a length-sorted epoch's middle)": (by_length[196:], 8),
        }
    if DEVICE == "cuda" and args.models == "tiny":  # a 22M-parameter model needs far larger batches to occupy a GPU
        workloads["mini/recipes, 256 pairs, max length 64"] = (mini, 256)
        workloads["hh-rlhf, 128 pairs, max length 256 (the longest of 400)"] = (by_length[-128:], 128)
    for name, (examples, batch_size) in workloads.items():
        step, batch = step_parts(examples, batch_size, args.dtype, spec)
        step()  # warm-up: allocator, kernels
        with flop_counter() as counter:
            step()
        flops = counter.get_total_flops()
        times = [_timed(step) for _ in range(args.steps)]
        achieved = flops / statistics.median(times)
        pair_rows = "segment" in batch   # a row's shared prompt is one set of real tokens, not two
        real = int((batch["segment"] > 0).sum() if pair_rows else batch["attention_mask"].sum())
        print(f"## {name}: batch {tuple(batch['input_ids'].shape)}, {real} real {'row ' if pair_rows else ''}tokens; "
              f"{flops / 1e9:.1f} GFLOP per step, step {statistics.median(times):.4f} s (median of {args.steps}; "
              f"min {min(times):.4f}, max {max(times):.4f})")
        print(f"achieved {achieved / 1e9:.1f} GFLOP/s = {achieved / peak:.3f} of the measured peak "
              f"{peak / 1e9:.1f} GFLOP/s")
        profile(step)
    again = matmul_peak([(2048, hidden, ffn)], dtype)
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
