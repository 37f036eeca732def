"""The training loop shared by teachers and students: AdamW, linear warm-up and decay, clipping.

A method supplies the loss; the loop supplies everything else, so two methods differ only in what
their loss says. Batches hold the a responses then the b responses of the same pairs, in one forward.

The loop runs through accelerate, so one command trains on one CPU, one GPU, or several processes
(``accelerate launch``; configs in configs/accelerate/). With several, each process takes its
contiguous shard of every batch, DDP all-reduces (averages) the gradients, and each shard's loss
is weighted by its share of the batch so that the average is the whole batch's mean gradient
(exact for per-pair means; a method whose loss uses batch statistics sees its shard's).
"""
from __future__ import annotations

import functools
import hashlib
import math
from dataclasses import dataclass, field

import torch
from torch import nn

from bench.core.cache import SharedWork
from bench.core.data import sub_seed
from bench.core.distributed import on_cpu, shard
from bench.core.errors import BenchError, MethodError, TrainingDivergedError
from bench.core.specs import EarlyStopping, TrainConfig
from bench.stages.batches import collate_examples, reward_forward, score, uses_pair_rows
from bench.stages.models import Encoded
from bench.stages.pair_rows import row_length
from methods.api import (
    Method,
    Step,
    load_trainable_state,
    soft_bt_loss,
    trainable_state,
)

# Length grouping sorts within mega-batches of this many batches, as HF's LengthGroupedSampler does.
LENGTH_GROUP_MEGA_BATCHES = 50
# Steps between reads of the loss on the host. A read waits for the device to finish; reading every
# step would keep the CPU from queueing the next step while the GPU runs this one. Divergence is still
# reported at the exact step where the loss stopped being finite, at most this many steps later.
LOSS_READ_EVERY = 16


@dataclass(slots=True)
class TrainExample:
    a: Encoded
    b: Encoded
    target: float   # P(a preferred): the teacher's soft label, or 1.0 / 0.0 from gold
    teacher_labels: tuple[float, ...] = ()   # each teacher's P(a preferred), when a label stage gives them
                                             # (bench.stages.label_stage; raven): Step.teacher_labels


def apply_freezing(model: nn.Module, cfg: TrainConfig) -> None:
    if cfg.freeze_word_embeddings:
        model.get_input_embeddings().weight.requires_grad_(False)


def pair_rewards(model: nn.Module, examples: list[TrainExample], batch_size: int, desc: str
                 ) -> tuple[list[float], list[float]]:
    """r(a) and r(b) of each example's pair, scored as every model of a cell is (``bench.stages.batches.score``
    with ``pairs=True``: a decoder reads each pair as one shared-prompt row)."""
    n = len(examples)
    rewards = score(model, [e.a for e in examples] + [e.b for e in examples], batch_size, desc=desc, pairs=True)
    return rewards[:n], rewards[n:]


def holdout_split(n: int, stopping: EarlyStopping, seed: int) -> tuple[list[int], list[int]]:
    """Of ``n`` examples, the indices a run trains on and those it holds out to pick its checkpoint:
    ``round(holdout * n)`` of them, drawn with a generator of their own (seeded ``sub_seed(seed,
    "early-stopping")``, so the batches' order is still the loop seed's alone); both in increasing order."""
    k = round(stopping.holdout * n)
    if not 1 <= k < n:
        raise BenchError(f"early stopping holds out {stopping.holdout} of {n} training pairs, which leaves {k} to "
                         f"validate on and {n - k} to train on; each needs at least one. Use more pairs or another "
                         "holdout share")
    drawn = torch.randperm(n, generator=torch.Generator().manual_seed(sub_seed(seed, "early-stopping"))).tolist()
    return sorted(drawn[k:]), sorted(drawn[:k])


def validation_metrics(r_a: list[float], r_b: list[float], targets: list[float]) -> dict[str, float]:
    """How well rewards fit labels: ``loss``, the soft-label BT loss (naive's, methods.api.soft_bt_loss),
    and ``agreement``, the % of pairs on which the rewards prefer the side the label prefers (a tie of
    either, r_a = r_b or a label of exactly 0.5, counts half)."""
    as_tensor = functools.partial(torch.tensor, dtype=torch.float64)
    loss = soft_bt_loss(as_tensor(r_a), as_tensor(r_b), as_tensor(targets)).item()
    agree = sum(0.5 if a == b or q == 0.5 else float((a > b) == (q > 0.5)) for a, b, q in zip(r_a, r_b, targets))
    return {"loss": loss, "agreement": 100.0 * agree / len(targets)}


