"""The real protocol's best-of-N candidate sets: a real dataset's rated responses to one prompt -> a CandidateSet.

A candidate-set normaliser is a total function ``row -> CandidateSet | DropReason``, like a pair
normaliser (bench/datasets/rows.py: the same ``normalizer`` decorator, field helpers and drop
reasons); the loader sets each set's id. Every set has exactly one gold-best response: a set whose
top grade is shared is dropped, as a pair normaliser drops a tie. With two gold-best responses of
four, picking either earns full credit, so chance would be 50% in that set and 25% in the others,
and BoN accuracies would stop meaning the same thing across sets and datasets.

* **UltraFeedback** -- the original ``openbmb/UltraFeedback`` schema (``instruction`` and four
  ``completions``, each with a ``response`` and four aspect ratings under ``annotations``).
  ``HuggingFaceH4/ultrafeedback_binarized``, the copy the pair protocol reads, cannot give a set: it
  keeps two of the four completions per prompt (``chosen``, ``rejected``, ``score_chosen``,
  ``score_rejected``; ``../shared/realdata``'s schema notes and its sample hold no other responses).
  openbmb/UltraFeedback has one split (``train``); the sets of the pair protocol's test prompts
  (``test_prefs``) are its rows whose instruction is a test prompt, found by ``prompt_id``, which
  the schema notes give as the sha256 of the prompt (not checked on real rows: none are here).
* **HelpSteer3** -- its preference rows have two responses each (``response1``, ``response2``), so a
  set of more than two exists only where several rows share one ``context``; rows are grouped by
  context first (``group_by_context``). How often contexts repeat in HelpSteer3 was not checked
  here: the dataset is not available offline.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

from bench.core.candidates import CandidateSet
from bench.datasets.rows import (
    DropReason,
    Malformed,
    get,
    get_choice,
    get_str,
    messages,
    normalizer,
)

UF_ASPECTS = ("helpfulness", "honesty", "instruction_following", "truthfulness")
UF_COMPLETIONS = 4

ULTRAFEEDBACK_RULE = (
    "openbmb/UltraFeedback rows: prompt = [user: instruction] (each completion's custom system prompt is left "
    "out, as in the binarized pairs); candidates = the four completions' responses; grade = the mean of the "
    "completion's four aspect ratings (helpfulness, honesty, instruction_following, truthfulness; 1-5; an "
    "'N/A' rating is left out of the mean); dropped: rows without exactly four completions, a completion with "
    "no 1-5 rating, an empty response, two identical responses, or a top grade shared by two completions")

HELPSTEER3_RULE = (
    "nvidia/HelpSteer3 preference rows grouped by context: prompt = context; candidates = the distinct responses "
    "of the context's rows (three or more, else it is a pair, not a set); gold-best = the response that every row "
    "comparing it with another prefers (overall_preference < 0 prefers response1, > 0 response2), compared with "
    "each other response in at least one row; grade 1 for it, 0 for the others (pairwise preferences rank no "
    "further); dropped: groups without such a response, an empty response, or a row comparing a response "
    "with itself")


def _rating(value: Any, where: str) -> int | None:
    """A 1-5 aspect rating (a digit string in the original, an int in some copies); ``None`` for 'N/A'."""
    if value == "N/A":
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 5:
        return value
    raise Malformed(f"{where} is not a rating 1-5 or 'N/A'")


def one_best(prompt: tuple, responses: list[str], grades: list[float], meta: dict) -> CandidateSet | DropReason:
    """The checks every real candidate set shares (pair checks of bench.datasets.rows.make_pair, and one gold-best)."""
    responses = [r.strip() for r in responses]
    if not all(responses):
        return DropReason("empty response")
    if len(set(responses)) < len(responses):
        return DropReason("identical responses")
    if not prompt or prompt[-1][0] != "user":
        return DropReason("prompt does not end with a user turn")
    if grades.count(max(grades)) > 1:
        return DropReason("tie at the top: two responses share the best grade")
    return CandidateSet(id="", prompt=prompt, responses=tuple(responses), grades=tuple(grades), meta=meta)


@normalizer
def normalize_ultrafeedback(row: dict) -> CandidateSet | DropReason:
    instruction = get_str(row, "instruction")
    completions = get(row, "completions", (list, tuple), "a list of completions")
    if len(completions) != UF_COMPLETIONS:
        return DropReason(f"not {UF_COMPLETIONS} completions")
    responses, grades, models = [], [], []
    for k, completion in enumerate(completions):
        if not isinstance(completion, dict):
            raise Malformed(f"completion {k} is not an object")
        responses.append(get_str(completion, "response"))
        annotations = get(completion, "annotations", dict, "an object of aspect ratings")
        ratings = []
        for aspect in UF_ASPECTS:
            rating = _rating(get(annotations, aspect, dict, "an object with a 'Rating'").get("Rating"),
                             f"completion {k}'s {aspect} rating")
            if rating is not None:
                ratings.append(rating)
        if not ratings:
            return DropReason("unrated completion: no aspect has a 1-5 rating")
        grades.append(sum(ratings) / len(ratings))
        models.append(completion.get("model") if isinstance(completion.get("model"), str) else None)
    meta = {"models": models, **({"source": row["source"]} if isinstance(row.get("source"), str) else {})}
    return one_best((("user", instruction),), responses, grades, meta)


def group_by_context(rows: Iterable[Any]) -> list[dict]:
    """HelpSteer3 rows as ``{"context": ..., "rows": [...]}`` groups, one per distinct context, in the
    order of each context's first row; a row without a usable context is a group of its own (and is
    then dropped as malformed by ``normalize_helpsteer3``)."""
    groups: dict[str, dict] = {}
    for k, row in enumerate(rows):
        context = row.get("context") if isinstance(row, dict) else None
        try:
            key = json.dumps(context, sort_keys=True) if isinstance(context, list) else f"#row{k}"
        except TypeError:   # not JSON: no context to share
            key = f"#row{k}"
        has_context = isinstance(row, dict) and "context" in row   # else the group says it is missing
        groups.setdefault(key, {"context": context, "rows": []} if has_context else {"rows": []})["rows"].append(row)
    return list(groups.values())


@normalizer
def normalize_helpsteer3(group: dict) -> CandidateSet | DropReason:
    rows = get(group, "rows", list, "a list of rows")
    prompt = messages(get(group, "context", (list, tuple), "a list of {role, content}"), "context")
    responses: list[str] = []
    verdicts: dict[tuple[int, int], set[int]] = {}   # (i, j), i < j -> signs: -1 i better, 1 j better, 0 a tie
    for row in rows:
        if not isinstance(row, dict):
            raise Malformed("a row is not an object")
        if messages(get(row, "context", (list, tuple), "a list of {role, content}"), "context") != prompt:
            raise Malformed("a row of the group has another context")
        first, second = (get_str(row, key).strip() for key in ("response1", "response2"))
        preference = get_choice(row, "overall_preference", (-3, -2, -1, 0, 1, 2, 3))
        if first == second:
            return DropReason("identical responses")
        for text in (first, second):
            if text not in responses:
                responses.append(text)
        i, j = responses.index(first), responses.index(second)
        sign = (preference > 0) - (preference < 0)
        verdicts.setdefault((min(i, j), max(i, j)), set()).add(sign if i < j else -sign)
    if len(responses) < 3:
        return DropReason("two responses: a pair, not a candidate set")

    def beats(b: int, r: int) -> bool:   # every row comparing b and r prefers b, and one does
        signs = verdicts.get((min(b, r), max(b, r)))
        return bool(signs) and signs == {-1 if b < r else 1}

    best = [b for b in range(len(responses)) if all(beats(b, r) for r in range(len(responses)) if r != b)]
    if not best:
        return DropReason("no response preferred over every other one")
    grades = [1.0 if k == best[0] else 0.0 for k in range(len(responses))]
    return one_best(prompt, responses, grades, {"rows": len(rows)})
