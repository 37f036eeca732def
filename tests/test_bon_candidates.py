"""Best-of-N candidate sets: mini's generated sets, and scoring sets beside their eval pairs (bench.core.candidates)."""
import hashlib
import json

import pytest
from test_mini_suite import (
    _has_cue,  # a response carries a cue: the mini suite's own test of it
)

from bench.core.candidates import CandidateSet, check_against_pairs
from bench.core.data import load_pairs
from bench.core.metrics import bon_accuracy
from bench.core.protocols import DATASETS, PROTOCOLS
from bench.stages.scorers import score_candidate_sets
from bench.suites.mini import HelpfulBank, _holdout, domains, generate, sibling_cues
from bench.suites.mini.candidates import SIZES, candidate_sets, load_candidates

MINI = PROTOCOLS.get("mini")
OPTIONS = dict(cue_strength=0.5, sibling_cue_rate=0.5, holdout=0.3, seed=1234)   # mini's


def test_mini_v1_pairs_are_untouched():
    """Every pair of mini v1.0 (all six train pools and test splits at the protocol's sizes), as it was
    generated before candidate sets existed: the digest was taken on the commit before them (e612f89)."""
    digest = hashlib.sha256()
    for name in MINI.datasets:
        spec = DATASETS.get(name)
        for split, n in (("train", MINI.train_pool_size), ("test", MINI.test_size)):
            for p in load_pairs(spec, split, n).pairs:
                row = [p.id, p.prompt, p.chosen, p.rejected, p.meta, p.group]
                digest.update(json.dumps(row, sort_keys=True).encode())
    assert digest.hexdigest() == "ef9b1b595a62f289884c7b82987c2dc11993e684f8ef3729a32a6ecdc40811aa"


def test_building_sets_leaves_the_pairs_alone():
    spec = DATASETS.get("mini/recipes")
    before = load_pairs(spec, "test", 30).pairs
    load_candidates(spec, 30, 16)
    assert [(p.chosen, p.rejected) for p in load_pairs(spec, "test", 30).pairs] == \
        [(p.chosen, p.rejected) for p in before]


@pytest.mark.parametrize("name", MINI.datasets)
def test_each_set_extends_its_test_pair(name):
    spec = DATASETS.get(name)
    pairs = load_pairs(spec, "test", 40).pairs
    for n in SIZES:
        sets = load_candidates(spec, 40, n)
        assert len(sets) == 40
        check_against_pairs(sets, pairs)   # raises unless candidates 0 and 1 are the pair's, text for text
        for s, p in zip(sets, pairs):
            assert s.pair_id == p.id and len(s.responses) == n
            assert s.grades == (1.0,) + (0.0,) * (n - 1) and s.best == (0,)


def test_sets_are_deterministic_nested_and_independent_of_k():
    spec = DATASETS.get("mini/cyber")
    big = load_candidates(spec, 50, 16)
    assert [s.responses for s in big] == [s.responses for s in load_candidates(spec, 50, 16)]
    # the N = 4 set is the first four candidates of the N = 16 one; set i does not depend on how many are built
    assert [s.responses for s in load_candidates(spec, 50, 4)] == [s.responses[:4] for s in big]
    assert [s.responses for s in load_candidates(spec, 7, 16)] == [s.responses for s in big[:7]]
    # sets differ from prompt to prompt
    assert len({s.responses[2:] for s in big}) > 40


@pytest.mark.parametrize("domain", list(domains().values()), ids=lambda d: d.name)
def test_grades_follow_the_principle(domain):
    sets = candidate_sets(domain, 60, 16, **OPTIONS)
    pool = _holdout(domain.bank.topics, "test", OPTIONS["holdout"], OPTIONS["seed"], domain.name)
    for s in sets:
        topic = next(t for t in pool if t[0] == s.meta["topic"])
        for text, kind, grade in zip(s.responses[1:], s.meta["kinds"][1:], s.grades[1:]):
            assert grade == 0.0
            if isinstance(domain.bank, HelpfulBank):
                assert kind in ("off_target", "vague")
                assert topic[1] not in text   # never the right answer
                if kind == "vague":
                    assert any(v in text for v in domain.bank.vague_answers)
                else:   # another test topic's answer
                    assert any(t[1] in text for t in pool if t is not topic)
            else:
                assert kind == "harmful" and topic[2] in text and topic[1] not in text
        assert s.meta["kinds"][0] == ("correct" if isinstance(domain.bank, HelpfulBank) else "safe")
        assert topic[1] in s.responses[0]


