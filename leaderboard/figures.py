"""The leaderboard's pictures, drawn with matplotlib from ``leaderboard.plots``' DataFrames. Shared by
the Gradio app (``gr.Plot`` takes a Figure) and the static page (saved as SVG). No pyplot: figures
are plain objects, safe to make from several server threads.

Pictures that compare: every heatmap of a group uses one colour scale centred on 0 (the caller passes
its limit, ``plots.color_limit``), each submission keeps one colour in every picture (``colours``),
and the ablation draws the interval that decides on this board. Each picture has a wide layout and a
``narrow`` one (panels stacked, one column), drawn at the size a phone shows it, so its text stays
readable there."""
from __future__ import annotations

import math
import textwrap

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from bench.core.compare import decision_rule  # noqa: E402
from bench.core.report import fmt  # noqa: E402
from leaderboard.board import METRICS  # noqa: E402
from leaderboard.plots import Sweep, varying_params  # noqa: E402

# Twelve colours told apart at a glance (tab10 without its grey, which marks what is not highlighted,
# plus black, navy and gold), and markers, so that (colour, marker) stays unique past twelve series.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#000000", "#1b2a6b", "#d4a017")
MARKERS = "oDs^vP"
MUTED = "#c4c4c4"
CMAP = "RdBu"   # red below 0 (the student lost to its teacher), blue above
NARROW_WIDTH = 4.2   # inches: a phone shows a picture about 360 px wide, so text drawn at this width stays legible


def label(text: object) -> str:
    """Submission text as a literal label: matplotlib would read ``$...$`` as math."""
    return str(text).replace("\\", "\\\\").replace("$", r"\$")


def empty(message: str) -> Figure:
    fig = Figure(figsize=(6, 1.5))
    fig.text(0.5, 0.5, label(textwrap.fill(message, 70)), ha="center", va="center")
    return fig


