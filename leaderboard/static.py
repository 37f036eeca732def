"""``bench leaderboard --html DIR``: the ranking and the pictures as a static page (jinja2 with
autoescape, so submission text is shown literally; pictures are SVG files drawn by ``figures``,
embedded with <img>, named by number, never by submission text)."""
from __future__ import annotations

from pathlib import Path
from typing import Mapping

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from bench.io import atomic_write_bytes
from leaderboard import core, figures


def _write(path: Path, data: bytes) -> None:
    atomic_write_bytes(path, data)
    path.chmod(0o644)  # a web page: readable by the server that publishes it


def _save(fig, path: Path) -> None:
    import io

    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})  # no timestamp: same board, same bytes
    _write(path, buffer.getvalue())


def write_site(board: core.Board, out: Path, protocols: Mapping | None = None) -> Path:
    """Write ``out/index.html`` and ``out/figures/*.svg``; returns the page's path."""
    out = Path(out)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    table = core.display_table(core.ranking(board))
    _save(figures.id_vs_ood(core.id_vs_ood(board)), out / "figures" / "id-vs-ood.svg")
    matrices = []
    for i, entry in enumerate(board.entries):
        _save(figures.heatmap(core.matrix(board, entry.key, "nts"), f"{entry.key}: NTS"), out / "figures" / f"matrix-{i}.svg")
        matrices.append({"submission": entry.key, "valid": entry.ok, "figure": f"figures/matrix-{i}.svg"})
    sweeps = []
    for i, (key, sweep) in enumerate(core.ablations(board).items()):
        _save(figures.ablation(sweep, key), out / "figures" / f"ablation-{i}.svg")
        sweeps.append({"key": key, "figure": f"figures/ablation-{i}.svg", "columns": list(sweep.columns),
                       "rows": [[core.fmt(v) if isinstance(v, float) else v for v in row]
                                for row in sweep.itertuples(index=False)]})
    names = sorted({*board.cells["protocol"].unique()})
    environment = Environment(loader=PackageLoader("leaderboard", "templates"),
                              autoescape=select_autoescape(default=True, default_for_string=True))
    page = environment.get_template("index.html.j2").render(
        columns=list(table.columns), rows=[list(r) for r in table.itertuples(index=False)],
        unreadable=[(v.key, str(v.errors[0]) if v.errors else "no cells") for v in board.unreadable],
        matrices=matrices, sweeps=sweeps, definitions=core.DEFINITIONS,
        protocols=[Markup(core.protocol_html(n, protocols)) for n in names])
    _write(out / "index.html", page.encode())
    return out / "index.html"
