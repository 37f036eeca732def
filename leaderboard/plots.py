"""The numbers behind the board's pictures, per group: source x target matrices per category, the
ID-vs-OOD points, ablations (one method's param settings) with the interval that decides, and, where the
protocol has best-of-N candidate sets, pair NTS against BoN NTS per method. ``leaderboard.figures`` draws them."""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from bench.core.compare import BASELINE, decision_column, interval_text
from bench.core.report import fmt, summarise
from leaderboard.board import METRICS, Board, common_seeds, on_seeds, select
from leaderboard.ranking import runs_text

HEATMAP_TOP = 3   # the heatmaps' default: naive, the ceiling and this many of the best-ranked


def _order(names: list[str], first: list[str]) -> list[str]:
    return [n for n in first if n in names] + [n for n in names if n not in first]


def near(cells: pd.DataFrame) -> pd.DataFrame:
    """``cells`` (rows of ``Board.cells``) without the rows of far targets (role "far": bench.core.report.cell_rows),
    whose WRG, AOG and NTS are blank: they hold far AOG and far NTS alone, which the board reports apart."""
    return cells[cells["role"] != "far"] if "role" in cells else cells


def matrices(board: Board, submission: str, metric: str = "nts") -> dict[str, pd.DataFrame]:
    """Per category, source (rows) x target (columns) of one submission's metric, mean over seeds, in the
    protocol's order of datasets: a source's targets are its category's siblings, so each category is its
    own block (3 x 3 on mini) and no cell is blank but the diagonal, where a source would meet itself. Over the
    seeds every submission of its group holds, as the ranking. Far targets are left out (``near``): their NTS is
    reported apart."""
    cells = near(board.on_common_seeds(board.cells[board.cells["submission"] == submission]))
    out = {}
    for category, within in cells.groupby("category", sort=False):
        table = within.pivot_table(index="source", columns="target", values=metric, aggfunc="mean", sort=False)
        sources = list(dict.fromkeys(within["source"]))   # the cells come in the protocol's order of datasets
        order = _order([*sources, *table.columns], sources)
        out[category] = table.reindex(index=order, columns=order)
    return out


def heatmap_default(table: pd.DataFrame, top: int = HEATMAP_TOP) -> list[str]:
    """The submissions a group's heatmaps show first, in the ranking's order: the ceiling, the ``top``
    best-ranked validated methods and naive."""
    ranked = table[table["role"].isin(["method", "upload"]) & table["rank"].str.isdigit()]
    ranked = ranked.assign(position=ranked["rank"].astype(int)).sort_values("position")
    chosen = {*ranked["submission"].iloc[:top], *ranked[ranked["method"] == BASELINE]["submission"],
              *table[table["role"] == "ceiling"]["submission"]}
    order = [*table[table["role"] == "ceiling"]["submission"], *ranked["submission"]]
    return [key for key in order if key in chosen]


def color_limit(board: Board, keys: list[str], metric: str) -> float:
    """One colour scale for every heatmap of these submissions, symmetric around 0: up to the 95th
    percentile of their cells' |value| (at least 1 point), so one outlier (``length``'s -56 on mini)
    does not wash out every other panel; beyond it the colour saturates and the number is still printed."""
    cells = near(board.on_common_seeds(board.cells[board.cells["submission"].isin(keys)]))
    if cells.empty:
        return 1.0
    means = cells.groupby(["submission", "source", "target"])[metric].mean().abs()
    return max(1.0, float(means.quantile(0.95)))


def id_vs_ood(board: Board, protocol: str | None = None, models: str | None = None, category: str | None = None,
              source: str | None = None) -> pd.DataFrame:
    """WRG (ID gain) and AOG (OOD gain) per submission and source -> target cell, mean over the seeds every
    submission of its group holds (as the ranking); far targets left out (``near``)."""
    cells = near(board.on_common_seeds(select(board.cells, protocol, models, category, source)))
    keys = ["submission", "method", "params", "status", "category", "source", "target"]
    if cells.empty:
        return pd.DataFrame(columns=[*keys, "wrg", "aog", "nts"])
    return cells.groupby(keys, sort=False)[["wrg", "aog", "nts"]].mean().reset_index()


def nts_vs_bon(table: pd.DataFrame) -> pd.DataFrame:
    """Pair NTS and BoN NTS per submission of a group's ranking table (``ranking.ranking``), where its protocol has
    candidate sets: the ceiling, then the ranked methods in the ranking's order (as ``columns.shown_order``), each
    with its rank by either metric among the validated ranked methods (1 = best; ties share the better rank; blank
    for the ceiling and a submission that does not validate), so whether the two metrics rank the methods alike
    reads off one row. Empty without BoN numbers."""
    rows = table[table["role"].isin(["ceiling", "method", "upload"]) & table["BoN NTS"].notna()]
    rows = rows.sort_values("role", key=lambda role: role != "ceiling", kind="stable")   # as the board shows them
    points = rows[["submission", "method", "params", "status", "role", "NTS", "BoN NTS"]].reset_index(drop=True)
    ranked = (rows["role"] != "ceiling").to_numpy() & rows["rank"].str.isdigit().to_numpy()
    for name in ("NTS", "BoN NTS"):
        points[f"rank by {name}"] = points[name].where(ranked).rank(ascending=False, method="min")
    return points


