"""The label stage of a cell: a label-side method's labels, between the teacher's soft labels and the
student's training (stage 4 of bench/stages/pipeline.py, for a method that overrides ``Method.relabel``).

Some W2S methods change what the student learns from, not how: the mean of several teachers, the
teacher's labels with the least reliable pairs dropped, a probe's labels on the strong model's
features. Such a method implements ``relabel(inputs) -> Labels``. ``inputs`` (``LabelInputs``) holds
half B in the seeded order the student sees it, the cell's teacher's soft labels, more teachers on
demand (``inputs.teachers(k)``: the cell's own teacher and k - 1 more, trained on half A with other
seeds, each its own teacher-stage cache entry keyed by its member index) and the pretrained strong
model (``inputs.strong_model()``, and ``inputs.strong_features()``, the features its reward head
reads, per pair). ``Labels`` says what the student trains on: a target per pair, which pairs it keeps
(all by default), optionally every teacher's label per pair (for a loss that combines them itself,
as raven's does: ``Step.teacher_labels``), and an ``info`` dict for the cell's record.

The stage is cached like the teacher stage: on disk under ``labels/<key>``, the key a hash of
everything that decides it (the teacher entry's key, the method's name, params and source digest,
the strong model that the features come from, the code of this module and of the teacher's, the
platform), held under the entry's lock from lookup to store, so a rerun, or a second run on the same
cache, reuses it. A method that does not override ``relabel`` has no label stage: nothing is cached
and stage 4 is what it always was.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

import torch

from bench.core.data import OrderedPair
from bench.core.distributed import on_main_process
from bench.core.errors import BenchError
from bench.core.io import atomic_write_json, csv_gz_bytes, read_csv_gz
from bench.core.versions import LABEL_CODE, code_version, platform_version
from methods.api import LabelInputs, Labels

if TYPE_CHECKING:
    from torch import nn

    from bench.core.cache import SharedWork
    from bench.stages.context import RunContext
    from bench.stages.teacher import CellData

LABEL_STAGE_VERSION = "labels/v1"
LABEL_FILES = ("labels.csv.gz", "info.json")
CACHE_KIND = "labels"
HOLDOUT_SHARE = 0.2   # of half A, held out from the teacher whose error LabelInputs.teacher_error() measures


def label_code() -> str:
    return code_version(LABEL_CODE)


# --- the stage in a cell -------------------------------------------------------------------------------
@dataclass
class StageLabels:
    """The label stage's result in a cell: the training pairs with their labels, and its record."""

    # the keys record() writes itself: a method's info may not use them
    RECORD_KEYS: ClassVar[tuple[str, ...]] = ("cache_key", "reused", "pairs", "kept")

    key: str
    reused: bool
    kept: list[int]                                # half-B indices of the training pairs
    targets: list[float]
    teacher_labels: list[list[float]] | None
    info: dict

    def record(self, half_b: int) -> dict:
        """What CellResult.label_stage holds."""
        return {"cache_key": self.key, "reused": self.reused, "pairs": half_b, "kept": len(self.kept), **self.info}


def label_stage(ctx: RunContext, source: str, seed: int, data: CellData, shared: SharedWork,
                timings: dict[str, float]) -> StageLabels:
    """Stage 4 for a label-side method: ``ctx.method.relabel``'s labels, from the cache when an entry
    for the same teacher, method, params, code and platform exists."""
    from methods import method_code

    method = ctx.method
    inputs = {
        "stage": LABEL_STAGE_VERSION, "teacher": data.teacher.key,
        "method": method.name, "params": method.params.model_dump(),
        "method_code": method_code(type(method)),
        "strong": ctx.models.strong, "strong_revision": ctx.revisions["strong"],
        "strong_formatter": ctx.formatter("strong").provenance(),
        "code": label_code(), "platform": platform_version(),
    }
    key = ctx.cache.key(inputs)
    t = time.perf_counter()
    # Held from the lookup to the store: a second run on this cache waits here, then reuses the entry.
    with ctx.cache.lock(CACHE_KIND, key, collective=True):
        stage = _label_stage(ctx, source, seed, data, shared, key, inputs)
    method.relabelled(stage.info)   # computed now or read from the cache, the method sees the same record
    timings["label_stage"] = time.perf_counter() - t
    return stage


