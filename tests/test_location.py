"""Results read from a Hub dataset (bench.core.location), offline: a local copy of the dataset's layout where
huggingface_hub's snapshot_download keeps it, read through the same code as online."""
from __future__ import annotations

import shutil

import pytest

from bench.core.errors import BenchError
from bench.core.location import hub_parts, local_dir, results_folder


@pytest.mark.parametrize("text, parts", [
    ("hf://datasets/org/results", ("org/results", "main", "")),
    ("hf://datasets/org/results@v2", ("org/results", "v2", "")),
    ("hf://datasets/org/results@main/submissions/mini-v2", ("org/results", "main", "submissions/mini-v2")),
    ("hf://datasets/org/results/submissions", ("org/results", "main", "submissions")),
])
def test_hub_names(text, parts):
    assert hub_parts(text) == parts


@pytest.mark.parametrize("text", ["hf://datasets/org", "hf://datasets/org/results/../../etc", "hf://datasets//x"])
def test_a_malformed_hub_name_says_the_form(text):
    with pytest.raises(BenchError, match="hf://datasets/OWNER/NAME"):
        hub_parts(text)


def test_a_local_folder_is_itself(tmp_path):
    assert results_folder(str(tmp_path)) == tmp_path


def test_submissions_are_read_from_a_hub_dataset_offline(runs, tmp_path, monkeypatch):
    """The dataset's files where a fetch leaves them: snapshot_download (offline) returns them, and they validate as
    the folder they were copied from does."""
    from bench.submissions.tree import validate_tree

    monkeypatch.setenv("SHIFTBENCH_CACHE", str(tmp_path / "cache"))
    target = local_dir("org/results", "main")
    shutil.copytree(runs.submissions, target / "submissions")
    folder = results_folder("hf://datasets/org/results/submissions")
    assert folder.resolve() == (target / "submissions").resolve()
    found = validate_tree(folder, runs.protocols, runs.model_pairs)
    assert found and all(v.ok for v in found)
    assert sorted(v.key for v in found) == sorted(v.key for v in validate_tree(runs.submissions, runs.protocols,
                                                                               runs.model_pairs))


def test_a_dataset_never_fetched_is_a_clear_error_offline(tmp_path, monkeypatch, capsys):
    from bench.cli import main

    monkeypatch.setenv("SHIFTBENCH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(SystemExit) as exit_:
        main(["validate", "hf://datasets/org/never-fetched"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "could not be fetched" in err and "HF_HUB_OFFLINE=1" in err
