"""The leaderboard as pure functions: a submissions folder in, pandas DataFrames out.

Every aggregate is computed from the submissions' cells (``bench.report`` does the arithmetic, so the
leaderboard, ``bench report`` and ``bench submit`` agree), and ``bench validate`` has recomputed each
cell from its per-pair scores; a submission that fails validation is still shown, marked. Definitions:

- NTS, AOG, WRG, ID and OOD accuracy: means over the selected source -> target cells and the seeds;
  "±" is the spread (std of the per-seed means; blank with one seed), as in ``bench report``.
- PGR (performance gap recovered), with the same teacher for every method of a protocol x model pair:
  PGR ID = WRG / WRG(ceiling) and PGR OOD = AOG / AOG(ceiling), over the same selected cells, i.e.
  (student - teacher) / (ceiling - teacher) on the means. Blank without a ceiling submission or when
  the ceiling is less than ``MIN_PGR_GAP`` points above the teacher (the ratio would be noise).
- Reference rows: the teacher (its own accuracies; gains 0 by definition) and the ``ceiling`` method.
"""
from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Mapping

import pandas as pd

from bench.report import COLUMNS, TEACHER, cell_rows, fmt, params_text, summarise, teacher_rows
from bench.submissions.limits import Validation
from bench.submissions.tree import teacher_conflicts, validate_tree

CEILING = "ceiling"
MIN_PGR_GAP = 1.0
METRICS = {"nts": "NTS", "aog": "AOG", "wrg": "WRG"}
DECISION_COLUMNS = ["NTS 95% CI", "rank 95%", "Δ NTS vs naive", "Δ 95% CI", "Δ t 95% (seeds)", "decided"]
RANKING_COLUMNS = ["rank", "method", "params", "status", "NTS", "NTS ±", *DECISION_COLUMNS, "AOG", "AOG ±", "WRG", "WRG ±", "ID acc",
                   "OOD acc", "PGR ID", "PGR OOD", "misfit", "seeds", "cells", "submitter", "model pair", "protocol", "submission",
                   "problem"]
ALL = "all"


@dataclass
class Board:
    """Every submission found under ``root``, validated; ``entries`` are those with cells to show."""

    root: Path
    validations: list[Validation]
    conflicts: list[tuple[str, set[str]]] = field(default_factory=list)
    _decisions: dict = field(default_factory=dict, repr=False)

    @cached_property
    def entries(self) -> list[Validation]:
        return [v for v in self.validations if v.submission is not None and v.cells and self._rows(v) is not None]

    @cached_property
    def unreadable(self) -> list[Validation]:
        return [v for v in self.validations if v not in self.entries]

    def _rows(self, v: Validation) -> pd.DataFrame | None:
        try:
            rows = cell_rows(v.cells)
        except (KeyError, TypeError):  # a cell too broken to tabulate; validation has said why
            return None
        s = v.submission
        return rows.assign(submission=v.key, params=params_text(s["method"]["params"]), valid=v.ok,
                           status="validated" if v.ok else f"NOT VALIDATED ({len(v.errors)} problems)",
                           problem=str(v.errors[0]) if v.errors else "", submitter=s["submitter"])

    @cached_property
    def cells(self) -> pd.DataFrame:
        """One row per submission x seed x source -> target cell."""
        frames = [self._rows(v) for v in self.entries]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            columns=["submission", "method", "params", "models", "protocol", "category", "seed", "source", "target",
                     *COLUMNS, "valid", "status", "problem", "submitter"])

    def decisions(self, protocol: str, models: str, category: str | None = None, source: str | None = None
                  ) -> dict[str, dict]:
        """Per validated submission of a protocol x model pair (by its key): the bootstrap intervals,
        rank interval and Δ against naive (bench.compare.decision_table); empty when they cannot be
        computed (one submission, or submissions on different seeds)."""
        from bench.compare import decision_table
        from bench.stats import Board as Bootstrap

        key = (protocol, models, category, source)
        if key not in self._decisions:
            valid = [v for v in self.entries if v.ok and v.submission["protocol"]["name"] == protocol
                     and v.submission["models"]["name"] == models]
            slugs = {v.submission["slug"]: v.key for v in valid}
            try:
                table = decision_table(Bootstrap([c for v in valid for c in v.pairs]), category=category, source=source)
                self._decisions[key] = {slugs[row.pop("method")]: row for row in table.to_dict("records")}
            except ValueError:
                self._decisions[key] = {}
        return self._decisions[key]

    def with_entry(self, validation: Validation) -> "Board":
        """This board plus one more submission (an upload's preview)."""
        return Board(self.root, [*self.validations, validation], teacher_conflicts([*self.validations, validation]))


