"""The board as HTML: one jinja2 environment with autoescape for the app's lines above the table and its
ranking, and for the static page, so both show the same table, the same way, and submission text only
ever as text. The CSS and the script (search, sorting, CSV) are files beside the templates, shared the
same way. About is markdown, rendered from our own template and CITATION.cff (no submission text)."""
from __future__ import annotations

from functools import cache
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from leaderboard.columns import View
from leaderboard.context import Context, DataLine
from leaderboard.ranking import Verdict

TEMPLATES = Path(__file__).parent / "templates"
CSV_NAME = "shiftbench-ranking.csv"


@cache
def environment(markdown: bool = False) -> Environment:
    """HTML templates escape everything they are given; the markdown one (About) has no submission text."""
    return Environment(loader=PackageLoader("leaderboard", "templates"), keep_trailing_newline=True,
                       autoescape=False if markdown else select_autoescape(default=True, default_for_string=True))


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
