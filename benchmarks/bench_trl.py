"""Benchmark 1: training throughput against TRL's RewardTrainer, and the accuracy each reaches.

Same model (a pair's student: the tiny pair's all-MiniLM-L6-v2 by default, or with ``--models smol``
SmolLM2-135M-Instruct with its LoRA; same seed, word embeddings frozen in both), same pairs with
the same token ids (our formatter's; TRL gets them pre-tokenized, with the BERT segment ids through
its own collator extended by that one field on encoders), same max length, batch size, AdamW,
learning rate, linear warm-up/decay, clipping, float32 on this CPU, gold labels, same steps.

Variants, interleaved round by round on fresh models: ``ours`` (length-grouped batches, the
TrainConfig option), ``ours-plain`` (random batches, the default), ``trl`` (RewardTrainer's
defaults: random batches) and ``trl-grouped`` (its ``train_sampling_strategy="group_by_length"``).
On decoders ours reads each pair as one shared-prompt row (bench/stages/pair_rows.py); ``ours-two-seq``
is ours with that switched off (grouped), which isolates what the shared prompt buys. Each run
also reports its real tokens per processed token (padding is processed, not real).
Throughput = pairs trained / seconds inside the training call (model and data preparation
excluded). Then, with ``--accuracy``, ``ours``, ``ours-plain``, ``trl`` and ``trl-ours`` (TRL fed
ours-plain's batches and learning-rate schedule) and, on decoders, ``ours-plain-two-seq`` (ours-plain
with two sequences per pair, as TRL computes them) each train on the whole train split and are
scored on the held-out split (``--accuracy-runs`` picks some).

    OMP_NUM_THREADS=1 python benchmarks/bench_trl.py [--models tiny|smol] [--layers N] [--data hh|mini] [--steps 20]
                                                     [--repeats 3] [--accuracy [--accuracy-runs ...]]
"""
from __future__ import annotations

import dataclasses
import math
import tempfile

import torch
from common import (
    Timer,
    formatter,
    gold_examples,
    hh_pairs,
    interleave,
    median,
    mini_pairs,
    parser,
    ratio,
    setup,
    strong_of,
)

LR, WARMUP, SEED = 1e-4, 0.1, 0
# trl-ours: TRL fed ours-plain's batches and lr schedule; ours-plain-two-seq: ours-plain with each pair as two
# sequences (decoders), the layout TRL computes, which isolates what the shared prompt changes
ACCURACY_RUNS = ("ours", "ours-plain", "trl", "trl-ours", "ours-plain-two-seq")


SPEC = {"spec": None}   # the student spec of this run (main sets it from --models)


def ours(examples: list, batch_size: int, grouped: bool, seed: int = SEED, pair_rows: bool = True):
    from bench.core.specs import TrainConfig
    from bench.stages.models import load_reward_model
    from bench.stages.train import train_reward_model
    from methods.naive import (
        Naive,  # gold targets 1/0: naive's loss is then plain Bradley-Terry, as TRL's
    )

    model = load_reward_model(SPEC["spec"], seed=seed)
    model.shiftbench_pair_rows = model.shiftbench_pair_rows and pair_rows
    cfg = TrainConfig(learning_rate=LR, epochs=1, batch_size=batch_size, warmup_ratio=WARMUP,
                      freeze_word_embeddings=True, group_by_length=grouped)
    with Timer() as t:
        train_reward_model(model, examples, cfg, Naive(), seed=seed + 1, desc="ours")
    return model, t.seconds


