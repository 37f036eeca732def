"""How the ranking is shown: its columns, their definitions and the one number format, for the app,
the static page, the CSV and the markdown table alike (``shown`` makes the one view they render).

Numbers are ``bench.core.report.fmt`` (one decimal, ``+`` on gains, never ``-0.0``) and intervals
``bench.core.compare.interval_text``, the formats ``bench report`` and ``bench compare`` print.
"""
from __future__ import annotations

import html
import math
import re
from dataclasses import dataclass, field

import pandas as pd

from bench.core.compare import decision_column, decision_rule, interval_text
from bench.core.report import fmt
from bench.core.stats import N_BOOT
from leaderboard.board import ALL, METRICS, Board, group_label, marks
from leaderboard.links import MethodCode, paper_url, recorded_code
from leaderboard.ranking import SEARCHED, ranking

# Where a column applies (Column.only): every group, a group whose protocol has best-of-N candidate sets, or a
# group whose runs are independent (its protocol seeds each source on its own) or are not (v1's protocols)
BON, RUNS, SEEDS = "bon", "per-source", "shared"


@dataclass(frozen=True)
class Column:
    name: str          # the header
    help: str          # its definition, shown under the table and on hover
    number: bool       # right-aligned, sorted as a number
    default: bool      # in the compact table; the rest are chosen by the reader
    only: str = ""     # BON, RUNS or SEEDS: shown only on a group of that kind ("": on every group)

    @property
    def bon(self) -> bool:
        """A best-of-N column: shown only where the group's protocol has candidate sets."""
        return self.only == BON


_SPREAD = "± is the standard deviation of the per-seed means (each seed's mean over cells) across seeds; blank with one seed"
_CI = (f"95% interval of the hierarchical bootstrap over seeds and test pairs ({N_BOOT:,} replicates, "
       "docs/statistics.md), over the seeds every submission of the group holds, as its mean; with a few seeds it is "
       "too narrow, so a difference is decided only by the interval beside Δ NTS vs naive")
_BON = ("best-of-N (docs/best-of-n.md): a BoN accuracy is the % of test prompts whose top-scored of N candidate "
        "responses is gold-best (a tie at the top shares the credit); only for a protocol with candidate sets")
_BON_CI = (f"95% interval of the hierarchical bootstrap over seeds and candidate sets ({N_BOOT:,} replicates), as "
           "bench compare --metric bon-nts computes it")
