"""Tables from cell results: per source -> target cell, and the mean over cells and seeds.

Aggregates: each seed's mean over cells, then the mean and the sample standard deviation of those
per-seed means across seeds ("spread over seeds"; blank with one seed). Cells of a protocol with
best-of-N candidate sets add the BoN columns (BON_COLUMNS) after NTS. Cells of a protocol with far targets
(``ProtocolSpec.shifts``) add the far columns (FAR_COLUMNS): the teacher's and the student's accuracy on
each far target, and AOG and NTS computed on it, in rows of their own that the other columns leave blank
and the near targets' means (WRG, AOG, NTS) never include.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Mapping

import numpy as np
import pandas as pd

from bench.core.results import replicate_slug
from bench.core.runs import whole_seeds

if TYPE_CHECKING:
    from bench.core.result_schema import CellResult

COLUMNS = ["teacher_id", "student_id", "teacher_ood", "student_ood", "wrg", "aog", "nts"]
# Best-of-N accuracies and metrics (bench.core.metrics), where the cells have them
BON_COLUMNS = ["teacher_bon_id", "student_bon_id", "teacher_bon_ood", "student_bon_ood", "bon_gain_id", "bon_gain_ood",
               "bon_nts"]
HEADERS = {"teacher_id": "teacher ID", "student_id": "student ID", "teacher_ood": "teacher OOD",
           "student_ood": "student OOD", "wrg": "WRG", "aog": "AOG", "nts": "NTS",
           "teacher_bon_id": "BoN teacher ID", "student_bon_id": "BoN student ID", "teacher_bon_ood": "BoN teacher OOD",
           "student_bon_ood": "BoN student OOD", "bon_gain_id": "BoN gain ID", "bon_gain_ood": "BoN gain OOD",
           "bon_nts": "BoN NTS"}
# A far target's numbers (bench.core.protocols.far_targets): AOG and NTS as bench.core.metrics defines them, with the
# far target as T; the cell's ID numbers are its near rows'
FAR_COLUMNS = ["teacher_far", "student_far", "far_aog", "far_nts"]
HEADERS.update({"teacher_far": "teacher far", "student_far": "student far", "far_aog": "far AOG", "far_nts": "far NTS"})
_AS_FAR = {"teacher_ood": "teacher_far", "student_ood": "student_far", "aog": "far_aog", "nts": "far_nts"}
GAINS = ("wrg", "aog", "nts", "bon_gain_id", "bon_gain_ood", "bon_nts", "far_aog", "far_nts")   # shown signed


def short(dataset: str) -> str:
    return dataset.split("/", 1)[-1]


def params_text(params: dict) -> str:
    """A method's params as everywhere they are shown: ``lam=0.1, layers=last``, sorted by name."""
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items()))


def fmt(value: float | None, sd: float | None = None, signed: bool = False) -> str:
    """A number as every table shows it: one decimal, ``+`` on gains, ``±spread`` when there is one;
    blank for a missing number, and never ``-0.0``."""
    if value is None or math.isnan(value):
        return ""
    value = 0.0 if round(value, 1) == 0 else value
    text = f"{value:+.1f}" if signed else f"{value:.1f}"
    return text if sd is None or math.isnan(sd) else f"{text}±{sd:.1f}"


def cell_rows(results: list[CellResult], protocols: Mapping | None = None) -> pd.DataFrame:
    """One row per (result, target): the source -> target cells of the protocol; a far target's row holds its
    numbers in FAR_COLUMNS alone (its ``role`` is "far", a near target's "ood"; far targets looked up with
    ``protocols`` besides the registry's, bench.core.protocols.far_targets)."""
    return pd.DataFrame(cell_row_dicts(results, protocols))


def cell_row_dicts(results: list[CellResult], protocols: Mapping | None = None) -> list[dict]:
    """``cell_rows``'s rows as dicts of plain values (what the validation record keeps of each cell for the board)."""
    from bench.core.protocols import far_targets

    rows = []
    for r in results:
        own = r.eval_sets[r.source]
        far = far_targets(r.protocol.name, r.source, protocols)
        for target, metric in r.metrics.items():
            other = r.eval_sets[target]
            numbers = {"teacher_id": own.teacher_acc, "student_id": own.student_acc,
                       "teacher_ood": other.teacher_acc, "student_ood": other.student_acc,
                       **metric.model_dump(exclude_none=True),
                       **({"teacher_bon_id": own.teacher_bon, "student_bon_id": own.student_bon,
                           "teacher_bon_ood": other.teacher_bon, "student_bon_ood": other.student_bon}
                          if own.teacher_bon is not None else {})}
            if target in far:
                numbers = {far_name: numbers[name] for name, far_name in _AS_FAR.items()}
            rows.append({
                "method": replicate_slug(r.method.name, r.replicate), "params": r.method.params, "models": r.models["name"],
                "protocol": r.protocol.name, "category": r.category, "seed": r.seed,
                "source": short(r.source), "target": short(target), "role": "far" if target in far else "ood",
                **numbers,
                "misfit": r.misfit.disagreement if r.misfit is not None else math.nan,
            })
    return rows


