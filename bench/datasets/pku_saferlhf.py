"""PKU-Alignment/PKU-SafeRLHF: a prompt, two responses, and which one is safer -> a harmless pair.

The dataset carries two preferences: ``better_response_id`` (helpfulness; safe-rlhf trains its
reward model on it) and ``safer_response_id`` (harmlessness; its cost model). This is a harmless
source, so the chosen response is the safer one. They differ on some rows; using ``better`` there
would teach helpfulness under a harmless label. Both safety flags go into the pair's meta.
"""
from __future__ import annotations

from bench.core.data import Pair
from bench.datasets.rows import (
    DropReason,
    get,
    get_choice,
    get_str,
    make_pair,
    normalizer,
)

REQUIRED_COLUMNS = ("prompt", "response_0", "response_1", "safer_response_id",
                    "is_response_0_safe", "is_response_1_safe")
RULE = ("prompt = [user: prompt]; chosen = response_{safer_response_id}, rejected = the other "
        "(safer_response_id, not better_response_id); meta: both safety flags")


@normalizer
def normalize(row: dict) -> Pair | DropReason:
    prompt = get_str(row, "prompt")
    responses = (get_str(row, "response_0"), get_str(row, "response_1"))
    safe = (get(row, "is_response_0_safe", bool, "a boolean"), get(row, "is_response_1_safe", bool, "a boolean"))
    safer = get_choice(row, "safer_response_id", (0, 1))
    meta = {"chosen_is_safe": safe[safer], "rejected_is_safe": safe[1 - safer]}
    if isinstance(row.get("better_response_id"), int) and not isinstance(row["better_response_id"], bool):
        meta["better_is_safer"] = row["better_response_id"] == safer
    return make_pair((("user", prompt),), responses[safer], responses[1 - safer], meta)