# In the order they are shown; the compact default ones have default=True. The compact default fits a 1,440 px
# screen on every kind of group (tests/test_leaderboard_browser.py measures it), so of the best-of-N group only
# BoN NTS and what it decides are in it, the rest a tick away under "Filters and columns".
BOARD_COLUMNS = [
    Column("rank", "Rank by mean NTS (or BoN NTS, where the board is ranked by it) within the protocol and model "
           "pair; 'ref' marks a reference row (teacher, ceiling), '–' a submission that does not validate",
           False, True),
    Column("method", "The W2S method; the link opens its paper, 'code' its source file ('code changed': this "
           "checkout's file runs other code than the submission ran, not only other docstrings, comments or "
           "formatting; 'file changed': it is another file, and the submission, recorded before code digests, "
           "cannot tell whether its code changed)", False, True),
    Column("params", "The method's parameters", False, True),
    Column("NTS", "Net transfer score, in accuracy points: AOG − max(0, Acc_teacher(S) − Acc_student(S)), mean over "
           "every source S → target T cell and the seeds every submission of the group holds. The ranking's key", True, True),
    Column("decided", "'better' or 'worse' than naive when the interval that decides Δ NTS vs naive (the column "
           "after Δ) excludes 0, else 'no' (the bootstrap alone is too optimistic: docs/statistics.md)",
           False, True),
    Column("family-wise", "'better' or 'worse' when 'decided' holds family-wise too: by Holm's step-down over every "
           "comparison of the group against naive (the ceiling's too), so that any false decision among them has at "
           "most a 5% chance; 'no' where the row's own interval decides but the family's does not", False, False),
    Column("Δ NTS vs naive", "NTS − naive's NTS, paired: same seeds, teacher and test pairs (on a protocol seeded "
           "per source, over every seed both hold, from the one 'runs' names: so where both hold more seeds than "
           "every submission does, or the row was chosen on its first seeds, it is not the difference of the NTS "
           "column, which is over the seeds every submission holds)", True, True),
    # the rule's words as the harness sets it (bench.core.runs.CONTROL_FROM), fixed when this module loads: a benchmark
    # that sets a variant later does not show a board
    Column(decision_column(False), "t 95% interval over the per-seed differences of Δ NTS vs naive, the interval "
           f"that decides: a difference is {decision_rule(False)}", True, True, SEEDS),
    Column(decision_column(True), "95% interval of Δ NTS vs naive over independent runs, the interval that decides: "
           f"a difference is {decision_rule(True)}. At the protocol's own seeds (the plan's first look) it is wide by "
           "design: the plan spends little of its 5% there and keeps the rest for the seeds bench compare "
           "--until-decided adds", True, True, RUNS),
    Column("runs", "What Δ NTS vs naive and its interval rest on: one run per (seed, source) cell both naive and the "
           "method hold, and the seeds they span ('30 runs (5 seeds)'); '18 runs (3 of 5 seeds)' where the submission "
           "holds more seeds than naive (a comparison grown until decided, bench compare --until-decided); ', from seed 3' "
           "where the seeds before it chose the method (the zoo's best three: bench submit --fresh-from), so they are "
           "left out of its Δ; each run's difference is taken as it is (naive's replicates, its A/A runs, correct "
           "nothing: docs/statistics.md); on naive's own row the runs and seeds it holds, and its replicates", False,
           True, RUNS),
    Column("Δ 95% CI", "Bootstrap 95% interval of Δ NTS vs naive (over the seeds every submission of the group "
           "holds, or from the seed 'runs' names)", True, False),
    Column("NTS 95% CI", "NTS's " + _CI, True, True),
    Column("NTS ±", "NTS spread: " + _SPREAD, True, False),
    Column("rank 95%", "Range of the method's rank over the bootstrap replicates, on the seeds every submission of the "
           "group holds (the ceiling is not ranked)", False, True),
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
    Column("BoN NTS", "Best-of-N net transfer score, points: NTS with BoN accuracies in place of pair accuracies, "
           "BoN gain OOD − max(0, BoN_teacher(S) − BoN_student(S)), mean over cells and seeds; " + _BON,
           True, True, BON),
    Column("BoN decided", "'better' or 'worse' than naive when the interval that decides Δ BoN NTS vs naive excludes "
           "0, else 'no'", False, True, BON),
    Column("Δ BoN NTS vs naive", "BoN NTS − naive's BoN NTS, paired: same seeds, teacher and candidate sets",
           True, False, BON),
    Column("Δ BoN 95% (decides)", "The 95% interval that decides Δ BoN NTS vs naive, by the harness's one rule (as "
           "bench compare --metric bon-nts): the t-interval over the per-seed differences, or on a protocol seeded "
           "per source the interval over independent runs with its sequential boundary (docs/statistics.md)",
           True, False, BON),
    Column("BoN NTS 95% CI", "BoN NTS's " + _BON_CI, True, False, BON),
    Column("BoN NTS ±", "BoN NTS spread: " + _SPREAD, True, False, BON),
    Column("BoN gain OOD", "BoN_student(T) − BoN_teacher(T) on a sibling target T, points, mean over cells and seeds",
           True, False, BON),
    Column("BoN gain ID", "BoN_student(S) − BoN_teacher(S) on the source's own test split, points, mean over cells "
           "and seeds", True, False, BON),
    Column("misfit", "% of the student's own training pairs (256 of half B) on which it prefers the other response "
           "than its teacher's label (Charikar et al. 2024); blank for runs made before it was recorded", True, False),
    Column("seeds", "Seeds behind every number of the row but Δ NTS vs naive: those every submission of the group "
           "holds, so that rows are ranked on one basis ('runs' says what the submission holds, and what its Δ rests "
           "on); where the group's submissions cannot be paired, or on a submission that does not validate, its own",
           True, False),
    Column("cells", "Source → target cells per seed behind each number", True, False),
    Column("status", "'validated': every number recomputes from the per-pair scores (bench validate)", False, False),
    Column("submitter", "Who submitted it", False, False),
    Column("submission", "The submission's folder under submissions/", False, False),
    Column("problem", "The first problem of a submission that does not validate", False, False),
]
COLUMN_BY_NAME = {c.name: c for c in BOARD_COLUMNS}
# A Δ interval with an end beyond this many points (a sequential plan's first looks, whose boundaries are wide)
# decides no difference a method could make: the board says so in words instead of printing [-195.9, +198.2].
WIDEST_SHOWN = 100.0
TOO_WIDE = "too wide to decide yet"
SIGNED = {*METRICS.values(), "Δ NTS vs naive", "BoN NTS", "BoN gain ID", "BoN gain OOD", "Δ BoN NTS vs naive"}
INTERVALS = {*METRICS.values(), "BoN NTS"}   # "<name> 95% CI" from the ranking's "<name> low" and "<name> high"
# the intervals of a Δ vs naive: the column -> the prefix of the ranking's "<prefix> low" and "<prefix> high"
DELTA_INTERVALS = {"Δ 95% CI": "Δ", decision_column(False): "Δ decides", decision_column(True): "Δ decides",
                   "Δ BoN 95% (decides)": "Δ BoN"}
