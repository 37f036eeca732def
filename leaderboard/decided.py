"""The board's decisions kept beside the validation record, so that a board whose submissions did not change
starts without bootstrapping them: ``Board.decisions`` of a group and scope is a pure function of

- the group's validation outcomes: each submission's key in the record (``Validation.digest``: the sha256 of its
  files and of everything its validation depends on), its name and whether it passes (a check across
  submissions may refuse it after its own validation), and
- the code that decides (``DECISION_CODE``, by ``bench.core.versions.code_version``), the rule's setting a process
  may change (``bench.core.runs.CONTROL_FROM``: a benchmark measuring the control as a variant sets it) and the
  numpy, scipy and pandas it runs on,

so ``key`` hashes exactly these, and an entry is used only under its key. A group holding a submission that is
not in the record (an upload being previewed) has no key: its decisions are computed, never stored.

An entry is JSON (never pickle), written atomically, with each value's type kept: numpy scalars as their dtype and
value, tuples, dicts and ``bench.core.compare.Decision`` tagged, so that an entry reads back as the very values
that were computed (``decode(encode(x))`` has the same ``repr``). One that cannot be read is ignored and computed
again; a value of another type is not stored at all.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from bench.core.compare import Decision
from bench.core.io import atomic_write_bytes
from bench.submissions.limits import Validation

FORMAT = 1
KEEP = 64   # entries kept: a board's groups and scopes, with room for the ones a server's filters ask for
DECISION_CODE = ("leaderboard.board", "leaderboard.decided", "bench.core.compare", "bench.core.stats", "bench.core.runs",
                 "bench.core.sequential", "bench.core.cells", "bench.core.metrics", "bench.core.report",
                 "bench.core.protocols")


def key(group: list[Validation], scope: tuple) -> str | None:
    """The key of a group's decisions in ``scope`` (protocol, models, category, source); None when a submission of
    the group was not validated through the record."""
    from bench.core import runs
    from bench.core.versions import code_version

    if not group or any(not v.digest for v in group):
        return None
    return hashlib.sha256(json.dumps({
        "format": FORMAT, "code": code_version(DECISION_CODE), "control_from": runs.CONTROL_FROM, "scope": list(scope),
        "packages": {name: version(name) for name in ("numpy", "scipy", "pandas")},
        "submissions": sorted([v.key, v.digest, v.ok] for v in group),
    }, sort_keys=True).encode()).hexdigest()


def load(folder: Path, digest: str) -> dict | None:
    """The decisions stored under ``digest``, or None (none stored, or an entry that cannot be read)."""
    try:
        data = json.loads((folder / f"{digest}.json").read_bytes())
        return decode(data["decisions"]) if data.get("format") == FORMAT and data.get("key") == digest else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save(folder: Path, digest: str, decisions: dict) -> None:
    """Store ``decisions`` under ``digest``, and keep only the KEEP newest entries (each change to a group makes a
    new one)."""
    try:
        atomic_write_bytes(folder / f"{digest}.json",
                           json.dumps({"format": FORMAT, "key": digest, "decisions": encode(decisions)}).encode())
        entries = sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[KEEP:]:
            old.unlink(missing_ok=True)
    except (OSError, TypeError, ValueError):
        pass   # a value this format does not keep, or a record that cannot be written: computed again next time


def encode(x: Any) -> Any:
    """``x`` as JSON with its types tagged; a TypeError for a type it does not keep."""
    if x is None or isinstance(x, (bool, str)) or type(x) in (int, float):
        return x
    if isinstance(x, np.generic):
        return {"numpy": x.dtype.str, "value": x.item()}
    if isinstance(x, Decision):
        return {"Decision": {f.name: encode(getattr(x, f.name)) for f in dataclasses.fields(x)}}
    if isinstance(x, dict):
        return {"dict": [[encode(k), encode(v)] for k, v in x.items()]}
    if isinstance(x, (tuple, list)):
        return {type(x).__name__: [encode(v) for v in x]}
    raise TypeError(f"{type(x).__name__} is not kept in the decisions record")


def decode(x: Any) -> Any:
    """``encode``'s inverse; a ValueError for a tag it does not know."""
    if not isinstance(x, dict):
        return x
    if set(x) == {"numpy", "value"}:
        return np.dtype(x["numpy"]).type(x["value"])
    if len(x) != 1:
        raise ValueError(f"an entry of the decisions record holds an unknown value {str(x)[:80]}")
    (tag, value), = x.items()
    if tag == "Decision":
        return Decision(**{k: decode(v) for k, v in value.items()})
    if tag == "dict":
        return {decode(k): decode(v) for k, v in value}
    if tag in ("tuple", "list"):
        return (tuple if tag == "tuple" else list)(decode(v) for v in value)
    raise ValueError(f"an entry of the decisions record holds an unknown value {str(x)[:80]}")
