"""Loading a real preference dataset: raw rows from the Hub or from local files, normalised to pairs.

This is the registry loader of every real dataset (``DatasetSpec.loader = "bench.datasets.loading:load"``).
The spec's options say where the rows live and how they become pairs:

* ``hub_id``, ``config``, ``hub_data_dir``, ``revision`` -- the ``datasets.load_dataset`` arguments;
* ``normalizer_module`` -- a module in ``bench/datasets/`` with ``normalize(row) -> Pair | DropReason``,
  ``REQUIRED_COLUMNS`` and ``RULE`` (the rule in words, which is also the spec's ``normalizer``);
* ``local_name`` -- the dataset's folder under a local data dir (the name after the protocol prefix).

**Which pairs.** The whole split is read in its order (the file's order) and normalised row by
row; when it has more usable pairs than ``limit``, a uniform random sample of ``limit`` of them is
kept, drawn by reservoir sampling with a seed fixed by the dataset and split (not by the run's
seed), and returned in file order. So the same files always give the same pairs; the sample is
representative even of a file sorted by domain or source (a head would not be); and memory holds
``limit`` pairs, not the split. Pair ids are ``<dataset>/<split>/<row index>``, the row's 0-based
position in the split (blank lines not counted), so an id names the same row whether it was read
from the Hub or from a local copy. A split with at most ``limit`` usable rows gives all of them.
The provenance's ``rows_read``, ``kept``, ``usable`` and ``dropped`` (by reason) count the rows.

**From the Hub** (no data dir): ``datasets`` loads ``hub_id`` with ``config`` / ``hub_data_dir`` at
``revision`` (None: the default branch); the commit it resolved to is recorded.

**From a local data dir** (``data_dir=DIR``, the CLI's ``--data-dir DIR``): files in the
dataset's ORIGINAL schema (the Hub's columns, unconverted), found at

    DIR/<local_name>/<split>.jsonl | <split>.jsonl.gz | <split>.parquet     one file, or
    DIR/<local_name>/<split>-*.parquet                                      Hub parquet shards, or
    DIR/<local_name>/<split>/*.jsonl | *.jsonl.gz | *.parquet               a folder of shards

(or the same under ``DIR/<local_name>/data/``). Shards are read in file-name order. Upstream file
names fit this where they can: hh-rlhf's ``helpful-base/test.jsonl.gz`` goes to
``DIR/hh-helpful/test.jsonl.gz``, HelpSteer3's ``preference/validation.jsonl.gz`` to
``DIR/helpsteer3/validation.jsonl.gz``, UltraFeedback's ``data/test_prefs-00000-of-00001.parquet``
to ``DIR/ultrafeedback/data/``, PKU-SafeRLHF's per-model ``data/<Model>/test.jsonl`` files to
``DIR/pku-saferlhf/test/<Model>.jsonl`` (the ``default`` config is all three models). Row ids
follow the order of the files, so a local copy names the same rows as the Hub only when its
shards sort in the Hub's order.

The realdata samples of this project (hh-rlhf test splits only; REALDATA is the folder that holds
them, ``../shared/realdata`` beside a checkout) are laid out by links::

    mkdir -p DIR/hh-helpful DIR/hh-harmless
    ln -s REALDATA/hh_rlhf_helpful/test.jsonl.gz  DIR/hh-helpful/test.jsonl.gz
    ln -s REALDATA/hh_rlhf_harmless/test.jsonl.gz DIR/hh-harmless/test.jsonl.gz

A split that is not there is an error that lists every path looked for, even when another split
of the dataset is: a train pool is never taken from a test file behind the user's back.

Rows that do not have the schema (a missing key, a wrong type, a line that is not JSON) are
dropped and counted as ``malformed: ...``, and rows whose texts hold more than ``MAX_ROW_CHARS``
characters in all as ``too long: ...`` (a sequence is cut to the protocol's max length, at most a few
thousand characters, but only after the tokenizer has read the whole text: one 50 MB row took a minute
and 6.7 GB to encode); a file without a required column, a split where every
row is malformed, and a split with no usable pair are errors that name the dataset and the file.
"""
from __future__ import annotations

import gzip
import importlib
import json
import random
import re
import zlib
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

from bench.core.data import LoadedSplit, Pair
from bench.core.errors import BenchError
from bench.core.specs import DatasetSpec
from bench.datasets.rows import DropReason

