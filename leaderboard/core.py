"""The leaderboard as pure functions: a submissions folder in, pandas DataFrames out, and the one way
they are shown (``BOARD_COLUMNS``, ``shown``), which the app, the static page, the CSV and the
markdown table all render.

Every aggregate is computed from the submissions' cells (``bench.report`` does the arithmetic, so the
leaderboard, ``bench report`` and ``bench submit`` agree), and ``bench validate`` has recomputed each
cell from its per-pair scores; a submission that fails validation is still shown, marked. Intervals,
rank intervals and Δ against naive come from the hierarchical bootstrap of ``bench.stats`` through
``bench.compare.decision_table``, as in ``bench report``. Definitions (``HELP`` has them per column):

- NTS, AOG, WRG, ID and OOD accuracy: means over the selected source -> target cells and the seeds;
  "±" is the spread (std of the per-seed means; blank with one seed), as in ``bench report``.
- PGR (performance gap recovered), with the same teacher for every method of a protocol x model pair:
  PGR ID = WRG / WRG(ceiling) and PGR OOD = AOG / AOG(ceiling), over the same selected cells. Shown
  only when the ceiling's own gain is told apart from 0 (``pgr``); otherwise blank, with the reason.
- Reference rows: the teacher (its own accuracies; gains 0 by definition) and the ``ceiling`` method.
"""
from __future__ import annotations

import hashlib
import html
import importlib.util
import math
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Mapping

import pandas as pd

from bench.compare import BASELINE
from bench.report import COLUMNS, TEACHER, cell_rows, fmt, params_text, summarise, teacher_rows
from bench.submissions.limits import Validation
from bench.submissions.tree import teacher_conflicts

CEILING = "ceiling"
METRICS = {"nts": "NTS", "aog": "AOG", "wrg": "WRG"}
RANKING_COLUMNS = ["rank", "method", "params", "status", "role",
                   "NTS", "NTS ±", "NTS low", "NTS high", "NTS 95% CI", "rank 95%",
                   "Δ NTS vs naive", "Δ low", "Δ high", "Δ 95% CI", "Δ t low", "Δ t high", "Δ t 95% (seeds)", "decided",
                   "AOG", "AOG ±", "AOG low", "AOG high", "WRG", "WRG ±", "WRG low", "WRG high",
                   "ID acc", "OOD acc", "PGR ID", "PGR ID note", "PGR OOD", "PGR OOD note", "misfit", "seeds", "cells",
                   "submitter", "model pair", "protocol", "submission", "problem", "paper", "code"]
ALL = "all"
UPLOAD_PREFIX = "upload: "   # the key of an uploaded submission previewed on the board
# How a row of a method that is not built in is marked (method.origin.kind): its code is not the harness's,
# so what it did is read in its source, which the submission carries (bench.results.METHOD_SOURCE_FILE).
NOT_BUILT_IN = {kind: f"method from {what}, not built in: its source is in the submission (method_source.py)"
                for kind, what in (("file", "a method file"), ("entry point", "an installed package"))}


# --- the board --------------------------------------------------------------------------------------------
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

    @cached_property
    def by_key(self) -> dict[str, Validation]:
        return {v.key: v for v in self.entries}

    def _rows(self, v: Validation) -> pd.DataFrame | None:
        try:
            rows = cell_rows(v.cells)
        except (KeyError, TypeError):  # a cell too broken to tabulate; validation has said why
            return None
        s = v.submission
        status = "validated" if v.ok else f"NOT VALIDATED ({len(v.errors)} problems)"
        if s.get("external"):   # students trained outside the harness (bench evaluate): say so wherever it shows
            status += f"; {s['external']}"
        kind = (s["method"].get("origin") or {}).get("kind") if isinstance(s["method"].get("origin"), dict) else None
        if kind in NOT_BUILT_IN:   # code the harness does not ship: a reviewer reads its source in the submission
            status += f"; {NOT_BUILT_IN[kind]}"
        return rows.assign(submission=v.key, params=params_text(s["method"]["params"]), valid=v.ok, status=status,
                           problem=str(v.errors[0]) if v.errors else "", submitter=s["submitter"])

    @cached_property
    def cells(self) -> pd.DataFrame:
        """One row per submission x seed x source -> target cell."""
        frames = [self._rows(v) for v in self.entries]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(
            columns=["submission", "method", "params", "models", "protocol", "category", "seed", "source", "target",
                     *COLUMNS, "misfit", "valid", "status", "problem", "submitter"])

    def decisions(self, protocol: str, models: str, category: str | None = None, source: str | None = None
                  ) -> dict[str, dict]:
        """Per validated submission of a protocol x model pair (by its key): ``bench.compare.decision_table``'s
        row (NTS 95% CI, rank 95%, Δ NTS vs naive with its intervals, decided), plus the same bootstrap's
        95% intervals of NTS, AOG and WRG (``ci``) and of Δ NTS (``delta``: bootstrap low, high, t low, high)
        as numbers. Empty when they cannot be computed (submissions on different seeds or test pairs)."""
        from bench.compare import decision_table
        from bench.stats import Board as Bootstrap

        key = (protocol, models, category, source)
        if key not in self._decisions:
            valid = [v for v in self.entries if v.ok and v.submission["protocol"]["name"] == protocol
                     and v.submission["models"]["name"] == models]
            slugs = {v.submission["slug"]: v.key for v in valid}
            try:
                boot = Bootstrap([c for v in valid for c in v.pairs])
                table = decision_table(boot, category=category, source=source)
            except ValueError:
                self._decisions[key] = {}
                return self._decisions[key]
            found = {slugs[row.pop("method")]: row for row in table.to_dict("records")}
            for slug, sub in slugs.items():
                stats = boot.stats(slug, ceiling=None, category=category, source=source).metrics
                found[sub]["ci"] = {m: (stats[m].low, stats[m].high) for m in METRICS}
                if BASELINE in boot.methods and slug != BASELINE:
                    d = boot.compare(slug, BASELINE, category=category, source=source).deltas["nts"]
                    found[sub]["delta"] = (d.low, d.high, d.t_low, d.t_high)
            self._decisions[key] = found
        return self._decisions[key]

    def with_entry(self, validation: Validation) -> "Board":
        """The board as it would be with one more submission (an upload's preview): it takes the place
        of the submission in its folder, ``<protocol>/<models>/<slug>``, as it would on merging."""
        kept = [v for v in self.validations if v.key != location(validation)]
        return Board(self.root, [*kept, validation], teacher_conflicts([*kept, validation]))


