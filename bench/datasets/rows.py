"""What every normaliser shares: the drop reason type, typed field access, chat messages, the pair checks.

A normaliser is a pure function ``row -> Pair | DropReason``: it never raises on bad data. Field
helpers raise ``Malformed`` on a missing key or a wrong type; the ``normalizer`` decorator turns
that into a ``DropReason("malformed: ...")``, so normalisers read like the dataset's rule and
every malformed row is counted, not crashed on. Reasons are short fixed phrases (no row content),
so the loader can count rows by reason.
"""
from __future__ import annotations

import functools
import math
from typing import Any, Callable

from bench.core.data import Message, Pair

ROLES = ("system", "user", "assistant")


class DropReason(str):
    """Why a row gives no pair (e.g. "tie: overall_preference == 0"); counted by the loader."""


class Malformed(Exception):
    """A row that does not have the dataset's schema; becomes ``DropReason("malformed: <message>")``."""


Normalizer = Callable[[Any], "Pair | DropReason"]


def normalizer(function: Callable[[dict], Pair | DropReason]) -> Normalizer:
    """Make ``function`` total: a row that is not a dict, or a ``Malformed`` field, becomes a drop reason."""
    @functools.wraps(function)
    def wrapped(row: Any) -> Pair | DropReason:
        if not isinstance(row, dict):
            return DropReason(f"malformed: row is a {type(row).__name__}, not an object")
        try:
            return function(row)
        except Malformed as error:
            return DropReason(f"malformed: {error}")
    return wrapped


def get(row: dict, key: str, kind: type | tuple[type, ...], what: str) -> Any:
    if key not in row:
        raise Malformed(f"missing {key!r}")
    value = row[key]
    # bool is an int in Python; a flag where a number belongs is a schema error, not a 1.
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _as_tuple(kind)):
        raise Malformed(f"{key!r} is not {what}")
    return value


def _as_tuple(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def get_str(row: dict, key: str) -> str:
    return get(row, key, str, "a string")


def get_number(row: dict, key: str) -> float:
    value = get(row, key, (int, float), "a number")
    if not math.isfinite(value):
        raise Malformed(f"{key!r} is not a finite number")
    return value


def get_choice(row: dict, key: str, choices: tuple[int, ...]) -> int:
    value = get(row, key, int, "an integer")
    if value not in choices:
        raise Malformed(f"{key!r} is not one of {list(choices)}")
    return value


def messages(value: Any, key: str) -> tuple[Message, ...]:
    """A list of ``{role, content}`` objects (extra keys ignored) as ``((role, content), ...)``."""
    if not isinstance(value, (list, tuple)):
        raise Malformed(f"{key!r} is not a list of {{role, content}}")
    out = []
    for message in value:
        if not isinstance(message, dict) or not isinstance(message.get("content"), str) \
                or message.get("role") not in ROLES:
            raise Malformed(f"{key!r} has a message that is not {{role: {'|'.join(ROLES)}, content: str}}")
        out.append((message["role"], message["content"]))
    return tuple(out)


def make_pair(prompt: tuple[Message, ...], chosen: str, rejected: str, meta: dict | None = None) -> Pair | DropReason:
    """The checks every dataset shares; the loader sets the pair's id."""
    chosen, rejected = chosen.strip(), rejected.strip()
    if not chosen or not rejected:
        return DropReason("empty response")
    if chosen == rejected:
        return DropReason("identical responses")
    if not prompt or prompt[-1][0] != "user":
        return DropReason("prompt does not end with a user turn")
    return Pair(id="", prompt=prompt, chosen=chosen, rejected=rejected, meta=meta or {})
