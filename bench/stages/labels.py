"""``bench labels``: a cell's student training data, exported for a student trained outside the harness.

A cell's student learns from half B of the source's train pool with the teacher's soft labels
(bench/stages/pipeline.py, stages 1-4). ``bench labels`` writes exactly that, per cell, to
``<out>/<protocol>/<models>/seed<N>/<source>/`` (``<source>`` with ``/`` written ``__``)::

    train.jsonl        TRL's preference format, one pair a line (below)
    dataset/           the same rows as a ``datasets`` dataset (Dataset.save_to_disk), plus the token
                       ids the protocol's formatter gives the pair's strong model; its info holds the
                       provenance
    README.md          the card: what the rows are, the provenance, the source dataset's licence;
                       its header makes ``datasets.load_dataset(FOLDER)`` read train.jsonl
    provenance.json    the cell, the label digest, the teacher's cache key, the protocol hash, ...

A row: ``pair_id``; ``prompt``, the conversation as ``[{"role", "content"}, ...]``; ``chosen`` and
``rejected``, each one assistant message, ordered by the teacher's preference (chosen is the
response the teacher scores higher; on a tie, the first of the pair's seeded order);
``soft_label``, the teacher's P(chosen > rejected) = sigmoid(r_teacher(chosen) - r_teacher(rejected)),
from 0.5 to 1. Soft-label Bradley-Terry on (chosen, rejected, soft_label) is the loss ``naive``
trains on (it is symmetric in the order of a pair). The rows are in the order the harness's student
sees them; gold labels are not exported (the student of a W2S cell never sees them).

The label digest (bench.core.label_digest: ``label_digest``, format ``LABEL_FORMAT``) is a sha256 over the rows' pair ids,
prompts, chosen and rejected texts and soft labels, in order. ``bench run`` records the digest of
what each student learned from (CellResult.labels); ``bench evaluate --labels`` recomputes it from
the train.jsonl a checkpoint was trained on and refuses labels that are not the cell's.

Labels come from the teacher as it is now: the teacher stage is cached and keyed by the code and
platform (bench/core/versions.py), so the labels of a cell are the same wherever its teacher cache key is.
A label-side method (one whose label stage changes the labels before the student sees them,
bench/stages/label_stage.py) trains on labels of its own, recorded by digest in its cells; ``bench labels``
exports the teacher's labels only, and the provenance's ``label_method`` is None.
"""
from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.core.errors import BenchError
from bench.core.io import atomic_write_bytes, atomic_write_json, staged_folder
from bench.core.label_digest import LABEL_FORMAT, label_digest, preference_rows

if TYPE_CHECKING:
    from bench.core.settings import RunSettings

JSONL = "train.jsonl"
DATASET = "dataset"
CARD = "README.md"
PROVENANCE = "provenance.json"
TEXT_COLUMNS = ("pair_id", "prompt", "chosen", "rejected", "soft_label")
TOKEN_COLUMNS = ("chosen_ids", "rejected_ids", "chosen_token_type_ids", "rejected_token_type_ids")