def columns_of(cells: pd.DataFrame) -> list[str]:
    """The metric columns ``cells`` hold: COLUMNS, BON_COLUMNS where some cell has best-of-N numbers, and
    FAR_COLUMNS where some cell has a far target."""
    return _held_columns({c: cells[c].to_numpy(dtype=float) for c in ("bon_nts", "far_nts") if c in cells})


def _held_columns(table: Mapping[str, np.ndarray]) -> list[str]:
    held = {c for c in ("bon_nts", "far_nts") if c in table and (~np.isnan(table[c])).any()}
    return COLUMNS + (BON_COLUMNS if "bon_nts" in held else []) + (FAR_COLUMNS if "far_nts" in held else [])


def summarise(cells: pd.DataFrame) -> pd.Series:
    """Mean over cells and seeds, with the spread (std of per-seed means) as ``<col>_sd``; of every column
    of ``columns_of``, each over the rows that have it (a far target's row has only the far columns). "cells"
    counts a seed's near targets' rows."""
    table = {c: cells[c].to_numpy(dtype=float) for c in [*COLUMNS, *BON_COLUMNS, *FAR_COLUMNS] if c in cells}
    return pd.Series(_summary(cells["seed"].to_numpy(), cells["role"].to_numpy() if "role" in cells else None, table))


def summarise_rows(rows: list[dict]) -> dict[str, float | int]:
    """``summarise`` of rows as ``cell_row_dicts`` makes them, as a dict: without a DataFrame (validation summarises
    every submission it reads)."""
    names = {k for r in rows for k in r}
    table = {c: np.array([r.get(c, math.nan) for r in rows], dtype=float)
             for c in [*COLUMNS, *BON_COLUMNS, *FAR_COLUMNS] if c in names}
    return _summary(np.array([r["seed"] for r in rows]), np.array([r["role"] for r in rows]), table)


