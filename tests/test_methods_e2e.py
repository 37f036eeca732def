"""Every built-in method end to end on the shrunken mini; `bench sweep`; `bench run --method-file`;
and an external method package installed and found through its entry point."""
import subprocess
import sys
from pathlib import Path

import pytest

from bench.cli import main
from bench.core.errors import BenchError
from bench.core.metrics import accuracy
from bench.core.protocols import ARCHIVED
from bench.core.result_schema import RESULT_FILE
from bench.core.results import find_cells, recompute_folder
from bench.core.settings import RunSettings
from bench.stages import pipeline
from methods import METHODS

PLUGIN = Path(__file__).parent / "plugins" / "shiftbench-example"


@pytest.fixture(scope="module")
def cache(session_cache):
    """The session's teacher cache: these tests count no cache entries (the anchor sweep's has its own)."""
    return session_cache


@pytest.mark.parametrize("name", METHODS.names())
def test_every_builtin_method_runs_and_recomputes(name, small_protocol, small_models, tmp_path, cache):
    source = small_protocol.datasets[0]
    if small_models.strong.architecture not in METHODS.get(name).architectures:  # grm: decoders only
        with pytest.raises(BenchError, match="decoder") as error:   # refused before any work
            pipeline.run(RunSettings(small_protocol, small_models, name, {}, [source], [0], tmp_path, cache))
        assert not list(tmp_path.rglob("*.json")), error.value   # tests/test_grm.py runs it end to end on a decoder
        return
    [result] = pipeline.run(RunSettings(small_protocol, small_models, name, {}, [source], [0], tmp_path, cache))
    assert result.method.name == name and result.method.origin["kind"] == "built-in"
    assert result.method.trains == (name != "length")
    folder = next(tmp_path.rglob(RESULT_FILE)).parent
    assert recompute_folder(folder) == []
    for values in result.metrics.values():
        assert set(values.model_dump(exclude_none=True)) == {"wrg", "aog", "nts"}   # no BoN: its protocol has no sets


def test_length_scores_are_response_lengths(small_protocol, small_models, tmp_path, cache):
    from bench.core.data import load_pairs
    from bench.core.protocols import DATASETS

    source = small_protocol.datasets[0]
    [result] = pipeline.run(RunSettings(small_protocol, small_models, "length", {}, [source], [0], tmp_path, cache))
    for name, values in result.eval_sets.items():
        pairs = load_pairs(DATASETS.get(name), "test", small_protocol.test_size).pairs
        by_hand = accuracy([len(p.chosen) for p in pairs], [len(p.rejected) for p in pairs])
        assert values.student_acc == pytest.approx(by_hand)


def test_sweep_writes_one_result_per_grid_point(registered_small, tmp_path, cache, capsys):
    protocol, models = registered_small
    argv = ["sweep", "--method", "wise-ft", "--grid", "alpha=0,1", "--protocol", protocol.name, "--models", models.name,
            "--source", "recipes", "--out", str(tmp_path), "--cache-dir", str(cache)]
    assert main(argv) == 0
    cells = find_cells(tmp_path)
    assert sorted(c.method.params["alpha"] for c in cells) == [0.0, 1.0]
    assert "alpha=0.0" in capsys.readouterr().out
    # a bad value anywhere in the grid fails before any work
    assert main([*argv[:4], "alpha=0.5,2", *argv[5:-4], "--out", str(tmp_path / "bad"), "--cache-dir", str(cache)]) == 2
    assert "alpha" in capsys.readouterr().err and not (tmp_path / "bad").exists()


def test_sweep_rejects_a_param_given_twice(registered_small, tmp_path, capsys):
    protocol, models = registered_small
    assert main(["sweep", "--method", "anchor", "--grid", "lam=1,2", "--param", "lam=3", "--protocol", protocol.name,
                 "--models", models.name, "--out", str(tmp_path)]) == 2
    assert "both a --param and a --grid" in capsys.readouterr().err