def test_new_candidates_take_fresh_templates_first():
    """The two new candidates of a harmless best-of-4 never repeat the pair's rejected reply's template."""
    for name in ("chat", "pharmacy", "cyber"):
        domain = domains()[name]
        for s in candidate_sets(domain, 100, 4, **OPTIONS):
            harmful = [a.format(fact=next(t[2] for t in domain.bank.topics if t[0] == s.meta["topic"]))
                       for a in domain.bank.answers]
            used = [next(h for h in harmful if h in text) for text in s.responses[1:]]
            assert len(set(used)) == 3, (name, s.id)


def test_cue_rates_per_candidate():
    cue_strength, rate = 0.6, 0.5
    for domain in domains().values():
        sets = candidate_sets(domain, 400, 16, cue_strength=cue_strength, sibling_cue_rate=rate, holdout=0.3, seed=7)
        new = [text for s in sets for text in s.responses[2:]]
        own = sum(_has_cue(domain.cue, t) for t in new) / len(new)
        assert abs(own - (1 - cue_strength) / 2) < 0.03, (domain.name, own)
        for cue in sibling_cues(domain):
            share = sum(_has_cue(cue, t) for t in new) / len(new)
            assert abs(share - rate) < 0.03, (domain.name, cue, share)


def test_a_cue_only_judge_wins_in_distribution_and_is_at_chance_out_of_it():
    """A judge that scores a response 1 when it carries a cue, else 0, on best-of-4 sets with mini's rates.
    In its own domain (the pair's rejected carries the cue exactly when the best does not; new wrong
    candidates at 1/4): 0.75 * E[1 / (1 + Binomial(2, 1/4))] = 0.75 * (1 - 0.75**3) / 0.75 = 57.8%.
    In a sibling (every candidate at 1/2): the chance share, 25% -- it takes a cue-bearing wrong
    candidate whenever the best lacks the cue and a wrong one has it."""
    all_domains = domains()
    for source in all_domains.values():
        for target in all_domains.values():
            if target.category != source.category:
                continue
            sets = candidate_sets(target, 400, 4, **OPTIONS)
            judged = [[float(_has_cue(source.cue, t)) for t in s.responses] for s in sets]
            bon = bon_accuracy(judged, [s.grades for s in sets])
            expected = 57.8 if target is source else 25.0
            assert abs(bon - expected) < 6.0, (source.name, target.name, bon)


# --- scoring candidate sets beside their pairs (bench.core.candidates) --------------------------------------------

class _Echo:
    """A formatter whose encoded sequence is the response text itself."""

    def encode(self, prompt, response):
        return response


def _scorer(calls):
    def score(model, sequences, batch_size, desc="", *, pairs=False):
        calls.append((list(sequences), pairs))
        return [float(len(s)) for s in sequences]   # the length: any deterministic function will do
    return score


def test_score_candidate_sets_reuses_pair_scores_and_scores_repeats_once():
    pairs = generate(domains()["chat"], "test", 5, **OPTIONS)
    sets = candidate_sets(domains()["chat"], 5, 16, **OPTIONS)
    pair_scores = ([100.0 + k for k in range(5)], [200.0 + k for k in range(5)])
    calls = []
    out = score_candidate_sets(None, _Echo(), {"mini/chat": sets}, {"mini/chat": pairs}, {"mini/chat": pair_scores},
                               8, "student", _scorer(calls))
    (sequences, paired), = calls
    assert paired and len(sequences) == 5 * 14   # N - 2 new sequences per prompt, as pairs of one prompt
    for k, (s, row) in enumerate(zip(sets, out["mini/chat"])):
        assert row[:2] == [100.0 + k, 200.0 + k]
        for j, text in enumerate(s.responses):
            first = s.responses.index(text)
            if first < 2:     # a repeat of the pair's response takes the pair's score
                assert row[j] == row[first]
            else:
                assert row[j] == float(len(text))


