from bench.core.data import load_pairs, random_order, split_prompt_disjoint
from bench.core.protocols import DATASETS


def _pool():
    return load_pairs(DATASETS.get("mini/travel"), "train", 600).pairs


def test_halves_are_prompt_disjoint_balanced_and_complete():
    pool = _pool()
    a, b = split_prompt_disjoint(pool, seed=3)
    assert not {p.prompt_key for p in a} & {p.prompt_key for p in b}
    assert sorted(p.id for p in a + b) == sorted(p.id for p in pool)
    assert abs(len(a) - len(b)) <= max(len([q for q in pool if q.group_key == p.group_key]) for p in pool)


def test_split_is_deterministic_per_seed():
    pool = _pool()
    first = [p.id for p in split_prompt_disjoint(pool, seed=3)[0]]
    assert first == [p.id for p in split_prompt_disjoint(pool, seed=3)[0]]
    assert first != [p.id for p in split_prompt_disjoint(pool, seed=4)[0]]


def test_pair_order_carries_no_label():
    pool = _pool() * 4
    ordered = random_order(pool, seed=0)
    share = sum(o.a_is_chosen for o in ordered) / len(ordered)
    assert 0.46 < share < 0.54  # "a always wins" would score about 50
    assert all((o.a, o.b) == ((o.pair.chosen, o.pair.rejected) if o.a_is_chosen else (o.pair.rejected, o.pair.chosen))
               for o in ordered)
    # and the coin is independent of the pair's kind
    for kind in ("off_target", "vague"):
        group = [o for o in ordered if o.pair.meta["rejected_kind"] == kind]
        assert 0.44 < sum(o.a_is_chosen for o in group) / len(group) < 0.56
    assert [o.a_is_chosen for o in ordered] == [o.a_is_chosen for o in random_order(pool, seed=0)]


def test_mini_halves_share_no_topic():
    a, b = split_prompt_disjoint(_pool(), seed=0)
    assert not {p.meta["topic"] for p in a} & {p.meta["topic"] for p in b}
