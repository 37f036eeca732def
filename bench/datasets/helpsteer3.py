"""nvidia/HelpSteer3, config ``preference``: a conversation, two responses, a graded preference -> a pair.

``overall_preference`` runs from -3 (Response 1 much better) to 3 (Response 2 much better); 0 means
about the same. Ties are dropped: they carry no preference (NeMo-RL keeps them as chosen ==
rejected == response1, which trains nothing). ``|overall_preference|`` is kept as the margin.
"""
from __future__ import annotations

from bench.core.data import Pair
from bench.datasets.rows import (
    DropReason,
    get,
    get_choice,
    get_str,
    make_pair,
    messages,
    normalizer,
)

REQUIRED_COLUMNS = ("context", "response1", "response2", "overall_preference")
RULE = ("prompt = context (user/assistant turns, last one user); overall_preference < 0 -> chosen = response1, "
        "> 0 -> chosen = response2; ties (0) are dropped; margin = |overall_preference|")


@normalizer
def normalize(row: dict) -> Pair | DropReason:
    prompt = messages(get(row, "context", (list, tuple), "a list of {role, content}"), "context")
    first, second = get_str(row, "response1"), get_str(row, "response2")
    preference = get_choice(row, "overall_preference", (-3, -2, -1, 0, 1, 2, 3))
    if preference == 0:
        return DropReason("tie: overall_preference == 0")
    chosen, rejected = (first, second) if preference < 0 else (second, first)
    meta = {"margin": abs(preference)}
    for key in ("domain", "language"):
        if isinstance(row.get(key), str):
            meta[key] = row[key]
    return make_pair(prompt, chosen, rejected, meta)
