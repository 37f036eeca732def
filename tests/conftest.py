import dataclasses
import os
import shutil
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# Every cache the suite writes by default (teachers, label stages, the validation record: $SHIFTBENCH_CACHE) goes
# to one folder of this session, never the user's ~/.cache/shiftbench; set here, before any test module is
# imported, and inherited by the commands tests run as subprocesses. One folder, so that what one test computes
# (a teacher, a submission's validation) another reuses. SHIFTBENCH_TEST_CACHE names a folder to keep instead,
# so that a developer's next run reuses them too (a cache key holds the code that decides each entry).
# The suite runs in worker processes (pytest-xdist, pyproject's addopts): the first process to import this file
# makes the suite's folder and names it in SHIFTBENCH_SUITE_DIR, which the workers it starts inherit, so they share
# it: the cache in it (unless kept), and what tests/small_runs.py makes once for every worker.
_KEPT_CACHE = os.environ.get("SHIFTBENCH_TEST_CACHE")
_MADE_HERE = not os.environ.get("SHIFTBENCH_SUITE_DIR")
if _MADE_HERE:
    os.environ["SHIFTBENCH_SUITE_DIR"] = tempfile.mkdtemp(prefix="shiftbench-test-suite-")
os.environ["SHIFTBENCH_CACHE"] = _KEPT_CACHE or os.path.join(os.environ["SHIFTBENCH_SUITE_DIR"], "cache")
# `bench run` with several cells runs them in worker processes by default on a CPU; the tests run them
# here, where their output and monkeypatches are seen (tests/test_sweep_executors.py runs workers).
os.environ.setdefault("SHIFTBENCH_JOBS", "1")
# One torch thread in each of the suite's worker processes (and the commands they run, which inherit it): the
# workers take the cores, and a tiny model's second thread buys little speed for the CPU it takes.
if os.environ.get("PYTEST_XDIST_WORKER"):
    os.environ["OMP_NUM_THREADS"] = "1"


def pytest_unconfigure(config):
    if _MADE_HERE:   # the process that made the folder (the one that started the workers) removes it, last
        shutil.rmtree(os.environ["SHIFTBENCH_SUITE_DIR"], ignore_errors=True)


@pytest.fixture(scope="session")
def session_cache() -> Path:
    """The session's cache folder ($SHIFTBENCH_CACHE, the default --cache-dir): one teacher cache for every
    test that does not test the cache itself, so a teacher of a protocol x model pair x seed x source trains once."""
    from bench.core.settings import default_cache_dir

    return default_cache_dir()


@pytest.fixture(scope="session")
def committed_validations(registered_small):
    """submissions/ of the repository, validated once per run of the suite (the suite's costliest check) through the
    validation record of the cache its workers share, $SHIFTBENCH_CACHE/leaderboard (bench.submissions.record), which
    `bench validate` and leaderboard.core.load_board read too: the first worker to ask validates, and every later
    validation of the committed tree, in any worker, reads the outcomes from it. Shared: read them, never change them. The record's key holds every
    registered protocol and model pair, so ``registered_small``'s, which stay registered once a test asks for
    them, are registered first (the tests' other registrations are made when their modules are imported, or
    undone after the test)."""
    from bench.core.locks import file_lock, lock_path
    from bench.core.settings import default_cache_dir
    from bench.submissions.record import validate_tree

    root, cache = ROOT / "submissions", default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    # one worker validates, and the others wait for it and read its outcomes from the record
    with file_lock(lock_path(cache, "committed submissions"), "the committed submissions' validation"):
        found = validate_tree(root) if root.is_dir() else []
    if not found:
        pytest.skip("no reference submissions in submissions/")
    return found


@pytest.fixture(scope="session")
def small_protocol():
    """mini, shrunk: one category with two domains, a few dozen pairs each."""
    from bench.core.protocols import PROTOCOLS

    return dataclasses.replace(PROTOCOLS.get("mini"), name="mini-test",
                               categories=(("helpful", ("mini/recipes", "mini/travel")),),
                               train_pool_size=48, test_size=24, seeds=(0,))


@pytest.fixture(scope="session")
def bon_protocol(small_protocol):
    """The small protocol with best-of-4 candidate sets on every test prompt (ProtocolSpec.candidates)."""
    return dataclasses.replace(small_protocol, name="mini-bon-test", candidates=4)


@pytest.fixture(scope="session")
def small_models():
    """The tiny pair with a 2-layer student and few steps, so an end-to-end run takes seconds."""
    from bench.core.protocols import MODEL_PAIRS

    tiny = MODEL_PAIRS.get("tiny")
    return dataclasses.replace(
        tiny, name="tiny-test",
        strong=dataclasses.replace(tiny.strong, num_layers=2),
        teacher_train=dataclasses.replace(tiny.teacher_train, epochs=1),
        student_train=dataclasses.replace(tiny.student_train, epochs=1),
    )