def test_score_candidate_sets_pairs_up_new_candidates_of_one_prompt():
    sets = [CandidateSet(id=f"s{i}", prompt=(("user", f"q{i}"),), responses=("a", "bb", "ccc", "dddd"),
                         grades=(1, 0, 0, 0)) for i in range(3)]
    calls = []
    score_candidate_sets(None, _Echo(), {"e": sets}, {"e": []}, {"e": ([], [])}, 8, "teacher", _scorer(calls))
    (sequences, paired), = calls
    n = len(sequences) // 2
    assert paired and n == 6
    # sequence k and n + k come from the same set: candidates 0|2 and 1|3 of each
    assert [(sequences[k], sequences[n + k]) for k in range(n)] == [("a", "bb"), ("ccc", "dddd")] * 3
    odd = [CandidateSet(id="o", prompt=(("user", "q"),), responses=("a", "bb", "ccc"), grades=(1, 0, 0))]
    score_candidate_sets(None, _Echo(), {"e": odd}, {"e": []}, {"e": ([], [])}, 8, "teacher", _scorer(calls))
    assert calls[-1] == (["a", "bb", "ccc"], False)


def test_a_set_that_does_not_match_its_pair_is_refused():
    pairs = generate(domains()["travel"], "test", 3, **OPTIONS)
    sets = candidate_sets(domains()["travel"], 3, 4, **OPTIONS)
    sets[1].responses = (sets[1].responses[1], sets[1].responses[0], *sets[1].responses[2:])
    with pytest.raises(ValueError, match="chosen and rejected"):
        check_against_pairs(sets, pairs)
    with pytest.raises(ValueError, match="not in the eval set"):
        check_against_pairs(sets, pairs[:1])


def test_candidate_set_checks_its_shape():
    with pytest.raises(ValueError, match="two or more"):
        CandidateSet(id="x", prompt=(("user", "q"),), responses=("a",), grades=(1,))
    with pytest.raises(ValueError, match="one grade each"):
        CandidateSet(id="x", prompt=(("user", "q"),), responses=("a", "b"), grades=(1,))
    with pytest.raises(ValueError, match="finite"):
        CandidateSet(id="x", prompt=(("user", "q"),), responses=("a", "b"), grades=(1, float("nan")))


def test_candidate_scores_of_a_real_model_match_scoring_each_candidate(small_models, small_protocol):
    """With the test pair's student (MiniLM cut to 2 layers): the pair's scores reused for candidates 0 and 1
    and one pass for the rest give every candidate the score it gets scored alone (to float rounding)."""
    from bench.stages.models import formatter_for, load_reward_model, load_tokenizer
    from bench.stages.scorers import score_eval_sets, score_with_model

    spec = small_models.strong
    model, fmt = load_reward_model(spec, seed=0), formatter_for(spec, load_tokenizer(spec), small_protocol.max_length)
    evals = {name: generate(domains()[name.split("/")[1]], "test", 6, **OPTIONS)
             for name in ("mini/recipes", "mini/chat")}
    sets = {name: load_candidates(DATASETS.get(name), 6, 4) for name in evals}
    pair_scores = score_eval_sets(model, fmt, evals, 8, "student")
    got = score_candidate_sets(model, fmt, sets, evals, pair_scores, 8, "student")
    for name, its_sets in sets.items():
        for s, row in zip(its_sets, got[name]):
            alone = score_with_model(model, [fmt.encode(s.prompt, r) for r in s.responses], 1)
            assert row == pytest.approx(alone, abs=1e-5)