def _summary(seed: np.ndarray, role: np.ndarray | None, table: Mapping[str, np.ndarray]) -> dict[str, float | int]:
    """Each seed's mean over its rows of every held column (``_held_columns``), then the mean and the sample standard
    deviation (ddof 1; NaN from fewer than two seeds) of those per-seed means, each over the rows and seeds that have
    the column. Every sum is math.fsum's, exact before its one rounding, so that a summary does not depend on the
    order of the rows or on how a pandas or numpy version orders its additions (pandas 3.1 adds a group's rows with
    np.add.reduceat where the groups come sorted and hold no NaN, else with a compensated sum: a mean of exactly 7.25
    came out as 7.250000000000001 and showed as +7.3)."""
    columns = _held_columns(table)
    values = np.stack([table[c] for c in columns], axis=1)
    seeds = np.unique(seed)
    per_seed = np.array([_mean(values[seed == s]) for s in seeds])
    mean = _mean(per_seed)
    spread = [math.sqrt(math.fsum((x - m) ** 2 for x in col[~np.isnan(col)]) / (held - 1)) if held > 1 else math.nan
              for col, m, held in zip(per_seed.T, mean, (~np.isnan(per_seed)).sum(0))]
    near = int((role != "far").sum()) if role is not None else len(seed)
    return {**{c: float(v) for c, v in zip(columns, mean)}, **{f"{c}_sd": float(v) for c, v in zip(columns, spread)},
            "cells": near // len(seeds), "seeds": len(seeds)}


def _mean(values: np.ndarray) -> np.ndarray:
    """Each column's mean over the rows that hold it (NaN where none does), its sum exact before rounding."""
    return np.array([math.fsum(col[~np.isnan(col)]) / n if (n := int((~np.isnan(col)).sum())) else math.nan
                     for col in values.T])


def cell_table(results: list[CellResult]) -> str:
    """The run's table: each source -> target cell (mean over seeds), then the overall mean."""
    cells = cell_rows(results)
    if cells.empty:
        return "(no results)"
    lines = []
    columns = columns_of(cells)
    grouped = cells.groupby(["source", "target"], sort=False)
    header = ["source", "target", *(HEADERS[c] for c in columns)]
    body = []
    for (source, target), group in grouped:
        per_seed = group[columns]
        sd = per_seed.std(ddof=1) if len(per_seed) > 1 else None
        body.append([source, target, *(fmt(per_seed[c].mean(), None if sd is None else sd[c], c in GAINS)
                                       for c in columns)])
    summary = summarise(cells)
    seeds = int(summary["seeds"])   # the rows are source -> target pairs, not the (seed, source) cells a run counts
    body.append([f"mean ({int(summary['cells'])} rows", f"x {seeds} seed{'' if seeds == 1 else 's'})",
                 *(fmt(summary[c], summary[f"{c}_sd"], c in GAINS) for c in columns)])
    widths = [max(len(str(row[i])) for row in [header, *body]) for i in range(len(header))]
    for row in [header, *body]:
        lines.append("  ".join(str(v).ljust(w) if i < 2 else str(v).rjust(w) for i, (v, w) in enumerate(zip(row, widths))))
    lines.insert(1, "-" * len(lines[0]))
    lines.insert(len(lines) - 1, "-" * len(lines[0]))
    return "\n".join(lines)


TEACHER = "teacher (weak)"


def teacher_rows(cells: pd.DataFrame) -> pd.DataFrame:
    """The weak teacher as a reference row: its own accuracies as the "student" ones, so its WRG,
    AOG and NTS are 0 and it sits in the ranking where a method stops beating its own teacher.
    The teacher stage is shared by every method of a cell, so each (seed, source, target) counts once."""
    keys = ["protocol", "models", "category", "seed", "source", "target"]
    teacher = cells.drop_duplicates(keys).copy()
    teacher["method"], teacher["params"] = TEACHER, "reference"
    teacher["student_id"], teacher["student_ood"] = teacher["teacher_id"], teacher["teacher_ood"]
    teacher.loc[teacher["nts"].notna(), ["wrg", "aog", "nts"]] = 0.0
    if "far_nts" in teacher:   # a far target's row: the teacher against itself there too
        teacher["student_far"] = teacher["teacher_far"]
        teacher.loc[teacher["far_nts"].notna(), ["far_aog", "far_nts"]] = 0.0
    if "bon_nts" in teacher:   # its BoN numbers likewise, where the cells have them
        teacher["student_bon_id"], teacher["student_bon_ood"] = teacher["teacher_bon_id"], teacher["teacher_bon_ood"]
        teacher.loc[teacher["bon_nts"].notna(), ["bon_gain_id", "bon_gain_ood", "bon_nts"]] = 0.0
    return teacher


def method_table(results: list[CellResult], by: str | None = None) -> pd.DataFrame:
    """One row per (method and replicate, params, model pair, protocol[, category or source]): means over
    cells and seeds with spreads, best mean NTS first. A row's seeds are its whole seeds (bench.core.runs.
    whole_seeds: those holding every source the row has), as on the board: a seed stopped part way would
    weigh its few cells as much as a whole seed. ``attrs["left_out"]`` counts the cells of the others."""
    cells = cell_rows(results)
    if cells.empty:
        return pd.DataFrame()
    cells["params"] = cells["params"].map(params_text)
    cells = pd.concat([cells, teacher_rows(cells)], ignore_index=True)
    keys = ["protocol", "models", "method", "params", *([by] if by else [])]
    rows, columns, left_out = [], columns_of(cells), 0
    for values, group in cells.groupby(keys):
        whole = group[group["seed"].isin(whole_seeds(list(group.itertuples()), set(group["source"])))]
        left_out += 0 if values[2] == TEACHER else runs_in(group) - runs_in(whole)
        summary = summarise(whole)
        rows.append({**dict(zip(keys, values)),
                     **{HEADERS[c]: fmt(summary.get(c, math.nan), summary.get(f"{c}_sd", math.nan), c in GAINS)
                        for c in columns},
                     "cells": int(summary["cells"]), "seeds": int(summary["seeds"]), "_nts": summary["nts"]})
    order = [by, "_nts"] if by else ["_nts"]
    table = (pd.DataFrame(rows).sort_values(order, ascending=[True, False][-len(order):])
             .drop(columns="_nts").reset_index(drop=True))
    table.attrs["left_out"] = left_out
    return table


def runs_in(cells: pd.DataFrame) -> int:
    """How many runs (seed, source) the rows of ``cells`` (one per source -> target cell) come from."""
    return len(cells[["seed", "source"]].drop_duplicates())


def left_out_note(table: pd.DataFrame) -> str:
    """The line under a method table that has left out runs of partial seeds; empty when it has none."""
    n = table.attrs.get("left_out", 0)
    return (f"\n{n} runs are left out of the means: their seeds hold only some of their method's sources (a run "
            "stopped mid-seed, or cells that failed); rerunning the command completes them\n") if n else ""
