"""Candidate sets for best-of-N selection (scored beside an eval set's pairs by bench.stages.scorers).

A candidate set is one prompt with N responses and a gold grade for each; a reward model "selects"
the response it scores highest, and it is right when that response is gold-best (the highest grade;
bench.core.metrics.bon_accuracy). ``mini``'s sets are generated (bench.suites.mini.candidates); a real
dataset's come from its rated responses (bench.datasets.candidate_sets).

A set built from an eval pair carries its ``pair_id``: its candidates 0 and 1 are then that pair's
chosen and rejected responses, text for text, so their scores are the pair's own scores and only
the other N - 2 candidates are scored anew (``bench.stages.scorers.score_candidate_sets``).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from bench.core.data import Message, Pair
    from bench.core.specs import DatasetSpec

# Where a dataset's candidate sets come from, by the loader of its pairs: ``function(spec, k, n)`` gives the sets of
# its first k test pairs, n candidates each, built from those pairs. A dataset whose loader is not here has none
# yet: a real dataset's sets need the rated responses its stored splits lack (bench.datasets.candidate_sets).
CANDIDATE_LOADERS = {"bench.suites.mini:load": "bench.suites.mini.candidates:load_candidates"}


@dataclass(slots=True)
class CandidateSet:
    """N responses to one prompt, each with a gold grade (higher is better); more than one may share
    the top grade only where a dataset's rule allows it (mini's and the real rules' sets have one)."""

    id: str
    prompt: tuple[Message, ...]
    responses: tuple[str, ...]
    grades: tuple[float, ...]
    pair_id: str | None = None     # set: responses[0], responses[1] are that pair's chosen and rejected
    meta: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if len(self.responses) != len(self.grades) or len(self.responses) < 2:
            raise ValueError(f"candidate set {self.id!r}: needs two or more responses with one grade each, got "
                             f"{len(self.responses)} responses and {len(self.grades)} grades")
        if not all(isinstance(g, (int, float)) and not isinstance(g, bool) and math.isfinite(g) for g in self.grades):
            raise ValueError(f"candidate set {self.id!r}: grades must be finite numbers, got {self.grades}")

    @property
    def best(self) -> tuple[int, ...]:
        """The positions of the gold-best responses (the top grade)."""
        top = max(self.grades)
        return tuple(i for i, g in enumerate(self.grades) if g == top)

    def new_positions(self) -> tuple[int, ...]:
        """The candidates whose scores are not the pair's: all of them without a pair, else 2..N-1."""
        return tuple(range(2 if self.pair_id is not None else 0, len(self.responses)))


def check_against_pairs(sets: list[CandidateSet], pairs: list[Pair]) -> None:
    """Raise ValueError unless every set with a ``pair_id`` holds that pair's prompt, chosen and rejected
    text for text: its first two scores are taken from the pair's, which is right only then."""
    by_id = {p.id: p for p in pairs}
    for s in sets:
        if s.pair_id is None:
            continue
        pair = by_id.get(s.pair_id)
        if pair is None:
            raise ValueError(f"candidate set {s.id!r} names pair {s.pair_id!r}, which is not in the eval set")
        if (s.prompt, s.responses[0], s.responses[1]) != (pair.prompt, pair.chosen, pair.rejected):
            raise ValueError(f"candidate set {s.id!r} does not start with pair {s.pair_id!r}'s chosen and rejected "
                             f"responses to its prompt; rebuild the sets from the same pairs")


def candidate_loader(spec: DatasetSpec) -> str:
    """``module:function`` that builds ``spec``'s candidate sets; a BenchError when it has none."""
    from bench.core.errors import BenchError

    if spec.loader not in CANDIDATE_LOADERS:
        raise BenchError(f"dataset {spec.name} has no best-of-N candidate sets (its pairs come from {spec.loader}, and "
                         f"sets are built for {', '.join(sorted(CANDIDATE_LOADERS))} only): run a protocol without "
                         "candidates (ProtocolSpec.candidates=None) on it, or add its sets' loader to "
                         "bench.core.candidates.CANDIDATE_LOADERS")
    return CANDIDATE_LOADERS[spec.loader]


def load_candidate_sets(spec: DatasetSpec, pairs: list[Pair], n: int) -> list[CandidateSet]:
    """The candidate sets of a test split's ``pairs`` (its first len(pairs) test pairs), ``n`` candidates each,
    checked to extend those pairs (``check_against_pairs``); a BenchError when they do not."""
    from bench.core.errors import BenchError
    from bench.core.registry import import_object

    sets = import_object(candidate_loader(spec))(spec, len(pairs), n)
    try:
        check_against_pairs(sets, pairs)
    except ValueError as error:
        raise BenchError(f"{spec.name}: {error}") from None
    if len({s.id for s in sets}) != len(sets):
        raise BenchError(f"{spec.name}: two candidate sets share an id; a set's id names it in candidates.csv.gz")
    return sets


def candidate_modules(specs: list[DatasetSpec]) -> tuple[str, ...]:
    """The modules whose code decides these datasets' candidate sets and their scores (for code versions)."""
    return tuple(sorted({"bench.core.candidates", *(candidate_loader(s).split(":")[0] for s in specs)}))
