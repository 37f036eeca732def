"""Train one reward model per ShiftBench cell with TRL's RewardTrainer, on the data `bench labels` exported.

    python examples/trl_reward_model.py LABELS STUDENTS [--loss soft|hard|margin] [--base MODEL] [--force]

LABELS is the --out folder of `bench labels` (or one cell's folder in it). Each cell found there (a
folder with provenance.json and dataset/) gets a reward model in STUDENTS at the same relative path,
<protocol>/<models>/seed<N>/<source>, which is what `bench evaluate --student 'STUDENTS/{cell}'
--labels LABELS` reads. This script does not import ShiftBench: it reads only what `bench labels`
wrote, as a training stack of your own would.

How the teacher's soft labels are used (--loss). TRL's RewardTrainer trains on hard pairs,
-log sigmoid(d) with d = r(chosen) - r(rejected), unless each pair carries a margin:
- soft (default): soft-label Bradley-Terry, -[p log sigmoid(d) + (1-p) log sigmoid(-d)] with
  p = soft_label, the teacher's P(chosen > rejected): the loss ShiftBench's `naive` student trains on.
  RewardTrainer has no such loss, so SoftLabelRewardTrainer below overrides compute_loss; the model,
  data, optimizer, schedule, clipping and saving are TRL's.
- hard: TRL's loss on the teacher's ordering alone; how sure the teacher was is dropped.
- margin: TRL's margin loss, -log sigmoid(d - m), with m = logit(p), the teacher's own reward gap (TRL
  reads a `margin` column): each pair asks for at least the teacher's gap, and more is always better.

Inputs are the exact token ids ShiftBench scores (dataset/'s chosen_ids and rejected_ids, which TRL
takes as they are), with the segment ids an encoder's pair template gives the reply, passed by a
collator that extends TRL's by that field. The training settings default to the model pair's student
settings from the labels' provenance (learning rate, epochs, pairs per batch, warm-up, weight decay,
clipping, frozen word embeddings), and the seed to the cell's.
"""
from __future__ import annotations

import argparse
import importlib
import json
import math
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from datasets import load_from_disk
from transformers import AutoModelForSequenceClassification, AutoTokenizer, set_seed
from transformers.utils import logging
from trl import RewardConfig, RewardTrainer
from trl.trainer.reward_trainer import DataCollatorForPreference
from trl.trainer.utils import pad

RECORD = "shiftbench_training.json"
# transformers 5 renamed gradient_checkpointing (a deprecated alias now); 4.x has the old name only
CHECKPOINTING = ("activation_checkpointing" if "activation_checkpointing" in RewardConfig.__dataclass_fields__
                 else "gradient_checkpointing")


@dataclass
class PreferenceCollator(DataCollatorForPreference):
    """TRL's collator (chosen rows, then rejected rows; `margin` when the rows have one), plus the segment
    ids of an encoder's pair template and, for the soft loss, each pair's soft label."""

    soft: bool = False

    def torch_call(self, examples):
        out = super().torch_call(examples)
        types = [torch.tensor(e[f"{side}_token_type_ids"]) for side in ("chosen", "rejected") for e in examples]
        types = pad(types, padding_value=0, padding_side="right")
        if types.any():   # decoders have none
            out["token_type_ids"] = types
        if self.soft:
            out["soft_label"] = torch.tensor([e["soft_label"] for e in examples], dtype=torch.float)
        return out


class SoftLabelRewardTrainer(RewardTrainer):
    """RewardTrainer with soft-label Bradley-Terry as its loss."""

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        p = inputs.pop("soft_label")
        outputs = model(**inputs)
        chosen, rejected = outputs.logits.squeeze(-1).float().chunk(2)
        d = chosen - rejected
        loss = -(p * F.logsigmoid(d) + (1 - p) * F.logsigmoid(-d)).mean()
        return (loss, outputs) if return_outputs else loss


def logit(p: float) -> float:
    p = min(max(p, 1e-12), 1 - 1e-12)   # a label of exactly 1 would be an infinite gap
    return math.log(p / (1 - p))


def base_model(provenance: dict) -> tuple[str, int | None]:
    """The pair's strong model as the labels' provenance names it: its packaged local folder where the
    pair has one (the offline `tiny` pair does), else its hub id; and the layers the pair keeps."""
    strong = provenance["models"]["strong"]
    where = strong["path"]
    if strong.get("path_resolver"):
        module, _, function = strong["path_resolver"].partition(":")
        try:
            where = str(getattr(importlib.import_module(module), function)())
        except ImportError:
            pass
    return where, strong.get("num_layers")