DEFAULT_COLUMNS = [c.name for c in BOARD_COLUMNS if c.default]
# The columns whose cells are intervals: the CSV writes each one's ends as numbers beside its text
INTERVAL_COLUMNS = frozenset({f"{name} 95% CI" for name in INTERVALS} | set(DELTA_INTERVALS))
HELP = {c.name: c.help for c in BOARD_COLUMNS}
GROUP_COLUMNS = ["protocol", "model pair"]   # in every CSV row, before the columns shown


@dataclass
class ShownCell:
    text: str              # what is shown (and written to the CSV)
    sort: float | str = ""  # what it sorts by
    title: str = ""         # shown on hover (why a number is blank)
    number: bool = False
    low: float | str = ""   # an interval's ends as numbers, which the CSV writes beside its text ("" elsewhere)
    high: float | str = ""


@dataclass
class Row:
    cells: list[ShownCell]
    role: str             # method, upload, ceiling or teacher
    valid: bool
    paper: str = ""
    paper_url: str = ""
    code: MethodCode | None = None
    marks: list[tuple[str, str]] = field(default_factory=list)   # (badge, note): leaderboard.board.marks
    params: str = ""      # shown under the method's name where the params column is hidden (narrow screens)
    search: str = ""      # what the search box matches, lower case


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
    # per kind of group shown (SEEDS, RUNS): the column of the interval that decides, and its rule in words
    rules: list[tuple[str, str]] = field(default_factory=list)

    @property
    def rows(self) -> list[Row]:
        return [r for g in self.groups for r in (*g.references, *g.ranked)]

    def text(self) -> list[list[str]]:
        """The table as shown, one list of cell texts per row (references first in each group)."""
        return [[c.text for c in r.cells] for r in self.rows]