def location(v: Validation) -> str:
    """Where a submission belongs in a submissions root: ``<protocol>/<models>/<slug>``."""
    s = v.submission
    return f"{s['protocol']['name']}/{s['models']['name']}/{s['slug']}" if s else ""


def title(v: Validation) -> str:
    """A submission as a picture names it: method and params (``anchor lam=0.1, layers=last``), marked
    when it does not validate."""
    s = v.submission
    params = params_text(s["method"]["params"])
    return s["method"]["name"] + (f" {params}" if params else "") + ("" if v.ok else " (NOT VALIDATED)")


def load_board(root: Path, protocols: Mapping | None = None, model_pairs: Mapping | None = None,
               cache_dir: Path | None = None) -> Board:
    """Validate every submission under ``root`` (``protocols`` / ``model_pairs`` add specs to the
    registries), reusing the stored outcome of each submission whose files did not change
    (``leaderboard.cache``; ``cache_dir`` defaults to $SHIFTBENCH_CACHE/leaderboard)."""
    from leaderboard.cache import validate_tree

    validations = validate_tree(Path(root), protocols, model_pairs, cache_dir) if Path(root).is_dir() else []
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


def _scope(value: str | None) -> str | None:
    return None if value in (None, ALL) else value


# --- the ranking ---------------------------------------------------------------------------------------------
def pgr(gain: float, ceiling: pd.Series | None, ceiling_ci: tuple[float, float] | None, metric: str
        ) -> tuple[float, str]:
    """PGR = gain / the ceiling's gain, and why it is blank when it is: a ratio over a gap that is not
    told apart from 0 is noise (source=travel on mini: a ceiling AOG of +1.8 ± 4.8 made PGR swing
    between -2 and +2). The gap counts only when both intervals of the ceiling's gain exclude 0, as a
    difference must on this board: the t-interval over the per-seed means (what "decided" uses; it
    needs two seeds) and the bootstrap interval over seeds and test pairs (the test split is shared
    by every seed, so the t-interval alone misses its noise)."""
    from bench.stats import LEVEL, t_quantile

    name = METRICS[metric]
    if ceiling is None:
        return math.nan, "no ceiling submission on this protocol and model pair: nothing to recover"
    gap, sd, seeds = float(ceiling[metric]), float(ceiling[f"{metric}_sd"]), int(ceiling["seeds"])
    if seeds < 2:
        return math.nan, (f"the ceiling's {name} here ({fmt(gap, signed=True)}) has one seed, so no interval over "
                          "seeds: the gap to recover cannot be told apart from noise")
    half = t_quantile(1 - (1 - LEVEL) / 2, seeds - 1) * sd / math.sqrt(seeds)
    for kind, (low, high) in ((f"t 95% interval over {seeds} seeds", (gap - half, gap + half)),
                              ("bootstrap 95% interval", ceiling_ci or (math.inf, math.inf))):  # none: t alone
        if low <= 0:
            verdict = "includes 0: the gap to recover is noise" if high >= 0 else \
                "is below 0: the ceiling loses to its teacher, so there is no gap to recover"
            return math.nan, (f"the ceiling's {name} here is {fmt(gap, signed=True)}; its {kind}, "
                              f"{interval(low, high)}, {verdict}")
    return gain / gap, ""


def _row(summary: pd.Series, ceiling: pd.Series | None, ceiling_ci: dict | None) -> dict:
    row = {METRICS[m]: summary[m] for m in METRICS}
    row.update({f"{METRICS[m]} ±": summary[f"{m}_sd"] for m in METRICS})
    row.update({"ID acc": summary["student_id"], "OOD acc": summary["student_ood"],
                "seeds": int(summary["seeds"]), "cells": int(summary["cells"])})
    for name, metric in (("PGR ID", "wrg"), ("PGR OOD", "aog")):
        row[name], row[f"{name} note"] = pgr(summary[metric], ceiling, (ceiling_ci or {}).get(metric), metric)
    return row