def colours(keys: list[str]) -> dict[str, tuple[str, str]]:
    """Submission key -> (colour, marker), by its place in ``keys`` (the whole board's, sorted), so a
    submission looks the same in every picture whatever is shown."""
    return {key: (PALETTE[i % len(PALETTE)], MARKERS[(i // len(PALETTE)) % len(MARKERS)]) for i, key in enumerate(keys)}


def _draw_matrix(ax, table: pd.DataFrame, limit: float, title: str):
    values = table.to_numpy(dtype=float)
    image = ax.imshow(np.ma.masked_invalid(values), cmap=CMAP, vmin=-limit, vmax=limit, aspect="auto")
    ax.set_facecolor("#eeeeee")   # a source is not its own target: the diagonal is empty
    ax.set_xticks(range(table.shape[1]), [label(c) for c in table.columns], rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(table.shape[0]), [label(i) for i in table.index], fontsize=8)
    for (i, j), value in np.ndenumerate(values):
        if math.isfinite(value):
            ax.text(j, i, fmt(value, signed=True), ha="center", va="center", fontsize=8,
                    color="white" if abs(value) > 0.6 * limit else "black")
    ax.set_title(label(title), fontsize=8)
    return image


def heatmaps(tables: dict[str, dict[str, pd.DataFrame]], metric: str, limit: float, narrow: bool = False) -> Figure:
    """Per submission (rows of panels), its source x target matrix of each category (``plots.matrices``:
    within a category, so no cross-category blanks), on one colour scale, ``[-limit, +limit]`` points,
    with one colour bar: the same colour is the same number in every panel."""
    panels = [(title, category, table) for title, blocks in tables.items() for category, table in blocks.items()
              if not table.empty]
    if not panels:
        return empty("no cells")
    categories = len({category for _, category, _ in panels})
    cols = min(len(panels), categories if narrow else 2 * categories)
    rows = math.ceil(len(panels) / cols)
    n = max(t.shape[0] for _, _, t in panels)
    wide = 0.9 + cols * (0.9 + 0.55 * n)           # inches that give every n x n panel room for its numbers
    scale = NARROW_WIDTH / wide if narrow else 1.0  # a phone's picture: the same layout, drawn narrower
    fig = Figure(figsize=(wide * scale, 0.9 + rows * (1.1 + 0.42 * n) * scale), layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    image = None
    for i, (ax, (title, category, table)) in enumerate(zip(axes, panels)):
        wrapped = textwrap.fill(title, 26 if narrow else 34)
        image = _draw_matrix(ax, table, limit, f"{wrapped}\n{category}")
        if i % cols == 0:
            ax.set_ylabel("source (ID)", fontsize=8)
        if i + cols >= len(panels):
            ax.set_xlabel("target (OOD)", fontsize=8)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    values = np.concatenate([t.to_numpy(dtype=float).ravel() for _, _, t in panels])
    beyond = np.nanmax(np.abs(values)) > limit if np.isfinite(values).any() else False
    fig.colorbar(image, ax=list(axes[:len(panels)]), location="bottom" if narrow else "right", shrink=0.8,
                 extend="both" if beyond else "neither",
                 label=f"{METRICS.get(metric, metric)} (points), one scale for all panels"
                       + (f", saturated beyond ±{limit:.0f}" if beyond else ""))
    return fig


def id_vs_ood(table: pd.DataFrame, palette: dict[str, tuple[str, str]], highlight: list[str] | tuple = (),
              narrow: bool = False) -> Figure:
    """WRG (gain in distribution) against AOG (gain out of distribution), one point per submission and
    source -> target cell, one panel per category. On the diagonal the ID gain carries over; below
    it, it does not. Highlighted submissions keep their colour, the others turn grey. The legend goes
    under the panels, in as many columns as fit, so it is never cut off."""
    if table.empty:
        return empty("no cells")
    categories = list(dict.fromkeys(table["category"]))
    shown_highlight = [k for k in highlight if k in set(table["submission"])]
    keys = table["submission"].nunique()
    ncol = 1 if narrow else max(1, min(3, len(categories) + 1))
    legend_rows = math.ceil((keys + 2) / ncol)
    size = (NARROW_WIDTH, 3.6 * len(categories) + 0.22 * legend_rows + 0.6) if narrow else \
        (4.4 * len(categories) + 1.2, 4.4 + 0.2 * legend_rows)
    fig = Figure(figsize=size, layout="constrained")
    grid = (len(categories), 1) if narrow else (1, len(categories))
    axes = np.atleast_1d(fig.subplots(*grid, sharex=True, sharey=True, squeeze=False)).ravel()
    low = min(table["wrg"].min(), table["aog"].min(), 0) - 2
    high = max(table["wrg"].max(), table["aog"].max(), 0) + 2
    handles = {}
    for ax, category in zip(axes, categories):
        in_category = table[table["category"] == category]
        for key, points in in_category.groupby("submission", sort=False):
            first = points.iloc[0]
            colour, marker = palette.get(key, (PALETTE[0], MARKERS[0]))
            muted = bool(shown_highlight) and key not in shown_highlight
            name = first["method"] + (f" ({first['params']})" if first["params"] else "")
            name += "" if "NOT VALIDATED" not in first["status"] else " NOT VALIDATED"
            handle = ax.scatter(points["wrg"], points["aog"], marker=marker, s=22 if muted else 44,
                                color=MUTED if muted else colour, alpha=0.55 if muted else 0.9,
                                edgecolors="none" if muted else "white", linewidths=0.5, zorder=1 if muted else 3,
                                label=label(textwrap.shorten(name, 48, placeholder="…")))
            if not muted:
                handles.setdefault(key, handle)
        ax.plot([low, high], [low, high], color="grey", linestyle="--", linewidth=1)
        ax.axhline(0, color="black", linewidth=0.6)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_title(f"category: {label(category)}", fontsize=10)
        ax.set_xlabel("WRG: gain on the source (ID, points)", fontsize=9)
        ax.set_ylabel("AOG: gain on a sibling (OOD, points)", fontsize=9)
    legend = list(handles.values())
    if shown_highlight:
        legend.append(axes[0].scatter([], [], s=22, color=MUTED, label="others"))
    legend.append(axes[0].plot([], [], color="grey", linestyle="--", label="AOG = WRG (gain carries over)")[0])
    fig.legend(handles=legend, fontsize=8, loc="outside lower center", ncol=ncol, frameon=False)
    if highlight and not shown_highlight:
        fig.suptitle("none of the highlighted submissions is in this group: every point is shown", fontsize=9)
    return fig


def nts_vs_bon(points: pd.DataFrame, palette: dict[str, tuple[str, str]], narrow: bool = False) -> Figure:
    """Pair NTS (x) against BoN NTS (y), one point per submission (``plots.nts_vs_bon``), with the diagonal where
    the two are equal. The legend gives each method's rank by either metric (``#2 → #4``: second by NTS, fourth by
    BoN NTS), so a method the two metrics rank differently reads off it; points in the same order along both axes
    are methods ranked alike, wherever they sit against the diagonal."""
    if points.empty:
        return empty("no best-of-N numbers in this group: its protocol scores no candidate sets (docs/best-of-n.md)")
    legend_rows = math.ceil(len(points) / (1 if narrow else 2)) + 1
    size = (NARROW_WIDTH, NARROW_WIDTH + 0.22 * legend_rows) if narrow else (7.5, 5.2 + 0.2 * legend_rows)
    fig = Figure(figsize=size, layout="constrained")
    ax = fig.subplots()
    low = min(points["NTS"].min(), points["BoN NTS"].min(), 0) - 2
    high = max(points["NTS"].max(), points["BoN NTS"].max(), 0) + 2
    for _, row in points.iterrows():
        colour, marker = palette.get(row["submission"], (PALETTE[0], MARKERS[0]))
        name = row["method"] + (f" ({row['params']})" if row["params"] else "")
        ranks = "reference, not ranked" if row["role"] == "ceiling" else "not validated" if math.isnan(
            row["rank by NTS"]) else f"#{row['rank by NTS']:.0f} → #{row['rank by BoN NTS']:.0f}"
        ax.scatter(row["NTS"], row["BoN NTS"], marker=marker, s=48, color=colour, edgecolors="white", linewidths=0.5,
                   zorder=3, label=label(f"{textwrap.shorten(name, 40, placeholder='…')}: {ranks}"))
    ax.plot([low, high], [low, high], color="grey", linestyle="--", linewidth=1, label="BoN NTS = NTS")
    ax.axhline(0, color="black", linewidth=0.6)
    ax.axvline(0, color="black", linewidth=0.6)
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("NTS: pair accuracy (points)", fontsize=9)
    ax.set_ylabel("BoN NTS: best-of-N (points)", fontsize=9)
    ax.set_title("rank by NTS → rank by BoN NTS in the legend", fontsize=9)
    fig.legend(fontsize=8, loc="outside lower center", ncol=1 if narrow else 2, frameon=False)
    return fig


def ablation(sweep: Sweep, title: str, narrow: bool = False) -> Figure:
    """NTS, AOG and WRG against the swept param (log axis when it spans a decade or more), one line per
    setting of the other params that vary. Each point's bar is the interval that decides on this board
    (``plots.ablations``: naive's value plus the interval of the paired difference, over the seeds or, on a
    protocol seeded per source, over independent runs), so a bar that crosses naive's dashed line is a
    difference that is not decided; the point is naive's value plus that difference."""
    table = sweep.table
    varying = varying_params(table)
    numeric = [c for c in varying if pd.to_numeric(table[c], errors="coerce").notna().all()]
    if not numeric:
        return empty("no numeric parameter varies; see the table")
    x, series = numeric[0], [c for c in varying if c != numeric[0]]
    data = table.assign(_x=pd.to_numeric(table[x])).sort_values("_x")
    fig = Figure(figsize=(NARROW_WIDTH, 8.4) if narrow else (11, 3.8), layout="constrained")
    axes = fig.subplots(3, 1, sharex=True) if narrow else fig.subplots(1, 3, sharex=True)
    groups = data.groupby(series, sort=True) if series else [((), data)]
    for i, (values, rows) in enumerate(groups):
        values = values if isinstance(values, tuple) else (values,)
        name = ", ".join(f"{k}={v}" for k, v in zip(series, values)) or title.rsplit("/", 1)[-1]
        colour = PALETTE[i % len(PALETTE)]
        for ax, metric in zip(axes, METRICS.values()):
            low, high, point = (rows[f"{metric} {end}"].to_numpy() for end in ("low", "high", "point"))
            yerr = np.vstack([point - low, high - point])
            ax.errorbar(rows["_x"], point, yerr=np.where(np.isfinite(yerr), yerr, 0), marker="o", capsize=3,
                        color=colour, label=label(name))
    positive = (data["_x"] > 0).all()
    for ax, metric in zip(axes, METRICS.values()):
        if positive and data["_x"].max() >= 10 * data["_x"].min():
            ax.set_xscale("log")
        ax.axhline(0, color="black", linewidth=0.6)
        if sweep.baseline is not None:
            ax.axhline(sweep.baseline[metric], color="grey", linestyle="--", linewidth=1.2, label="naive")
        ax.set_xlabel(label(x))
        ax.set_title(f"{metric} (points)", fontsize=10)
    axes[0].legend(fontsize=8)
    bars = (f"bars: naive + the interval of the difference from naive that decides it (a difference is "
            f"{decision_rule(sweep.independent)}); crossing the dashed line = not decided") \
        if sweep.baseline is not None else "no naive submission in this group: no interval decides"
    fig.suptitle(label(textwrap.fill(f"{title}: mean over cells and seeds. {bars}", 60 if narrow else 140)), fontsize=9)
    return fig