def trl(examples: list, batch_size: int, grouped: bool, seed: int = SEED, order: list[int] | None = None):
    """TRL's RewardTrainer; ``order``: feed the pairs in this order, unshuffled, and step the learning
    rate on our schedule (bench.stages.train.lr_schedule) with our AdamW, so that it trains on our batches as our
    loop does: transformers' own warm-up starts at lr 0 and lasts ceil(ratio x steps) steps, ours starts
    at lr / warm-up steps and lasts round(ratio x steps), which on a short run is a step of training more.
    The losses stay each loop's own (TRL's -logsigmoid(chosen - rejected), ours BCE on a - b): the
    same function, in different float operations."""
    from dataclasses import dataclass

    from datasets import Dataset
    from trl import RewardConfig, RewardTrainer
    from trl.trainer.reward_trainer import DataCollatorForPreference
    from trl.trainer.utils import pad

    from bench.stages.models import load_reward_model, load_tokenizer
    from bench.stages.train import adamw, apply_freezing, lr_schedule

    @dataclass
    class WithSegments(DataCollatorForPreference):
        """TRL's collator plus BERT's segment ids (ours reads them: the response is segment 1)."""

        def torch_call(self, rows):
            out = super().torch_call(rows)
            types = [torch.tensor(r[f"{side}_types"]) for side in ("chosen", "rejected") for r in rows]
            out["token_type_ids"] = pad(types, padding_value=0, padding_side="right")
            return out

    chosen = [ex.a if ex.target == 1.0 else ex.b for ex in examples]
    rejected = [ex.b if ex.target == 1.0 else ex.a for ex in examples]
    data = Dataset.from_dict({"chosen_ids": [s.input_ids for s in chosen],
                              "rejected_ids": [s.input_ids for s in rejected],
                              "chosen_types": [s.token_type_ids for s in chosen],
                              "rejected_types": [s.token_type_ids for s in rejected],
                              "length": [max(len(c.input_ids), len(r.input_ids)) for c, r in zip(chosen, rejected)]})
    if order is not None:
        data = data.select(order)
    spec = SPEC["spec"]
    model = load_reward_model(spec, seed=seed)
    apply_freezing(model, dataclasses.replace(_cfg(batch_size), freeze_word_embeddings=True))
    tokenizer = load_tokenizer(spec)
    if spec.architecture == "decoder":
        # TRL sets the model's pad id from the tokenizer's pad token (SmolLM2's is <|im_end|>, which ends
        # every templated sequence). Give the tokenizer our pad instead, the id no sequence holds
        # (bench.core.formatting.dedicated_pad_id); else TRL reads padded rows' rewards at their padding.
        tokenizer.add_special_tokens({"pad_token": "<|shiftbench_pad|>"})
        if tokenizer.pad_token_id != model.config.pad_token_id:
            raise SystemExit(f"pad ids differ: tokenizer {tokenizer.pad_token_id}, model {model.config.pad_token_id}")
    # padded with the model's own pad id: a decoder reads its last token that is not that id
    collator = (WithSegments if spec.architecture == "encoder" else DataCollatorForPreference)(
        pad_token_id=model.config.pad_token_id)
    with tempfile.TemporaryDirectory() as out:
        args = RewardConfig(output_dir=out, per_device_train_batch_size=batch_size, num_train_epochs=1,
                            learning_rate=LR, warmup_steps=WARMUP, lr_scheduler_type="linear", weight_decay=0.0,
                            max_grad_norm=1.0, optim="adamw_torch", bf16=False, fp16=False,
                            use_cpu=not torch.cuda.is_available(),
                            gradient_checkpointing=False, max_length=None, disable_dropout=True, seed=seed,
                            save_strategy="no", logging_steps=10**6, report_to=[], disable_tqdm=True,
                            remove_unused_columns=False, dataloader_num_workers=0,
                            train_sampling_strategy="sequential" if order is not None
                            else "group_by_length" if grouped else "random")
        optimizers = (None, None)
        if order is not None:
            optimizer = adamw([p for p in model.parameters() if p.requires_grad], LR, 0.0, next(model.parameters()).device)
            optimizers = (optimizer, lr_schedule(optimizer, math.ceil(len(examples) / batch_size), WARMUP))
        trainer = RewardTrainer(model=model, args=args, train_dataset=data, processing_class=tokenizer,
                                data_collator=collator, optimizers=optimizers)
        with Timer() as t:
            trainer.train()
    model.eval()
    return model, t.seconds


def _cfg(batch_size: int):
    from bench.core.specs import TrainConfig

    return TrainConfig(learning_rate=LR, epochs=1, batch_size=batch_size)