def _method_info(v: Validation) -> dict:
    method = v.submission["method"]
    origin = method.get("origin") if isinstance(method.get("origin"), dict) else {}
    return {"paper": method.get("paper") if isinstance(method.get("paper"), str) else "",
            "code": origin.get("module", "") if origin.get("kind") == "built-in" else ""}


def _teacher_row(group: pd.DataFrame, ceiling: pd.Series | None, ceiling_ci: dict | None, disagree: bool) -> dict:
    """The weak teacher's accuracies, once per seed x cell (from validated submissions first)."""
    cells = teacher_rows(group.sort_values("valid", ascending=False, kind="stable"))
    return {**_row(summarise(cells), ceiling, ceiling_ci), "rank": "ref", "method": TEACHER, "params": "",
            "status": "reference", "role": "teacher", "submitter": "", "submission": "", "paper": "", "code": "",
            "problem": "submissions disagree on the teacher (bench validate shows where)" if disagree else ""}


def ranking(board: Board, protocol: str | None = None, models: str | None = None, category: str | None = None,
            source: str | None = None, search: str = "", validated_only: bool = False) -> pd.DataFrame:
    """Methods ranked by mean NTS within each protocol x model pair, then the reference rows (ceiling,
    teacher). Filters narrow the cells every number is computed over; ``search`` matches method,
    params, submitter or submission (case-insensitive); reference rows always stay."""
    cells = select(board.cells, protocol, models, category, source)
    if validated_only:
        cells = cells[cells["valid"]]
    rows = []
    for (protocol_name, models_name), group in cells.groupby(["protocol", "models"], sort=True):
        decisions = board.decisions(protocol_name, models_name, _scope(category), _scope(source))
        ceilings = group[group["method"] == CEILING]
        ceiling_key = ceilings.sort_values("valid", ascending=False, kind="stable")["submission"].iloc[0] \
            if len(ceilings) else None
        ceiling = summarise(group[group["submission"] == ceiling_key]) if ceiling_key else None
        ceiling_ci = decisions.get(ceiling_key, {}).get("ci")
        ranked, references = [], []
        for key, cells_of in group.groupby("submission", sort=False):
            first = cells_of.iloc[0]
            decided = decisions.get(key, {})
            ci, delta = decided.get("ci", {}), decided.get("delta", (math.nan,) * 4)
            row = {**_row(summarise(cells_of), ceiling, ceiling_ci), **_method_info(board.by_key[key]),
                   "method": first["method"], "params": first["params"], "status": first["status"],
                   "role": "upload" if key.startswith(UPLOAD_PREFIX) else "method",
                   "problem": first["problem"], "submitter": first["submitter"], "submission": key,
                   "NTS 95% CI": decided.get("NTS 95% CI", ""), "rank 95%": decided.get("rank 95%", ""),
                   "Δ NTS vs naive": decided.get("Δ NTS vs naive", math.nan),
                   "Δ 95% CI": decided.get("Δ bootstrap 95%", ""), "Δ t 95% (seeds)": decided.get("Δ t 95% (seeds)", ""),
                   "Δ low": delta[0], "Δ high": delta[1], "Δ t low": delta[2], "Δ t high": delta[3],
                   "decided": decided.get("decided", ""), "misfit": cells_of["misfit"].mean()}
            for name in METRICS.values():
                row[f"{name} low"], row[f"{name} high"] = ci.get(name.lower(), (math.nan, math.nan))
            if key == ceiling_key:
                references.append({**row, "rank": "ref", "role": "ceiling", "status": f"reference; {row['status']}"})
            else:
                ranked.append((bool(first["valid"]), row))
        ranked.sort(key=lambda item: -item[1]["NTS"])
        position = 0
        for valid, row in ranked:
            position += valid
            row["rank"] = str(position) if valid else "–"
        disagree = any(keys & set(group["submission"]) for _, keys in board.conflicts)
        references.append(_teacher_row(group, ceiling, ceiling_ci, disagree))
        for row in [*(r for _, r in ranked), *references]:
            rows.append({**row, "model pair": models_name, "protocol": protocol_name})
    table = pd.DataFrame(rows, columns=RANKING_COLUMNS)
    table["Δ NTS vs naive"] = pd.to_numeric(table["Δ NTS vs naive"].replace("", math.nan))
    if search.strip():
        needle = search.strip().lower()
        hit = table[["method", "params", "submitter", "submission"]].fillna("").apply(
            lambda column: column.str.lower().str.contains(needle, regex=False))
        table = table[hit.any(axis=1) | (table["rank"] == "ref")]
    return table.reset_index(drop=True)


# --- how the ranking is shown: one format for the app, the static page, the CSV and markdown -----------------
def interval(low: float, high: float) -> str:
    """``[-0.9, +4.4]`` in the board's one number format; blank where there is no interval."""
    if math.isnan(low) or math.isnan(high):
        return ""
    return f"[{fmt(low, signed=True)}, {fmt(high, signed=True)}]"


@dataclass(frozen=True)
class Column:
    name: str          # the header
    help: str          # its definition, shown on hover
    number: bool       # right-aligned, sorted as a number
    default: bool      # in the compact table; the rest are chosen by the reader


