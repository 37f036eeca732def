"""The leaderboard's pictures, drawn with matplotlib from ``leaderboard.core``'s DataFrames. Shared by
the Gradio app (``gr.Plot`` takes a Figure) and the static page (saved as SVG). No pyplot: figures
are plain objects, safe to make from several server threads.

Pictures that compare: every heatmap of a board uses one colour scale centred on 0 (the caller passes
its limit, ``core.color_limit``), each submission keeps one colour in every picture (``colours``),
and points and lines carry the board's 95% intervals and the naive reference where they exist."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from bench.report import fmt  # noqa: E402
from leaderboard.core import METRICS, Sweep, varying_params  # noqa: E402

# Twelve colours told apart at a glance (tab10 without its grey, which marks what is not highlighted,
# plus black, navy and gold), and markers, so that (colour, marker) stays unique past twelve series.
PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22",
           "#000000", "#1b2a6b", "#d4a017")
MARKERS = "oDs^vP"
MUTED = "#c4c4c4"
CMAP = "RdBu"   # red below 0 (the student lost to its teacher), blue above


def label(text: object) -> str:
    """Submission text as a literal label: matplotlib would read ``$...$`` as math."""
    return str(text).replace("\\", "\\\\").replace("$", r"\$")


def empty(message: str) -> Figure:
    fig = Figure(figsize=(6, 1.5))
    fig.text(0.5, 0.5, label(message), ha="center", va="center")
    return fig


def colours(keys: list[str]) -> dict[str, tuple[str, str]]:
    """Submission key -> (colour, marker), by its place in ``keys`` (the whole board's, sorted), so a
    submission looks the same in every picture whatever is filtered."""
    return {key: (PALETTE[i % len(PALETTE)], MARKERS[(i // len(PALETTE)) % len(MARKERS)]) for i, key in enumerate(keys)}


def _draw_matrix(ax, table: pd.DataFrame, limit: float, title: str):
    values = table.to_numpy(dtype=float)
    image = ax.imshow(np.ma.masked_invalid(values), cmap=CMAP, vmin=-limit, vmax=limit, aspect="auto")
    ax.set_facecolor("#eeeeee")   # a source is not its own target: the diagonal is empty
    ax.set_xticks(range(table.shape[1]), [label(c) for c in table.columns], rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(table.shape[0]), [label(i) for i in table.index], fontsize=8)
    for (i, j), value in np.ndenumerate(values):
        if math.isfinite(value):
            ax.text(j, i, fmt(value, signed=True), ha="center", va="center", fontsize=8,
                    color="white" if abs(value) > 0.6 * limit else "black")
    ax.set_title(label(title), fontsize=9)
    return image


def heatmaps(tables: dict[str, pd.DataFrame], metric: str, limit: float, per_row: int = 4) -> Figure:
    """Source (rows) x target (columns) matrices of several submissions as a grid on one colour scale,
    ``[-limit, +limit]`` points, with one colour bar: the same colour is the same number in every panel."""
    tables = {title: t for title, t in tables.items() if not t.empty}
    if not tables:
        return empty("no cells")
    n, cols = len(tables), min(per_row, len(tables))
    rows = math.ceil(n / cols)
    shape = next(iter(tables.values())).shape
    fig = Figure(figsize=(0.9 + cols * (0.75 + 0.5 * shape[1]), 0.8 + rows * (0.9 + 0.38 * shape[0])),
                 layout="constrained")
    axes = np.atleast_1d(fig.subplots(rows, cols, squeeze=False)).ravel()
    image = None
    for i, (ax, (title, table)) in enumerate(zip(axes, tables.items())):
        image = _draw_matrix(ax, table, limit, title)
        if i % cols:
            ax.set_yticklabels([])
        if i // cols == rows - 1 or i + cols >= n:
            ax.set_xlabel("target (OOD)", fontsize=8)
        if i % cols == 0:
            ax.set_ylabel("source (ID)", fontsize=8)
    for ax in axes[n:]:
        ax.set_visible(False)
    values = np.concatenate([t.to_numpy(dtype=float).ravel() for t in tables.values()])
    beyond = np.nanmax(np.abs(values)) > limit if np.isfinite(values).any() else False
    fig.colorbar(image, ax=list(axes[:n]), shrink=0.8 if rows > 1 else 1.0, extend="both" if beyond else "neither",
                 label=f"{METRICS.get(metric, metric)} (points), one scale for all panels"
                       + (f"; beyond ±{limit:.0f} it saturates" if beyond else ""))
    return fig


def id_vs_ood(table: pd.DataFrame, palette: dict[str, tuple[str, str]], highlight: list[str] | tuple = ()) -> Figure:
    """WRG (gain in distribution) against AOG (gain out of distribution), one point per submission and
    source -> target cell, one panel per category. On the diagonal the ID gain carries over; below
    it, it does not. Highlighted submissions keep their colour, the others turn grey."""
    if table.empty:
        return empty("no cells")
    categories = list(dict.fromkeys(table["category"]))
    fig = Figure(figsize=(4.6 * len(categories) + 3.4, 4.8), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(categories), sharex=True, sharey=True, squeeze=False)).ravel()
    low = min(table["wrg"].min(), table["aog"].min(), 0) - 2
    high = max(table["wrg"].max(), table["aog"].max(), 0) + 2
    handles = {}
    for ax, category in zip(axes, categories):
        in_category = table[table["category"] == category]
        for key, points in in_category.groupby("submission", sort=False):
            first = points.iloc[0]
            colour, marker = palette.get(key, (PALETTE[0], MARKERS[0]))
            muted = bool(highlight) and key not in highlight
            name = first["method"] + (f" ({first['params']})" if first["params"] else "")
            name += "" if first["status"].endswith("validated") and "NOT" not in first["status"] else " NOT VALIDATED"
            handle = ax.scatter(points["wrg"], points["aog"], marker=marker, s=22 if muted else 48,
                                color=MUTED if muted else colour, alpha=0.55 if muted else 0.9,
                                edgecolors="none" if muted else "white", linewidths=0.5, zorder=1 if muted else 3,
                                label=label(name))
            if not muted:
                handles.setdefault(key, handle)
        ax.plot([low, high], [low, high], color="grey", linestyle="--", linewidth=1)
        ax.axhline(0, color="black", linewidth=0.6)
        ax.axvline(0, color="black", linewidth=0.6)
        ax.set_xlim(low, high)
        ax.set_ylim(low, high)
        ax.set_title(f"category: {label(category)}", fontsize=10)
        ax.set_xlabel("WRG: gain on the source (ID, points)")
    axes[0].set_ylabel("AOG: gain on a sibling target (OOD, points)")
    legend = list(handles.values())
    if highlight:
        legend.append(axes[0].scatter([], [], s=22, color=MUTED, label="others"))
    legend.append(axes[0].plot([], [], color="grey", linestyle="--", label="AOG = WRG (gain carries over)")[0])
    fig.legend(handles=legend, fontsize=8, loc="outside right upper")
    return fig


def ablation(sweep: Sweep, title: str, palette: dict[str, tuple[str, str]] | None = None) -> Figure:
    """NTS, AOG and WRG against the swept param (log axis when it spans a decade or more), one line
    per setting of the other params that vary, each point with its bootstrap 95% interval; naive on the
    same cells as a dashed line with its interval shaded (for ANCHOR, λ = 0 is naive)."""
    table = sweep.table
    varying = varying_params(table)
    numeric = [c for c in varying if pd.to_numeric(table[c], errors="coerce").notna().all()]
    if not numeric:
        return empty("no numeric parameter varies; see the table")
    x, series = numeric[0], [c for c in varying if c != numeric[0]]
    data = table.assign(_x=pd.to_numeric(table[x])).sort_values("_x")
    fig = Figure(figsize=(11, 3.6), layout="constrained")
    axes = fig.subplots(1, 3, sharex=True)
    groups = data.groupby(series, sort=True) if series else [((), data)]
    for i, (values, rows) in enumerate(groups):
        values = values if isinstance(values, tuple) else (values,)
        name = ", ".join(f"{k}={v}" for k, v in zip(series, values)) or title.rsplit("/", 1)[-1]
        colour = PALETTE[i % len(PALETTE)]
        for ax, metric in zip(axes, METRICS.values()):
            low, high = rows[f"{metric} low"].to_numpy(), rows[f"{metric} high"].to_numpy()
            yerr = np.vstack([rows[metric] - low, high - rows[metric]])
            ax.errorbar(rows["_x"], rows[metric], yerr=np.where(np.isfinite(yerr), yerr, 0), marker="o", capsize=3,
                        color=colour, label=label(name))
    positive = (data["_x"] > 0).all()
    for ax, metric in zip(axes, METRICS.values()):
        if positive and data["_x"].max() >= 10 * data["_x"].min():
            ax.set_xscale("log")
        ax.axhline(0, color="black", linewidth=0.6)
        if sweep.baseline is not None:
            value, low, high = sweep.baseline[metric]
            ax.axhline(value, color="grey", linestyle="--", linewidth=1.2, label="naive (95% interval shaded)")
            if math.isfinite(low) and math.isfinite(high):
                ax.axhspan(low, high, color="grey", alpha=0.15, linewidth=0)
        ax.set_xlabel(label(x))
        ax.set_title(f"{metric} (points)", fontsize=10)
    axes[0].legend(fontsize=8)
    fig.suptitle(label(title) + ": mean over cells and seeds, bars = bootstrap 95% interval", fontsize=10)
    return fig