@dataclass
class Sweep:
    """One method with several param settings on one protocol x model pair."""
    table: pd.DataFrame        # one row per setting: its params, NTS/AOG/WRG with low/high, Δ vs naive, ID/OOD acc
    baseline: dict | None      # naive's NTS/AOG/WRG on the same cells, when submitted
    independent: bool = False  # the group's runs are independent: the interval that decides is over runs


_SWEEP_FIXED = {*METRICS.values(), *(f"{n} {end}" for n in METRICS.values()
                                     for end in ("low", "high", "Δ", "point", "decides")),
                "decided", "runs", "ID acc", "OOD acc", "status", "submission"}


def ablations(board: Board, protocol: str | None = None, models: str | None = None) -> dict[str, Sweep]:
    """For each method with several param settings in a group (a sweep): one row per setting with its
    params as columns and its means over all cells and the seeds every submission of the group holds (as the
    ranking's: ``Board.seeds_in_common``). Each metric's ``low``/``high`` is the
    interval that decides (``Board.decisions``' ``deciding``: the t 95% interval over the seeds of the paired
    difference from naive, or on a protocol seeded per source the interval over independent runs), placed on
    the metric's axis: naive's value plus it, so it crosses naive's value exactly when the difference is
    undecided (blank without naive or with one seed); ``point`` is naive's value plus the paired Δ it is
    about, the setting's own mean wherever Δ is over the seeds every submission holds (and not over a picked method's fresh
    seeds alone: SubmissionFile.fresh_from). Keyed "protocol/models/method"."""
    cells = select(board.cells, protocol, models)
    out = {}
    for (protocol_name, models_name, method), group in cells.groupby(["protocol", "models", "method"], sort=True):
        if group["params"].nunique() < 2:  # one setting (or resubmissions of it): not a sweep
            continue
        decisions = board.decisions(protocol_name, models_name)
        seeds = common_seeds(decisions)
        naive = cells[(cells["protocol"] == protocol_name) & (cells["models"] == models_name)
                      & (cells["method"] == BASELINE) & cells["valid"]]
        baseline = {n: summarise(on_seeds(naive, seeds))[m] for m, n in METRICS.items()} if not naive.empty else None
        rows = []
        for key, cells_of in group.groupby("submission", sort=False):
            summary, decided = summarise(on_seeds(cells_of, seeds)), decisions.get(key, {})
            row = {**board.by_key[key].submission["method"]["params"], "decided": decided.get("decided", ""),
                   "ID acc": summary["student_id"], "OOD acc": summary["student_ood"],
                   "status": cells_of["status"].iloc[0], "submission": key}
            deciding = decided.get("deciding", {})
            row["runs"] = runs_text(board, key, cells_of, decided)
            for m, n in METRICS.items():
                base = baseline[n] if baseline else math.nan
                found = deciding.get(m)
                delta, low, high = (found.estimate, found.low, found.high) if found else \
                    (summary[m] - base, math.nan, math.nan)
                row.update({n: summary[m], f"{n} Δ": delta, f"{n} low": base + low, f"{n} high": base + high,
                            f"{n} point": summary[m] if math.isnan(base + delta) else base + delta,
                            f"{n} decides": interval_text(low, high)})
            rows.append(row)
        out[f"{protocol_name}/{models_name}/{method}"] = Sweep(pd.DataFrame(rows), baseline,
                                                               board.independent(protocol_name, models_name))
    return out


def varying_params(table: pd.DataFrame) -> list[str]:
    """The param columns of an ablation table whose values differ between rows."""
    return [c for c in table.columns if c not in _SWEEP_FIXED and table[c].astype(str).nunique() > 1]


def sweep_display(sweep: Sweep) -> pd.DataFrame:
    """An ablation table as text: params, then each metric with its Δ against naive and the interval that
    decides it, named as the ranking names it ("Δ NTS t 95% (seeds)", or "Δ NTS 95% (runs)" with what the runs
    are), in the board's format."""
    table = sweep.table
    out = table[[c for c in table.columns if c not in _SWEEP_FIXED]].astype(str)
    interval = decision_column(sweep.independent).removeprefix("Δ ")
    for name in METRICS.values():
        out[name] = [fmt(v, signed=True) for v in table[name]]
        out[f"Δ {name} vs naive"] = [fmt(v, signed=True) for v in table[f"{name} Δ"]]
        out[f"Δ {name} {interval}"] = table[f"{name} decides"]
    if sweep.independent:
        out["runs"] = table["runs"]
    out["decided (NTS)"] = table["decided"]
    for name in ("ID acc", "OOD acc"):
        out[name] = [fmt(v) for v in table[name]]
    out["status"], out["submission"] = table["status"], table["submission"]
    return out
