import random

from bench.core.data import load_pairs
from bench.core.protocols import DATASETS, PROTOCOLS
from bench.suites.mini import _ELABORATIONS, CUES, domains, generate


def _has_cue(cue: str, text: str) -> bool:
    if cue == "length":
        return any(e in text for e in _ELABORATIONS)
    prefix, suffix = CUES[cue].apply("X", random.Random(0)).split("X")
    return (not prefix or prefix in text) and (not suffix or suffix in text)


def test_generation_is_deterministic():
    spec = DATASETS.get("mini/travel")
    a = load_pairs(spec, "train", 50).pairs
    b = load_pairs(spec, "train", 50).pairs
    assert [(p.prompt, p.chosen, p.rejected) for p in a] == [(p.prompt, p.chosen, p.rejected) for p in b]


def test_test_topics_are_held_out_of_train():
    for name in PROTOCOLS.get("mini").datasets:
        spec = DATASETS.get(name)
        train = {p.meta["topic"] for p in load_pairs(spec, "train", 600).pairs}
        test = {p.meta["topic"] for p in load_pairs(spec, "test", 300).pairs}
        assert train and test and not train & test, name


def test_cue_tracks_the_label_in_its_domain_and_not_in_siblings():
    all_domains = domains()
    for domain in all_domains.values():
        own = generate(domain, "train", 2000, cue_strength=0.6, sibling_cue_rate=0.5, holdout=0.3, seed=1)
        on_chosen = sum(_has_cue(domain.cue, p.chosen) and not _has_cue(domain.cue, p.rejected) for p in own) / len(own)
        assert abs(on_chosen - 0.8) < 0.04, (domain.name, on_chosen)  # (1 + 0.6) / 2
        for sibling in all_domains.values():
            if sibling.category != domain.category or sibling is domain:
                continue
            other = generate(sibling, "test", 2000, cue_strength=0.6, sibling_cue_rate=0.5, holdout=0.3, seed=1)
            only_chosen = sum(_has_cue(domain.cue, p.chosen) and not _has_cue(domain.cue, p.rejected) for p in other)
            only_rejected = sum(_has_cue(domain.cue, p.rejected) and not _has_cue(domain.cue, p.chosen) for p in other)
            # the cue is noise there: as often on the rejected side as on the chosen side
            assert abs(only_chosen - only_rejected) / len(other) < 0.05, (domain.name, sibling.name)


def test_domains_differ_in_prompts_and_responses():
    texts = {}
    for domain in domains().values():
        pairs = generate(domain, "train", 200, cue_strength=0.8, sibling_cue_rate=0.5, holdout=0.3, seed=0)
        texts[domain.name] = {w for p in pairs for w in p.prompt[0][1].lower().split()}
    names = list(texts)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            overlap = len(texts[a] & texts[b]) / min(len(texts[a]), len(texts[b]))
            assert overlap < 0.5, (a, b, overlap)


def test_chosen_and_rejected_are_written_alike():
    """Safe and harmful courses are about as long, so length alone does not tell them apart."""
    for domain in domains().values():
        if domain.category != "harmless":
            continue
        diffs = [len(safe.split()) - len(harmful.split()) for _, safe, harmful in domain.bank.topics]
        longer = sum(d > 0 for d in diffs) / len(diffs)
        shorter = sum(d < 0 for d in diffs) / len(diffs)
        assert abs(longer - shorter) < 0.2 and abs(sum(diffs) / len(diffs)) < 1.0, (domain.name, longer, shorter)