def pair_key(example: TrainExample) -> bytes:
    """What a training pair is, whatever its label: its two sequences' token ids, in either order (a
    relabelled pair keeps them; s2s and the label stages change only the target)."""
    a, b = (bytes(e.arrays()[0]) for e in (example.a, example.b))
    first, second = sorted((a, b))
    return hashlib.sha256(len(first).to_bytes(8, "little") + first + second).digest()


@dataclass(frozen=True)
class TrainingLoop:
    """What ``Method.fit`` gets as ``train``: ``train(model, examples, cfg)`` runs the loop below once
    with the method's loss; ``train.shared`` is the run's cache for tensors computed from the pretrained
    student and the training sequences alone (a bench.core.cache.SharedWork; None outside a pipeline run).

    With ``allowed`` (the pair keys of the examples ``fit`` was given: the student's half B), every run
    checks that it trains on those pairs only, relabelled or a subset, never on another split's (a
    MethodError otherwise), and ``trained_on`` counts what the runs trained on (bench.stages.pipeline records it)."""

    method: Method
    seed: int
    desc: str
    shared: SharedWork | None = None
    allowed: frozenset[bytes] | None = None
    trained_on: dict = field(default_factory=lambda: {"loop_runs": 0, "pairs": set()})   # shared by replace()

    def __call__(self, model: nn.Module, examples: list[TrainExample], cfg: TrainConfig) -> dict:
        if self.allowed is not None:
            keys = [pair_key(e) for e in examples]
            foreign = sum(key not in self.allowed for key in keys)
            if foreign:
                raise MethodError(
                    f"{self.desc}: method {self.method.name!r} trains on {foreign} of {len(examples)} pairs that are "
                    "not its half B, the pairs fit() was given: a student learns only from half B of the source's "
                    "train pool (with the teacher's labels, or its own relabelling of them), never from a test split "
                    "or gold labels. Pass train(...) the examples fit() was given, or a subset of them")
            self.trained_on["loop_runs"] += 1
            self.trained_on["pairs"].update(keys)
        return train_reward_model(model, examples, cfg, self.method, self.seed, self.desc)


# What the harness checked of a student's training data, as a result records it (``student.trained_on``).
TRAINED_ON_CHECK = ("every pair a run of the training loop trained on is one of the student's half-B pairs (by its "
                    "token ids)")


def train_student(student: nn.Module, examples: list[TrainExample], cfg: TrainConfig, method: Method,
                  seed: int, desc: str, shared: SharedWork | None = None, trained_on: dict | None = None) -> dict:
    """The method's whole training of the student (``Method.fit``), on the shared loop below; ``shared``
    goes to the method as ``train.shared``. Every run of the loop must train on ``examples`` (half B) only;
    ``trained_on``, when given, receives what the runs trained on: how many runs, how many distinct pairs
    of how many (no run: the method trained outside the loop, and nothing was checked)."""
    from bench.core.distributed import state

    apply_freezing(student, cfg)
    student.to(state().device)  # before fit: a method's setup (reference copies, cached states) runs there
    loop = TrainingLoop(method, seed, desc, shared, allowed=frozenset(map(pair_key, examples)))
    log = method.fit(student, examples, cfg, loop)
    if trained_on is not None:
        runs = loop.trained_on["loop_runs"]
        trained_on.update(check=TRAINED_ON_CHECK if runs else "none: the method never ran the training loop",
                          loop_runs=runs, pairs=len(loop.trained_on["pairs"]), of=len(loop.allowed))
    return log


