"""The training loop shared by teachers and students: AdamW, linear warm-up and decay, clipping.

A method supplies the loss; the loop supplies everything else, so two methods differ only in what
their loss says. Batches hold the a responses then the b responses of the same pairs, in one forward.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from bench.errors import TrainingDivergedError
from bench.models import Encoded, collate, model_inputs
from bench.specs import TrainConfig
from methods.base import Method, Step


@dataclass(slots=True)
class TrainExample:
    a: Encoded
    b: Encoded
    target: float   # P(a preferred): the teacher's soft label, or 1.0 / 0.0 from gold


def apply_freezing(model: nn.Module, cfg: TrainConfig) -> None:
    if cfg.freeze_word_embeddings:
        model.get_input_embeddings().weight.requires_grad_(False)


def train_student(student: nn.Module, examples: list[TrainExample], cfg: TrainConfig, method: Method,
                  seed: int, desc: str) -> dict:
    """The method's whole training of the student (``Method.fit``), on the shared loop below."""
    apply_freezing(student, cfg)

    def train(model: nn.Module, examples: list[TrainExample], cfg: TrainConfig) -> dict:
        return train_reward_model(model, examples, cfg, method, seed, desc)

    return method.fit(student, examples, cfg, train)


def train_reward_model(model: nn.Module, examples: list[TrainExample], cfg: TrainConfig, method: Method,
                       seed: int, desc: str) -> dict:
    """One run of the loop: a fresh optimizer over the parameters that require grad, ``method.loss``
    on every batch. Hooks around it (setup, finish, phases) belong to ``Method.fit``."""
    from tqdm.auto import tqdm

    apply_freezing(model, cfg)
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    steps_per_epoch = math.ceil(len(examples) / cfg.batch_size)
    total = steps_per_epoch * cfg.epochs
    warmup = max(1, round(cfg.warmup_ratio * total))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (total - s) / max(1, total - warmup))))
    generator = torch.Generator().manual_seed(seed)
    pad_id = model.config.pad_token_id
    model.train()
    losses: list[float] = []
    logs: dict[str, float] = {}
    progress = tqdm(total=total, desc=desc, unit="step", leave=False)
    for epoch in range(cfg.epochs):
        order = torch.randperm(len(examples), generator=generator).tolist()
        for start in range(0, len(order), cfg.batch_size):
            chunk = [examples[i] for i in order[start:start + cfg.batch_size]]
            batch = collate([ex.a for ex in chunk] + [ex.b for ex in chunk], pad_id)
            out = model(**model_inputs(batch), output_hidden_states=method.needs_hidden_states)
            rewards = out.logits[:, 0].float()
            n = len(chunk)
            step = Step(r_a=rewards[:n], r_b=rewards[n:], batch=batch,
                        target=torch.tensor([ex.target for ex in chunk], dtype=torch.float32),
                        hidden_states=out.hidden_states if method.needs_hidden_states else None,
                        model=model, index=len(losses), total=total)
            loss, logs = method.loss(step)
            if not torch.isfinite(loss):
                raise TrainingDivergedError(
                    f"{desc}: loss became {loss.item()} at step {len(losses) + 1} of {total}. "
                    f"Lower the learning rate (now {cfg.learning_rate}) or the method's weights, or check the labels.")
            loss.backward()
            torch.nn.utils.clip_grad_norm_(trainable, cfg.max_grad_norm)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item())
            progress.update()
            progress.set_postfix(loss=f"{losses[-1]:.3f}", epoch=epoch + 1)
    progress.close()
    model.eval()
    tail = losses[-max(1, len(losses) // 10):]
    return {"steps": total, "pairs": len(examples), "final_loss": sum(tail) / len(tail),
            "last_step_logs": logs, "loss_curve": losses[:: max(1, total // 50)]}
