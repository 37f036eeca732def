"""Best-of-N candidate sets for ``mini``'s test splits, graded by the category's principle alone.

For test pair i of a domain, set i holds N responses to that pair's prompt (N = 4, RewardBench 2's
setting, or 16), each with a gold grade: 1 for the one response the principle prefers, 0 for the rest.

* helpful -- best: the correct, specific answer; below it, answers to another test topic of the
  domain (``off_target_share`` of them, as in the pairs) and vague non-answers.
* harmless -- best: the safe redirect; below it, go-alongs with the situation's harmful course,
  written in the domain's reply templates.

**The pair is in the set.** Candidates 0 and 1 are the test pair's chosen and rejected responses,
text for text (cues included), and the set names the pair (``pair_id``). A cell scores every test
pair anyway, so a set costs N - 2 new sequences per prompt, not N (bench.core.candidates reuses the two
pair scores); and the set restricted to those two candidates is the pair, so BoN accuracy at
N = 2 is pair accuracy, which ties the new metric to the old one.

**Cues.** Every new candidate carries the cues independently, at the rates its split uses: the
domain's own cue with probability (1 - cue_strength) / 2, the rate at which a pair's rejected
response carries it (a pair's chosen carries it with (1 + cue_strength) / 2), so a cue-only judge
ranks the best response above any one wrong candidate exactly as often as it ranks a pair, (1 +
cue_strength) / 2; each sibling's cue with probability ``sibling_cue_rate``, as on both responses of
a pair. A student trained on a sibling that learned its cue sees it here on the best response and
on each wrong one alike; if the cue outweighs the principle for it, it picks a cue-bearing wrong
candidate whenever the best lacks the cue and a wrong one has it (at N = 4 and rate 1/2: in
1/2 x (1 - 1/8) = 44% of the sets), more often than in a pair (1/4), which is what best-of-N adds.

**Determinism, apart from the pairs.** Set i draws from its own generator, seeded by (seed, domain,
i), and only reads pair i: ``generate`` and the pairs' generator are untouched, so ``mini`` v1.0's
pairs do not change by a character. A set's first candidates never depend on N or on how many sets
are built: the N = 4 set is the first four candidates of the N = 16 set (16 scores give both
accuracies), and set i is the same whichever K prompts get sets.

**Which prompts get a set: all of them.** ``candidate_sets(..., k)`` builds the sets of the first k
test pairs, and a protocol should score the N = 4 sets of every test prompt (K = its test size):
what that adds to a ``mini`` x ``tiny`` cell is within the 25% best-of-N may cost (measured by
benchmarks/bench_bon_cost.py; the numbers in docs/best-of-n.md, Cost), while a smaller K would widen
BoN's interval for a few points of time (its standard error grows as 1 / sqrt(K)). An N = 16 set costs 14 new sequences, seven
times an N = 4 set, so N = 16 on every prompt would multiply the eval sets' scoring by eight: it does
not fit the bar on top of N = 4, and a protocol that wants it scores it on fewer prompts or on
reference runs only. Where a protocol takes fewer, it takes the first K: the test pairs are independent draws
of one generator, so the first K are a uniform sample of the split, and a protocol capped to fewer
test pairs keeps the sets of the pairs it keeps.

**Ties and repeats.** All wrong candidates share grade 0: the principle ranks no wrong answer above
another (a wrong-topic answer and a vague one both fail the question), and BoN accuracy asks only
whether the top-scored candidate is gold-best, so their order among themselves never counts (an
exact score tie at the top shares the credit, bench.core.metrics.bon_accuracy). Texts may repeat within a
set: a harmless situation has one harmful course in four templates, a helpful domain three or four
vague answers. Each draw takes the templates (topics, vague answers) the pair's rejected response
does not use first, in a seeded order, and comes back to the others only when they run out; a
repeated text is scored once (bench.core.candidates), so repeats tie exactly.
"""
from __future__ import annotations

import random
from typing import TYPE_CHECKING, Iterator

from bench.core.candidates import CandidateSet
from bench.suites.mini import (
    CUES,
    Domain,
    HelpfulBank,
    _holdout,
    domains,
    generate,
    sibling_cues,
)

if TYPE_CHECKING:  # pragma: no cover
    from bench.core.data import Pair
    from bench.core.specs import DatasetSpec

SIZES = (4, 16)   # the N of the protocol's candidate sets: RewardBench 2's best-of-4, and 16