_SPREAD = "± is the standard deviation of the per-seed means (each seed's mean over cells) across seeds; blank with one seed"
_CI = ("95% interval of the hierarchical bootstrap over seeds and test pairs (2,000 replicates, docs/statistics.md); with "
       "three seeds it is narrower than the t-interval over seeds, so a difference is decided only by the latter")
BOARD_COLUMNS = [   # in the order they are shown; the compact default ones have default=True
    Column("rank", "Rank by mean NTS within the protocol and model pair; 'ref' marks a reference row (teacher, "
           "ceiling), '–' a submission that does not validate", False, True),
    Column("method", "The W2S method; the link opens its paper, 'code' its source file", False, True),
    Column("params", "The method's parameters", False, True),
    Column("NTS", "Net transfer score, in accuracy points: AOG − max(0, Acc_teacher(S) − Acc_student(S)), mean over "
           "every source S → target T cell and seed. The ranking's key", True, True),
    Column("NTS 95% CI", "NTS's " + _CI, True, True),
    Column("NTS ±", "NTS spread: " + _SPREAD, True, False),
    Column("rank 95%", "Range of the method's rank over the bootstrap replicates (the ceiling is not ranked)", False, True),
    Column("Δ NTS vs naive", "NTS − naive's NTS, paired: same seeds, teacher and test pairs", True, True),
    Column("Δ 95% CI", "Bootstrap 95% interval of Δ NTS vs naive", True, False),
    Column("Δ t 95% (seeds)", "t 95% interval over the per-seed differences of Δ NTS vs naive", True, True),
    Column("decided", "'better' or 'worse' than naive when the t-interval over seeds excludes 0, else 'no' (with three "
           "seeds the bootstrap alone is too optimistic: docs/statistics.md)", False, True),
    Column("AOG", "Gain out of distribution, points: Acc_student(T) − Acc_teacher(T) on a sibling target T, mean "
           "over cells and seeds", True, True),
    Column("AOG 95% CI", "AOG's " + _CI, True, False),
    Column("AOG ±", "AOG spread: " + _SPREAD, True, False),
    Column("WRG", "Weak-to-strong gain in distribution, points: Acc_student(S) − Acc_teacher(S) on the source's "
           "own test split, mean over cells and seeds", True, True),
    Column("WRG 95% CI", "WRG's " + _CI, True, False),
    Column("WRG ±", "WRG spread: " + _SPREAD, True, False),
    Column("PGR ID %", "Performance gap recovered in distribution: WRG / WRG(ceiling), in %. Blank (hover for why) "
           "when the ceiling's own WRG is not told apart from 0", True, False),
    Column("PGR OOD %", "Performance gap recovered out of distribution: AOG / AOG(ceiling), in %. Blank (hover for "
           "why) when the ceiling's own AOG is not told apart from 0", True, False),
    Column("ID acc", "The student's accuracy on its source's test split, % of pairs where r(chosen) > r(rejected) "
           "(a tie counts ½)", True, True),
    Column("OOD acc", "The student's accuracy on the sibling targets' test splits, %", True, True),
    Column("misfit", "% of the student's own training pairs (256 of half B) on which it prefers the other response "
           "than its teacher's label (Charikar et al. 2024); blank for runs made before it was recorded", True, False),
    Column("seeds", "Seeds behind each number", True, False),
    Column("cells", "Source → target cells per seed behind each number", True, False),
    Column("status", "'validated': every number recomputes from the per-pair scores (bench validate)", False, False),
    Column("submitter", "Who submitted it", False, False),
    Column("model pair", "The weak teacher → strong student pair (Protocol tab)", False, False),
    Column("protocol", "The protocol: datasets, splits, seeds (Protocol tab)", False, False),
    Column("submission", "The submission's folder under submissions/", False, False),
    Column("problem", "The first problem of a submission that does not validate", False, False),
]
COLUMN_BY_NAME = {c.name: c for c in BOARD_COLUMNS}
DEFAULT_COLUMNS = [c.name for c in BOARD_COLUMNS if c.default]
HELP = {c.name: c.help for c in BOARD_COLUMNS}

# Papers the methods record, by their title, and where to read them (arXiv). A paper not listed here
# is shown as its recorded text, without a link.
PAPER_URLS = {
    "Weak-to-Strong Generalization": "https://arxiv.org/abs/2312.09390",
    "Explicit Inductive Bias for Transfer Learning with Convolutional Networks": "https://arxiv.org/abs/1802.01483",
    "Fine-Tuning can Distort Pretrained Features and Underperform Out-of-Distribution": "https://arxiv.org/abs/2202.10054",
    "Robust fine-tuning of zero-shot models": "https://arxiv.org/abs/2109.01903",
    "RewardBench": "https://arxiv.org/abs/2403.13787",
    "Vision Superalignment: Weak-to-Strong Generalization for Vision Foundation Models": "https://arxiv.org/abs/2402.03749",
    "On the Robustness of Reward Models for Language Model Alignment": "https://arxiv.org/abs/2505.07271",
    "Generalized Cross Entropy Loss for Training Deep Neural Networks with Noisy Labels": "https://arxiv.org/abs/1805.07836",
    "Regularizing Hidden States Enables Learning Generalizable Reward Model for LLMs": "https://arxiv.org/abs/2406.10216",
    "Weak-to-Strong Generalization under Distribution Shifts": "https://arxiv.org/abs/2510.21332",
    "Improving Weak-to-Strong Generalization with Reliability-Aware Alignment": "https://arxiv.org/abs/2406.19032",
    "Provably Robust DPO: Aligning Language Models with Noisy Feedback": "https://arxiv.org/abs/2403.00409",
    "WARM: On the Benefits of Weight Averaged Reward Models": "https://arxiv.org/abs/2401.12187",
}
# Code bases the methods record in place of a paper, and where to read them. The recorded text is the
# submission's, so only these are linked, never an address it names.
REPOSITORY_URLS = {"EleutherAI w2s": "https://github.com/EleutherAI/w2s"}


