"""Anthropic hh-rlhf (helpful-base and harmless-base): two full transcripts per row -> a pair.

Each row is ``{"chosen": str, "rejected": str}``, both whole conversations
``"\\n\\nHuman: ...\\n\\nAssistant: ..."``. The rule (as TRL's hh-rlhf-helpful-base script):

1. take the longest common character prefix of the two transcripts;
2. cut it back to the last ``"\\n\\nAssistant:"`` tag that lies wholly inside that prefix -- the
   prefix often runs on into the responses ("I'm sorry, ..." in both), so checking whether the
   prefix ends with ``"Assistant: "`` is wrong on about 440 rows of each test file;
3. the text before the tag is the prompt, the text after it in each transcript is that response;
4. the prompt is split at each ``"\\n\\nHuman:"`` / ``"\\n\\nAssistant:"`` into user/assistant turns.

Rows with an empty or identical pair of responses are dropped. Responses that themselves contain
``"Human:"`` (the model wrote on, or the transcripts diverge before the last turn) are genuine
data and kept.
"""
from __future__ import annotations

import os
import re

from bench.core.data import Pair
from bench.datasets.rows import DropReason, Malformed, get_str, make_pair, normalizer

REQUIRED_COLUMNS = ("chosen", "rejected")
RULE = ("prompt = the transcripts' longest common prefix, cut back to the last '\\n\\nAssistant:' tag both "
        "share, split into user/assistant turns at each '\\n\\nHuman:' / '\\n\\nAssistant:'; chosen/rejected = "
        "the rest of each transcript (stripped); rows with an empty or identical response are dropped, "
        "responses containing 'Human:' are kept")

ASSISTANT_TAG = "\n\nAssistant:"
_TURN = re.compile(r"\n\n(Human|Assistant):")
_ROLE = {"Human": "user", "Assistant": "assistant"}


@normalizer
def normalize(row: dict) -> Pair | DropReason:
    chosen, rejected = get_str(row, "chosen"), get_str(row, "rejected")
    shared = os.path.commonprefix([chosen, rejected])
    cut = shared.rfind(ASSISTANT_TAG)
    if cut < 0:
        return DropReason("no shared assistant turn")
    start = cut + len(ASSISTANT_TAG)
    return make_pair(parse_transcript(chosen[:cut]), chosen[start:], rejected[start:])


def parse_transcript(text: str) -> tuple[tuple[str, str], ...]:
    """``"\\n\\nHuman: a\\n\\nAssistant: b"`` -> ``(("user", "a"), ("assistant", "b"))``, contents stripped."""
    parts = _TURN.split(text)
    if parts[0].strip():
        raise Malformed("transcript does not start with '\\n\\nHuman:'")
    return tuple((_ROLE[tag], content.strip()) for tag, content in zip(parts[1::2], parts[2::2]))