def load_board(root: Path, protocols: Mapping | None = None, model_pairs: Mapping | None = None) -> Board:
    """Validate every submission under ``root`` (``protocols`` / ``model_pairs`` add specs to the registries)."""
    validations = validate_tree(Path(root), protocols, model_pairs) if Path(root).is_dir() else []
    return Board(Path(root), validations, teacher_conflicts(validations))


# --- filters ---------------------------------------------------------------------------------------------
def choices(board: Board) -> dict[str, list[str]]:
    """The values each filter can take, ``"all"`` first."""
    cells = board.cells
    return {name: [ALL, *sorted(cells[column].astype(str).unique())]
            for name, column in (("protocol", "protocol"), ("models", "models"), ("category", "category"),
                                 ("source", "source"))}


def select(cells: pd.DataFrame, protocol: str | None = None, models: str | None = None, category: str | None = None,
           source: str | None = None) -> pd.DataFrame:
    for column, value in (("protocol", protocol), ("models", models), ("category", category), ("source", source)):
        if value and value != ALL:
            cells = cells[cells[column] == value]
    return cells


# --- the ranking ---------------------------------------------------------------------------------------------
def _row(summary: pd.Series, ceiling: pd.Series | None) -> dict:
    row = {METRICS[m]: summary[m] for m in METRICS}
    row.update({f"{METRICS[m]} ±": summary[f"{m}_sd"] for m in METRICS})
    row.update({"ID acc": summary["student_id"], "OOD acc": summary["student_ood"],
                "seeds": int(summary["seeds"]), "cells": int(summary["cells"])})
    for name, metric in (("PGR ID", "wrg"), ("PGR OOD", "aog")):
        gap = None if ceiling is None else ceiling[metric]
        row[name] = summary[metric] / gap if gap is not None and gap >= MIN_PGR_GAP else math.nan
    return row


def _teacher_row(group: pd.DataFrame, ceiling: pd.Series | None, disagree: bool) -> dict:
    """The weak teacher's accuracies, once per seed x cell (from validated submissions first)."""
    cells = teacher_rows(group.sort_values("valid", ascending=False, kind="stable"))
    return {**_row(summarise(cells), ceiling), "rank": "ref", "method": TEACHER, "params": "",
            "status": "reference", "submitter": "", "submission": "",
            "problem": "submissions disagree on the teacher (bench validate shows where)" if disagree else ""}