def paper_url(paper: str) -> str:
    """The link of a recorded paper (``Burns et al. 2023, "Weak-to-Strong Generalization" (...)``), else of
    the code base it starts with when it has no title (``EleutherAI w2s (github.com/EleutherAI/w2s, ...)``),
    or "": only addresses listed here, whatever the text says."""
    title = re.search(r'"([^"]+)"', paper or "")
    if title:
        return PAPER_URLS.get(title.group(1), "")
    return next((url for name, url in REPOSITORY_URLS.items() if (paper or "").startswith(f"{name} (")), "")


@dataclass(frozen=True)
class MethodCode:
    """A built-in method's source file, served as text at ``url`` (relative to the page)."""
    module: str
    path: Path
    url: str
    note: str         # whether it is the code the submission ran


def method_code(module: str, recorded_sha256: str | None) -> MethodCode | None:
    """The source of a built-in method module (``methods.anchor``) on this machine; None for anything
    else (a method file or a package is not ours to serve)."""
    if not re.fullmatch(r"methods\.[A-Za-z_][A-Za-z0-9_]*", module or ""):
        return None
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not Path(spec.origin).is_file():
        return None
    path = Path(spec.origin)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    note = ("the code this submission ran (same sha256)" if digest == recorded_sha256 else
            f"this checkout's {path.name}; the submission ran a version with sha256 {str(recorded_sha256)[:12]}…, "
            "so it differs (its git commit is in the Submissions' code_version)")
    return MethodCode(module, path, f"code/{path.name}.txt", note)


@dataclass
class ShownCell:
    text: str              # what is shown (and written to the CSV)
    sort: float | str = ""  # what it sorts by
    title: str = ""         # shown on hover (why a number is blank)
    number: bool = False


@dataclass
class Row:
    cells: list[ShownCell]
    role: str             # method, upload, ceiling or teacher
    valid: bool
    paper: str = ""
    paper_url: str = ""
    code: MethodCode | None = None
    external: str = ""    # the mark of students trained outside the harness (bench.results.EXTERNAL_NOTE)


@dataclass
class Group:
    protocol: str
    models: str
    references: list[Row]   # pinned above the ranked rows, in every order
    ranked: list[Row]


@dataclass
class View:
    columns: list[Column]
    groups: list[Group]

    @property
    def rows(self) -> list[Row]:
        return [r for g in self.groups for r in (*g.references, *g.ranked)]

    def text(self) -> list[list[str]]:
        """The table as shown, one list of cell texts per row (references first in each group)."""
        return [[c.text for c in r.cells] for r in self.rows]


def _cell(name: str, row: pd.Series) -> ShownCell:
    def number(text: str, value: float) -> ShownCell:
        return ShownCell(text, "" if math.isnan(value) else float(value), number=True)

    if name in METRICS.values():
        return number(fmt(row[name], signed=True), row[name])
    if name.endswith(" 95% CI") and name[:3] in METRICS.values():
        return number(interval(row[f"{name[:3]} low"], row[f"{name[:3]} high"]), row[f"{name[:3]} low"])
    if name.endswith(" ±"):
        return number(fmt(row[name]), row[name])
    if name.startswith("PGR"):
        metric = name[:-2]
        cell = number(fmt(100 * row[metric], signed=True), 100 * row[metric])
        cell.title = row[f"{metric} note"]
        return cell
    if name in ("ID acc", "OOD acc", "misfit"):
        return number(fmt(row[name]), row[name])
    if name == "Δ NTS vs naive":
        return number(fmt(row[name], signed=True), row[name])
    if name == "Δ 95% CI":
        return number(interval(row["Δ low"], row["Δ high"]), row["Δ low"])
    if name == "Δ t 95% (seeds)":
        return number(interval(row["Δ t low"], row["Δ t high"]), row["Δ t low"])
    if name in ("seeds", "cells"):
        return number(str(int(row[name])), float(row[name]))
    if name == "rank":
        return ShownCell(row["rank"], int(row["rank"]) if row["rank"].isdigit() else "")
    if name == "rank 95%" and isinstance(row[name], str) and row[name]:   # "3-11": by its low end, then its high
        low, _, high = str(row[name]).partition("-")
        return ShownCell(str(row[name]), int(low) + int(high or low) / 1000)
    text = "" if pd.isna(row[name]) else str(row[name])
    return ShownCell(text, text.lower())


