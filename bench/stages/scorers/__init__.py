"""How a trained student's rewards r(x) on the eval sets are computed (``--scorer``).

- ``hf`` (default): ``bench.stages.batches.score``, the trained model itself, in length-sorted batches.
- ``vllm``: vLLM's pooling runner (``bench/stages/scorers/vllm.py``, ``pip install -e '.[vllm]'``), for
  decoder reward models of 7-8B on a GPU: the same token ids, read at the same last token.

A scorer is ``scorer(model, sequences, batch_size, desc, *, spec, pairs) -> list[float]``, one reward
per sequence in order (``spec``: the model's ModelSpec; ``pairs``: sequences i and n/2 + i share a
prompt, which the hf scorer computes once on decoders: bench.stages.pair_rows). The teacher is always scored with ``hf``
(its scores are cached and shared by every method).
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING, Callable

from bench.core.candidates import check_against_pairs
from bench.core.errors import NonFiniteScoresError
from bench.core.registry import Registry

if TYPE_CHECKING:
    from bench.core.candidates import CandidateSet
    from bench.core.data import Pair

Scorer = Callable[..., list[float]]


def score_with_model(model, sequences, batch_size: int, desc: str = "scoring", *, spec=None, pairs: bool = False
                     ) -> list[float]:
    from bench.stages.batches import score

    return score(model, sequences, batch_size, desc=desc, pairs=pairs)


SCORERS: Registry[Scorer] = Registry("scorer")
SCORERS.register("hf", score_with_model)
SCORERS.register("vllm", "bench.stages.scorers.vllm:score_with_vllm")

# What each scorer needs, checked by ``bench run`` before any work (a scorer that cannot run on this
# machine or this student would otherwise fail only after the teacher and the student trained):
# ``check(spec)`` raises a BenchError that says what is missing. A scorer without one needs nothing.
CHECKS: dict[str, str] = {"vllm": "bench.stages.scorers.vllm:check_vllm"}


def check_scorer(name: str, spec) -> None:
    """Raise a BenchError if scorer ``name`` cannot score the student ``spec`` on this machine."""
    from bench.core.registry import import_object

    if name in CHECKS:
        import_object(CHECKS[name])(spec)


def score_eval_sets(model, formatter, evals: dict[str, list[Pair]], batch_size: int, who: str,
                    scorer: Scorer = score_with_model) -> dict[str, tuple[list[float], list[float]]]:
    """(r_chosen, r_rejected) per eval set, all sequences scored in one length-sorted pass: every
    chosen response, then every rejected one, so that pair i is sequences i and n + i."""
    chosen, rejected, spans = [], [], {}
    for name, pairs in evals.items():
        spans[name] = (len(chosen), len(pairs))
        chosen += [formatter.encode(p.prompt, p.chosen) for p in pairs]
        rejected += [formatter.encode(p.prompt, p.rejected) for p in pairs]
    rewards = scorer(model, chosen + rejected, batch_size, desc=f"scoring {who}", pairs=True)
    n = len(chosen)
    return {name: (rewards[start:start + k], rewards[n + start:n + start + k]) for name, (start, k) in spans.items()}


# What to do about a model whose scores are not finite, by who made its weights (``check_finite``'s ``fix``).
METHOD_FIX = ("its weights are broken although training finished. Check what the method does to the weights (its "
              "finish() or loss), lower the learning rate, then rerun the cell")
TEACHER_FIX = ("its weights are broken although its training finished. Lower the teacher's learning rate (the model "
               "pair's teacher_train) or check the weak model's weights, then rerun the cell")
CHECKPOINT_FIX = ("the checkpoint's weights are broken (NaN or infinite somewhere). Check it where it was trained (load "
                  "it and score a pair), save or export it again, then rerun bench evaluate")


def check_finite(scores: dict[str, tuple[list[float], list[float]]], model: str, cell: str, fix: str = METHOD_FIX
                 ) -> None:
    """Stop a cell whose model gave a NaN or infinite score: counted as a wrong pair it would make a
    wrong table that looks like a result. ``fix`` says what to do, by who made the weights."""
    for name, (chosen, rejected) in scores.items():
        bad = sum(not math.isfinite(v) for v in (*chosen, *rejected))
        if bad:
            raise NonFiniteScoresError(f"{model} gave {bad} non-finite scores (NaN or infinite) on eval set {name} "
                                       f"({cell}): {fix}; nothing was written for it")


def score_candidate_sets(model, formatter, sets: dict[str, list[CandidateSet]], pairs: dict[str, list[Pair]],
                         pair_scores: dict[str, tuple[list[float], list[float]]], batch_size: int, who: str,
                         scorer: Scorer | None = None) -> dict[str, list[list[float]]]:
    """Every candidate's score, per eval set and set, in the sets' order: the pair's scores
    (``pair_scores``, as bench.stages.scorers.score_eval_sets returns them) for candidates 0 and 1 of a set
    built from a pair, one length-sorted scorer pass for all the others.

    A response that repeats an earlier one of its set takes that one's score, so equal texts tie
    exactly (a scorer's batches agree only to float rounding) and an exact tie shares the credit.
    When every set has an even number of new candidates they go to the scorer as pairs of one
    prompt (``pairs=True``), which a decoder scores as one shared-prompt row."""
    scorer = scorer or score_with_model
    for name, its_sets in sets.items():
        check_against_pairs(its_sets, pairs[name])
    units = [(name, i, j) for name, its_sets in sets.items() for i, s in enumerate(its_sets) for j in s.new_positions()]
    even = all(len(s.new_positions()) % 2 == 0 for its_sets in sets.values() for s in its_sets)
    # pairs=True reads sequence k and n/2 + k as a pair: the first of each two new candidates, then the second
    order = (units[0::2] + units[1::2]) if even else units
    sequences = [formatter.encode(sets[name][i].prompt, sets[name][i].responses[j]) for name, i, j in order]
    rewards = dict(zip(order, scorer(model, sequences, batch_size, desc=f"scoring {who} candidates", pairs=even)
                       if sequences else []))
    out: dict[str, list[list[float]]] = {}
    for name, its_sets in sets.items():
        chosen, rejected = pair_scores[name]
        index = {p.id: k for k, p in enumerate(pairs[name])}
        out[name] = []
        for i, s in enumerate(its_sets):
            known = {}
            if s.pair_id is not None:
                k = index[s.pair_id]
                known = {0: chosen[k], 1: rejected[k]}
            first = {}   # text -> the position that scores it
            row = []
            for j, text in enumerate(s.responses):
                first.setdefault(text, j)
                row.append(known[first[text]] if first[text] in known else rewards[(name, i, first[text])])
            out[name].append(row)
    return out