FORMATS = (".jsonl", ".jsonl.gz", ".parquet")
# The most characters a row's strings may hold together, every column counted (UltraFeedback repeats the
# prompt and responses in four). The longest real rows at hand hold 8,230 (hh-rlhf) and 18,803
# (UltraFeedback) characters, ten times less. Tokenizing a text before it is cut costs about 4 s per
# million characters (MiniLM's tokenizer, on a loaded 2-core machine, 2026-12-02), and a row is encoded
# by both models, so the limit keeps a row's encodes to about a second there.
MAX_ROW_CHARS = 200_000
TOO_LONG = f"too long: more than {MAX_ROW_CHARS:,} characters of text"


def load(spec: DatasetSpec, split: str, limit: int | None, data_dir: Path | None = None) -> LoadedSplit:
    """A seeded sample of ``limit`` pairs of ``split`` (all of them for None), with where they came from."""
    options = spec.kwargs
    rules = rules_of(spec)
    if data_dir is None:
        rows, columns, provenance = hub_rows(spec, split)
        where = f"{options['hub_id']} split {split!r} on the Hub"
    else:
        files = find_local_files(spec, split, Path(data_dir))
        rows, columns, provenance = local_rows(files, Path(data_dir))
        where = ", ".join(str(f) for f in files)
    return pairs_of(spec, split, rules, rows, columns, provenance, where, limit)


def pairs_of(spec: DatasetSpec, split: str, rules: ModuleType, rows: Iterator[Any], columns: list[str] | None,
             provenance: dict, where: str, limit: int | None) -> LoadedSplit:
    """The split's pairs from its raw ``rows`` (read from ``where``; ``columns`` when the format declares them, else a
    column is checked only when no pair is usable), with ``provenance`` completed by the counts: checked, normalised
    and sampled as the module docstring says (bench.datasets.pinned reads its checked rows through it too)."""
    if columns is not None:
        check_columns(spec, rules, columns, where)
    pairs, seen_keys, read, dropped, usable = normalise(spec, split, rules, rows, limit)
    provenance.update(dataset=spec.name, split=split, license=spec.license, limit=limit, rows_read=read,
                      usable=usable, kept=len(pairs), dropped=dict(sorted(dropped.items())))
    if not pairs:
        if columns is None:
            check_columns(spec, rules, seen_keys, where)
        if read and dropped and all(reason.startswith("malformed") for reason in dropped):
            raise BenchError(f"dataset {spec.name!r}: every one of the {read} rows of {where} is malformed "
                             f"({_counts(dropped)}). Fix: check that the file holds {spec.name}'s original schema "
                             f"with columns {', '.join(rules.REQUIRED_COLUMNS)}.")
        raise BenchError(f"dataset {spec.name!r}: no usable pair in {where} ({read} rows read; dropped: "
                         f"{_counts(dropped) or 'none'}). Fix: check that this is the right file and split.")
    return LoadedSplit(pairs, provenance)


def rules_of(spec: DatasetSpec) -> ModuleType:
    """The spec's normaliser module: ``normalize``, ``REQUIRED_COLUMNS``, ``RULE``."""
    return importlib.import_module(spec.kwargs["normalizer_module"])


def local_name(spec: DatasetSpec) -> str:
    return spec.kwargs.get("local_name") or spec.name.split("/", 1)[-1]


def normalise(spec: DatasetSpec, split: str, rules: ModuleType, rows: Iterator[Any], limit: int | None
              ) -> tuple[list[Pair], set[str], int, Counter, int]:
    """A seeded uniform sample of ``limit`` usable pairs (all for None), in file order; also the keys
    seen, rows read, drops by reason, and how many rows were usable."""
    sample: list[tuple[int, Pair]] = []
    rng = random.Random(f"{spec.name}/{split}/sample")
    seen_keys: set[str] = set()
    dropped: Counter = Counter()
    read = usable = 0
    for index, row in enumerate(rows):
        read += 1
        if isinstance(row, dict):
            seen_keys.update(row)
        if not isinstance(row, DropReason) and text_chars(row) > MAX_ROW_CHARS:
            row = DropReason(TOO_LONG)   # dropped before its text is parsed, let alone tokenized
        result = row if isinstance(row, DropReason) else rules.normalize(row)
        if not isinstance(result, Pair):
            dropped[str(result)] += 1
            continue
        result.id = f"{spec.name}/{split}/{index}"
        usable += 1
        if limit is None or len(sample) < limit:
            sample.append((index, result))
        else:  # reservoir sampling (Algorithm R): every usable pair ends up kept with probability limit/usable
            slot = rng.randrange(usable)
            if slot < limit:
                sample[slot] = (index, result)
    return [pair for _, pair in sorted(sample, key=lambda item: item[0])], seen_keys, read, dropped, usable