def train_cell(cell: Path, out: Path, args: argparse.Namespace) -> None:
    provenance = json.loads((cell / "provenance.json").read_text())
    settings = provenance["models"]["student_train"]
    base, layers = (args.base, None) if args.base else base_model(provenance)
    seed = provenance["cell"]["seed"] if args.seed is None else args.seed
    plan = {"labels_digest": provenance["digest"], "loss": args.loss, "base": Path(base).name, "layers": layers,
            "seed": seed, "learning_rate": args.lr or settings["learning_rate"],
            "epochs": args.epochs or settings["epochs"], "batch_size": args.batch_size or settings["batch_size"],
            "warmup_ratio": settings["warmup_ratio"], "weight_decay": settings["weight_decay"],
            "max_grad_norm": settings["max_grad_norm"], "freeze_word_embeddings": settings["freeze_word_embeddings"]}
    done = out / RECORD
    if done.is_file() and not args.force and json.loads(done.read_text()).get("plan") == plan:
        print(f"[skip] {out}: trained on these labels with these settings", file=sys.stderr)
        return
    data = load_from_disk(str(cell / "dataset"))
    if args.max_pairs:
        data = data.select(range(min(args.max_pairs, len(data))))
    if args.loss == "margin":   # TRL reads a `margin` column: the teacher's reward gap, logit(p)
        data = data.map(lambda row: {"margin": logit(row["soft_label"])})

    set_seed(seed)   # the head's initial weights
    logging.set_verbosity_error()   # a new head and (for a cut model) unused layers are intended, not news
    model = AutoModelForSequenceClassification.from_pretrained(
        base, num_labels=1, **({"num_hidden_layers": layers} if layers else {}))
    logging.set_verbosity_warning()
    if plan["freeze_word_embeddings"]:
        model.get_input_embeddings().weight.requires_grad_(False)
    tokenizer = AutoTokenizer.from_pretrained(base)
    with tempfile.TemporaryDirectory() as scratch:
        config = RewardConfig(
            output_dir=scratch, seed=seed, per_device_train_batch_size=plan["batch_size"],
            num_train_epochs=plan["epochs"], learning_rate=plan["learning_rate"], warmup_steps=plan["warmup_ratio"],
            lr_scheduler_type="linear", weight_decay=plan["weight_decay"], max_grad_norm=plan["max_grad_norm"],
            optim="adamw_torch", bf16=False, fp16=False, use_cpu=not torch.cuda.is_available(),
            **{CHECKPOINTING: False}, max_length=None, disable_dropout=True, save_strategy="no",
            logging_steps=10, report_to=[], disable_tqdm=True, remove_unused_columns=False, dataloader_num_workers=0)
        trainer_class = SoftLabelRewardTrainer if args.loss == "soft" else RewardTrainer
        trainer = trainer_class(model=model, args=config, train_dataset=data, processing_class=tokenizer,
                                data_collator=PreferenceCollator(pad_token_id=tokenizer.pad_token_id,
                                                                 soft=args.loss == "soft"))
        result = trainer.train()
    trainer.save_model(str(out))   # the model (safetensors) and its tokenizer
    import trl

    (out / RECORD).write_text(json.dumps({"plan": plan, "trl": trl.__version__, "pairs": len(data),
                                          "train_loss": result.training_loss}, indent=2) + "\n")
    print(f"trained {out} ({args.loss} loss, {len(data)} pairs, loss {result.training_loss:.4f})", file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("labels", type=Path, help="the --out folder of bench labels, or one cell's folder in it")
    parser.add_argument("students", type=Path, help="where to save the students (same layout as LABELS)")
    parser.add_argument("--loss", choices=["soft", "hard", "margin"], default="soft",
                        help="how the soft labels are used (default: soft, naive's loss)")
    parser.add_argument("--base", help="the model to start from (default: the pair's strong model)")
    parser.add_argument("--lr", type=float, help="learning rate (default: the pair's student setting)")
    parser.add_argument("--epochs", type=int, help="epochs (default: the pair's student setting)")
    parser.add_argument("--batch-size", type=int, help="pairs per batch (default: the pair's student setting)")
    parser.add_argument("--seed", type=int, help="seed (default: the cell's)")
    parser.add_argument("--max-pairs", type=int, help="train on the first N pairs only (a quick check)")
    parser.add_argument("--force", action="store_true", help="train again where a student is already saved")
    args = parser.parse_args(argv)
    cells = sorted({p.parent for p in args.labels.rglob("provenance.json") if (p.parent / "dataset").is_dir()})
    if not cells:
        parser.error(f"no cell labels under {args.labels}: run bench labels first")
    for cell in cells:
        out = args.students / cell.relative_to(args.labels) if cell != args.labels else args.students
        train_cell(cell, out, args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