def epoch_batches(lengths: list[int], batch_size: int, generator: torch.Generator,
                  group_by_length: bool = False, mega_batches: int = LENGTH_GROUP_MEGA_BATCHES) -> list[list[int]]:
    """One epoch's batches as example indices: a seeded shuffle cut into batches. Grouped by length,
    the shuffle is cut into mega-batches of ``mega_batches`` batches, each sorted by length (longest
    first) and cut into batches, and the batches' order is shuffled again: every batch holds pairs of
    similar length (little padding) while which pairs meet still changes from epoch to epoch."""
    order = torch.randperm(len(lengths), generator=generator).tolist()
    if not group_by_length:
        return [order[s:s + batch_size] for s in range(0, len(order), batch_size)]
    mega = batch_size * mega_batches
    batches = []
    for s in range(0, len(order), mega):
        group = sorted(order[s:s + mega], key=lambda i: -lengths[i])
        batches += [group[j:j + batch_size] for j in range(0, len(group), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def pair_lengths(examples: list[TrainExample], pair_rows: bool = False) -> list[int]:
    """A pair's padded width in a batch: its shared-prompt row's length, or its longer sequence."""
    if pair_rows:
        return [row_length(ex.a, ex.b) for ex in examples]
    return [max(len(ex.a), len(ex.b)) for ex in examples]


def adamw(params: list[torch.nn.Parameter], lr: float, weight_decay: float, device: torch.device) -> torch.optim.AdamW:
    """The loop's optimizer. On a GPU, AdamW's fused kernel: one launch per step instead of a dozen. On
    the CPU, the foreach implementation (a few ops over all tensors, not a loop per tensor): the same
    float operations as torch's CPU default, so bit for bit the same weights
    (tests/test_speed_features.py), in less time."""
    fused = {"fused": True} if device.type == "cuda" else {"foreach": True}
    return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, **fused)


def lr_schedule(optimizer: torch.optim.Optimizer, total: int, warmup_ratio: float) -> torch.optim.lr_scheduler.LambdaLR:
    """Linear warm-up over round(warmup_ratio * total) steps (at least one), then linear decay to 0.
    The first step already runs at lr / warm-up steps (transformers' schedule starts at 0)."""
    warmup = max(1, round(warmup_ratio * total))
    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup))))


def check_loss(loss: object, method: Method, desc: str) -> None:
    """What the loop needs of a method's loss, so that a method that returns anything else fails its cell
    with what to return (MethodError), not with autograd's error: one number (a 0-d tensor), with a
    gradient through the student's weights (a constant, or a loss computed apart from the rewards, has none)."""
    name = f"{desc}: the loss(step) of method {method.name!r}"
    if not isinstance(loss, torch.Tensor):
        raise MethodError(f"{name} returned a {type(loss).__name__}, not a tensor: return (loss, logs), loss a 0-d "
                          "torch tensor computed from step.r_a and step.r_b (as methods/naive.py does)")
    if loss.dim() != 0:
        raise MethodError(f"{name} returned a tensor of shape {tuple(loss.shape)}, not one number: reduce it over the "
                          "batch (e.g. .mean(), as methods.api.soft_bt_loss does)")
    if not loss.requires_grad:
        raise MethodError(f"{name} has no gradient, so training would change nothing: it does not depend on the "
                          "student's trainable weights. Compute it from step.r_a and step.r_b (or step.hidden_states), "
                          "as methods/naive.py does")