def ranking(board: Board, protocol: str | None = None, models: str | None = None, category: str | None = None,
            source: str | None = None, search: str = "", validated_only: bool = False) -> pd.DataFrame:
    """Methods ranked by mean NTS within each protocol x model pair, then the reference rows (ceiling,
    teacher). Filters narrow the cells every number is computed over; ``search`` matches method,
    params, submitter or submission (case-insensitive)."""
    cells = select(board.cells, protocol, models, category, source)
    if validated_only:
        cells = cells[cells["valid"]]
    rows = []
    for (protocol_name, models_name), group in cells.groupby(["protocol", "models"], sort=True):
        ceilings = group[group["method"] == CEILING]
        ceiling_key = ceilings.sort_values("valid", ascending=False, kind="stable")["submission"].iloc[0] \
            if len(ceilings) else None
        ceiling = summarise(group[group["submission"] == ceiling_key]) if ceiling_key else None
        ranked, references = [], []
        decisions = board.decisions(protocol_name, models_name, None if category in (None, ALL) else category,
                                    None if source in (None, ALL) else source)
        for key, cells_of in group.groupby("submission", sort=False):
            first = cells_of.iloc[0]
            decided = decisions.get(key, {})
            row = {**_row(summarise(cells_of), ceiling), "method": first["method"], "params": first["params"],
                   "status": first["status"], "problem": first["problem"], "submitter": first["submitter"],
                   "submission": key, "NTS 95% CI": decided.get("NTS 95% CI", ""),
                   "rank 95%": decided.get("rank 95%", ""), "Δ NTS vs naive": decided.get("Δ NTS vs naive", ""),
                   "Δ 95% CI": decided.get("Δ bootstrap 95%", ""), "Δ t 95% (seeds)": decided.get("Δ t 95% (seeds)", ""),
                   "decided": decided.get("decided", ""), "misfit": cells_of["misfit"].mean()}
            if key == ceiling_key:
                references.append({**row, "rank": "ref", "status": f"reference; {row['status']}"})
            else:
                ranked.append((bool(first["valid"]), row))
        ranked.sort(key=lambda item: -item[1]["NTS"])
        position = 0
        for valid, row in ranked:
            position += valid
            row["rank"] = str(position) if valid else "–"
        disagree = any(keys & set(group["submission"]) for _, keys in board.conflicts)
        references.append(_teacher_row(group, ceiling, disagree))
        for row in [*(r for _, r in ranked), *references]:
            rows.append({**row, "model pair": models_name, "protocol": protocol_name})
    table = pd.DataFrame(rows, columns=RANKING_COLUMNS)
    if search.strip():
        needle = search.strip().lower()
        hit = table[["method", "params", "submitter", "submission"]].fillna("").apply(
            lambda column: column.str.lower().str.contains(needle, regex=False))
        table = table[hit.any(axis=1) | (table["rank"] == "ref")]
    return table.reset_index(drop=True)


# --- per method, and across methods ----------------------------------------------------------------------------
def matrix(board: Board, submission: str, metric: str = "nts") -> pd.DataFrame:
    """Source (rows) x target (columns) of one submission's metric, mean over seeds."""
    cells = board.cells[board.cells["submission"] == submission]
    if cells.empty:
        return pd.DataFrame()
    return cells.pivot_table(index="source", columns="target", values=metric, aggfunc="mean", sort=False)


def id_vs_ood(board: Board, protocol: str | None = None, models: str | None = None, category: str | None = None,
              source: str | None = None) -> pd.DataFrame:
    """WRG (ID gain) and AOG (OOD gain) per submission and source -> target cell, mean over seeds."""
    cells = select(board.cells, protocol, models, category, source)
    if cells.empty:
        return pd.DataFrame(columns=["submission", "method", "params", "status", "source", "target", "wrg", "aog", "nts"])
    return (cells.groupby(["submission", "method", "params", "status", "source", "target"], sort=False)
            [["wrg", "aog", "nts"]].mean().reset_index())


def ablations(board: Board, protocol: str | None = None, models: str | None = None) -> dict[str, pd.DataFrame]:
    """For each method with several param settings on one protocol x model pair (a sweep): one row per
    setting with its params as columns, means over all its cells and seeds. Keyed "protocol/models/method"."""
    cells = select(board.cells, protocol, models)
    out = {}
    for (protocol_name, models_name, method), group in cells.groupby(["protocol", "models", "method"], sort=True):
        if group["params"].nunique() < 2:  # one setting (or resubmissions of it): not a sweep
            continue
        rows = []
        for key, cells_of in group.groupby("submission", sort=False):
            params = next(v.submission["method"]["params"] for v in board.entries if v.key == key)
            summary = summarise(cells_of)
            rows.append({**params, **{METRICS[m]: summary[m] for m in METRICS},
                         "ID acc": summary["student_id"], "OOD acc": summary["student_ood"],
                         "status": cells_of["status"].iloc[0], "submission": key})
        out[f"{protocol_name}/{models_name}/{method}"] = pd.DataFrame(rows)
    return out


