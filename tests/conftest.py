import dataclasses
import os

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="session")
def small_protocol():
    """mini, shrunk: one category with two domains, a few dozen pairs each."""
    from bench.protocols import PROTOCOLS

    return dataclasses.replace(PROTOCOLS.get("mini"), name="mini-test",
                               categories=(("helpful", ("mini/recipes", "mini/travel")),),
                               train_pool_size=48, test_size=24, seeds=(0,))


@pytest.fixture(scope="session")
def small_models():
    """The tiny pair with a 2-layer student and few steps, so an end-to-end run takes seconds."""
    from bench.protocols import MODEL_PAIRS

    tiny = MODEL_PAIRS.get("tiny")
    return dataclasses.replace(
        tiny, name="tiny-test",
        strong=dataclasses.replace(tiny.strong, num_layers=2),
        teacher_train=dataclasses.replace(tiny.teacher_train, epochs=1),
        student_train=dataclasses.replace(tiny.student_train, epochs=1),
    )


@pytest.fixture(scope="session")
def strong_spec():
    from bench.protocols import MODEL_PAIRS

    return MODEL_PAIRS.get("tiny").strong


@pytest.fixture(scope="session")
def registered_small(small_protocol, small_models):
    """The small protocol and model pair registered by name, so `bench` commands can run them."""
    from bench.protocols import MODEL_PAIRS, PROTOCOLS

    if small_protocol.name not in PROTOCOLS:
        PROTOCOLS.register(small_protocol.name, small_protocol)
    if small_models.name not in MODEL_PAIRS:
        MODEL_PAIRS.register(small_models.name, small_models)
    return small_protocol, small_models
