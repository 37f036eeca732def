"""The label digest: what a student learned from, by a sha256 any student's submitter can recompute.

Half B's training pairs with their labels, as TRL preference rows (``preference_rows``: the preferred
response first, with its probability), digested in order (``label_digest``, format ``LABEL_FORMAT``).
``bench run`` records it in every cell (CellResult.labels, ``labels_record``), ``bench labels`` writes
it beside the rows it exports, and ``bench evaluate --labels`` recomputes it from the train.jsonl a
checkpoint was trained on.
"""
from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any, Iterable

from bench.core.errors import BenchError
from bench.core.result_schema import LabelsRecord

if TYPE_CHECKING:
    from bench.core.data import OrderedPair

LABEL_FORMAT = "shiftbench-labels/v1"


def preference_rows(ordered: list[OrderedPair], targets: list[float]) -> list[dict[str, Any]]:
    """Half B as TRL preference rows: ``targets`` are P(a > b) per ordered pair (the teacher's soft
    labels, or gold 1/0); each row puts the preferred response first, with its probability."""
    rows = []
    for o, q in zip(ordered, targets):
        first = q >= 0.5
        chosen, rejected = (o.a, o.b) if first else (o.b, o.a)
        rows.append({"pair_id": o.pair.id,
                     "prompt": [{"role": role, "content": content} for role, content in o.pair.prompt],
                     "chosen": [{"role": "assistant", "content": chosen}],
                     "rejected": [{"role": "assistant", "content": rejected}],
                     "soft_label": float(q) if first else 1.0 - float(q)})
    return rows


def _reply(messages: Any, where: str) -> str:
    if (not isinstance(messages, list) or len(messages) != 1 or not isinstance(messages[0], dict)
            or messages[0].get("role") != "assistant" or not isinstance(messages[0].get("content"), str)):
        raise BenchError(f"{where}: expected one assistant message [{{\"role\": \"assistant\", \"content\": ...}}], "
                         f"got {str(messages)[:120]}. Fix: use the train.jsonl that bench labels wrote, unchanged")
    return messages[0]["content"]


def _digest_line(row: dict[str, Any], where: str) -> bytes:
    prompt = row.get("prompt")
    if not isinstance(prompt, list) or not all(isinstance(m, dict) and isinstance(m.get("role"), str)
                                                and isinstance(m.get("content"), str) for m in prompt):
        raise BenchError(f"{where}: prompt is not a conversation [{{\"role\": ..., \"content\": ...}}, ...]. Fix: use "
                         "the train.jsonl that bench labels wrote, unchanged")
    label = row.get("soft_label")
    if not isinstance(row.get("pair_id"), str) or isinstance(label, bool) or not isinstance(label, (int, float)):
        raise BenchError(f"{where}: needs a pair_id (text) and a soft_label (a number). Fix: use the train.jsonl that "
                         "bench labels wrote, unchanged")
    key = [row["pair_id"], [[m["role"], m["content"]] for m in prompt], _reply(row.get("chosen"), where),
           _reply(row.get("rejected"), where), float(label)]
    return json.dumps(key, ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode() + b"\n"


def label_digest(rows: Iterable[dict[str, Any]]) -> str:
    """sha256 over LABEL_FORMAT and each row's [pair_id, prompt as [role, content] pairs, chosen text,
    rejected text, soft_label] as compact ASCII JSON, one line per row, in order."""
    digest = hashlib.sha256(LABEL_FORMAT.encode() + b"\n")
    for i, row in enumerate(rows):
        digest.update(_digest_line(row, f"row {i + 1}"))
    return digest.hexdigest()


def labels_record(kind: str, ordered: list[OrderedPair], targets: list[float], stage: str | None = None) -> LabelsRecord:
    """What a student learned from, as CellResult.labels records it: ``ordered`` and ``targets`` are its
    training pairs and their labels; ``stage`` the label stage's cache key when a label-side method made them."""
    return LabelsRecord(kind=kind, pairs=len(targets), format=LABEL_FORMAT,
                        digest=label_digest(preference_rows(ordered, targets)), stage=stage)
