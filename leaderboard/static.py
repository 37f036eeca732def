"""``bench leaderboard --html DIR``: the board as a static page: the same context line, ranking table
(with its sorting and CSV download) and pictures as the app, the protocol and model-pair cards and the
About section. Rendered by ``leaderboard.render`` (jinja2 with autoescape, so submission text is shown
literally); pictures are SVG files drawn by ``figures``, embedded with <img>, named by number, never
by submission text; the built-in methods' source files are copied under ``code/`` for the method links."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Mapping

from markupsafe import Markup

from bench.io import atomic_write_bytes
from leaderboard import core, figures, render


def _write(path: Path, data: bytes) -> None:
    atomic_write_bytes(path, data)
    path.chmod(0o644)  # a web page: readable by the server that publishes it


def _save(fig, path: Path) -> None:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})  # no timestamp: same board, same bytes
    _write(path, buffer.getvalue())


def write_site(board: core.Board, out: Path, protocols: Mapping | None = None, model_pairs: Mapping | None = None) -> Path:
    """Write ``out/index.html``, ``out/figures/*.svg`` and ``out/code/*.txt``; returns the page's path."""
    out = Path(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    table = core.ranking(board)
    view = core.shown(table, board=board)
    for row in view.rows:
        if row.code is not None:
            _write(out / row.code.url, row.code.path.read_bytes())
    palette = figures.colours(sorted(board.by_key))
    scatters, matrices, cards = [], [], []
    for i, ((protocol, models), _) in enumerate(table.groupby(["protocol", "model pair"], sort=False)):
        group = f"{protocol} · {models}"
        _save(figures.id_vs_ood(core.id_vs_ood(board, protocol, models), palette), out / "figures" / f"id-vs-ood-{i}.svg")
        scatters.append({"src": f"figures/id-vs-ood-{i}.svg", "group": group})
        keys = core.shown_order(table[(table["protocol"] == protocol) & (table["model pair"] == models)])
        titles = {core.title(board.by_key[k]): core.matrix(board, k, "nts") for k in keys}
        _save(figures.heatmaps(titles, "nts", core.color_limit(board, keys, "nts")), out / "figures" / f"matrices-{i}.svg")
        matrices.append({"src": f"figures/matrices-{i}.svg", "group": group})
        cards.append({"protocol": Markup(core.protocol_html(protocol, protocols)),
                      "models": Markup(core.markdown_html(core.model_pair_card(models, model_pairs, board)))})
    sweeps = []
    for i, (key, sweep) in enumerate(core.ablations(board).items()):
        _save(figures.ablation(sweep, key), out / "figures" / f"ablation-{i}.svg")
        shown = core.sweep_display(sweep)
        sweeps.append({"key": key, "figure": f"figures/ablation-{i}.svg", "columns": list(shown.columns),
                       "rows": [list(r) for r in shown.itertuples(index=False)]})
    page = render.environment().get_template("index.html.j2").render(
        css=Markup(render.css()), script=Markup(render.script()),
        context=render.context_html(core.context(board, table)), ranking=render.ranking_html(view),
        unreadable=[(v.key, str(v.errors[0]) if v.errors else "no cells") for v in board.unreadable],
        scatters=scatters, matrices=matrices, sweeps=sweeps, cards=cards,
        about=Markup(core.markdown_html(core.about_markdown())))
    _write(out / "index.html", page.encode())
    return out / "index.html"
