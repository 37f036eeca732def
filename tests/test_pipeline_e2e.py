"""End to end on a shrunken mini: the written numbers recompute from the per-pair scores, the teacher
is reused across methods, and a rerun skips finished cells."""
import json

import pytest

from bench.cli import main
from bench.core.result_schema import RESULT_FILE, SCORES_FILE
from bench.core.results import find_cells, load_cell, recompute_folder
from bench.core.settings import RunSettings
from bench.stages import pipeline


@pytest.fixture(scope="module")
def runs(tmp_path_factory, small_protocol, small_models):
    out = tmp_path_factory.mktemp("results")
    cache = tmp_path_factory.mktemp("cache")
    sources = list(small_protocol.datasets)
    naive = pipeline.run(RunSettings(small_protocol, small_models, "naive", {}, sources, [0], out, cache, command="test"))
    anchor = pipeline.run(RunSettings(small_protocol, small_models, "anchor", {"lam": "0.5"}, sources[:1], [0], out, cache))
    return out, cache, naive, anchor


def test_results_recompute_from_per_pair_scores(runs):
    out, _, naive, anchor = runs
    folders = sorted(p.parent for p in out.rglob(RESULT_FILE))
    assert len(folders) == 3
    for folder in folders:
        assert (folder / SCORES_FILE).is_file()
        assert recompute_folder(folder) == []


def test_bench_verify_passes_then_catches_a_changed_number(runs, tmp_path, capsys):
    import shutil

    from bench.cli import main

    out, *_ = runs
    assert main(["verify", "--out", str(out)]) == 0
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    result_file = next(copy.rglob(RESULT_FILE))
    result = json.loads(result_file.read_text())
    source = result["source"]
    result["eval_sets"][source]["student_acc"] += 1.0
    result_file.write_text(json.dumps(result))
    assert main(["verify", "--out", str(copy)]) == 1
    assert "student accuracy" in capsys.readouterr().out


def test_result_records_provenance(runs, small_protocol):
    _, _, naive, _ = runs
    result = naive[0]
    assert result.protocol.name == small_protocol.name and len(result.protocol.hash) == 16
    assert result.models["strong"]["revision"]["weights_sha256"]
    assert result.environment["packages"]["torch"]
    import torch  # the kernels torch picked, which with the thread count decide the float sums' order
    assert result.environment["cpu"]["torch_capability"] == torch.backends.cpu.get_cpu_capability()
    assert set(result.eval_sets) == set(small_protocol.datasets)
    assert result.eval_sets[result.source].role == "id"
    assert result.sizes["half_a"] + result.sizes["half_b"] == small_protocol.train_pool_size
    assert result.command == "test"
    assert set(result.derived_seeds) >= {"split", "order", "student-init"}


def test_teacher_is_reused_across_methods(runs):
    _, cache, naive, anchor = runs
    assert naive[0].teacher["reused"] is False
    assert anchor[0].teacher["reused"] is True
    assert anchor[0].teacher["cache_key"] == naive[0].teacher["cache_key"]
    src = anchor[0].source
    assert anchor[0].eval_sets[src].teacher_acc == naive[0].eval_sets[src].teacher_acc
    assert anchor[0].method.params == {"lam": 0.5, "layers": "last"}


def test_tampered_score_is_caught(runs, tmp_path):
    import gzip
    import shutil

    out, *_ = runs
    folder = next(p.parent for p in out.rglob(RESULT_FILE))
    copy = tmp_path / "cell"
    shutil.copytree(folder, copy)
    rows = gzip.decompress((copy / SCORES_FILE).read_bytes()).decode().splitlines()
    cells = rows[1].split(",")
    cells[4], cells[5] = cells[5], cells[4]  # swap one student pair's scores
    rows[1] = ",".join(cells)
    (copy / SCORES_FILE).write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    problems = recompute_folder(copy)
    if float(cells[4]) != float(cells[5]):
        assert any("student accuracy" in p for p in problems)


def test_rerun_skips_finished_cells(runs, small_protocol, small_models, monkeypatch):
    out, cache, naive, _ = runs
    monkeypatch.setattr(pipeline, "run_cell", lambda *a, **k: pytest.fail("a finished cell was run again"))
    again = pipeline.run(RunSettings(small_protocol, small_models, "naive", {}, list(small_protocol.datasets), [0], out, cache))
    assert [r.created_utc for r in again] == [r.created_utc for r in naive]
    assert len(find_cells(out)) == 3


def test_corrupt_cell_is_rerun(runs, small_protocol, small_models, monkeypatch):
    out, cache, naive, _ = runs
    folder = next(p.parent for p in out.rglob(RESULT_FILE) if "naive" in str(p))
    result = load_cell(folder)
    (folder / SCORES_FILE).write_bytes(b"truncated")
    calls = []
    monkeypatch.setattr(pipeline, "run_cell", lambda ctx, source, seed: calls.append(source) or result)
    pipeline.run(RunSettings(small_protocol, small_models, "naive", {}, [result.source], [0], out, cache))
    assert calls == [result.source]


def test_changed_settings_are_not_mistaken_for_finished(runs, small_protocol, small_models, monkeypatch):
    import dataclasses

    out, cache, naive, _ = runs
    changed = dataclasses.replace(small_models, student_train=dataclasses.replace(
        small_models.student_train, learning_rate=small_models.student_train.learning_rate * 2))
    calls = []
    monkeypatch.setattr(pipeline, "run_cell", lambda ctx, source, seed: calls.append(source) or naive[0])
    pipeline.run(RunSettings(small_protocol, changed, "naive", {}, [naive[0].source], [0], out, cache))
    assert calls == [naive[0].source]


def test_the_misfit_to_the_teacher_is_recorded(runs):
    _, _, naive, _ = runs
    for result in naive:
        assert result.misfit is not None and 0 < result.misfit.pairs <= 256
        assert 0.0 <= result.misfit.disagreement <= 100.0 and 0.0 <= result.misfit.squared <= 1.0


def test_an_edited_result_is_not_a_finished_cell(runs, small_protocol, small_models, tmp_path, capsys, monkeypatch):
    """A number changed by hand in result.json (checksums intact): not skipped by a rerun, not shown by
    bench report. Before, the rerun said [skip] and the report showed the edited number (exit 0)."""
    import shutil

    out, cache, _, _ = runs
    copy = tmp_path / "results"
    shutil.copytree(out, copy)
    folder = next(p.parent for p in sorted(copy.rglob(RESULT_FILE)) if "naive" in str(p))
    result = json.loads((folder / RESULT_FILE).read_text())
    result["eval_sets"][result["source"]]["student_acc"] += 1.0
    (folder / RESULT_FILE).write_text(json.dumps(result))
    assert load_cell(folder) is None
    left_out = sum(load_cell(p.parent) is None for p in copy.rglob(RESULT_FILE))  # other tests damage cells of `runs`
    capsys.readouterr()
    assert main(["report", "--out", str(copy)]) == 0
    assert f"{left_out} cells under {copy} are left out" in capsys.readouterr().err
    calls = []
    monkeypatch.setattr(pipeline, "run_cell", lambda ctx, source, seed: calls.append(source) or load_cell(folder))
    pipeline.run(RunSettings(small_protocol, small_models, "naive", {}, [result["source"]], [0], copy, cache))
    assert calls == [result["source"]]