def test_run_with_a_method_file(registered_small, tmp_path, cache, capsys):
    protocol, models = registered_small
    path = tmp_path / "double_bt.py"
    path.write_text('''
from methods.api import soft_bt_loss
from methods.naive import Naive


class DoubleBT(Naive):
    """
    name: double-bt
    idea: twice the BT loss (an Adam no-op up to epsilon, for the test)
    paper: none
    """

    def loss(self, step):
        loss = 2 * soft_bt_loss(step.r_a, step.r_b, step.target)
        return loss, {"bt2": loss.item()}
''')
    out = tmp_path / "results"
    assert main(["run", "--method-file", str(path), "--protocol", protocol.name, "--models", models.name,
                 "--source", "recipes", "--out", str(out), "--cache-dir", str(cache)]) == 0
    [cell] = find_cells(out)
    assert cell.method.name == "double-bt" and cell.method.origin["kind"] == "file"
    assert "double-bt" in capsys.readouterr().out


def test_external_package_through_its_entry_point(registered_small, tmp_path, cache, capsys, monkeypatch):
    """The docs/adding-a-method.md example package, pip-installed into a folder, found by entry point."""
    import importlib
    import shutil

    import methods

    source, site = tmp_path / "src", tmp_path / "site"
    shutil.copytree(PLUGIN, source)  # building writes into the source folder: keep the repo clean
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", str(site), str(source)], check=True)
    monkeypatch.syspath_prepend(str(site))
    importlib.invalidate_caches()
    monkeypatch.setattr(methods, "_plugins_loaded", False)
    # the package's method goes with its folder, which is removed once the test passes: later tests list the methods
    monkeypatch.setattr(METHODS, "_entries", dict(METHODS._entries))
    monkeypatch.setattr(METHODS, "_aliases", dict(METHODS._aliases))
    assert main(["list", "methods"]) == 0
    assert "smoothed" in capsys.readouterr().out and "smoothed" in METHODS
    protocol, models = registered_small
    out, submissions = tmp_path / "results", tmp_path / "submissions"
    # the walk's protocol archived, as mini is: run and validate say so, and nothing fails
    monkeypatch.setitem(ARCHIVED, protocol.name, "mini-v2")
    # docs/adding-a-method.md, step 6: run every cell, report, submit, validate, see the leaderboard row
    assert main(["run", "--method", "smoothed", "--param", "eps=0.5", "--protocol", protocol.name,
                 "--models", models.name, "--out", str(out), "--cache-dir", str(cache)]) == 0
    assert f"note: protocol {protocol.name!r} is archived: 'mini-v2' replaces it" in capsys.readouterr().out
    cells = find_cells(out)
    assert len(cells) == len(protocol.datasets) * len(protocol.seeds)
    origin = cells[0].method.origin
    assert origin["kind"] == "entry point" and origin["distribution"] == "shiftbench-example"
    assert cells[0].method.params == {"eps": 0.5}
    assert main(["report", "--out", str(out)]) == 0
    assert "smoothed" in capsys.readouterr().out
    results = out / protocol.name / models.name / "smoothed_eps=0.5"
    assert main(["submit", str(results), "--out", str(submissions), "--submitter", "docs example"]) == 0
    submission = submissions / protocol.name / models.name / "smoothed_eps=0.5"
    assert main(["validate", str(submission)]) == 0
    assert f"warning: submission.json: protocol.name: protocol {protocol.name!r} is archived" in capsys.readouterr().out
    from leaderboard.core import load_board, ranking

    board = ranking(load_board(submissions))
    assert "smoothed" in set(board["method"])


def test_anchor_sweep_computes_the_pretrained_states_once(registered_small, tmp_path):
    protocol, models = registered_small
    assert main(["sweep", "--method", "anchor", "--grid", "lam=0.5,2", "--protocol", protocol.name, "--models", models.name,
                 "--source", "recipes", "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]) == 0
    reference = {c.method.params["lam"]: c.student["train"]["anchor_reference"]
                 for c in find_cells(tmp_path / "out")}
    assert reference[0.5]["reused_from_cache"] is False  # the first grid point runs first and computes them
    assert reference[2.0]["reused_from_cache"] is True
    assert reference[0.5]["bytes"] == reference[2.0]["bytes"] > 0
