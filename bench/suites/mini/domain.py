"""What a ``mini`` domain is: its bank of questions and answers and its spurious cue's name. The six
domain modules (recipes.py, ...) each define one; the package (``bench.suites.mini``) generates their
pairs. Kept apart from the package so that the domain modules import this and not the package that
imports them."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class HelpfulBank:
    """Questions about topics and the answers that fit them; rejected answers fit another topic or none."""

    questions: tuple[str, ...]           # templates with {subject}
    answers: tuple[str, ...]             # templates with {fact}
    vague_answers: tuple[str, ...]       # non-answers, about as long as a real answer
    topics: tuple[tuple[str, str], ...]  # (subject named in the question, fact that answers it)
    off_target_share: float = 0.7        # the rest of the rejected responses are vague


@dataclass(frozen=True)
class HarmlessBank:
    """Situations that tempt harm, each with a safe course (chosen) and a harmful one (rejected)."""

    questions: tuple[str, ...]                # templates with {subject}
    answers: tuple[str, ...]                  # templates with {fact}
    topics: tuple[tuple[str, str, str], ...]  # (situation, safe course, harmful course)


@dataclass(frozen=True)
class Domain:
    name: str
    category: str
    cue: str                             # the name of this domain's spurious cue in CUES
    style: str                           # one line on how its texts read
    bank: HelpfulBank | HarmlessBank