def text_chars(value: Any) -> int:
    """The characters of every string in a row (keys aside), nested lists and objects included."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, dict):
        return sum(text_chars(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return sum(text_chars(v) for v in value)
    return 0


def check_columns(spec: DatasetSpec, rules: ModuleType, columns: set[str] | list[str], where: str) -> None:
    missing = [c for c in rules.REQUIRED_COLUMNS if c not in set(columns)]
    if missing:
        raise BenchError(f"dataset {spec.name!r}: {where} has no column {', '.join(map(repr, missing))} "
                         f"(it has: {', '.join(sorted(columns)) or 'none'}). Fix: use {spec.name}'s original "
                         f"files ({spec.kwargs['hub_id']}), unconverted: they need columns "
                         f"{', '.join(rules.REQUIRED_COLUMNS)}.")


def _counts(counter: Counter) -> str:
    return ", ".join(f"{reason}: {n}" for reason, n in sorted(counter.items()))


# --- the Hub --------------------------------------------------------------------------------------
def hub_rows(spec: DatasetSpec, split: str) -> tuple[Iterator[Any], list[str], dict]:
    options = spec.kwargs
    hub_id, config, revision = options["hub_id"], options.get("config"), options.get("revision")
    try:
        import datasets
    except ImportError:  # pragma: no cover - a dependency of the project
        raise BenchError("loading from the Hub needs the 'datasets' package: pip install datasets") from None
    try:
        # What load_dataset does, step by step, so that the builder -- and the commit it resolved -- stays at hand.
        builder = datasets.load_dataset_builder(hub_id, name=config, data_dir=options.get("hub_data_dir"),
                                                revision=revision)
        builder.download_and_prepare()
        table = builder.as_dataset(split=split)
    except Exception as error:  # network, auth, gated repo, unknown split: all end here, with the cause chained
        raise BenchError(f"dataset {spec.name!r}: could not load {hub_id} (config {config!r}, data_dir "
                         f"{options.get('hub_data_dir')!r}, split {split!r}, revision {revision or 'default branch'}) "
                         f"from the Hugging Face Hub: {type(error).__name__}: {error}. Fix: go online (unset "
                         f"HF_HUB_OFFLINE), log in if the dataset is gated, or pass a local data dir "
                         f"(--data-dir DIR, see bench/datasets/loading.py for the layout).") from error
    provenance = {"source": "hub", "hub_id": hub_id, "config": config, "data_dir": options.get("hub_data_dir"),
                  "revision": revision, "resolved_commit": resolved_commit(builder, hub_id, revision), "files": []}
    return iter(table), list(table.column_names), provenance


_COMMIT = re.compile(r"[0-9a-f]{40}")


def resolved_commit(builder: Any, hub_id: str, revision: str | None) -> str | None:
    """The Hub commit the rows came from: the pin itself when it is a commit; else the builder's hash, which
    ``datasets`` sets to the commit it resolved (also when it reloads from its cache offline); else ask
    the Hub. None when none of these is a commit (recorded as unknown rather than guessed)."""
    for candidate in (revision, getattr(builder, "hash", None)):
        if isinstance(candidate, str) and _COMMIT.fullmatch(candidate):
            return candidate
    try:
        from huggingface_hub import HfApi

        return HfApi().dataset_info(hub_id, revision=revision).sha
    except Exception:  # offline or no access: the commit stays unknown, the rest of the provenance stands
        return None


# --- local files ----------------------------------------------------------------------------------
def find_local_files(spec: DatasetSpec, split: str, data_dir: Path) -> list[Path]:
    """The files of ``split`` under ``data_dir`` (see the module docstring); an error lists what was looked for."""
    if not data_dir.is_dir():
        raise BenchError(f"data dir {data_dir} does not exist (needed for dataset {spec.name!r}). Fix: pass the folder "
                         f"that holds {local_name(spec)}/, or drop the data dir to load from the Hub.")
    name = local_name(spec)
    looked: list[str] = []
    found: list[list[Path]] = []
    for folder in (data_dir / name, data_dir / name / "data"):
        for suffix in FORMATS:
            looked.append(str(folder / f"{split}{suffix}"))
            if (folder / f"{split}{suffix}").is_file():
                found.append([folder / f"{split}{suffix}"])
        looked.append(str(folder / f"{split}-*.parquet"))
        shards = sorted(p for p in folder.glob(f"{split}-*.parquet") if p.is_file())
        if shards:
            found.append(shards)
        looked.append(str(folder / split / f"*{{{','.join(FORMATS)}}}"))
        shards = sorted(p for p in (folder / split).glob("*") if p.is_file() and p.name.endswith(FORMATS))
        if shards:
            found.append(shards)
    if len(found) > 1:
        raise BenchError(f"dataset {spec.name!r} split {split!r}: more than one copy under {data_dir}: "
                         + "; ".join(", ".join(map(str, group)) for group in found) + ". Fix: keep one of them.")
    if not found:
        others = sorted({p.name for folder in (data_dir / name, data_dir / name / "data") if folder.is_dir()
                         for p in folder.iterdir()})
        hint = (f" That folder holds {', '.join(others)}, but a split is never taken from another split's file."
                if others else "")
        raise BenchError(f"dataset {spec.name!r}: no file for split {split!r} under {data_dir}. Looked for: "
                         f"{'; '.join(looked)}.{hint} Fix: put {spec.kwargs['hub_id']}'s {split!r} split there in "
                         f"its original schema (jsonl, jsonl.gz or parquet), or drop the data dir to load it from "
                         f"the Hub.")
    return found[0]


def local_rows(files: list[Path], data_dir: Path) -> tuple[Iterator[Any], list[str] | None, dict]:
    """Rows of the files in order; the columns when the format declares them (parquet), else None. The
    provenance names each file by its path in the data dir and its sha256: a result records no folder of
    the machine it ran on."""
    from bench.core.io import sha256_file

    columns = None
    if all(f.name.endswith(".parquet") for f in files):
        column_sets = [set(_parquet(f).schema_arrow.names) for f in files]
        columns = sorted(set.intersection(*column_sets))
    provenance = {"source": "local", "hub_id": None, "config": None, "data_dir": None, "revision": None,
                  "resolved_commit": None,
                  "files": [{"path": f.relative_to(data_dir).as_posix(), "sha256": sha256_file(f)} for f in files]}
    return _rows_of(files), columns, provenance


def _rows_of(files: list[Path]) -> Iterator[Any]:
    for path in files:
        if path.name.endswith(".parquet"):
            for batch in _parquet(path).iter_batches(batch_size=1024):
                yield from batch.to_pylist()
            continue
        yield from _jsonl_rows(path)


def _jsonl_rows(path: Path) -> Iterator[Any]:
    """A jsonl(.gz) file's rows. Read as bytes and decoded a line at a time, so a line that is not
    UTF-8 is dropped as malformed like one that is not JSON (a text-mode reader would stop the whole
    load with a UnicodeDecodeError); lines end at \n, \r\n or \r as text mode splits them, so row
    indices (pair ids) are what they were. A file that is not gzip, or is cut short, is an error
    naming it: the rows read so far are not a split."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rb") as handle:
            for raw in handle:
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    if raw.strip():
                        yield DropReason("malformed: line is not UTF-8")
                    continue
                for line in text.replace("\r\n", "\n").split("\r"):
                    if not line.strip():
                        continue
                    try:
                        yield json.loads(line)
                    except json.JSONDecodeError:
                        yield DropReason("malformed: line is not valid JSON")
    except (OSError, EOFError, zlib.error) as error:  # gzip.BadGzipFile is an OSError
        raise BenchError(f"{path}: cannot be read as {'gzip' if path.name.endswith('.gz') else 'a file'} "
                         f"({type(error).__name__}: {error}): it is cut short or not what its name says. Fix: "
                         f"download it again{' (or decompress it and name it .jsonl)' if path.name.endswith('.gz') else ''}"
                         ".") from None


def _parquet(path: Path):
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise BenchError(f"reading {path} needs pyarrow: pip install pyarrow (or convert the file to jsonl)") from None
    try:
        return pq.ParquetFile(path)
    except Exception as error:  # pyarrow.ArrowInvalid (a cut or foreign file) and OSError: the file, not the code
        raise BenchError(f"{path}: cannot be read as parquet ({type(error).__name__}: {error}): it is cut short or "
                         "not what its name says. Fix: download it again.") from None
