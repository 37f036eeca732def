"""The real protocol's candidate sets: normalisers on hand-written fixture rows in each dataset's original
schema (tests/fixtures/candidates; what each row tests is in the script comment beside it below)."""
import json
from pathlib import Path

import pytest

from bench.core.candidates import CandidateSet
from bench.datasets.candidate_sets import (
    group_by_context,
    normalize_helpsteer3,
    normalize_ultrafeedback,
)
from bench.datasets.rows import DropReason

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "candidates"


def _rows(name: str) -> list:
    return [json.loads(line) for line in (FIXTURES / name).read_text().splitlines()]


def test_ultrafeedback_rows_become_sets_of_four():
    out = [normalize_ultrafeedback(row) for row in _rows("ultrafeedback_openbmb.jsonl")]
    first, second = out[0], out[1]
    assert isinstance(first, CandidateSet)
    assert first.prompt == (("user", "What is the capital of France?"),)
    assert first.responses == ("Paris is the capital of France.", "Lyon.",
                               "The capital of France is Paris, on the Seine.", "France is a country in Europe.")
    assert first.grades == (4.5, 2.0, 3.75, 3.0) and first.best == (0,) and first.pair_id is None
    assert first.meta == {"models": ["gpt-4", "alpaca-7b", "vicuna-33b", "falcon-40b-instruct"],
                          "source": "evol_instruct"}
    # 'N/A' is left out of the mean: (5 + 5 + 5) / 3 beats (4 + 5 + 5 + 5) / 4
    assert isinstance(second, CandidateSet) and second.grades == (4.75, 5.0, 1.25, 2.25) and second.best == (1,)
    assert out[2:] == ["tie at the top: two responses share the best grade", "not 4 completions",
                       "unrated completion: no aspect has a 1-5 rating", "identical responses",
                       "malformed: completion 0's instruction_following rating is not a rating 1-5 or 'N/A'",
                       "empty response"]
    assert all(isinstance(reason, DropReason) for reason in out[2:])


def test_helpsteer3_rows_grouped_by_context():
    groups = group_by_context(_rows("helpsteer3_preference.jsonl"))
    assert [len(g["rows"]) for g in groups] == [3, 2, 1, 3, 1]   # contexts A, B, C, D, then the row without one
    out = [normalize_helpsteer3(g) for g in groups]
    egg = out[0]
    assert isinstance(egg, CandidateSet) and egg.prompt == (("user", "How do I boil an egg?"),)
    # A1 beats A2 and A3 directly; the A2 = A3 tie does not bear on the best
    assert egg.responses == ("Simmer it for 9 minutes, then cool it in ice water.", "Put it in the microwave.",
                             "Eggs are laid by hens.")
    assert egg.grades == (1.0, 0.0, 0.0) and egg.meta == {"rows": 3}
    assert out[1:] == ["no response preferred over every other one",   # B1 and B3 never compared
                       "two responses: a pair, not a candidate set",    # C: one row
                       "no response preferred over every other one",   # D: D1 > D2 and D2 > D1
                       "malformed: missing 'context'"]


def test_helpsteer3_tie_with_the_best_or_an_identical_pair_is_dropped():
    def row(a, b, op):
        return {"context": [{"role": "user", "content": "q"}], "response1": a, "response2": b, "overall_preference": op}
    tied = group_by_context([row("x", "y", -1), row("x", "z", 0)])
    assert normalize_helpsteer3(tied[0]) == "no response preferred over every other one"
    same = group_by_context([row("x", "y", -1), row("z", "z ", 1)])
    assert normalize_helpsteer3(same[0]) == "identical responses"
    # the order of the rows and of the sides does not change the set's best
    flipped = group_by_context([row("z", "x", 3), row("y", "x", 1)])
    best = normalize_helpsteer3(flipped[0])
    assert best.responses[best.best[0]] == "x"


@pytest.mark.parametrize("row", [None, [], "text", {}, {"instruction": 3, "completions": []},
                                 {"instruction": "q", "completions": "four"},
                                 {"instruction": "q", "completions": [1, 2, 3, 4]},
                                 {"instruction": "q", "completions": [{"response": "a", "annotations": []}] * 4},
                                 {"instruction": "q", "completions": [{"response": "a", "annotations": {
                                     "helpfulness": {"Rating": True}}}] * 4}])
def test_ultrafeedback_normaliser_never_raises(row):
    assert isinstance(normalize_ultrafeedback(row), DropReason)


@pytest.mark.parametrize("rows", [[None], [{}], [{"context": "text"}], [{"context": [{"role": "user"}]}],
                                  [{"context": [{"role": "user", "content": "q"}], "response1": "a",
                                    "response2": "b", "overall_preference": 9}],
                                  [{"context": [{"role": "user", "content": "q"}, {"x": object()}]}]])
def test_helpsteer3_normaliser_never_raises(rows):
    for group in group_by_context(rows):
        assert isinstance(normalize_helpsteer3(group), DropReason)
    assert isinstance(normalize_helpsteer3(None), DropReason)