def shown(table: pd.DataFrame, columns: list[str] | None = None, board: Board | None = None) -> View:
    """The ranking as the board shows it: ``columns`` (names of ``BOARD_COLUMNS``, in that order; the
    compact default when None) formatted by ``bench.report.fmt`` (one decimal, ``+`` on gains, never
    ``-0.0``), the reference rows of each protocol x model pair pinned above its ranked rows. With
    several protocols or model pairs shown, their columns are always in, so each row says where it is."""
    wanted = set(DEFAULT_COLUMNS if columns is None else columns)
    if table[["protocol", "model pair"]].drop_duplicates().shape[0] > 1:
        wanted |= {"protocol", "model pair"}
    picked = [c for c in BOARD_COLUMNS if c.name in wanted]
    groups = []
    for (protocol, models), rows in table.groupby(["protocol", "model pair"], sort=False):
        group = Group(protocol, models, [], [])
        for _, row in rows.iterrows():
            entry = board.by_key.get(row["submission"]) if board is not None else None
            recorded = entry.submission["method"].get("origin", {}) if entry is not None else {}
            shown_row = Row([_cell(c.name, row) for c in picked], row["role"], "NOT VALIDATED" not in str(row["status"]),
                            row["paper"] or "", paper_url(row["paper"] or ""),
                            method_code(row["code"], recorded.get("sha256") if isinstance(recorded, dict) else None),
                            str(entry.submission.get("external") or "") if entry is not None else "")
            (group.references if row["role"] in ("ceiling", "teacher") else group.ranked).append(shown_row)
        groups.append(group)
    return View(picked, groups)


def shown_order(table: pd.DataFrame) -> list[str]:
    """The submissions of a ranking table in the order the board shows them: the ceiling (pinned), then
    by rank; the pictures follow it, so a panel is where its row is."""
    return [*table[table["role"] == "ceiling"]["submission"], *table[table["role"].isin(["method", "upload"])]["submission"]]


def markdown(board: Board, columns: list[str] | None = None, **filters) -> str:
    """The ranking as a markdown table (for the README), every text cell escaped."""
    view = shown(ranking(board, **filters), columns, board)
    if not view.groups:
        return "(no submissions)"
    lines = ["| " + " | ".join(c.name for c in view.columns) + " |",
             "|" + "".join("---:|" if c.number else "---|" for c in view.columns)]
    lines += ["| " + " | ".join(md_escape(text) for text in row) + " |" for row in view.text()]
    return "\n".join(lines)


# --- what was run: the context line, the model pair in words -----------------------------------------------
def model_words(model: Mapping) -> str:
    """A model as a reader names it: its checkpoint, how much of it is kept, how it is trained."""
    name = str(model.get("path", model.get("name", "?"))).rstrip("/").rsplit("/", 1)[-1]
    layers = model.get("num_layers")
    text = name + (f" cut to its first {'layer' if layers == 1 else f'{layers} layers'}" if layers else "")
    lora = dict(model.get("lora") or ())
    return text + (f" (LoRA r {lora['r']})" if "r" in lora else "")


def early_stopping_words(stopping: Mapping | None) -> str:
    """A recorded bench.specs.EarlyStopping in words (raw text: escape it for markdown); "" without one."""
    if not isinstance(stopping, Mapping):
        return ""
    return (f"the best checkpoint on {stopping.get('holdout')} of the training pairs held out, checked every "
            f"{stopping.get('every')} steps by {stopping.get('metric')}")


def model_pair_words(models: Mapping, training: bool = False) -> str:
    """The pair in one line; with ``training``, and its students' early stopping if they had it (the board's
    context row says so; the pair's card has a line for it)."""
    weak, strong = model_words(models.get("weak", {})), model_words(models.get("strong", {}))
    stopped = early_stopping_words((models.get("student_train") or {}).get("early_stopping")) if training else ""
    pair = f"{weak} (weak teacher) → {strong} (strong student)"
    return f"{pair}; students early-stopped: {stopped}" if stopped else pair


@dataclass(frozen=True)
class Context:
    protocol: str
    version: str
    protocol_hash: str
    models: str
    models_words: str
    seeds: int
    cells: int            # source -> target cells per seed
    test_pairs: str       # per eval set: "400", or "100–400" when they differ
    submissions: int
    updated: str          # the newest submission's date
    updated_by: str       # its slug
    commit: str           # the code its runs were made with


def context(board: Board, table: pd.DataFrame) -> list[Context]:
    """What was run behind each protocol x model pair of a ranking table."""
    out = []
    for (protocol, models), rows in table.groupby(["protocol", "model pair"], sort=False):
        entries = [v for v in board.entries if v.submission["protocol"]["name"] == protocol
                   and v.submission["models"]["name"] == models and v.key in set(rows["submission"])]
        if not entries:
            continue
        teacher = rows[rows["role"] == "teacher"].iloc[0]
        sizes = sorted({e.n_pairs for v in entries for c in v.cells for e in c.eval_sets.values()})
        newest = max(entries, key=lambda v: str(v.submission["created_utc"]))
        code = newest.submission["code_version"]
        commits = ", ".join(str(c)[:7] for c in code.get("git_commits", []) if c) or "unknown"
        out.append(Context(protocol, newest.submission["protocol"]["version"], newest.submission["protocol"]["hash"],
                           models, model_pair_words(newest.submission["models"], training=True), int(teacher["seeds"]),
                           int(teacher["cells"]), f"{sizes[0]:,}" if len(sizes) == 1 else f"{sizes[0]:,}–{sizes[-1]:,}",
                           len(entries), str(newest.submission["created_utc"])[:10], newest.submission["slug"],
                           commits + (" (dirty tree)" if code.get("dirty") else "")))
    return out