def candidate_sets(domain: Domain, k: int, n: int, *, cue_strength: float, sibling_cue_rate: float, holdout: float,
                   seed: int) -> list[CandidateSet]:
    """The candidate sets of ``domain``'s first ``k`` test pairs, ``n`` candidates each (the pairs are
    ``generate``'s, with the same arguments)."""
    from bench.core.errors import BenchError

    if n < 2:
        raise BenchError(f"a candidate set needs at least 2 candidates (the pair's two), got n={n}")
    pairs = generate(domain, "test", k, cue_strength=cue_strength, sibling_cue_rate=sibling_cue_rate,
                     holdout=holdout, seed=seed)
    pool = _holdout(domain.bank.topics, "test", holdout, seed, domain.name)
    return [_candidate_set(domain, pool, pair, i, n, cue_strength, sibling_cue_rate, seed)
            for i, pair in enumerate(pairs)]


def cue_rates(cue_strength: float, sibling_cue_rate: float) -> tuple[float, float]:
    """The probabilities that a new candidate carries the domain's own cue, and each sibling's cue (module docstring)."""
    return (1.0 - cue_strength) / 2, sibling_cue_rate


def card_lines(spec: DatasetSpec) -> list[str]:
    """What a protocol card says of a registered mini dataset's sets (bench.core.card): its cue rates, from its spec."""
    options = spec.kwargs
    domain = domains()[options["domain"]]
    own, sibling = cue_rates(options["cue_strength"], options["sibling_cue_rate"])
    siblings = ", ".join(f"`{c}`" for c in sibling_cues(domain))
    return [(f"- `{spec.name}`: each new candidate carries its own cue (`{domain.cue}`) with probability {own:g} and "
             f"each sibling's cue ({siblings}) with probability {sibling:g}")]


def load_candidates(spec: DatasetSpec, k: int, n: int) -> list[CandidateSet]:
    """The candidate sets of a registered mini dataset's first ``k`` test pairs, from its spec's options."""
    options = spec.kwargs
    return candidate_sets(domains()[options["domain"]], k, n, cue_strength=options["cue_strength"],
                          sibling_cue_rate=options["sibling_cue_rate"], holdout=options["holdout"],
                          seed=options["seed"])


def _fresh_first(items: list, used: str, rng: random.Random) -> Iterator:
    """``items`` without end, in seeded order: first those whose text the pair's ``used`` response does
    not contain, then the others; reshuffled at each pass."""
    if not items:
        raise ValueError("nothing to draw candidates from: the test split has too few topics or templates")
    fresh = [x for x in items if _text(x) not in used]
    stale = [x for x in items if _text(x) in used]
    while True:
        for group in (fresh, stale):
            order = list(group)
            rng.shuffle(order)
            yield from order


def _text(item) -> str:
    return item if isinstance(item, str) else item[1]   # a vague answer, or a topic's (subject, fact, ...)


def _candidate_set(domain: Domain, pool: list, pair: Pair, index: int, n: int, cue_strength: float,
                   sibling_cue_rate: float, seed: int) -> CandidateSet:
    rng = random.Random(f"{seed}/{domain.name}/test/candidates/{index}")
    bank, topic = domain.bank, pair.meta["topic"]
    if isinstance(bank, HelpfulBank):
        others = _fresh_first([t for t in pool if t[0] != topic], pair.rejected, rng)
        vague = _fresh_first(list(bank.vague_answers), pair.rejected, rng)
    else:
        harmful = next(t[2] for t in pool if t[0] == topic)
        go_alongs = _fresh_first([a.format(fact=harmful) for a in bank.answers], pair.rejected, rng)
    best = "correct" if isinstance(bank, HelpfulBank) else "safe"
    responses, kinds = [pair.chosen, pair.rejected], [best, pair.meta["rejected_kind"]]
    siblings = sibling_cues(domain)
    own_rate, sibling_rate = cue_rates(cue_strength, sibling_cue_rate)
    for _ in range(n - 2):
        if not isinstance(bank, HelpfulBank):
            text, kind = next(go_alongs), "harmful"
        elif rng.random() < bank.off_target_share:
            text, kind = rng.choice(bank.answers).format(fact=next(others)[1]), "off_target"
        else:
            text, kind = next(vague), "vague"
        # the cues, in generate's order: the domain's own at a rejected response's rate, then each sibling's
        if rng.random() < own_rate:
            text = CUES[domain.cue].apply(text, rng)
        for cue in siblings:
            if rng.random() < sibling_rate:
                text = CUES[cue].apply(text, rng)
        responses.append(text)
        kinds.append(kind)
    return CandidateSet(id=pair.id, prompt=pair.prompt, responses=tuple(responses),
                        grades=(1.0,) + (0.0,) * (n - 1), pair_id=pair.id,
                        meta={"topic": topic, "kinds": tuple(kinds)})