def _cell(name: str, row: pd.Series) -> ShownCell:
    def number(text: str, value: float) -> ShownCell:
        return ShownCell(text, "" if math.isnan(value) else float(value), number=True)

    def interval(low: float, high: float, text: str) -> ShownCell:
        ends = ("", "") if math.isnan(low) or math.isnan(high) else (float(low), float(high))
        return ShownCell(text, ends[0], number=True, low=ends[0], high=ends[1])

    if name in SIGNED:
        return number(fmt(row[name], signed=True), row[name])
    base = name.removesuffix(" 95% CI")
    if base != name and base in INTERVALS:
        return interval(row[f"{base} low"], row[f"{base} high"], interval_text(row[f"{base} low"], row[f"{base} high"]))
    if name.endswith(" ±") or name in ("ID acc", "OOD acc", "misfit"):
        return number(fmt(row[name]), row[name])
    if name.startswith("PGR"):
        metric = name[:-2]
        cell = number(fmt(100 * row[metric], signed=True), 100 * row[metric])
        cell.title = row[f"{metric} note"]
        return cell
    if name in DELTA_INTERVALS:
        low, high = (row[f"{DELTA_INTERVALS[name]} {end}"] for end in ("low", "high"))
        if max(abs(low), abs(high)) > WIDEST_SHOWN:   # NaN compares False: a missing interval stays blank
            cell = ShownCell(TOO_WIDE, float(low), low=float(low), high=float(high))   # words; the CSV keeps the ends
            cell.title = (f"its 95% interval reaches past ±{WIDEST_SHOWN:.0f} points: at this look (a sequential plan's "
                          "first) it decides no difference; more runs narrow it")
            return cell
        return interval(low, high, interval_text(low, high))
    if name == "runs":   # "30 runs (5 seeds)[, 2 control replicates]": sorted by its runs
        text = str(row[name] or "")
        found = re.match(r"(\d+) runs", text)
        return ShownCell(text, int(found.group(1)) if found else "")
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
    compact default when None; the BoN ones only where a group of the table has BoN numbers) in the one
    number format, the reference rows of each protocol x model pair pinned above its ranked rows. The
    group's own columns (protocol, model pair) are not in the rows: the group is named above the table,
    and the CSV writes them into every row."""
    wanted = set(DEFAULT_COLUMNS if columns is None else columns)
    present = kinds(table)
    picked = [c for c in BOARD_COLUMNS if c.name in wanted and (not c.only or c.only in present)]
    groups = []
    for (protocol, models), rows in table.groupby(["protocol", "model pair"], sort=False):
        group = Group(protocol, models, [], [])
        for _, row in rows.iterrows():
            entry = board.by_key.get(row["submission"]) if board is not None else None
            shown_row = Row([_cell(c.name, row) for c in picked], row["role"], "NOT VALIDATED" not in str(row["status"]),
                            row["paper"] or "", paper_url(row["paper"] or ""),
                            recorded_code(entry.submission["method"].get("origin")) if entry is not None else None,
                            marks(entry) if entry is not None else [],
                            str(row["params"] or ""), " ".join(str(row[c] or "") for c in SEARCHED).lower())
            (group.references if row["role"] in ("ceiling", "teacher") else group.ranked).append(shown_row)
        groups.append(group)
    rules = [(decision_column(independent), decision_rule(independent))
             for kind, independent in ((SEEDS, False), (RUNS, True)) if kind in present]
    return View(picked, groups, rules)


def kinds(table: pd.DataFrame) -> set[str]:
    """The kinds of group a ranking table holds (BON, RUNS, SEEDS): which of the columns that apply only to
    some groups (Column.only) it shows."""
    found = {RUNS if independent else SEEDS for independent in table["independent"].astype(bool)} or {SEEDS}
    if bool(table["BoN NTS"].notna().any()):   # a protocol with candidate sets
        found.add(BON)
    return found


def shown_order(table: pd.DataFrame) -> list[str]:
    """The submissions of a ranking table in the order the board shows them: the ceiling (pinned), then
    by rank; the pictures follow it, so a panel is where its row is."""
    return [*table[table["role"] == "ceiling"]["submission"], *table[table["role"].isin(["method", "upload"])]["submission"]]


def csv_name(protocol: str, models: str, category: str | None = None, source: str | None = None,
             validated_only: bool = False) -> str:
    """The CSV's file name says what it holds: ``shiftbench-mini-tiny-source-travel.csv``."""
    parts = ["shiftbench", protocol, models]
    parts += [f"{name}-{value}" for name, value in (("category", category), ("source", source))
              if value not in (None, ALL)]
    parts += ["validated"] if validated_only else []
    return re.sub(r"[^A-Za-z0-9._+=-]+", "_", "-".join(parts)) + ".csv"


# --- markdown -----------------------------------------------------------------------------------------------
_MD_SPECIAL = re.compile(r"([\\`*_\[\]|~#])")


def md_escape(text: object) -> str:
    """Text that markdown and HTML show literally, on one line (HTML-escaped, markdown punctuation backslashed,
    every run of white space one space: a line break could open a heading, a list or a rule)."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(" ".join(str(text).split()), quote=False))


def md_code(text: object) -> str:
    """Text as a markdown code span, on one line: a code span shows backslashes and markup literally and its
    renderer escapes HTML, so only a backtick (which would end it) is changed, to a quote."""
    return "`" + " ".join(str(text).split()).replace("`", "'") + "`"


def markdown(board: Board, columns: list[str] | None = None, **filters) -> str:
    """The ranking as a markdown table (for the README), every text cell escaped."""
    return markdown_of(shown(ranking(board, **filters), columns, board))


def _marked(method: str, row: Row) -> str:
    """A method's name with its row's marks, as markdown shows the badges: ``naive [method file; teacher not checked]``."""
    return f"{method} [{'; '.join(badge for badge, _ in row.marks)}]" if row.marks else method


def markdown_of(view: View) -> str:
    """A shown view as markdown tables, one per group (named when there are several)."""
    if not view.groups:
        return "(no submissions)"
    head = ["| " + " | ".join(c.name for c in view.columns) + " |",
            "|" + "".join("---:|" if c.number else "---|" for c in view.columns)]
    tables = []
    for group in view.groups:   # one table per group, named when there are several
        rows = ["| " + " | ".join(md_escape(_marked(cell.text, row) if column.name == "method" else cell.text)
                                  for column, cell in zip(view.columns, row.cells)) + " |"
                for row in (*group.references, *group.ranked)]
        named = [f"### {md_escape(group_label(group.protocol, group.models))}", ""] if len(view.groups) > 1 else []
        tables.append("\n".join([*named, *head, *rows]))
    return "\n\n".join(tables)
