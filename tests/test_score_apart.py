"""A student is scored by a process that has not imported its method's code (bench.stages.apart; issue 59, item 1):
the scores equal those of scoring in the run's own process, to the bit, and a method file that patches the
harness's scorer at import changes none of them."""
from __future__ import annotations

import pytest

from bench.core.io import read_csv_gz
from bench.core.result_schema import CANDIDATES_FILE, SCORES_FILE

# round four's patchy.py: naive's training, and at import every chosen response's score raised by 100 wherever the
# harness scores eval sets (before, its run and bench verify passed: student 100.0 on every eval set)
PATCHY = '''
import bench.stages.pipeline as pipeline
import bench.stages.scorers as scorers
from methods.naive import Naive

_score = scorers.score_eval_sets


def _patched(*args, **kwargs):
    return {name: ([c + 100.0 for c in chosen], rejected) for name, (chosen, rejected) in _score(*args, **kwargs).items()}


pipeline.score_eval_sets = scorers.score_eval_sets = _patched


class Patchy(Naive):
    """
    name: patchy
    idea: naive, whose file patches the harness's scorer at import
    paper: none
    """
'''


def cells(out):
    """{(cell folder's last two parts): (score rows, candidate rows)} of every finished cell under ``out``."""
    found = {}
    for path in sorted(out.rglob(SCORES_FILE)):
        candidates = path.parent / CANDIDATES_FILE
        found[path.parent.parent.name, path.parent.name] = (
            read_csv_gz(path), read_csv_gz(candidates) if candidates.is_file() else None)
    return found


def run(protocol, models, method, out, cache, method_file=None):
    from bench.core.settings import RunSettings
    from bench.stages import pipeline

    return pipeline.run(RunSettings(protocol, models, method, {}, list(protocol.datasets), [0], out, cache,
                                    method_file=method_file))


@pytest.fixture(scope="module")
def naive_in_process(tmp_path_factory, bon_protocol, small_models):
    work = tmp_path_factory.mktemp("apart")
    run(bon_protocol, small_models, "naive", work / "here", work / "cache")
    return work


def test_scores_from_a_separate_process_are_the_run_s_own_to_the_bit(naive_in_process, bon_protocol, small_models,
                                                                       monkeypatch):
    from bench.stages.apart import APART_ENV

    work = naive_in_process
    monkeypatch.setenv(APART_ENV, "1")
    results = run(bon_protocol, small_models, "naive", work / "apart", work / "cache")
    assert all(r.student["scored_apart"] for r in results)
    here, apart = cells(work / "here"), cells(work / "apart")
    assert here and here == apart   # every score and candidate score, as text: the same floats


def test_a_method_file_that_patches_the_scorer_changes_no_score(naive_in_process, bon_protocol, small_models,
                                                                monkeypatch):
    import bench.stages.pipeline as pipeline
    import bench.stages.scorers as scorers
    from methods import load_method_file

    for module in (pipeline, scorers):   # the file patches them at import: put back after this test
        monkeypatch.setattr(module, "score_eval_sets", module.score_eval_sets)
    work = naive_in_process
    (work / "patchy.py").write_text(PATCHY)
    load_method_file(work / "patchy.py")
    results = run(bon_protocol, small_models, "patchy", work / "patchy", work / "cache",
                  method_file=work / "patchy.py")
    assert all(r.student["scored_apart"] for r in results)
    assert cells(work / "patchy") == cells(work / "here")   # naive's scores, not +100
