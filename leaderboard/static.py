"""``bench leaderboard --html DIR``: the board as a static page, one group (protocol x model pair) at a
time behind a switcher, as in the app: what was run, each group's verdict, context line, ranking table
(with its search, sorting and CSV), pictures (pair NTS against BoN NTS where the protocol has best-of-N
candidate sets) and cards, and About. Rendered by ``leaderboard.render``
(jinja2 with autoescape, so submission text is shown literally); pictures are SVG files drawn by
``figures`` in a wide and a narrow layout (the page picks one by the screen's width), embedded with
<img>, named by number, never by submission text; the built-in methods' source files are copied under
``code/`` for the method links."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Mapping

from markupsafe import Markup

from bench.core.io import atomic_write_bytes
from leaderboard import cards, figures, plots, render
from leaderboard.board import Board, group_label, title
from leaderboard.columns import csv_name, shown
from leaderboard.context import context, data_line
from leaderboard.ranking import ranking, verdict


def _write(path: Path, data: bytes) -> None:
    atomic_write_bytes(path, data)
    path.chmod(0o644)  # a web page: readable by the server that publishes it


def _save(out: Path, name: str, draw) -> dict:
    """A picture in both layouts: ``figures/<name>.svg`` and ``figures/<name>-narrow.svg``."""
    found = {}
    for suffix, narrow in (("", False), ("-narrow", True)):
        buffer = io.BytesIO()
        draw(narrow).savefig(buffer, format="svg", metadata={"Date": None})  # no timestamp: same board, same bytes
        _write(out / "figures" / f"{name}{suffix}.svg", buffer.getvalue())
        found["narrow" if narrow else "src"] = f"figures/{name}{suffix}.svg"
    return found


def _group(board: Board, out: Path, i: int, protocol: str, models: str, palette: dict,
           protocols: Mapping | None, model_pairs: Mapping | None) -> dict:
    table = ranking(board, protocol, models)
    label = group_label(protocol, models)
    view = shown(table, board=board)
    for row in view.rows:
        if row.code is not None:
            _write(out / row.code.url, row.code.path.read_bytes())
    chosen = plots.heatmap_default(table)
    tables = {title(board.by_key[k]): plots.matrices(board, k, "nts") for k in chosen}
    limit = plots.color_limit(board, [v.key for v in board.in_group(protocol, models)], "nts")
    sweeps = []
    for j, (key, sweep) in enumerate(plots.ablations(board, protocol, models).items()):
        display = plots.sweep_display(sweep)
        figure = _save(out, f"ablation-{i}-{j}", lambda n, s=sweep, k=key: figures.ablation(s, k, n))
        sweeps.append({"key": key, "figure": figure, "columns": list(display.columns),
                       "rows": [list(r) for r in display.itertuples(index=False)]})
    points = plots.nts_vs_bon(table)   # empty where the protocol has no candidate sets: no picture
    return {"label": label, "switch": board.switcher_label(protocol, models),
            "bon": None if points.empty else _save(out, f"nts-vs-bon-{i}",
                                                   lambda n: figures.nts_vs_bon(points, palette, n)),
            "verdict": render.verdict_html(label, verdict(board, table)),
            "context": render.context_html(context(board, table)),
            "ranking": render.ranking_html(view, csv_name(protocol, models), f"ranking-{i}"),
            "scatter": _save(out, f"id-vs-ood-{i}", lambda n: figures.id_vs_ood(
                plots.id_vs_ood(board, protocol, models), palette, narrow=n)),
            "matrices": _save(out, f"matrices-{i}", lambda n: figures.heatmaps(tables, "nts", limit, n)),
            "matrix_titles": list(tables), "sweeps": sweeps,
            "cards": {"protocol": Markup(cards.protocol_html(protocol, protocols)),
                      "models": Markup(cards.markdown_html(cards.model_pair_card(models, model_pairs, board)))}}


def write_site(board: Board, out: Path, protocols: Mapping | None = None, model_pairs: Mapping | None = None) -> Path:
    """Write ``out/index.html``, ``out/figures/*.svg`` and ``out/code/*.txt``; returns the page's path."""
    out = Path(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    palette = figures.colours(sorted(board.by_key))
    groups = [_group(board, out, i, protocol, models, palette, protocols, model_pairs)
              for i, (protocol, models) in enumerate(board.groups)]
    page = render.environment().get_template("index.html.j2").render(
        css=Markup(render.css()), script=Markup(render.script()), data=render.data_html(data_line(board, protocols)),
        groups=groups, unreadable=[(v.key, str(v.errors[0]) if v.errors else "no cells") for v in board.unreadable],
        top=plots.HEATMAP_TOP, about=Markup(cards.markdown_html(cards.about_markdown())))
    _write(out / "index.html", page.encode())
    return out / "index.html"
