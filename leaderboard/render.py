"""The board as HTML: one jinja2 environment with autoescape for the app's ranking and context line
and for the static page, so both show the same table, the same way, and submission text only ever as
text. The CSS and the script (sorting, CSV) are files beside the templates, shared the same way."""
from __future__ import annotations

from functools import cache
from pathlib import Path

from jinja2 import Environment, PackageLoader, select_autoescape
from markupsafe import Markup

from leaderboard import core

TEMPLATES = Path(__file__).parent / "templates"
CSV_NAME = "shiftbench-ranking.csv"


@cache
def environment() -> Environment:
    return Environment(loader=PackageLoader("leaderboard", "templates"),
                       autoescape=select_autoescape(default=True, default_for_string=True))


@cache
def css() -> str:
    return (TEMPLATES / "board.css.j2").read_text(encoding="utf-8")


@cache
def script() -> str:
    """The ranking's script, a function body of ``element`` (and, in the app, ``watch``)."""
    return (TEMPLATES / "ranking.js.j2").read_text(encoding="utf-8")


def _parts():
    return environment().get_template("parts.html.j2").module


def ranking_html(view: core.View, filename: str = CSV_NAME) -> Markup:
    return Markup(_parts().ranking_table(view, filename))


def context_html(items: list[core.Context]) -> Markup:
    return Markup(_parts().context_line(items))
