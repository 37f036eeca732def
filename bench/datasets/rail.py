"""responsible-ai-labs/RAIL-HH-10K: earlier turns as text, the last user turn, two responses -> a pair.

``context`` holds the earlier turns as lines that start ``Human:`` or ``Assistant:``; a line that
starts with neither continues the message above it (answers run over several lines). ``prompt``
is the final user turn. The prompt messages are the parsed context plus that turn.
"""
from __future__ import annotations

import math

from bench.core.data import Message, Pair
from bench.datasets.rows import (
    DropReason,
    Malformed,
    get,
    get_str,
    make_pair,
    normalizer,
)

REQUIRED_COLUMNS = ("context", "prompt", "chosen_text", "rejected_text")
RULE = ("prompt = parse(context) + [user: prompt], where each context line starting 'Human:' / 'Assistant:' "
        "opens a user / assistant message and other lines continue the previous one; chosen = chosen_text, "
        "rejected = rejected_text; margin = chosen_rail_score - rejected_rail_score when both are given")

_TAGS = {"Human:": "user", "Assistant:": "assistant"}


@normalizer
def normalize(row: dict) -> Pair | DropReason:
    context = get(row, "context", (str, type(None)), "a string")
    prompt = parse_context(context or "") + (("user", get_str(row, "prompt").strip()),)
    meta = {}
    scores = row.get("chosen_rail_score"), row.get("rejected_rail_score")
    if all(isinstance(s, (int, float)) and not isinstance(s, bool) and math.isfinite(s) for s in scores):
        meta["margin"] = scores[0] - scores[1]
    return make_pair(prompt, get_str(row, "chosen_text"), get_str(row, "rejected_text"), meta)


def parse_context(text: str) -> tuple[Message, ...]:
    """``"Human: a\\nmore\\nAssistant: b"`` -> ``(("user", "a\\nmore"), ("assistant", "b"))``."""
    turns: list[list] = []
    for line in text.splitlines():
        tag = next((t for t in _TAGS if line.startswith(t)), None)
        if tag is not None:
            turns.append([_TAGS[tag], line[len(tag):]])
        elif turns:
            turns[-1][1] += "\n" + line
        elif line.strip():
            raise Malformed("'context' does not start with 'Human:' or 'Assistant:'")
    return tuple((role, content.strip()) for role, content in turns)
