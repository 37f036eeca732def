"""Results in two layers: a per-cell JSON of numbers and, beside it, every pair's scores.

A cell is one (method, params, model pair, protocol, seed, source): one student training, scored
on the source's test split and on every target's. Any number in ``result.json`` can be recomputed
from ``scores.csv.gz`` with ``recompute``. The scores file is written first and ``result.json``
last (it records the scores file's sha256), so a cell is complete exactly when its result.json
loads and the checksum matches.
"""
from __future__ import annotations

import json
import math
import re
from collections import defaultdict
from pathlib import Path

from bench.io import atomic_write_bytes, atomic_write_json, csv_gz_bytes, read_csv_gz, sha256_file
from bench.metrics import accuracy, cell_metrics
from bench.specs import stable_hash

SCHEMA_VERSION = 1
RESULT_FILE = "result.json"
SCORES_FILE = "scores.csv.gz"
SCORE_COLUMNS = ("eval_set", "pair_id", "teacher_chosen", "teacher_rejected", "student_chosen", "student_rejected")


def params_slug(method: str, params: dict) -> str:
    """A readable folder name for a method and its params, e.g. ``anchor_lam=1.0_layers=last``."""
    slug = "_".join([method, *(f"{k}={v}" for k, v in sorted(params.items()))])
    slug = re.sub(r"[^A-Za-z0-9.=_+-]", "-", slug)
    return slug if len(slug) <= 96 else f"{slug[:80]}_{stable_hash(params, 12)}"


def cell_dir(out: Path, protocol: str, models: str, slug: str, seed: int, source: str) -> Path:
    return Path(out) / protocol / models / slug / f"seed{seed}" / source.replace("/", "__")


def write_cell(folder: Path, result: dict, score_rows: list[tuple]) -> None:
    atomic_write_bytes(folder / SCORES_FILE, csv_gz_bytes(SCORE_COLUMNS, score_rows))
    result = {**result, "scores_file": {"name": SCORES_FILE, "sha256": sha256_file(folder / SCORES_FILE),
                                        "columns": list(SCORE_COLUMNS)}}
    atomic_write_json(folder / RESULT_FILE, result)


def load_cell(folder: Path) -> dict | None:
    """The cell's result if it is complete and intact, else None."""
    try:
        result = json.loads((Path(folder) / RESULT_FILE).read_text())
    except (OSError, ValueError):
        return None
    if result.get("schema_version") != SCHEMA_VERSION:
        return None
    scores = Path(folder) / SCORES_FILE
    if not scores.is_file() or sha256_file(scores) != result.get("scores_file", {}).get("sha256"):
        return None
    return result


def accuracies_from_scores(rows: list[dict[str, str]]) -> dict[str, dict[str, float]]:
    columns: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for row in rows:
        for name in SCORE_COLUMNS[2:]:
            columns[row["eval_set"]][name].append(float(row[name]))
    return {
        eval_set: {"teacher": accuracy(c["teacher_chosen"], c["teacher_rejected"]),
                   "student": accuracy(c["student_chosen"], c["student_rejected"]),
                   "n_pairs": len(c["teacher_chosen"])}
        for eval_set, c in columns.items()
    }


def recompute(folder: Path) -> list[str]:
    """Every accuracy and metric of a cell recomputed from its per-pair scores; returns the mismatches."""
    result = json.loads((Path(folder) / RESULT_FILE).read_text())
    recomputed = accuracies_from_scores(read_csv_gz(Path(folder) / SCORES_FILE))
    problems = []
    for eval_set, stored in result["eval_sets"].items():
        got = recomputed.get(eval_set)
        if got is None:
            problems.append(f"{eval_set}: no scores")
            continue
        for who in ("teacher", "student"):
            if not math.isclose(got[who], stored[f"{who}_acc"], abs_tol=1e-9):
                problems.append(f"{eval_set}: {who} accuracy {stored[f'{who}_acc']} != recomputed {got[who]}")
        if got["n_pairs"] != stored["n_pairs"]:
            problems.append(f"{eval_set}: n_pairs {stored['n_pairs']} != {got['n_pairs']} scored")
    metrics = cell_metrics(recomputed, result["source"])
    for target, values in metrics.items():
        for name, value in values.items():
            stored = result["metrics"].get(target, {}).get(name)
            if stored is None or not math.isclose(value, stored, abs_tol=1e-9):
                problems.append(f"{target}: {name} {stored} != recomputed {value}")
    return problems


def find_cells(root: Path) -> list[dict]:
    """Every complete cell result under ``root``."""
    found = []
    for path in sorted(Path(root).rglob(RESULT_FILE)):
        result = load_cell(path.parent)
        if result is not None:
            found.append(result)
    return found