def _label_stage(ctx: RunContext, source: str, seed: int, data: CellData, shared: SharedWork, key: str,
                 inputs: dict) -> StageLabels:
    ordered = data.teacher.ordered
    folder = ctx.cache.load(CACHE_KIND, key, required=LABEL_FILES)
    if folder is not None:
        stage = _read_stage(folder, key, ordered)
        if stage is not None:
            return stage
        on_main_process(lambda: ctx.cache.discard(CACHE_KIND, key, "it does not match this cell's pairs"))

    label_inputs = cell_label_inputs(ctx, source, seed, data, shared)
    labels = ctx.method.relabel(label_inputs)
    kept, targets, teacher_labels = checked(labels, len(ordered), ctx.method.name)
    info = {**label_inputs.record, **labels.info}
    taken = sorted(set(info) & set(StageLabels.RECORD_KEYS))
    if taken:
        raise BenchError(f"method {ctx.method.name!r}: Labels.info uses {taken}, which the stage records itself "
                         f"({', '.join(StageLabels.RECORD_KEYS)}). Fix its relabel: name them otherwise")
    try:
        json.dumps(info, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise BenchError(f"method {ctx.method.name!r}: Labels.info must hold JSON values (numbers, text, lists, "
                         f"dicts) without NaN; {error}. Fix its relabel: convert tensors with .tolist()") from None
    width = len(teacher_labels[0]) if teacher_labels else 0

    def write(folder: Path) -> None:
        (folder / "labels.csv.gz").write_bytes(csv_gz_bytes(
            ("pair_id", "a_is_chosen", "target", *(f"teacher_{m}" for m in range(width))),
            [(ordered[i].pair.id, int(ordered[i].a_is_chosen), q, *(teacher_labels[j] if width else ()))
             for j, (i, q) in enumerate(zip(kept, targets))]))
        atomic_write_json(folder / "info.json", info)

    on_main_process(lambda: ctx.cache.store(CACHE_KIND, key, inputs, write, required=LABEL_FILES))
    return StageLabels(key, False, kept, targets, teacher_labels, info)


def checked(labels: Labels, n: int, method: str) -> tuple[list[int], list[float], list[list[float]] | None]:
    """``labels`` made explicit (every kept index) after checking it, with errors that name the method
    and the fix: a label stage that hands the student something malformed is the method's bug."""
    where = f"method {method!r}: relabel"
    if not isinstance(labels, Labels):
        raise BenchError(f"{where} returned {type(labels).__name__}, not bench.stages.label_stage.Labels")
    kept = list(range(n)) if labels.kept is None else [int(i) for i in labels.kept]
    if not kept:
        raise BenchError(f"{where} kept no pairs: the student would train on nothing. Keep at least one pair "
                         f"(half B holds {n})")
    if any(b <= a for a, b in zip(kept, kept[1:])) or kept[0] < 0 or kept[-1] >= n:
        raise BenchError(f"{where}: Labels.kept must be increasing half-B indices in [0, {n}), each once")
    targets = [float(q) for q in labels.targets]
    if len(targets) != len(kept):
        raise BenchError(f"{where} gave {len(targets)} targets for {len(kept)} training pairs: one target per kept "
                         "pair (every pair when Labels.kept is None), in half B's order")
    bad = [q for q in targets if not (0.0 <= q <= 1.0)]   # NaN fails this too
    if bad:
        raise BenchError(f"{where} gave {len(bad)} targets outside [0, 1] (e.g. {bad[0]}): a target is P(a > b)")
    teacher_labels = labels.teacher_labels
    if teacher_labels is not None:
        teacher_labels = [[float(q) for q in row] for row in teacher_labels]
        widths = {len(row) for row in teacher_labels}
        if len(teacher_labels) != len(kept) or len(widths) != 1 or 0 in widths:
            raise BenchError(f"{where}: Labels.teacher_labels must hold one row per training pair ({len(kept)}), "
                             "every row the same number (>= 1) of teachers' P(a > b)")
        if any(not (0.0 <= q <= 1.0) for row in teacher_labels for q in row):
            raise BenchError(f"{where}: Labels.teacher_labels holds values outside [0, 1]; each is a P(a > b)")
    return kept, targets, teacher_labels


def _read_stage(folder: Path, key: str, ordered: list[OrderedPair]) -> StageLabels | None:
    """The cached entry, or None when its pairs are not a subsequence of this cell's half B in order."""
    rows = read_csv_gz(folder / "labels.csv.gz")
    kept, position = [], 0
    for row in rows:
        while position < len(ordered) and (ordered[position].pair.id, int(ordered[position].a_is_chosen)) != \
                (row["pair_id"], int(row["a_is_chosen"])):
            position += 1
        if position == len(ordered):
            return None
        kept.append(position)
        position += 1
    columns = sorted((c for c in (rows[0] if rows else {}) if c.startswith("teacher_")), key=lambda c: int(c[8:]))
    teacher_labels = [[float(r[c]) for c in columns] for r in rows] if columns else None
    info = json.loads((folder / "info.json").read_text())
    return StageLabels(key, True, kept, [float(r["target"]) for r in rows], teacher_labels, info)


def cell_label_inputs(ctx: RunContext, source: str, seed: int, data: CellData, shared: SharedWork) -> LabelInputs:
    """A cell's LabelInputs: more teachers through the teacher stage, the strong model as the student's start."""
    from bench.core.data import sub_seed
    from bench.core.distributed import state
    from bench.core.metrics import accuracy
    from bench.stages.models import load_reward_model
    from bench.stages.reference import sequences_digest
    from bench.stages.teacher import HELD_OUT, teacher_stage

    record: dict = {}
    ordered = data.teacher.ordered

    members: dict[int, list[float]] = {}   # asked twice, a member is fetched and recorded once

    def member_labels(member: int) -> list[float]:
        if member in members:
            return members[member]
        # Extra teachers score no eval set: only their labels on half B are used.
        teacher = teacher_stage(ctx, source, seed, data.half_a, data.half_b, {}, {}, member=member)
        record.setdefault("teachers", [{"member": 0, "cache_key": data.teacher.key,
                                        **_agreement(data.teacher.info)}])
        record["teachers"].append({"member": member, "cache_key": teacher.key, "reused": teacher.reused,
                                   **_agreement(teacher.info)})
        members[member] = teacher.soft_labels
        return teacher.soft_labels

    def held_out_error() -> float:
        if "held_out_teacher" not in record:
            teacher = teacher_stage(ctx, source, seed, data.half_a, data.half_b, {}, {}, holdout=HOLDOUT_SHARE)
            chosen, rejected = teacher.scores[HELD_OUT]
            record["held_out_teacher"] = {"cache_key": teacher.key, "reused": teacher.reused, "share": HOLDOUT_SHARE,
                                          "pairs": len(chosen), "error": 1.0 - accuracy(chosen, rejected) / 100.0}
        return record["held_out_teacher"]["error"]

    loaded: list[nn.Module] = []   # loaded once, for the stage's lifetime

    def load_strong() -> nn.Module:
        if not loaded:
            model = load_reward_model(ctx.models.strong, seed=sub_seed(seed, "student-init"))
            loaded.append(model.to(state().device).eval())
        return loaded[0]

    def pair_features() -> torch.Tensor:
        strong = ctx.formatter("strong")
        pairs = [(strong.encode(o.pair.prompt, o.a), strong.encode(o.pair.prompt, o.b)) for o in ordered]
        # half B by a digest of its token ids in order (ids alone would not see the text change under them):
        # the inputs go into the entry's manifest, and half B may be 100k pairs
        which = {"sequences": sequences_digest([x for pair in pairs for x in pair]),
                 "batch_size": ctx.models.score_batch_size, "code": code_version(("bench.stages.label_stage",))}
        tensors, reused = shared.tensors("pair-features", which, lambda: {
            "features": head_input_differences(load_strong(), pairs, ctx.models.score_batch_size)})
        record["features"] = {"width": int(tensors["features"].shape[1]), "reused": reused}
        return tensors["features"]

    return LabelInputs(ordered, list(data.teacher.soft_labels), member_labels, load_strong, pair_features, record,
                       held_out_error)


def _agreement(info: dict) -> dict:
    labels = info.get("labels", {})
    return {"agreement_with_gold": labels["agreement_with_gold"]} if "agreement_with_gold" in labels else {}


@torch.no_grad()
def head_input_differences(model: nn.Module, pairs: list[tuple], batch_size: int) -> torch.Tensor:
    """Per pair, f(a) - f(b) (float32, CPU): f is the input of the model's reward head, caught by a hook
    on the head during the model's own reward forward (bench.stages.batches.reward_forward), so the features
    are read exactly where and how the reward is, for every readout and batch layout."""
    from bench.core.anatomy import head_of, inner_model
    from bench.stages.batches import collate_examples, reward_forward

    _, head = head_of(inner_model(model))
    seen: list[torch.Tensor] = []
    hook = head.register_forward_hook(lambda module, args, output: seen.append(args[0]))
    device = next(model.parameters()).device
    per = max(1, batch_size // 2)   # batch_size counts sequences, as in bench.stages.batches.score
    out = []
    try:
        for start in range(0, len(pairs), per):
            chunk = pairs[start:start + per]
            batch = {k: v.to(device) for k, v in collate_examples(model, chunk).items()}
            seen.clear()
            reward_forward(model, batch)
            # The last call is the one the reward is read from: with a response readout the model's own
            # forward runs its head on its default pooling first (bench.stages.batches.read_response).
            vectors = seen[-1]
            if vectors.dim() != 2 or vectors.shape[0] != 2 * len(chunk):
                raise BenchError(f"{type(inner_model(model)).__name__}'s reward head reads inputs of shape "
                                 f"{tuple(vectors.shape)}, not one vector per sequence: its features cannot be read "
                                 "per pair. Use a model pair whose strong model's head reads one vector per sequence "
                                 "(BERT-style encoders, decoders)")
            vectors = vectors.float().cpu()
            out.append(vectors[:len(chunk)] - vectors[len(chunk):])
    finally:
        hook.remove()
    return torch.cat(out)