@pytest.fixture(scope="session")
def strong_spec():
    from bench.core.protocols import MODEL_PAIRS

    return MODEL_PAIRS.get("tiny").strong


@pytest.fixture(scope="session")
def registered_small(small_protocol, small_models):
    """The small protocol and model pair registered by name (as ``mini-cli`` / ``tiny-cli``, so that tests
    of what happens to an unregistered ``mini-test`` are not affected), so `bench` commands can run them."""
    from bench.core.protocols import MODEL_PAIRS, PROTOCOLS

    protocol = dataclasses.replace(small_protocol, name="mini-cli")
    models = dataclasses.replace(small_models, name="tiny-cli")
    if protocol.name not in PROTOCOLS:
        PROTOCOLS.register(protocol.name, protocol)
    if models.name not in MODEL_PAIRS:
        MODEL_PAIRS.register(models.name, models)
    return protocol, models


@pytest.fixture(scope="session")
def runs(tmp_path_factory, small_protocol, small_models):
    """Real runs and their submissions on the small protocol (tests/small_runs.py), made once per session;
    a test that damages one works on a copy (``naive``). tests/test_pipeline_e2e.py has its own ``runs``."""
    from small_runs import small_runs

    return small_runs(tmp_path_factory, small_protocol, small_models)


@pytest.fixture(scope="session")
def bon_runs(tmp_path_factory, bon_protocol, small_models):
    """Real runs and their submissions on the small protocol with best-of-4 candidate sets, two seeds (so a
    difference from naive has a t-interval): naive, the ceiling and anchor; for the board's best-of-N view."""
    from small_runs import small_runs

    protocol = dataclasses.replace(bon_protocol, name="mini-bon-board", seeds=(0, 1))
    return small_runs(tmp_path_factory, protocol, small_models, (("naive", {}), ("ceiling", {}), ("anchor", {"lam": "0.5"})))


@pytest.fixture(scope="session")
def seq_runs(tmp_path_factory, bon_protocol, small_models):
    """Real runs and their submissions on a protocol seeded per source (its runs independent, a sequential plan
    with looks at 2 and 3 seeds) with best-of-4 candidate sets, as a comparison grown by bench compare
    --until-decided leaves them: naive and anchor lam=0.5 hold a third seed, the ceiling and anchor lam=2.0 the
    protocol's two; for the board's decisions over runs."""
    from small_runs import small_runs

    protocol = dataclasses.replace(bon_protocol, name="mini-seq-board", seeding="per-source", looks=(2, 3), seeds=(0, 1))
    grown = (0, 1, 2)
    return small_runs(tmp_path_factory, protocol, small_models, (
        ("naive", {}, grown), ("ceiling", {}), ("anchor", {"lam": "0.5"}, grown), ("anchor", {"lam": "2.0"})))


@pytest.fixture(scope="session")
def fresh_runs(tmp_path_factory, bon_protocol, small_models):
    """Real runs and their submissions on a protocol seeded per source whose own seed is 0 and whose plan looks at 2
    and 3 seeds: naive, its replicate 1 (which naive's submission holds) and anchor lam=0.5 at seeds 0 to 2, for a
    method chosen on the protocol's seed and decided on the two after it (bench submit --fresh-from 1), and for
    naive's replicate as each run's control on the board."""
    from small_runs import small_runs

    protocol = dataclasses.replace(bon_protocol, name="mini-fresh", seeding="per-source", looks=(2, 3), seeds=(0,))
    grown = (0, 1, 2)
    return small_runs(tmp_path_factory, protocol, small_models, (
        ("naive", {}, grown), ("naive", {}, grown, 1), ("anchor", {"lam": "0.5"}, grown)))


@pytest.fixture
def naive(runs, tmp_path):
    """A private copy of the naive submission to damage."""
    from small_runs import submission_copy

    return submission_copy(runs, tmp_path / "naive")


# --- tiny decoders (tests/decoder_fixtures.py), one per family, built once per test module ------------------
@pytest.fixture(scope="module")
def specs(tmp_path_factory):
    """{family: ModelSpec} of a tiny random decoder of each family (qwen, llama), saved to a folder."""
    from decoder_fixtures import FAMILIES, save_tiny_decoder

    from bench.core.specs import ModelSpec

    out = {}
    for family in FAMILIES:
        folder = tmp_path_factory.mktemp(family)
        save_tiny_decoder(folder, family)
        out[family] = ModelSpec(name=f"tiny-{family}", path=str(folder), architecture="decoder")
    return out


@pytest.fixture(scope="module")
def tokenizers(specs):
    """{family: the tokenizer of ``specs``'s model}."""
    from bench.stages.models import load_tokenizer

    return {family: load_tokenizer(spec) for family, spec in specs.items()}


@pytest.fixture(scope="module")
def models(specs):
    """{family: ``specs``'s model as a reward model, head seeded 0}."""
    from bench.stages.models import load_reward_model

    return {family: load_reward_model(spec, seed=0) for family, spec in specs.items()}
