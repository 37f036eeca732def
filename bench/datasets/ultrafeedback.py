"""HuggingFaceH4/ultrafeedback_binarized (``train_prefs`` / ``test_prefs``): two chats -> a pair.

``chosen`` and ``rejected`` are whole chats (``[user, assistant]``); the prompt is everything
before the last message, and must be the same in both (else the row is dropped: the two responses
would answer different prompts). Rows whose two scores are equal are dropped: the binarisation
picked "chosen" among equals, so the label is arbitrary (``train_prefs[0]`` is 8.5 vs 8.5).
Copies of the dataset that kept only ``chosen`` and ``rejected`` (the real rows under
``../shared/realdata`` are one) cannot apply that rule; their identical-response ties are still
dropped (by ``make_pair``), and their pairs carry no margin.
"""
from __future__ import annotations

from bench.core.data import Pair
from bench.datasets.rows import (
    DropReason,
    Malformed,
    get,
    get_number,
    make_pair,
    messages,
    normalizer,
)

REQUIRED_COLUMNS = ("chosen", "rejected")
RULE = ("prompt = chosen[:-1] (dropped unless equal to rejected[:-1]); chosen/rejected = the last message's "
        "content; rows with score_chosen == score_rejected (ties) or score_chosen < score_rejected are dropped; "
        "margin = score_chosen - score_rejected; a copy without the score columns keeps its rows (no margin)")


@normalizer
def normalize(row: dict) -> Pair | DropReason:
    chosen = messages(get(row, "chosen", (list, tuple), "a list of {role, content}"), "chosen")
    rejected = messages(get(row, "rejected", (list, tuple), "a list of {role, content}"), "rejected")
    for key, chat in (("chosen", chosen), ("rejected", rejected)):
        if not chat or chat[-1][0] != "assistant":
            raise Malformed(f"{key!r} does not end with an assistant message")
    if chosen[:-1] != rejected[:-1]:
        return DropReason("prompt mismatch: chosen[:-1] != rejected[:-1]")
    if "score_chosen" not in row and "score_rejected" not in row:
        return make_pair(chosen[:-1], chosen[-1][1], rejected[-1][1])
    score_chosen, score_rejected = get_number(row, "score_chosen"), get_number(row, "score_rejected")
    if score_chosen == score_rejected:
        return DropReason("tie: score_chosen == score_rejected")
    if score_chosen < score_rejected:
        return DropReason("contradiction: score_chosen < score_rejected")
    return make_pair(chosen[:-1], chosen[-1][1], rejected[-1][1], {"margin": score_chosen - score_rejected})
