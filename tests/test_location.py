"""Results read from a Hub dataset (bench.core.location), offline: a local copy of the dataset's layout where
huggingface_hub's snapshot_download keeps it, read through the same code as online."""
from __future__ import annotations

import shutil
from pathlib import Path

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


def test_a_hub_folder_is_fetched_with_the_records_beside_it(tmp_path, monkeypatch):
    """hf://datasets/ORG/NAME/results/submissions fetches that folder and, beside it, the host's reproductions and the
    plans the board reads (bench.core.location: the same names bench reproduce and bench.core.plans use)."""
    import huggingface_hub

    from bench.core.location import PLANS
    from bench.submissions.reproduce import RECORDS

    asked = {}

    def fetch(repo, **given):
        asked.update(given)
        (Path(given["local_dir"]) / "results" / "submissions").mkdir(parents=True)
        return given["local_dir"]

    monkeypatch.setenv("SHIFTBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fetch)
    results_folder("hf://datasets/org/results/results/submissions")
    assert asked["allow_patterns"] == ["results/submissions/**", f"results/{RECORDS}/**", f"results/{PLANS}/**"]