# --- reading exported labels -------------------------------------------------------------------------
def labels_folder(root: Path, protocol: str, models: str, seed: int, source: str) -> Path:
    """Where ``bench labels --out root`` puts a cell's labels."""
    return Path(root) / protocol / models / f"seed{seed}" / source.replace("/", "__")


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of a train.jsonl (``path`` is the file or a labels folder holding it)."""
    path = Path(path)
    file = path / JSONL if path.is_dir() else path
    if not file.is_file():
        raise BenchError(f"--labels {path}: no {JSONL} there. Fix: give the folder bench labels wrote for this cell "
                         f"(it holds {JSONL} and {PROVENANCE}), or its {JSONL}")
    rows = []
    with open(file, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as error:
                raise BenchError(f"{file} line {number} is not JSON ({error}). Fix: use the {JSONL} that bench labels "
                                 "wrote, unchanged") from None
            if not isinstance(row, dict):
                raise BenchError(f"{file} line {number} is not a JSON object")
            rows.append(row)
    if not rows:
        raise BenchError(f"{file} holds no rows. Fix: export the cell's labels again with bench labels")
    return rows


def read_provenance(folder: Path) -> dict | None:
    """A labels folder's provenance.json, or None where there is none (or it is unreadable)."""
    try:
        data = json.loads((Path(folder) / PROVENANCE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


# --- bench labels --------------------------------------------------------------------------------------
FEATURES_DOC = {
    "pair_id": "the pair's id in its dataset (stable across runs and machines)",
    "prompt": "the conversation before the reply, as [{role, content}, ...]",
    "chosen": "the reply the teacher prefers, as one assistant message",
    "rejected": "the other reply, as one assistant message",
    "soft_label": "the teacher's P(chosen > rejected) = sigmoid(r(chosen) - r(rejected)), 0.5 to 1",
    "chosen_ids": "dataset/ only: the token ids the protocol's formatter gives the pair's strong model for "
                  "(prompt, chosen), truncated as the protocol says: exactly what bench evaluate scores",
    "rejected_ids": "dataset/ only: the same for (prompt, rejected)",
    "chosen_token_type_ids": "dataset/ only: the segment ids of chosen_ids (an encoder's pair template marks the "
                             "reply 1; all 0 for decoders)",
    "rejected_token_type_ids": "dataset/ only: the same for rejected_ids",
}


def _features():
    from datasets import Features, Value

    message = {"role": Value("string"), "content": Value("string")}
    return Features({"pair_id": Value("string"), "prompt": [message], "chosen": [message], "rejected": [message],
                     "soft_label": Value("float64"), "chosen_ids": [Value("int32")], "rejected_ids": [Value("int32")],
                     "chosen_token_type_ids": [Value("int8")], "rejected_token_type_ids": [Value("int8")]})


def _card(provenance: dict) -> str:
    from bench.core.hubcard import front_matter

    cell = provenance["cell"]
    name = f"ShiftBench labels: {cell['source']} seed {cell['seed']} ({cell['protocol']['name']}, {cell['models']})"
    header = front_matter(provenance["license"]["hub"], name,
                          ["shiftbench", "reward-modeling", "preference", "weak-to-strong"],
                          [("default", JSONL, True)])
    columns = "\n".join(f"| `{k}` | {v} |" for k, v in FEATURES_DOC.items())
    return f"""{header}
# {name}

The training data of the student of one ShiftBench cell: half B of the train pool of `{cell['source']}`
({provenance['pairs']} pairs), each with the soft label of the weak teacher
(`{provenance['models']['weak']['name']}`, trained on half A with gold labels). A student trained on
these rows outside ShiftBench is scored with `bench evaluate --labels THIS_FOLDER` on the cell's
ID and OOD test splits, against the same teacher (docs/bring-your-own-student.md).

`train.jsonl` is in TRL's preference format (prompt as a conversation, explicit chosen and rejected),
ordered by the teacher's preference, with the soft label in its own column; `dataset/` holds the same
rows as a `datasets` dataset (`datasets.load_from_disk`) with the exact token ids the protocol scores.
Gold labels are not included: a weak-to-strong student never sees them.

| column | what it holds |
|---|---|
{columns}

**How to use the soft label.** Soft-label Bradley-Terry, -[p log sigmoid(d) + (1-p) log sigmoid(-d)] with
d = r(chosen) - r(rejected) and p = soft_label, is the loss the ShiftBench `naive` student trains on.
A trainer that takes only hard pairs (TRL's RewardTrainer by default) trains on the teacher's ordering
and ignores how sure the teacher is; `examples/trl_reward_model.py` shows both, and a margin variant.

**Label digest** (`{LABEL_FORMAT}`): `{provenance['digest']}`. `bench evaluate` recomputes it from
`train.jsonl` and refuses a checkpoint whose labels are not this cell's.

**Licence.** The prompts and replies come from `{cell['source']}`: {provenance['license']['source']}.
The soft labels are ShiftBench output.

## Provenance

```json
{json.dumps(provenance, indent=2)}
```
"""


def _write(folder: Path, rows: list[dict], tokens: dict[str, list], provenance: dict) -> None:
    """The labels folder, written in a staging folder beside it and moved into place whole."""
    from datasets import Dataset, DatasetInfo

    with staged_folder(folder, "labels folder (--out)") as staging:
        columns = {name: [row[name] for row in rows] for name in TEXT_COLUMNS}
        info = DatasetInfo(
            description=(f"ShiftBench student training data (half B with the teacher's soft labels) of "
                         f"{provenance['cell']['source']} seed {provenance['cell']['seed']}, protocol "
                         f"{provenance['cell']['protocol']['name']}, model pair {provenance['cell']['models']}. "
                         f"Provenance: {json.dumps(provenance, sort_keys=True)}"),
            license=provenance["license"]["source"], dataset_name="shiftbench-labels",
            config_name=f"{provenance['cell']['source'].replace('/', '__')}-seed{provenance['cell']['seed']}",
            features=_features())
        Dataset.from_dict({**columns, **tokens}, info=info).save_to_disk(str(staging / DATASET))
        atomic_write_bytes(staging / JSONL, b"".join(
            json.dumps({k: row[k] for k in TEXT_COLUMNS}, ensure_ascii=False).encode() + b"\n" for row in rows))
        atomic_write_json(staging / PROVENANCE, provenance)
        atomic_write_bytes(staging / CARD, _card(provenance).encode())


def labels_provenance(ctx, source: str, seed: int, data, digest: str) -> dict:
    """What a labels folder records: the cell, the digest, the teacher, and what decides them."""
    from bench.core.env import environment
    from bench.core.hubcard import hub_license
    from bench.core.protocols import DATASETS
    from bench.core.specs import stable_hash, to_plain
    from bench.core.versions import platform_version

    strong = ctx.formatter("strong").provenance()
    identity = {"format": LABEL_FORMAT, "protocol_hash": ctx.protocol_hash, "models": ctx.models,
                "revisions": ctx.revisions, "strong_formatter": strong, "teacher": data.teacher.key,
                "source": source, "seed": seed}
    license_text = DATASETS.get(source).license
    return {
        "format": LABEL_FORMAT,
        "digest": digest,
        "pairs": len(data.teacher.ordered),
        "label_method": None,   # the teacher's labels as every teacher-label method trains on them
        "cell_key": stable_hash(identity, length=24),
        "cell": {"protocol": {"name": ctx.protocol.name, "version": ctx.protocol.version, "hash": ctx.protocol_hash},
                 "models": ctx.models.name, "source": source, "category": ctx.protocol.category_of(source),
                 "seed": seed},
        "teacher": {"cache_key": data.teacher.key, "labels": data.teacher.info.get("labels")},
        "models": {**to_plain(ctx.models),
                   "weak": {**to_plain(ctx.models.weak), "revision": ctx.revisions["weak"]},
                   "strong": {**to_plain(ctx.models.strong), "revision": ctx.revisions["strong"]}},
        "strong_formatter": {k: v for k, v in strong.items() if k != "chat_template"},
        "train_pool": ctx.loaded(source, "train").provenance,
        "sizes": {"train_pool": len(data.pool), "half_a": len(data.half_a), "half_b": len(data.half_b)},
        "license": {"source": license_text, "hub": hub_license([license_text])},
        "platform": platform_version(),
        "environment": environment(),
        "command": ctx.settings.command,
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
    }


def export_labels(settings: RunSettings, force: bool = False) -> list[Path]:
    """Write each cell's labels folder (module docstring) under ``settings.out``; a folder that already
    holds the same labels is kept, one with other labels is replaced only with ``force``."""
    from bench.core.cache import Cache
    from bench.stages.context import RunContext
    from bench.stages.pipeline import cell_data, check_cells
    from bench.stages.preflight import check_folders, preflight

    ctx = RunContext(settings, None, Cache(settings.cache_dir))
    folders = {cell: labels_folder(settings.out, settings.protocol.name, settings.models.name, *cell)
               for cell in settings.cells}
    preflight({"labels folder (--out)": settings.out, "teacher cache (--cache-dir)": ctx.cache.root})
    check_folders({f"the labels folder of {source} seed {seed}": folder for (seed, source), folder in folders.items()})
    check_cells(ctx, settings.cells)
    strong = ctx.formatter("strong")
    written = []
    for (seed, source), folder in folders.items():
        data = cell_data(ctx, source, seed, {})
        rows = preference_rows(data.teacher.ordered, data.teacher.soft_labels)
        digest = label_digest(rows)
        before = read_provenance(folder)
        if before is not None and before.get("digest") == digest and (folder / JSONL).is_file() and not force:
            print(f"[skip] {source} seed {seed}: {folder} already holds these labels (digest {digest[:12]})",
                  file=sys.stderr)
            written.append(folder)
            continue
        if folder.exists() and not force:
            was = f"labels with digest {before['digest'][:12]}" if before and "digest" in before else "other files"
            raise BenchError(f"{folder} holds {was}, not this cell's labels as its teacher gives them now (digest "
                             f"{digest[:12]}): the teacher's code or platform changed since. Fix: pass --force to "
                             "replace them (a student trained on the old ones no longer matches this cell), or "
                             "another --out")
        encoded = {side: [strong.encode(tuple((m["role"], m["content"]) for m in row["prompt"]), row[side][0]["content"])
                          for row in rows] for side in ("chosen", "rejected")}
        tokens = {f"{side}_ids": [e.input_ids for e in encoded[side]] for side in encoded}
        tokens.update({f"{side}_token_type_ids": [e.token_type_ids for e in encoded[side]] for side in encoded})
        _write(folder, rows, tokens, labels_provenance(ctx, source, seed, data, digest))
        written.append(folder)
    return written
