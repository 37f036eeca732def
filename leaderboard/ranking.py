"""The ranking of a group (protocol x model pair) as a DataFrame, and its verdict in one line.

Every aggregate is computed from the submissions' cells (``bench.core.report`` does the arithmetic, so the
board, ``bench report`` and ``bench submit`` agree on the same seeds; the board's are those every submission of
the group holds); intervals, rank intervals, Δ against naive and
"decided" are ``Board.decisions``, i.e. ``bench.core.compare.decision_table``. Definitions:

- NTS, AOG, WRG, ID and OOD accuracy: means over the selected source -> target cells and the seeds every
  submission of the group holds (``Board.seeds_in_common``), so that rows rank on one basis, as
  ``decision_table`` ranks them (Δ against naive alone uses every seed a row shares with naive); "±" is the
  spread (std of the per-seed means; blank with one seed), as in ``bench report``.
- PGR (performance gap recovered), with the same teacher for every method of a group:
  PGR ID = WRG / WRG(ceiling) and PGR OOD = AOG / AOG(ceiling), over the same selected cells. Shown
  only when the ceiling's own gain is told apart from 0 (``pgr``); otherwise blank, with the reason.
- Reference rows: the teacher (its own accuracies; gains 0 by definition) and the ``ceiling`` method.
- Best-of-N, where the group's protocol has candidate sets (docs/best-of-n.md): BoN NTS, BoN gain ID and OOD
  are means as NTS is; their intervals, Δ BoN NTS vs naive, the interval that decides it and "BoN decided" are
  ``Board.decisions``' ``bon``, i.e. ``decision_table`` on the cells' BoN views (``bench compare --metric
  bon-nts``). ``ranking(..., by="bon-nts")`` ranks by BoN NTS.
- The interval that decides Δ vs naive, for NTS as for BoN NTS, is ``bench.core.compare.deciding_interval``'s
  (``Board.decisions``' ``deciding``): the t-interval over the per-seed differences, or on a protocol seeded
  per source (``independent``) the interval over independent runs; "runs" says what it rests on
  ("30 runs (5 seeds)", "3 seeds") and how many seeds the submission holds where it holds more.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from bench.core.compare import (
    BASELINE,
    CEILING,
    Decision,
    decision_column,
    decision_rule,
    interval_text,
    plural,
)
from bench.core.report import TEACHER, fmt, runs_in, summarise, teacher_rows
from bench.submissions.limits import Validation
from bench.submissions.record import described
from leaderboard.board import METRICS, NO_DELTA, UPLOAD_PREFIX, Board, common_seeds, on_seeds, scope, select

RANKING_COLUMNS = ["rank", "method", "params", "status", "role",
                   "NTS", "NTS ±", "NTS low", "NTS high", "NTS 95% CI", "rank 95%",
                   "Δ NTS vs naive", "Δ low", "Δ high", "Δ 95% CI", "Δ decides low", "Δ decides high",
                   "Δ t 95% (seeds)", "Δ 95% (runs)", "decided", "family-wise", "family", "runs", "fresh from",
                   "independent",
                   "AOG", "AOG ±", "AOG low", "AOG high", "WRG", "WRG ±", "WRG low", "WRG high",
                   "ID acc", "OOD acc", "PGR ID", "PGR ID note", "PGR OOD", "PGR OOD note", "misfit", "seeds", "held", "cells",
                   "submitter", "model pair", "protocol", "submission", "problem", "paper", "code",
                   "BoN NTS", "BoN NTS ±", "BoN NTS low", "BoN NTS high", "BoN gain ID", "BoN gain OOD",
                   "Δ BoN NTS vs naive", "Δ BoN low", "Δ BoN high", "BoN decided"]
# What a group can be ranked by (``ranking``'s ``by``, named as ``bench compare --metric``): the column it sorts on
RANK_BY = {"nts": "NTS", "bon-nts": "BoN NTS"}
BON = {"bon_nts": "BoN NTS", "bon_gain_id": "BoN gain ID", "bon_gain_ood": "BoN gain OOD"}   # summary key -> column
SEARCHED = ["method", "params", "submitter", "submission"]   # what the search box matches (ranking.js too)
NAMED_UNDECIDED = 3   # a verdict names its undecided methods up to this many, else counts them
DECIDING = [decision_column(False), decision_column(True)]   # the interval that decides: over seeds, or over runs
DELTA_COLUMNS = ("Δ NTS vs naive", "Δ decides low", "Δ decides high")   # a decided row's Δ and its deciding interval


def pgr(gain: float, ceiling: pd.Series | None, ceiling_ci: tuple[float, float] | None, metric: str
        ) -> tuple[float, str]:
    """PGR = gain / the ceiling's gain, and why it is blank when it is: a ratio over a gap that is not
    told apart from 0 is noise. The gap counts only when both intervals of the ceiling's gain exclude 0,
    as a difference must on this board: the t-interval over the per-seed means (what "decided" uses; it
    needs two seeds) and the bootstrap interval over seeds and test pairs (the test split is shared by
    every seed, so the t-interval alone misses its noise)."""
    from bench.core.sequential import LEVEL, t_quantile

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
                              f"{interval_text(low, high)}, {verdict}")
    return gain / gap, ""


def _row(summary: pd.Series, ceiling: pd.Series | None, ceiling_ci: dict | None) -> dict:
    row = {METRICS[m]: summary[m] for m in METRICS}
    row.update({f"{METRICS[m]} ±": summary[f"{m}_sd"] for m in METRICS})
    row.update({"ID acc": summary["student_id"], "OOD acc": summary["student_ood"],
                "seeds": int(summary["seeds"]), "cells": int(summary["cells"])})
    # blank where the protocol has no candidate sets (bench.core.report.summarise leaves the BoN columns out)
    row.update({name: summary.get(key, math.nan) for key, name in BON.items()})
    row["BoN NTS ±"] = summary.get("bon_nts_sd", math.nan)
    for name, metric in (("PGR ID", "wrg"), ("PGR OOD", "aog")):
        row[name], row[f"{name} note"] = pgr(summary[metric], ceiling, (ceiling_ci or {}).get(metric), metric)
    return row


def _method_info(v: Validation) -> dict:
    method = v.submission["method"]
    origin = method.get("origin") if isinstance(method.get("origin"), dict) else {}
    return {"paper": method.get("paper") if isinstance(method.get("paper"), str) else "",
            "code": origin.get("module", "") if origin.get("kind") == "built-in" else ""}


def _teacher_row(group: pd.DataFrame, seeds: tuple[int, ...] | None, ceiling: pd.Series | None, ceiling_ci: dict | None,
                 disagree: bool) -> dict:
    """The weak teacher's accuracies, once per seed x cell (from validated submissions first), over ``seeds`` (those
    every submission holds); it holds every seed of the group."""
    cells = teacher_rows(on_seeds(group, seeds).sort_values("valid", ascending=False, kind="stable"))
    return {**_row(summarise(cells), ceiling, ceiling_ci), "rank": "ref", "method": TEACHER, "params": "",
            "status": "reference", "role": "teacher", "held": group["seed"].nunique(), "submitter": "", "submission": "", "paper": "", "code": "",
            **_family({}),
            "problem": "submissions disagree on the teacher (bench validate shows where)" if disagree else ""}


def rests_on(decision: Decision | None, held: int, runs: int = 0, replicates: int = 0) -> str:
    """What a row's Δ vs naive rests on, with the seeds its submission holds where they are more: "30 runs (5
    seeds)", "18 runs (3 of 5 seeds)" (a submission grown further than naive), "102 runs (17 of 20 seeds, from seed
    3)" (the seeds before chose the method: SubmissionFile.fresh_from), "3 seeds" (decided over seeds), each with
    ", 2 control replicates" where naive's replicates corrected the runs' differences;
    without a Δ (naive's own row, a submission that does not validate), what it holds: its ``runs`` where its
    group's runs are independent ("60 runs (10 seeds)", in the unit of the rows beside it), else its seeds, and
    naive's ``replicates`` ("60 runs (10 seeds), 2 replicates")."""
    if decision is None:
        held_text = f"{runs} runs ({plural(held, 'seed')})" if runs else plural(held, "seed")
        return held_text + (f", {plural(replicates, 'replicate')}" if replicates else "")
    if not decision.seeds:   # chosen on its first seeds, and naive holds none of the others
        return f"none: naive holds no whole seed from {decision.from_seed} on"
    if decision.runs and decision.seeds < held:
        return f"{decision.runs} runs ({decision.seeds} of {held} seeds{decision.fresh}){decision.controlled}"
    return decision.rests_on


def _deciding(decided: dict, prefix: str) -> dict:
    """The interval that decides Δ NTS vs naive (of pairs, or of a ``bon`` entry: Δ BoN NTS) as a row's
    ``<prefix> low`` and ``<prefix> high``; blank without one (naive's own row)."""
    found = decided.get("deciding", {}).get("nts")
    return {f"{prefix} low": found.low if found else math.nan, f"{prefix} high": found.high if found else math.nan}


def _family(decided: dict) -> dict:
    """Whether the row's Δ against naive is decided family-wise (Holm over the group's comparisons against naive:
    ``Board.decisions``' ``family``), as "better", "worse" or "no" beside the per-comparison "decided", and the size
    of that family; blank without a comparison (naive's own row)."""
    family = decided.get("family")
    if not family:
        return {"family-wise": "", "family": 0}
    side = decided.get("decided", "")
    return {"family-wise": side if family["decided"] and side in ("better", "worse") else "no",
            "family": int(family["comparisons"])}


def runs_text(board: Board, key: str, cells_of: pd.DataFrame, decided: dict) -> str:
    """What a submission's Δ against naive rests on (``rests_on``), from all its cells (``cells_of``, every seed it
    holds) and its row of ``Board.decisions`` (``decided``)."""
    first = cells_of.iloc[0]
    return rests_on(decided.get("deciding", {}).get("nts"), cells_of["seed"].nunique(),
                    runs_in(cells_of) if board.independent(first["protocol"], first["models"]) else 0,
                    len(set(described(board.by_key[key].controls, "method"))))


def _method_row(board: Board, key: str, cells_of: pd.DataFrame, decided: dict, seeds, ceiling, ceiling_ci, by: str
                ) -> dict:
    """A submission's row: its numbers over the seeds every submission of the group holds (``seeds``), its Δ
    against naive over every seed both hold, and the seeds it holds."""
    first = cells_of.iloc[0]
    ci, delta = decided.get("ci", {}), decided.get("delta", {}).get("nts", NO_DELTA)
    bon = decided.get("bon", {})
    shared = on_seeds(cells_of, seeds)
    row = {**_row(summarise(shared), ceiling, ceiling_ci), **_method_info(board.by_key[key]),
           "held": cells_of["seed"].nunique(),
           "method": first["method"], "params": first["params"], "status": first["status"],
           "role": "upload" if key.startswith(UPLOAD_PREFIX) else "method",
           "problem": first["problem"], "submitter": first["submitter"], "submission": key,
           "NTS 95% CI": decided.get("NTS 95% CI", ""),
           "rank 95%": (bon if by == "bon-nts" else decided).get("rank 95%", ""),
           "Δ NTS vs naive": decided.get("Δ NTS vs naive", math.nan),
           "Δ 95% CI": decided.get("Δ bootstrap 95%", ""), "Δ low": delta[1], "Δ high": delta[2],
           **{name: decided.get(name, "") for name in DECIDING}, **_deciding(decided, "Δ decides"),
           "decided": decided.get("decided", ""), **_family(decided), "misfit": shared["misfit"].mean(),
           "fresh from": (board.by_key[key].submission or {}).get("fresh_from") or 0,
           "runs": runs_text(board, key, cells_of, decided),
           "Δ BoN NTS vs naive": bon.get("Δ BoN NTS vs naive", math.nan), "BoN decided": bon.get("decided", ""),
           **_deciding(bon, "Δ BoN")}
    for name in METRICS.values():
        row[f"{name} low"], row[f"{name} high"] = ci.get(name.lower(), (math.nan, math.nan))
    row["BoN NTS low"], row["BoN NTS high"] = bon.get("ci", {}).get("nts", (math.nan, math.nan))
    return row


def rank_value(row: dict, naive: float, by: str = "nts") -> float:
    """What a row ranks by: its NTS (``by`` "bon-nts": BoN NTS) over the seeds every row of the group holds. A row
    chosen as the best of several on its first seeds (``fresh from``: SubmissionFile.fresh_from) ranks instead by
    naive's value there plus its Δ against naive on the seeds after them (``naive``: naive's NTS or BoN NTS): its own
    value on those first seeds is lifted by the choice they made, its Δ on fresh seeds is not, and the paired Δ
    brings it to the basis of the other rows. Without naive or that Δ, its own value."""
    delta = row["Δ NTS vs naive"] if by == "nts" else row["Δ BoN NTS vs naive"]
    if row["fresh from"] and isinstance(delta, float) and math.isfinite(delta) and math.isfinite(naive):
        return naive + delta
    return row[RANK_BY[by]]


def ranking(board: Board, protocol: str | None = None, models: str | None = None, category: str | None = None,
            source: str | None = None, search: str = "", validated_only: bool = False, by: str = "nts") -> pd.DataFrame:
    """Methods ranked by mean NTS (``by`` "bon-nts": BoN NTS, and its rank intervals) within each protocol x model
    pair (a row chosen on its first seeds by ``rank_value``), then the reference rows (ceiling, teacher). Filters narrow the cells every number is computed over;
    ``search`` matches method, params, submitter or submission (case-insensitive) and keeps the reference rows
    and the ranks. A ValueError names a group that has no BoN numbers to rank by."""
    if by not in RANK_BY:
        raise ValueError(f"rank by {by!r}: give one of {', '.join(RANK_BY)}")
    cells = select(board.cells, protocol, models, category, source)
    if validated_only:
        cells = cells[cells["valid"]]
    rows = []
    for (protocol_name, models_name), group in cells.groupby(["protocol", "models"], sort=True):
        decisions = board.decisions(protocol_name, models_name, scope(category), scope(source))
        seeds = common_seeds(decisions)
        ceilings = group[group["method"] == CEILING]
        ceiling_key = ceilings.sort_values("valid", ascending=False, kind="stable")["submission"].iloc[0] \
            if len(ceilings) else None
        ceiling = summarise(on_seeds(group[group["submission"] == ceiling_key], seeds)) if ceiling_key else None
        ceiling_ci = decisions.get(ceiling_key, {}).get("ci")
        ranked, references = [], []
        for key, cells_of in group.groupby("submission", sort=False):
            row = _method_row(board, key, cells_of, decisions.get(key, {}), seeds, ceiling, ceiling_ci, by)
            if key == ceiling_key:
                references.append({**row, "rank": "ref", "role": "ceiling", "status": f"reference; {row['status']}"})
            else:
                ranked.append((bool(cells_of["valid"].iloc[0]), row))
        if any(math.isnan(row[RANK_BY[by]]) for _, row in ranked):
            raise ValueError(f"{protocol_name} x {models_name} has no {RANK_BY[by]} for every submission (its protocol "
                             f"scores no best-of-N candidate sets): rank it by NTS")
        naive = next((row[RANK_BY[by]] for _, row in ranked if row["method"] == BASELINE), math.nan)
        ranked.sort(key=lambda item: -rank_value(item[1], naive, by))
        position = 0
        for valid, row in ranked:
            position += valid
            row["rank"] = str(position) if valid else "–"
        disagree = any(keys & set(group["submission"]) for _, keys in board.conflicts)
        references.append({**_teacher_row(group, seeds, ceiling, ceiling_ci, disagree), "runs": "", "fresh from": 0})
        independent = board.independent(protocol_name, models_name)
        for row in [*(r for _, r in ranked), *references]:
            rows.append({**row, "model pair": models_name, "protocol": protocol_name, "independent": independent})
    table = pd.DataFrame(rows, columns=RANKING_COLUMNS)
    for name in ("Δ NTS vs naive", "Δ BoN NTS vs naive"):   # naive's own is blank
        table[name] = pd.to_numeric(table[name].replace("", math.nan))
    if search.strip():
        needle = search.strip().lower()
        hit = table[SEARCHED].fillna("").apply(lambda column: column.str.lower().str.contains(needle, regex=False))
        table = table[hit.any(axis=1) | (table["rank"] == "ref")]
    return table.reset_index(drop=True)


# --- the verdict: what is decided, in one line ------------------------------------------------------------
@dataclass(frozen=True)
class Verdict:
    better: list[str]      # methods decidedly better than naive (their names, with params when needed)
    worse: list[str]
    undecided: list[str]   # the other ranked, validated methods but naive
    seeds: int
    note: str = ""         # why nothing can be decided, when nothing can
    independent: bool = False   # the group's runs are independent: decided over runs, not seeds
    fresh: tuple[str, ...] = ()   # methods chosen on their first seeds, decided on the others (fresh_from)
    references: tuple[str, ...] = ()   # reference rows decided against naive, e.g. "the ceiling is decidedly better"
    first_look: int = 0   # contenders at the group's fewest seeds while others hold more (their Δ's interval is wide)
    over: int = 0         # where a row holds more seeds than every submission does: how many they all hold, which
                          # NTS and the ranks are over
    seeds_min: int = 0    # the fewest seeds a ranked row holds (the protocol's)
    family: tuple[str, ...] = ()   # of the decided ones, those decided family-wise too (Holm over the group's comparisons)
    comparisons: int = 0           # how many comparisons against naive that family holds (the ceiling's too)
    deltas: tuple[tuple[str, float, float, float], ...] = ()   # of the decided ones: (name, Δ NTS, the deciding interval)
    # of the decided ones (the ceiling too), on a protocol that grows comparisons: (name, the plan that listed it before
    # its looks, bench.core.plans, as "mini-v2-reference v3 (fixed 2026-12-03)"; "" for none)
    plans: tuple[tuple[str, str], ...] = ()

    def head(self) -> str:
        """Which methods are decidedly better or worse than naive, and which are not."""
        if self.note:
            return self.note
        n = len(self.undecided)
        named = ", ".join(self.undecided) if n <= NAMED_UNDECIDED else ""
        if not self.better and not self.worse:
            return "No method is decidedly better or worse than naive: " + (
                f"{named} {'is' if n == 1 else 'are'} undecided" if named else f"all {n} are undecided")
        rest = (f"undecided: {named}" if named else f"the other {n} are undecided") if n else "no other is undecided"
        refs = f" ({'; '.join(self.references)}: a reference row, not counted)" if self.references else ""
        return (f"Decidedly better than naive: {', '.join(self.better) or 'none'}; decidedly worse: "
                f"{', '.join(self.worse) or 'none'}; {rest}{refs}")

    def compact(self) -> str:
        """The verdict's first line on the board: the decided methods with their Δ NTS vs naive and the interval that
        decides it, the undecided ones counted; the rule and what it holds for (``rule``) are behind a "why"."""
        if self.note:
            return self.note
        shown = {name: f"{name} {fmt(d, signed=True)} {interval_text(low, high)}" for name, d, low, high in self.deltas}
        better, worse = (", ".join(shown.get(n, n) for n in names) or "none" for names in (self.better, self.worse))
        n = len(self.undecided)
        refs = f"; {'; '.join(self.references)} (a reference row)" if self.references else ""
        held = ""
        if self.comparisons and (self.better or self.worse):
            kept = self._family_split()[0]
            held = f"; family-wise: {', '.join(kept)} {'holds' if len(kept) == 1 else 'hold'}" if kept else \
                "; family-wise: none holds"
        return (f"decidedly better than naive (Δ NTS, the interval that decides it): {better}; decidedly worse: {worse}; "
                f"{n} undecided{refs}{held}")

    def _family_split(self) -> tuple[list[str], list[str]]:
        """The decided ones that hold family-wise (Holm), and those that do not."""
        decided = [*self.better, *self.worse]
        return [name for name in decided if name in self.family], [name for name in decided if name not in self.family]

    def family_wise(self) -> str:
        """Which of the decided ones hold family-wise (over the group's comparisons against naive, by Holm), as the
        rule's first sentence; none where nothing is decided."""
        if not self.comparisons or not (self.better or self.worse):
            return ""
        held, lost = self._family_split()
        return (f"Family-wise (Holm over the group's {self.comparisons} comparisons against naive, the ceiling's too: "
                f"at most a 5% chance of any false decision among them): "
                + (f"{', '.join(held)} {'holds' if len(held) == 1 else 'hold'}" if held else "none of them holds")
                + (f"; {', '.join(lost)} {'does' if len(lost) == 1 else 'do'} not" if held and lost else "") + ". ")

    def rule(self) -> str:
        """The rule that decided, in ``bench.core.compare.decision_rule``'s words, and what it means across rows
        (each row is its own 95% decision, not corrected for the others); none beside a note."""
        if self.note:
            return ""
        n = len(self.better) + len(self.worse) + len(self.undecided)
        chance = f"{n / 20:g}"   # n / 20 exactly (23 rows: 1.15, which .1f shows as 1.1)
        return (self.family_wise() + f"Δ NTS vs naive is {decision_rule(self.independent)}. Each row's decided column is its own 95% "
                f"decision, not corrected across rows: if none of these {n} differed from naive, on average up to "
                f"{chance} would still come out decided by chance; the family-wise column is corrected (Holm), so any "
                "false decision among them has at most a 5% chance." + self._fresh() + self._seeds() + self._plans())

    def _plans(self) -> str:
        """Which plan each decision was made under (the committed plan that listed its comparison before its looks,
        with the rule applied), and which were decided in none: post hoc, to be weighed as such."""
        if not self.plans:
            return ""
        named: dict[str, list[str]] = {}
        for name, plan in self.plans:
            named.setdefault(plan, []).append(name)
        under = [f"{', '.join(names)} under plan {plan}" for plan, names in named.items() if plan]
        none = named.get("", [])
        return (" Plans (plans/, bench/core/plans.py): " + "; ".join(under) + ("; " if under and none else "")
                + (f"{', '.join(none)} decided in no plan: post hoc" if none else "")
                + ".")

    def _seeds(self) -> str:
        """What the numbers are over, and why some Δ intervals are so wide, where rows hold different seeds: NTS and
        the ranks over the seeds every submission holds, Δ over the seeds a row pairs with naive's."""
        if not self.over:
            return ""
        wide = (f" {self.first_look} row{'s rest' if self.first_look > 1 else ' rests'} on the protocol's {self.seeds_min} "
                "seeds alone: a deciding interval there is wide, so only a large difference decides; bench compare "
                "METHOD naive --until-decided adds seeds until it is decided or known to ±1, or its plan ends.") if self.first_look else ""
        return (f" Rows hold different seeds: NTS, its interval and the ranks are over the {plural(self.over, 'seed')} "
                "every submission holds; Δ NTS vs naive pairs a row's runs with naive's on the seeds \"runs\" names, and "
                "is what decides. Where both hold more, Δ is not the difference of the NTS column, so the order of the "
                "rows and the sign of Δ can disagree." + wide)

    def _fresh(self) -> str:
        if not self.fresh:
            return ""
        one = len(self.fresh) == 1
        return (f" {', '.join(self.fresh)} {'was' if one else 'were'} chosen on {'its' if one else 'their'} first seeds "
                f"(as the best of several), so {'its' if one else 'their'} Δ leaves those seeds out: it rests on the "
                "seeds from the one \"runs\" names (bench compare --fresh-from).")

    def text(self) -> str:
        return self.note or f"{self.head()}. {self.rule()}"


def verdict(board: Board, table: pd.DataFrame) -> Verdict:
    """The verdict of one group's ranking table (``ranking(board, protocol, models, ...)``, unsearched):
    its "decided" column, which is ``bench.core.compare.decision_table``'s, read out in words. The ceiling
    and the teacher are references and not counted; a method is named with its params when the group
    holds it more than once (``anchor (lam=10.0, layers=last)``)."""
    ranked = table[table["role"].isin(["method", "upload"]) & table["rank"].str.isdigit()]
    seeds = int(table["held"].max()) if len(table) else 0
    independent = bool(len(table)) and bool(table["independent"].all())
    repeated = ranked["method"].duplicated(keep=False)
    names = [f"{m} ({p})" if again and p else m for m, p, again in zip(ranked["method"], ranked["params"], repeated)]
    rows = ranked.assign(name=names)
    contenders = list(rows[rows["method"] != BASELINE]["name"])
    if BASELINE not in set(ranked["method"]):
        return Verdict([], [], contenders, seeds, "No naive submission in this group, so nothing is decided against "
                                                  "it: submit naive's run of the same seeds.", independent)
    if not contenders:
        return Verdict([], [], [], seeds, "Only naive in this group so far: nothing to compare it with.", independent)
    if seeds < 2:
        return Verdict([], [], contenders, seeds, (
            "One seed: a difference over independent runs needs two whole seeds of both sides, so no difference from "
            "naive is decided. Run at least two seeds." if independent else
            "One seed: no t-interval over seeds, so no difference from naive is decided. Run at least two seeds (the "
            "protocol's three)."), independent)
    if not ranked["decided"].astype(bool).any():
        return Verdict([], [], contenders, seeds, "Nothing is decided: these submissions were run on different seeds "
                                                  "or test pairs, so their differences cannot be paired.", independent)
    better, worse = (list(rows[rows["decided"] == side]["name"]) for side in ("better", "worse"))
    ceilings = table[(table["role"] == "ceiling") & table["decided"].isin(["better", "worse"])]
    held = rows["held"].astype(int)
    spread = held.min() < held.max()
    counted = pd.concat([rows, table[table["role"] == "ceiling"]])   # the ranked rows and the ceiling
    grown = bool((counted["held"].astype(int) > counted["seeds"].astype(int)).any())
    return Verdict(better, worse, [n for n in contenders if n not in better and n not in worse], seeds,
                   independent=independent, fresh=tuple(n for n, f in zip(rows["name"], rows["fresh from"])
                                                        if f and n in contenders),
                   references=tuple(f"the ceiling is decidedly {side}" for side in ceilings["decided"]),
                   first_look=int(((held == held.min()) & (rows["method"] != BASELINE) & (rows["decided"] == "no")).sum())
                   if spread and independent else 0,
                   over=int(rows["seeds"].min()) if grown else 0, seeds_min=int(held.min()),
                   family=tuple(n for n, f in zip(rows["name"], rows.get("family-wise", [""] * len(rows)))
                                if f in ("better", "worse")),
                   comparisons=int(counted["family"].max()) if "family" in counted and len(counted) else 0,
                   deltas=tuple((n, float(d), float(low), float(high)) for n, d, low, high, side in zip(
                       rows["name"], rows["Δ NTS vs naive"], rows["Δ decides low"], rows["Δ decides high"],
                       rows["decided"]) if side in ("better", "worse")) if set(DELTA_COLUMNS) <= set(rows) else (),
                   plans=_plans_of(board, pd.concat([rows, ceilings.assign(name="the ceiling")]))
                   if independent and board is not None and board.plans else ())


def _plans_of(board: Board, decided: pd.DataFrame) -> tuple[tuple[str, str], ...]:
    """(name, plan) of each decided row: the first committed plan version listing its comparison against naive under
    the harness's rule (bench.core.plans.plan_of), as "NAME vVERSION (fixed DATE)", or "" for none."""
    from bench.core.plans import plan_of
    from bench.core.protocols import PROTOCOLS
    from bench.core.runs import CONTROL_FROM
    from bench.core.sequential import LEVEL

    found = []
    for _, row in decided[decided["decided"].isin(["better", "worse"])].iterrows():
        plan = plan_of(board.plans, PROTOCOLS.get(row["protocol"]), row["model pair"],
                       str(row["submission"]).rsplit("/", 1)[-1], BASELINE, int(row["fresh from"] or 0), "nts",
                       CONTROL_FROM, LEVEL) if row["protocol"] in PROTOCOLS else None
        found.append((row["name"], f"{plan.plan} v{plan.version} (fixed {plan.fixed})" if plan else ""))
    return tuple(found)