# --- per method, and across methods ----------------------------------------------------------------------------
def _order(names: list[str], first: list[str]) -> list[str]:
    return [n for n in first if n in names] + [n for n in names if n not in first]


def matrix(board: Board, submission: str, metric: str = "nts") -> pd.DataFrame:
    """Source (rows) x target (columns) of one submission's metric, mean over seeds; both in the
    protocol's order of datasets, so the diagonal is where a source would meet itself."""
    cells = board.cells[board.cells["submission"] == submission]
    if cells.empty:
        return pd.DataFrame()
    table = cells.pivot_table(index="source", columns="target", values=metric, aggfunc="mean", sort=False)
    sources = list(dict.fromkeys(cells["source"]))   # the cells come in the protocol's order of datasets
    order = _order([*sources, *table.columns], sources)
    return table.reindex(index=order, columns=order)


def color_limit(board: Board, keys: list[str], metric: str) -> float:
    """One colour scale for every heatmap of these submissions, symmetric around 0: up to the 95th
    percentile of their cells' |value| (at least 1 point), so one outlier (``length``'s -56 on mini)
    does not wash out every other panel; beyond it the colour saturates and the number is still printed."""
    cells = board.cells[board.cells["submission"].isin(keys)]
    if cells.empty:
        return 1.0
    means = cells.groupby(["submission", "source", "target"])[metric].mean().abs()
    return max(1.0, float(means.quantile(0.95)))


def id_vs_ood(board: Board, protocol: str | None = None, models: str | None = None, category: str | None = None,
              source: str | None = None) -> pd.DataFrame:
    """WRG (ID gain) and AOG (OOD gain) per submission and source -> target cell, mean over seeds."""
    cells = select(board.cells, protocol, models, category, source)
    keys = ["submission", "method", "params", "status", "category", "source", "target"]
    if cells.empty:
        return pd.DataFrame(columns=[*keys, "wrg", "aog", "nts"])
    return cells.groupby(keys, sort=False)[["wrg", "aog", "nts"]].mean().reset_index()


@dataclass
class Sweep:
    """One method with several param settings on one protocol x model pair."""
    table: pd.DataFrame        # one row per setting: its params, NTS/AOG/WRG with low/high, ID/OOD acc
    baseline: dict | None      # naive's NTS/AOG/WRG -> (value, low, high) on the same cells, when submitted


def ablations(board: Board, protocol: str | None = None, models: str | None = None) -> dict[str, Sweep]:
    """For each method with several param settings on one protocol x model pair (a sweep): one row per
    setting with its params as columns, means over all its cells and seeds with the bootstrap 95%
    intervals, and naive on the same cells as the reference. Keyed "protocol/models/method"."""
    cells = select(board.cells, protocol, models)
    out = {}
    for (protocol_name, models_name, method), group in cells.groupby(["protocol", "models", "method"], sort=True):
        if group["params"].nunique() < 2:  # one setting (or resubmissions of it): not a sweep
            continue
        decisions = board.decisions(protocol_name, models_name)
        rows = []
        for key, cells_of in group.groupby("submission", sort=False):
            summary, ci = summarise(cells_of), decisions.get(key, {}).get("ci", {})
            rows.append({**board.by_key[key].submission["method"]["params"],
                         **{n: summary[m] for m, n in METRICS.items()},
                         **{f"{n} low": ci.get(m, (math.nan,) * 2)[0] for m, n in METRICS.items()},
                         **{f"{n} high": ci.get(m, (math.nan,) * 2)[1] for m, n in METRICS.items()},
                         "ID acc": summary["student_id"], "OOD acc": summary["student_ood"],
                         "status": cells_of["status"].iloc[0], "submission": key})
        naive = cells[(cells["protocol"] == protocol_name) & (cells["models"] == models_name)
                      & (cells["method"] == BASELINE) & cells["valid"]]
        baseline = None
        if not naive.empty:
            summary, ci = summarise(naive), decisions.get(naive["submission"].iloc[0], {}).get("ci", {})
            baseline = {n: (summary[m], *ci.get(m, (math.nan, math.nan))) for m, n in METRICS.items()}
        out[f"{protocol_name}/{models_name}/{method}"] = Sweep(pd.DataFrame(rows), baseline)
    return out


_SWEEP_FIXED = {*METRICS.values(), *(f"{n} {end}" for n in METRICS.values() for end in ("low", "high")),
                "ID acc", "OOD acc", "status", "submission"}


def varying_params(table: pd.DataFrame) -> list[str]:
    """The param columns of an ablation table whose values differ between rows."""
    return [c for c in table.columns if c not in _SWEEP_FIXED and table[c].astype(str).nunique() > 1]


def sweep_display(sweep: Sweep) -> pd.DataFrame:
    """An ablation table as text: params, then each metric with its interval, in the board's format."""
    table = sweep.table
    out = table[[c for c in table.columns if c not in _SWEEP_FIXED]].astype(str)
    for name in METRICS.values():
        out[name] = [fmt(v, signed=True) for v in table[name]]
        out[f"{name} 95% CI"] = [interval(lo, hi) for lo, hi in zip(table[f"{name} low"], table[f"{name} high"])]
    for name in ("ID acc", "OOD acc"):
        out[name] = [fmt(v) for v in table[name]]
    out["status"], out["submission"] = table["status"], table["submission"]
    return out


