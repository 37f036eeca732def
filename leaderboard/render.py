"""The board as HTML: one jinja2 environment with autoescape for the app's lines above the table and its
ranking, and for the static page, so both show the same table, the same way, and submission text only
ever as text. The CSS and the script (search, sorting, CSV) are files beside the templates, shared the
same way. About is markdown, rendered from our own template and CITATION.cff (no submission text).
``markdown_page`` is ``bench leaderboard --markdown``: the same lines in markdown, every submission text
escaped (``columns.md_escape``)."""
from __future__ import annotations

from functools import cache
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from leaderboard.board import Board, group_label
from leaderboard.columns import INTERVAL_COLUMNS, View, markdown_of, md_code, md_escape, shown
from leaderboard.context import Context, DataLine, context
from leaderboard.ranking import Verdict, ranking, verdict

TEMPLATES = Path(__file__).parent / "templates"
CSV_NAME = "shiftbench-ranking.csv"


@cache
def environment(markdown: bool = False) -> Environment:
    """HTML templates escape everything they are given; the markdown one (About) has no submission text."""
    env = Environment(loader=PackageLoader("leaderboard", "templates"), keep_trailing_newline=True,
                      autoescape=False if markdown else select_autoescape(default=True, default_for_string=True))
    env.globals["interval_columns"] = INTERVAL_COLUMNS   # their cells carry their ends, which the CSV writes
    return env


@cache
def css() -> str:
    return (TEMPLATES / "board.css.j2").read_text(encoding="utf-8")


@cache
def script() -> str:
    """The ranking's script, a function body of ``element`` (and, in the app, ``watch``)."""
    return (TEMPLATES / "ranking.js.j2").read_text(encoding="utf-8")


def _parts():
    return environment().get_template("parts.html.j2").module


def ranking_html(view: View, filename: str = CSV_NAME, table_id: str = "ranking") -> Markup:
    return Markup(_parts().ranking_table(view, filename, table_id))


def context_html(items: list[Context]) -> Markup:
    return Markup(_parts().context_line(items))


def data_html(line: DataLine) -> Markup:
    return Markup(_parts().data_line(line))


def verdict_html(group: str, verdict: Verdict, where: str = "") -> Markup:
    return Markup(_parts().verdict_line(group, verdict, where))


def preview_html(group: str) -> Markup:
    return Markup(_parts().preview_line(group))


def _context_md(c: Context) -> str:
    return (f"**Protocol** {md_code(c.protocol)} v{md_escape(c.version)} (hash {md_code(c.protocol_hash[:12])}) · "
            f"**Model pair** {md_code(c.models)}: {md_escape(c.models_words)} · {md_escape(c.seeds)} "
            f"seed{'s' if c.seeds != '1' else ''} × {c.cells} source → target cells · {md_escape(c.test_pairs)} test pairs "
            f"per eval set · {c.submissions} submission{'s' if c.submissions != 1 else ''}, last updated "
            f"{md_escape(c.updated)} ({md_code(c.updated_by)}, run at {md_escape(c.commit)})"
            + (f" · **archived**: {md_code(c.replaced_by)} replaces it; its submissions stay valid" if c.replaced_by else ""))


def markdown_page(board: Board, protocol: str | None = None, models: str | None = None) -> str:
    """Per group (protocol x model pair): what was run, the ranking table (``columns.markdown_of``) and its
    verdict with the rule that decided it, as the page shows them. Several groups get a warning first: each
    has its own data, teacher and students, so only rows of one table compare."""
    groups = [(p, m) for p, m in board.groups if protocol in (None, p) and models in (None, m)]
    if not groups:
        return "(no submissions)"
    parts = [] if len(groups) == 1 else [
        "Each table below is one protocol and model pair, with its own data, weak teacher and students: compare "
        "rows within a table, never numbers across tables (a protocol's new version is a new table)."]
    for p, m in groups:
        table = ranking(board, p, m)
        label = md_escape(group_label(p, m))
        parts += [*([f"### {label}"] if len(groups) > 1 else []), *map(_context_md, context(board, table)),
                  markdown_of(shown(table, board=board)), f"**Verdict on {label}:** {md_escape(verdict(board, table).text())}"]
    return "\n\n".join(parts)
