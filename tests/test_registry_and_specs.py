import dataclasses

import pytest

from bench.core.errors import UnknownNameError
from bench.core.protocols import DATASETS, MODEL_PAIRS, PROTOCOLS, protocol_hash
from bench.core.registry import Registry
from bench.core.specs import stable_hash


def test_did_you_mean_and_valid_choices():
    with pytest.raises(UnknownNameError) as info:
        PROTOCOLS.get("minni")
    message = str(info.value)
    assert "Did you mean 'mini'?" in message and "Valid choices: mini" in message


def test_aliases_and_lazy_references():
    reg: Registry[object] = Registry("thing")
    reg.register("json-dumps", "json:dumps", aliases=("dumps",))
    import json

    assert reg.get("dumps") is json.dumps
    with pytest.raises(ValueError):
        reg.register("dumps", "json:loads")


def test_protocol_hash_is_stable_and_sensitive():
    mini = PROTOCOLS.get("mini")
    assert protocol_hash(mini) == protocol_hash(PROTOCOLS.get("mini"))
    assert protocol_hash(dataclasses.replace(mini, test_size=mini.test_size + 1)) != protocol_hash(mini)
    assert stable_hash({"a": 1, "b": [1, 2]}) == stable_hash({"b": [1, 2], "a": 1})


def test_mini_has_the_shape_of_the_real_protocol():
    mini = PROTOCOLS.get("mini")
    categories = dict(mini.categories)
    assert set(categories) == {"helpful", "harmless"}
    for names in categories.values():
        assert len(names) == 3
        for name in names:
            assert DATASETS.get(name).category in categories
            assert set(mini.targets_of(name)) == set(names) - {name}


def test_tiny_pair_weak_is_a_cut_of_strong():
    tiny = MODEL_PAIRS.get("tiny")
    assert tiny.weak.path == tiny.strong.path and tiny.weak.num_layers == 1 and tiny.strong.num_layers is None


def test_stable_hash_reads_nested_specs_as_data():
    from bench.core.specs import canonical_json

    tiny = MODEL_PAIRS.get("tiny")
    text = canonical_json({"pair": tiny})
    assert '"num_layers":1' in text and "ModelSpec(" not in text
    with pytest.raises(TypeError):
        stable_hash({"x": object()})