# --- text: the cards, the about page, and safe rendering ------------------------------------------------------
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#])")


def md_escape(text: object) -> str:
    """Text that markdown and HTML show literally (HTML-escaped, markdown punctuation backslashed)."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(str(text), quote=False))


DEFINITIONS = ("WRG = Acc_student(S) − Acc_teacher(S); AOG = Acc_student(T) − Acc_teacher(T); NTS = AOG − max(0, "
               "Acc_teacher(S) − Acc_student(S)), per source S → target T and seed, in accuracy points; methods are "
               "ranked by mean NTS. PGR ID = WRG / WRG(ceiling), PGR OOD = AOG / AOG(ceiling), in %, blank when the "
               "ceiling's own gain is not told apart from 0 (its t 95% interval over seeds or its bootstrap 95% "
               "interval includes 0). Misfit: the % of the student's own training pairs (a sample of half B) on "
               "which it prefers the other response than its teacher's label (Charikar et al. 2024: the W2S gain "
               "tracks it); blank for runs made before it was recorded.")


def protocol_card(name: str, protocols: Mapping | None = None) -> str:
    """The protocol's card (``bench card``: the one card, generated from the registry) and what the
    board's numbers mean, as markdown."""
    from bench.card import GENERATED_NOTE, protocol_card as card
    from bench.protocols import protocol_named

    spec = protocol_named(name, protocols)
    return card(spec).replace(f"{GENERATED_NOTE}\n\n", "") + "\n## What the board's numbers mean\n\n" + DEFINITIONS + "\n"


def model_pair_card(name: str, model_pairs: Mapping | None = None, board: Board | None = None) -> str:
    """The model pair's card, as markdown: the registered spec, else what its submissions recorded
    (every value escaped: a recorded one is submission text)."""
    from bench.protocols import MODEL_PAIRS
    from bench.specs import to_plain

    spec = (model_pairs or {}).get(name) or (MODEL_PAIRS.get(name) if name in MODEL_PAIRS else None)
    recorded = next((v.submission["models"] for v in (board.entries if board else [])
                     if v.submission["models"]["name"] == name), None)
    plain = to_plain(spec) if spec is not None else recorded
    if plain is None:
        return f"# Model pair `{md_escape(name)}`\n\nNot registered here and in no submission.\n"
    e = md_escape

    def model_rows(who: str, model: Mapping) -> list[str]:
        lora = dict(model.get("lora") or ())
        return [f"| {who} | {e(model.get('path', ''))} | {e(model.get('num_layers') or 'all')} | "
                f"{e(model.get('architecture', ''))} | {e(model.get('dtype', ''))} | "
                f"{e(', '.join(f'{k} {v}' for k, v in lora.items()) or 'full fine-tuning')} |"]

    def train(label: str, config: Mapping) -> str:
        return (f"- **{label}:** learning rate {e(config.get('learning_rate'))}, {e(config.get('epochs'))} epoch(s), "
                f"batch {e(config.get('batch_size'))} pairs, warmup {e(config.get('warmup_ratio'))}, weight decay "
                f"{e(config.get('weight_decay'))}, gradient norm ≤ {e(config.get('max_grad_norm'))}"
                + (", word embeddings frozen" if config.get("freeze_word_embeddings") else "")
                + (f", early-stopped: {e(stopped)}" if (stopped := early_stopping_words(config.get("early_stopping")))
                   else ""))

    lines = [f"# Model pair `{e(plain['name'])}`", "", f"**{e(model_pair_words(plain))}**", "",
             e(plain.get("description", "")), "",
             "| role | checkpoint | layers | architecture | dtype | training |", "|---|---|---|---|---|---|",
             *model_rows("weak teacher", plain.get("weak", {})), *model_rows("strong student", plain.get("strong", {})),
             "", train("Teacher", plain.get("teacher_train", {})), train("Student", plain.get("student_train", {})),
             f"- **Scoring batch:** {e(plain.get('score_batch_size'))} pairs"]
    defaults = plain.get("method_defaults") or []
    if defaults:
        lines.append("- **Method defaults for this pair:** " + "; ".join(
            f"{e(method)}: " + ", ".join(f"{e(k)}={e(v)}" for k, v in params) for method, params in defaults))
    source = "the registry (bench/protocols.py)" if spec is not None else "its submissions (not registered here)"
    return "\n".join(lines) + f"\n\nFrom {source}; `bench list models` prints it.\n"


def about_markdown() -> str:
    """The About tab and section: what the benchmark measures, how to submit, how to cite."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        release = version("shiftbench")
    except PackageNotFoundError:
        release = "unreleased"
    text = (Path(__file__).parent / "templates" / "about.md.j2").read_text(encoding="utf-8")
    return text.replace("{{ version }}", release)


def protocol_html(name: str, protocols: Mapping | None = None) -> str:
    """The card as HTML for the static page; raw HTML in the markdown is shown as text, never run."""
    return markdown_html(protocol_card(name, protocols))


def markdown_html(text: str) -> str:
    """Markdown as HTML with raw HTML shown as text (never run): the static page's cards and about."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)