def train_reward_model(model: nn.Module, examples: list[TrainExample], cfg: TrainConfig, method: Method,
                       seed: int, desc: str) -> dict:
    """One run of the loop: a fresh optimizer over the parameters that require grad, ``method.loss``
    on every batch. Hooks around it (setup, finish, phases) belong to ``Method.fit``.

    With ``cfg.early_stopping`` (bench.core.specs.EarlyStopping), the run holds out a seeded share of
    ``examples``, trains on the rest, scores the held-out pairs every ``every`` steps and after the last,
    and ends with the best of those checkpoints. It is per run of the loop: a method that runs it several
    times (lp-ft's phases, warm's members, s2s's rounds) stops each run on its own held-out pairs, with
    the labels that run trains on. Every process scores all the held-out pairs, so all choose alike."""
    from accelerate import Accelerator
    from tqdm.auto import tqdm

    apply_freezing(model, cfg)
    # The examples trained on, as indices into ``examples``: every step's ``example_index`` stays an index
    # into the list the method was given (bench.stages.reference looks its precomputed rows up by it).
    stopping, kept, held_out = cfg.early_stopping, list(range(len(examples))), []
    if stopping is not None:
        kept, held = holdout_split(len(examples), stopping, seed)
        held_out = [examples[i] for i in held]
    trainable = [p for p in model.parameters() if p.requires_grad]
    # Precision is the model spec's dtype (it is in every result's key), never the launcher's.
    accelerator = Accelerator(cpu=on_cpu(), mixed_precision="no")
    device = accelerator.device
    model.to(device)
    optimizer = adamw(trainable, cfg.learning_rate, cfg.weight_decay, device)
    wrapped, optimizer = accelerator.prepare(model, optimizer)
    rank, world = accelerator.process_index, accelerator.num_processes
    steps_per_epoch = math.ceil(len(kept) / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    schedule = lr_schedule(optimizer, total, cfg.warmup_ratio)   # not prepared: accelerate would step it per process
    generator = torch.Generator().manual_seed(seed)
    lengths = pair_lengths([examples[i] for i in kept], uses_pair_rows(model)) if cfg.group_by_length else [0] * len(kept)
    model.train()
    losses: list[float] = []
    unread: list[torch.Tensor] = []   # the latest steps' losses, still on the device
    logs: dict = {}
    progress = tqdm(total=total, desc=desc, unit="step", leave=False, disable=not accelerator.is_main_process)

    def read_losses() -> None:
        """Bring the unread losses to the host (one wait for the device) and stop at a non-finite one."""
        for value in torch.stack(unread).tolist() if unread else []:
            if not math.isfinite(value):
                raise TrainingDivergedError(
                    f"{desc}: loss became {value} at step {len(losses) + 1} of {total}. "
                    f"Lower the learning rate (now {cfg.learning_rate}) or the method's weights, or check the labels.")
            losses.append(value)
        unread.clear()
        if losses:
            progress.set_postfix(loss=f"{losses[-1]:.3f}", epoch=epoch + 1)

    curve: list[dict[str, float]] = []   # early stopping: the held-out metrics at each checked step
    chosen: dict = {"value": math.inf}   # ... and the best checkpoint so far (a non-finite value never is)

    def validate(done: int) -> None:
        """Score the held-out pairs after step ``done``; keep the weights when they beat every earlier check."""
        r_a, r_b = pair_rewards(model, held_out, 2 * cfg.batch_size, f"{desc} validation")
        model.train()  # scoring left it in eval mode (which, e.g., turns gradient checkpointing off)
        curve.append({"step": done, **validation_metrics(r_a, r_b, [e.target for e in held_out])})
        value = curve[-1]["loss"] if stopping.metric == "loss" else -curve[-1]["agreement"]
        if value < chosen["value"]:
            chosen.update(value=value, step=done, state=trainable_state(model))

    for epoch in range(cfg.epochs):
        for positions in epoch_batches(lengths, cfg.batch_size, generator, cfg.group_by_length):
            indices = [kept[j] for j in positions]
            start, stop = shard(len(indices), rank, world)
            mine = indices[start:stop] or indices[:1]  # an empty shard still joins the all-reduce, at weight 0
            weight = (stop - start) * world / len(indices)
            chunk = [examples[i] for i in mine]
            batch = collate_examples(model, [(ex.a, ex.b) for ex in chunk])
            batch["example_index"] = torch.tensor(mine + mine)  # each sequence's example: the a's, then the b's
            host_batch = batch
            batch = {key: value.to(device, non_blocking=True) for key, value in batch.items()}
            rewards, hidden = reward_forward(model, batch, method.needs_hidden_states, run=wrapped)
            n = len(chunk)
            step = Step(r_a=rewards[:n], r_b=rewards[n:], batch=batch,
                        target=torch.tensor([ex.target for ex in chunk], dtype=torch.float32, device=device),
                        hidden_states=hidden,
                        model=model, index=len(losses) + len(unread), total=total, host_batch=host_batch,
                        teacher_labels=torch.tensor([ex.teacher_labels for ex in chunk], dtype=torch.float32,
                                                    device=device) if chunk[0].teacher_labels else None)
            loss, logs = method.loss(step)
            check_loss(loss, method, desc)
            batch_loss = loss.detach() * (weight / world)
            if world > 1:  # the whole batch's loss, the same on every process
                batch_loss = accelerator.reduce(batch_loss, reduction="sum")
            accelerator.backward(loss * weight)
            accelerator.clip_grad_norm_(wrapped.parameters(), cfg.max_grad_norm)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            unread.append(batch_loss.float())
            if len(unread) == LOSS_READ_EVERY:
                read_losses()
            progress.update()
            done = step.index + 1
            if stopping is not None and (done % stopping.every == 0 or done == total):
                validate(done)
        read_losses()
    progress.close()
    accelerator.free_memory()  # drops the DDP wrapper; the trained weights are ``model``'s own
    model.eval()
    tail = losses[-max(1, len(losses) // 10):]
    log = {"steps": total, "pairs": len(kept), "final_loss": sum(tail) / len(tail),
           "last_step_logs": {k: float(v) for k, v in logs.items()}, "loss_curve": losses[:: max(1, total // 50)]}
    if stopping is None:
        return log
    if "state" in chosen:
        load_trainable_state(model, chosen["state"])
    return {**log, "early_stopping": {"holdout_pairs": len(held_out), "every": stopping.every, "metric": stopping.metric,
                                      "chosen_step": chosen.get("step"), "curve": curve}}