def accuracy_of(model, pairs: list, fmt) -> float:
    from bench.core.metrics import accuracy
    from bench.stages.batches import score

    sequences = [fmt.encode(p.prompt, p.chosen) for p in pairs] + [fmt.encode(p.prompt, p.rejected) for p in pairs]
    rewards = score(model, sequences, batch_size=64, pairs=True)
    return accuracy(rewards[:len(pairs)], rewards[len(pairs):])


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--data", choices=["hh", "mini"], default="hh",
                   help="hh: the real hh-rlhf helpful test split (default); mini: mini/recipes")
    p.add_argument("--models", choices=["tiny", "smol"], default="tiny", help="whose student to train (default tiny)")
    p.add_argument("--layers", type=int, help="cut the student to its first N layers (speed ratios do not depend "
                                              "on depth; accuracies do)")
    p.add_argument("--max-length", type=int, help="tokens per sequence (default: 256 for hh, 64 for mini)")
    p.add_argument("--batch-size", type=int, default=8, help="pairs per batch (default 8)")
    p.add_argument("--steps", type=int, default=20, help="steps per throughput run (default 20)")
    p.add_argument("--accuracy", action="store_true",
                   help="also train ours and TRL on the train split and compare accuracy")
    p.add_argument("--accuracy-seeds", type=int, nargs="+", default=[0, 1, 2], help="seeds of the accuracy runs")
    p.add_argument("--accuracy-runs", nargs="+", choices=ACCURACY_RUNS, default=list(ACCURACY_RUNS[:4]),
                   help="which accuracy runs (default the first four; ours-plain-two-seq is for decoders)")
    p.add_argument("--skip-throughput", action="store_true", help="only the accuracy runs")
    p.add_argument("--train-pairs", type=int, default=1600, help="train split size for --accuracy (default 1600)")
    args = p.parse_args()
    setup(args.threads)
    max_length = args.max_length or (256 if args.data == "hh" else 64)
    SPEC["spec"] = strong_of(args.models, args.layers)
    fmt = formatter(SPEC["spec"], max_length)
    if args.data == "hh":
        pairs = hh_pairs()
        train_pairs, eval_pairs = pairs[:args.train_pairs], pairs[args.train_pairs:]
    else:
        train_pairs = mini_pairs("mini/recipes", args.train_pairs)
        eval_pairs = mini_pairs("mini/recipes", 400, split="test")
    examples = gold_examples(train_pairs, fmt)
    if not args.skip_throughput:
        throughput(examples[:args.steps * args.batch_size], args, max_length)
    if args.accuracy:
        accuracy_runs(examples, eval_pairs, fmt, args)


def throughput(subset: list, args, max_length: int) -> None:
    from bench.stages.pair_rows import row_length

    decoder = SPEC["spec"].architecture == "decoder"
    print(f"## throughput: {args.models} ({SPEC['spec'].name}, {args.layers or 'all'} layers), {args.data}, max length "
          f"{max_length}, batch {args.batch_size} pairs, {args.steps} steps ({len(subset)} pairs) per run, interleaved")
    variants = {
        "ours": lambda: {"pairs_per_s": len(subset) / ours(subset, args.batch_size, grouped=True)[1]},
        "ours-plain": lambda: {"pairs_per_s": len(subset) / ours(subset, args.batch_size, grouped=False)[1]},
        "trl": lambda: {"pairs_per_s": len(subset) / trl(subset, args.batch_size, grouped=False)[1]},
        "trl-grouped": lambda: {"pairs_per_s": len(subset) / trl(subset, args.batch_size, grouped=True)[1]},
    }
    if decoder:
        variants["ours-two-seq"] = lambda: {
            "pairs_per_s": len(subset) / ours(subset, args.batch_size, grouped=True, pair_rows=False)[1]}
    runs = interleave(variants, args.repeats)
    speed = {name: [r["pairs_per_s"] for r in rs] for name, rs in runs.items()}
    for name, values in speed.items():
        print(f"{name:12s} {median(values):.2f} pairs/s (median of {len(values)})")
    real = sum(len(ex.a) + len(ex.b) for ex in subset)
    rows = sum(row_length(ex.a, ex.b) for ex in subset) if decoder else real
    print(f"tokens: {real} real in {len(subset)} pairs as two sequences; {rows} as shared-prompt rows "
          f"({real / rows:.2f}x fewer)")
    print(f"ours / trl:                {ratio(speed['ours'], speed['trl'])}   <- the goal: >= "
          f"{'2.5' if decoder else '1.5'}x")
    print(f"ours / trl-grouped:        {ratio(speed['ours'], speed['trl-grouped'])}")
    print(f"ours-plain / trl:          {ratio(speed['ours-plain'], speed['trl'])}   (the loops alone, no grouping)")
    print(f"ours / ours-plain:         {ratio(speed['ours'], speed['ours-plain'])}   (what grouping buys)")
    if decoder:
        print(f"ours / ours-two-seq:       {ratio(speed['ours'], speed['ours-two-seq'])}   (what the shared prompt buys)")


