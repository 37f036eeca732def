"""The leaderboard's pictures, drawn with matplotlib from ``leaderboard.core``'s DataFrames. Shared by
the Gradio app (``gr.Plot`` takes a Figure) and the static page (saved as SVG). No pyplot: figures
are plain objects, safe to make from several server threads."""
from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from leaderboard.core import METRICS, varying_params  # noqa: E402


def label(text: object) -> str:
    """Submission text as a literal label: matplotlib would read ``$...$`` as math."""
    return str(text).replace("\\", "\\\\").replace("$", r"\$")


def empty(message: str) -> Figure:
    fig = Figure(figsize=(6, 1.5))
    fig.text(0.5, 0.5, label(message), ha="center", va="center")
    return fig


def heatmap(table: pd.DataFrame, title: str, metric: str = "nts") -> Figure:
    """Source x target matrix of one submission's metric (points), red below zero, blue above."""
    if table.empty:
        return empty("no cells")
    values = table.to_numpy(dtype=float)
    limit = max(1.0, np.nanmax(np.abs(values))) if np.isfinite(values).any() else 1.0
    fig = Figure(figsize=(1.6 + 1.1 * table.shape[1], 1.2 + 0.6 * table.shape[0]), layout="constrained")
    ax = fig.add_subplot()
    image = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu", vmin=-limit, vmax=limit, aspect="auto")
    ax.set_facecolor("#eeeeee")
    ax.set_xticks(range(table.shape[1]), [label(c) for c in table.columns], rotation=30, ha="right")
    ax.set_yticks(range(table.shape[0]), [label(i) for i in table.index])
    ax.set_xlabel("target (OOD)")
    ax.set_ylabel("source (ID)")
    for (i, j), value in np.ndenumerate(values):
        if math.isfinite(value):
            ax.text(j, i, f"{value:+.1f}", ha="center", va="center", fontsize=9,
                    color="white" if abs(value) > 0.6 * limit else "black")
    fig.colorbar(image, ax=ax, label=f"{METRICS.get(metric, metric)} (points)")
    ax.set_title(label(title), fontsize=10)
    return fig


def id_vs_ood(table: pd.DataFrame, title: str = "") -> Figure:
    """WRG (gain in distribution) against AOG (gain out of distribution), one point per method and
    source -> target cell. On the diagonal the ID gain carries over; below it, it does not."""
    if table.empty:
        return empty("no cells")
    fig = Figure(figsize=(9.5, 5.5), layout="constrained")
    ax = fig.add_subplot()
    markers = "osD^v<>Px*h"
    for i, (key, points) in enumerate(table.groupby("submission", sort=False)):
        first = points.iloc[0]
        name = first["method"] + (f" ({first['params']})" if first["params"] else "")
        name += "" if first["status"] == "validated" else " NOT VALIDATED"
        ax.scatter(points["wrg"], points["aog"], marker=markers[i % len(markers)], s=45, alpha=0.85,
                   label=label(name))
    low = min(table["wrg"].min(), table["aog"].min(), 0) - 2
    high = max(table["wrg"].max(), table["aog"].max(), 0) + 2
    ax.plot([low, high], [low, high], color="grey", linestyle="--", linewidth=1, label="AOG = WRG (gain carries over)")
    ax.axhline(0, color="black", linewidth=0.6)
    ax.axvline(0, color="black", linewidth=0.6)
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel("WRG: student − teacher on the source (ID, points)")
    ax.set_ylabel("AOG: student − teacher on a sibling target (OOD, points)")
    ax.set_title(label(title or "in-distribution gain vs gain under shift, per source → target cell"), fontsize=10)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    return fig


def ablation(table: pd.DataFrame, title: str) -> Figure:
    """NTS, AOG and WRG against the swept param (log axis when it spans a decade or more), one line
    per setting of the other params that vary."""
    varying = varying_params(table)
    numeric = [c for c in varying if pd.to_numeric(table[c], errors="coerce").notna().all()]
    if not numeric:
        return empty("no numeric parameter varies; see the table")
    x, series = numeric[0], [c for c in varying if c != numeric[0]]
    data = table.assign(_x=pd.to_numeric(table[x])).sort_values("_x")
    fig = Figure(figsize=(10, 3.4), layout="constrained")
    axes = fig.subplots(1, 3, sharex=True)
    groups = data.groupby(series, sort=True) if series else [((), data)]
    for values, rows in groups:
        values = values if isinstance(values, tuple) else (values,)
        name = ", ".join(f"{k}={v}" for k, v in zip(series, values)) or x
        for ax, metric in zip(axes, METRICS.values()):
            ax.plot(rows["_x"], rows[metric], marker="o", label=label(name))
    positive = (data["_x"] > 0).all()
    for ax, metric in zip(axes, METRICS.values()):
        if positive and data["_x"].max() >= 10 * data["_x"].min():
            ax.set_xscale("log")
        ax.axhline(0, color="black", linewidth=0.6)
        low, high = data[metric].min(), data[metric].max()
        if high - low < 2:  # a flat line: show it on a readable scale, not float noise
            ax.set_ylim((low + high) / 2 - 1, (low + high) / 2 + 1)
        ax.set_xlabel(label(x))
        ax.set_title(f"{metric} (points)", fontsize=10)
    if series:
        axes[0].legend(fontsize=8)
    fig.suptitle(label(title), fontsize=10)
    return fig
