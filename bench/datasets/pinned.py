"""Real rows pinned by sha256: the same rows from a local data dir or from the Hub (the datasets of w2s-real-v1).

The realdata samples this project has offline are not whole Hub splits: Anthropic hh-rlhf's helpful-base and
harmless-base **test** splits, whole, and the first 500 rows of UltraFeedback's ``train_prefs`` and
``test_prefs`` with only their ``chosen`` and ``rejected`` columns. A protocol on them names exactly which
rows it reads, so that a run from local files and a run from the Hub read the same ones, and checks it:

* **Locally** (``--data-dir DIR``, DIR written by ``python -m bench.datasets.offline_dir DIR --realdata
  REALDATA``): the split's file under ``DIR/<local_name>/``, found as bench/datasets/loading.py finds it.
* **From the Hub** (no data dir): the Hub split named by the spec's ``hub_splits``, then ``take``:
  ``"opening-turn"`` keeps the rows that ``bench.datasets.offline_dir`` puts into this split (hh-rlhf's test
  rows go 60% to ``train`` and 40% to ``test`` by a hash of their opening user turn; bench.datasets.
  offline_dir.goes_to_train), ``"head"`` keeps the first ``head`` rows.

Either way each row is cut to the spec's ``columns`` (before it is taken, on the Hub) and the split's rows must have the pinned
``rows_sha256``: the sha256 of their canonical JSON (``rows_digest``), one line per row in order, so that
a parquet row from the Hub and a JSON line of a local file that hold the same values digest alike. A
different digest is an error naming both, before any pair is made. Then the rows become pairs exactly as
bench/datasets/loading.py makes them (``pairs_of``: its normaliser, drops, sample, counts and errors), and the
provenance records the digest beside the files' sha256 or the Hub commit.

**Keys.** The code that makes these pairs is part of every w2s-real-v1 teacher's and cell's key: this module (the
registry loader), and ``KEY_MODULES``, which bench.stages.context.RunContext.loaders adds for it. Only this
protocol's keys hold them.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Iterable, Iterator

from bench.core.data import LoadedSplit
from bench.core.errors import BenchError
from bench.core.specs import DatasetSpec
from bench.datasets.loading import find_local_files, hub_rows, local_rows, pairs_of, rules_of
from bench.datasets.rows import DropReason

TAKES = ("opening-turn", "head")
# The modules besides this one whose code decides the pairs of a pinned split: loading's readers and normaliser
# step, offline_dir's cut by opening turn (``taken``), rows' DropReason, and the normalisers the pinned datasets
# name (``normalizer_module``; tests/test_real_rows.py checks that every one is here). RunContext.loaders adds
# them to the code version of a w2s-real-v1 teacher and cell.
KEY_MODULES = ("bench.datasets.loading", "bench.datasets.offline_dir", "bench.datasets.rows", "bench.datasets.hh",
               "bench.datasets.ultrafeedback")


def load(spec: DatasetSpec, split: str, limit: int | None, data_dir: Path | None = None) -> LoadedSplit:
    """A seeded sample of ``limit`` pairs of ``split`` (all of them for None), from rows checked by their digest."""
    options = spec.kwargs
    pinned = dict(options["rows_sha256"]).get(split)
    if pinned is None:
        raise BenchError(f"dataset {spec.name!r} has no pinned rows for split {split!r} (it pins "
                         f"{', '.join(dict(options['rows_sha256']))}); use one of those splits")
    if data_dir is None:
        hub_split = dict(options["hub_splits"])[split]
        rows, _, provenance = hub_rows(spec, hub_split)
        rows = taken(spec, split, (cut(row, options["columns"]) for row in rows))   # a row's split key: its kept columns
        where = f"{options['hub_id']} split {hub_split!r} on the Hub ({options['take']} rows of {split!r})"
        fix = (f"the Hub's rows are not the ones this protocol pinned: the rows of {options['hub_id']} on the Hub's "
               f"default branch differ (a new revision of the dataset?). Pass --data-dir DIR with files that hold "
               f"the pinned rows (split {split!r} with digest {pinned}, at DIR/{options['local_name']}/<split>.jsonl.gz "
               "or another layout bench/datasets/loading.py reads)")
    else:
        files = find_local_files(spec, split, Path(data_dir))
        rows, _, provenance = local_rows(files, Path(data_dir))
        where = ", ".join(str(f) for f in files)
        fix = ("write the data dir again with `python -m bench.datasets.offline_dir DIR --realdata REALDATA` from the "
               "project's realdata files, or drop --data-dir to read the same rows from the Hub")
    rows = [cut(row, options["columns"]) for row in rows]
    digest = rows_digest(rows)
    if digest != pinned:
        raise BenchError(f"dataset {spec.name!r} split {split!r}: the {len(rows)} rows of {where} have digest "
                         f"{digest}, not the pinned {pinned} (bench.datasets.pinned.rows_digest). Fix: {fix}.")
    provenance["rows_sha256"] = digest
    return pairs_of(spec, split, rules_of(spec), iter(rows), None, provenance, where, limit)


def taken(spec: DatasetSpec, split: str, rows: Iterable[Any]) -> Iterator[Any]:
    """The rows of the Hub split that make ``split``, as ``offline_dir`` takes them for the local copy."""
    options = spec.kwargs
    take = options["take"]
    if take == "head":
        for index, row in enumerate(rows):
            if index == options["head"]:
                return
            yield row
    elif take == "opening-turn":
        from bench.datasets.offline_dir import goes_to_train, split_key

        to_train = split == spec.train_split
        yield from (row for row in rows if goes_to_train(split_key(row)) == to_train)
    else:
        raise BenchError(f"dataset {spec.name!r}: take={take!r} is not one of {', '.join(TAKES)}")


def cut(row: Any, columns: Iterable[str]) -> Any:
    """``row`` with only ``columns``, as the local copies keep them; a row that is not an object, or lacks one
    of them, as it is (its digest then differs, and its normaliser drops it as malformed)."""
    if not isinstance(row, dict) or any(c not in row for c in columns):
        return row
    return {c: row[c] for c in columns}


def rows_digest(rows: Iterable[Any]) -> str:
    """sha256 of the rows' canonical JSON (sorted keys, no spaces, UTF-8), one line per row in order; a line a
    local file could not read (a DropReason) as its reason."""
    digest = hashlib.sha256()
    for row in rows:
        text = f"unreadable: {row}" if isinstance(row, DropReason) else json.dumps(
            row, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        digest.update(text.encode() + b"\n")
    return digest.hexdigest()


def card_lines(spec: DatasetSpec) -> list[str]:
    """What the protocol card says about where the spec's rows come from and how they are checked."""
    options = spec.kwargs
    hub = f"`{options['hub_id']}`" + (f", data_dir `{options['hub_data_dir']}`" if options.get("hub_data_dir") else "")
    splits = dict(options["hub_splits"])
    take = {"head": f"its first {options.get('head')} rows",
            "opening-turn": ("the rows `python -m bench.datasets.offline_dir` puts into it: a stable hash of each "
                             "conversation's opening user turn sends 60% of the rows to `train` and 40% to `test`")
            }[options["take"]]
    return [f"- **Rows:** from the Hub, {hub}: " + "; ".join(f"`{split}` from split `{hub_split}`" for split, hub_split
                                                            in splits.items()) + f", {take}; only the columns "
            f"{', '.join(f'`{c}`' for c in options['columns'])} are read",
            f"- **Local files (`--data-dir DIR`):** `DIR/{options['local_name']}/<split>.jsonl.gz`, written by "
            "`python -m bench.datasets.offline_dir DIR --realdata REALDATA`",
            "- **Pinned rows** (sha256 of the rows' canonical JSON, `bench.datasets.pinned.rows_digest`; a run whose "
            "rows differ stops): " + "; ".join(f"`{split}` `{digest}`" for split, digest in options["rows_sha256"])]