def varying_params(table: pd.DataFrame) -> list[str]:
    """The param columns of an ablation table whose values differ between rows."""
    fixed = set(METRICS.values()) | {"ID acc", "OOD acc", "status", "submission"}
    return [c for c in table.columns if c not in fixed and table[c].astype(str).nunique() > 1]


# --- text: the protocol card, and safe rendering --------------------------------------------------------------
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#])")


def md_escape(text: object) -> str:
    """Text that markdown and HTML show literally (HTML-escaped, markdown punctuation backslashed)."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(str(text), quote=False))


DEFINITIONS = ("WRG = Acc_student(S) − Acc_teacher(S); AOG = Acc_student(T) − Acc_teacher(T); NTS = AOG − max(0, "
               "Acc_teacher(S) − Acc_student(S)), per source S → target T and seed, in accuracy points; methods are "
               "ranked by mean NTS. PGR ID = WRG / WRG(ceiling), PGR OOD = AOG / AOG(ceiling), blank when the "
               f"ceiling is less than {MIN_PGR_GAP:g} point above the teacher. Misfit: the % of the student's own "
               "training pairs (a sample of half B) on which it prefers the other response than its teacher's label "
               "(Charikar et al. 2024: the W2S gain tracks it); blank for runs made before it was recorded.")


def protocol_card(name: str, protocols: Mapping | None = None) -> str:
    """The protocol's card (``bench card``: the one card, generated from the registry) and what the
    board's numbers mean, as markdown."""
    from bench.card import GENERATED_NOTE, protocol_card as card
    from bench.protocols import PROTOCOLS

    spec = (protocols or {}).get(name) or PROTOCOLS.get(name)
    return card(spec).replace(f"{GENERATED_NOTE}\n\n", "") + "\n## What the board's numbers mean\n\n" + DEFINITIONS + "\n"


def protocol_html(name: str, protocols: Mapping | None = None) -> str:
    """The card as HTML for the static page; raw HTML in the markdown is shown as text, never run."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(protocol_card(name, protocols))


def display_table(table: pd.DataFrame) -> pd.DataFrame:
    """The ranking as text for the static page and the markdown table: value ± spread in one cell."""
    out = pd.DataFrame({"rank": table["rank"], "method": table["method"], "params": table["params"],
                        "status": table["status"]})
    for name in METRICS.values():
        out[name] = [fmt(v, sd, signed=True) for v, sd in zip(table[name], table[f"{name} ±"])]
        if name == "NTS":
            out["NTS 95% CI"], out["rank 95%"] = table["NTS 95% CI"].fillna(""), table["rank 95%"].fillna("").astype(str)
            out["Δ NTS vs naive"] = [fmt(v, signed=True) if isinstance(v, float) else "" for v in table["Δ NTS vs naive"]]
            for column in ("Δ 95% CI", "Δ t 95% (seeds)", "decided"):
                out[column] = table[column].fillna("")
    for name in ("ID acc", "OOD acc"):
        out[name] = [fmt(v) for v in table[name]]
    for name in ("PGR ID", "PGR OOD"):
        out[name] = ["" if math.isnan(v) else f"{v:.2f}" for v in table[name]]
    out["misfit"] = [fmt(v) for v in table["misfit"]]
    for name in ("seeds", "cells", "model pair", "protocol", "problem"):
        out[name] = table[name].astype(str)
    return out


def markdown(board: Board, **filters) -> str:
    """The ranking as a markdown table (for the README), every text cell escaped."""
    table = display_table(ranking(board, **filters))
    if table.empty:
        return "(no submissions)"
    lines = ["| " + " | ".join(table.columns) + " |", "|" + "---|" * len(table.columns)]
    lines += ["| " + " | ".join(md_escape(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join(lines)