def accuracy_runs(examples: list, eval_pairs: list, fmt, args) -> None:
    """Held-out accuracy after training on the whole train split, per seed (init and order), for ours
    (grouped and plain) and TRL; and ``trl-ours``, TRL fed our plain run's exact batches and learning-rate
    schedule, which checks that the two loops compute the same training when those are the same."""
    import statistics

    from bench.stages.train import epoch_batches

    steps = math.ceil(len(examples) / args.batch_size)
    print(f"## accuracy: {len(examples)} train pairs ({steps} steps of {args.batch_size}), {len(eval_pairs)} "
          f"held-out pairs (one pair = {100 / len(eval_pairs):.2f} points), seeds {args.accuracy_seeds}")
    acc: dict[str, list[float]] = {name: [] for name in args.accuracy_runs}
    for seed in args.accuracy_seeds:
        our_order = [i for b in epoch_batches([0] * len(examples), args.batch_size,
                                              torch.Generator().manual_seed(seed + 1)) for i in b]
        runs = {"ours": lambda: ours(examples, args.batch_size, grouped=True, seed=seed),
                "ours-plain": lambda: ours(examples, args.batch_size, grouped=False, seed=seed),
                "trl": lambda: trl(examples, args.batch_size, grouped=False, seed=seed),
                "trl-ours": lambda: trl(examples, args.batch_size, grouped=False, seed=seed, order=our_order),
                "ours-plain-two-seq": lambda: ours(examples, args.batch_size, grouped=False, seed=seed, pair_rows=False)}
        for name in acc:
            model, _ = runs[name]()
            acc[name].append(accuracy_of(model, eval_pairs, fmt))
        print(f"  seed {seed}: " + ", ".join(f"{k} {v[-1]:.1f}" for k, v in acc.items()), flush=True)
    spread = (lambda v: f"{statistics.mean(v):.1f} ± {statistics.stdev(v):.1f}") if len(args.accuracy_seeds) > 1 \
        else (lambda v: f"{v[0]:.1f}")
    print("mean ± sd over seeds: " + "; ".join(f"{k} {spread(v)}" for k, v in acc.items()))
    gap = lambda a, b: statistics.mean(acc[a]) - statistics.mean(acc[b])   # noqa: E731
    if {"ours", "trl"} <= acc.keys():
        print(f"ours - trl: {gap('ours', 'trl'):+.1f} points (mean over seeds; goal within 1)")
    if {"ours-plain", "trl"} <= acc.keys():
        print(f"ours-plain - trl: {gap('ours-plain', 'trl'):+.1f} points (random batches both)")
    for ours_run in ("ours-plain", "ours-plain-two-seq"):
        if {ours_run, "trl-ours"} <= acc.keys():
            same = max(abs(a - b) for a, b in zip(acc[ours_run], acc["trl-ours"]))
            print(f"{ours_run} - trl-ours (same batches and schedule): largest gap over seeds {same:.2f} points")


if __name__ == "__main__":
    main()
