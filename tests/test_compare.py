"""`bench compare` and the decision table on the reference submissions: paired Δ against naive,
decided only by the t-interval over seeds, and the same numbers on the leaderboard."""
import re
from pathlib import Path

import pytest

from bench.cli import main
from bench.core.compare import board_for, decision_table

ROOT = Path(__file__).resolve().parents[1]
SUBMISSIONS = ROOT / "submissions" / "mini" / "tiny"
pytestmark = pytest.mark.skipif(not SUBMISSIONS.is_dir(), reason="the reference submissions are not in this checkout")


def test_decision_table_calls_only_t_decided_differences():
    board, _ = board_for(SUBMISSIONS)
    table = decision_table(board).set_index("method")
    assert table.loc["naive", "decided"] == ""                      # no Δ against itself
    assert table.loc["anchor_lam=10.0_layers=last", "decided"] == "worse"
    # l2-sp: the bootstrap interval excludes 0 but the t-interval over 3 seeds does not: not decided
    l2 = table.loc["l2-sp_alpha=0.01_beta=0.0"]
    assert l2["Δ bootstrap 95%"].endswith("-0.4]") and l2["decided"] == "no"
    ranked = table[table["rank"] != ""]
    assert table.loc["ceiling", "rank"] == "" and sorted(ranked["rank"]) == list(range(1, len(ranked) + 1))
    assert table.loc["naive", "rank"] == 1 + (ranked["NTS"] > table.loc["naive", "NTS"]).sum()   # the ceiling, above, is not ranked


def test_report_prints_ranks_as_integers(capsys):
    assert main(["report", "--out", str(SUBMISSIONS)]) == 0
    naive = [line for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["naive"]][-1]
    assert re.search(r"\] +\d+ +\d+-\d+ ", naive)   # NTS's interval, the rank ("2", not "+2.00"), its range


def test_compare_prints_paired_deltas_per_category(capsys):
    assert main(["compare", "anchor_lam=0.1_layers=last", "naive", "--out", str(SUBMISSIONS), "--by", "category"]) == 0
    out = capsys.readouterr().out
    assert "category=helpful" in out and "category=harmless" in out and "(3 seeds)" in out and "deciding 95%" in out
    assert main(["compare", "anchor", "naive", "--out", str(SUBMISSIONS)]) == 2   # three settings: say which
    assert "ambiguous" in capsys.readouterr().err


def test_the_board_shows_the_same_decisions(committed_validations):
    from leaderboard import core

    table = core.ranking(core.load_board(SUBMISSIONS.parents[1]))   # from the session's validation record
    row = table[(table["method"] == "anchor") & (table["params"] == "lam=10.0, layers=last")].iloc[0]
    decisions = decision_table(board_for(SUBMISSIONS)[0]).set_index("method").loc["anchor_lam=10.0_layers=last"]
    assert row["decided"] == "worse" and row["Δ t 95% (seeds)"] == "[-11.8, -1.2]"
    assert row["rank 95%"] == decisions["rank 95%"] != ""


def synthetic_cells(method: str, teacher_flip: int | None = None, seeds=(0, 1), pair_ids=None):
    """One source of a made-up protocol per seed: 8 ID and 8 OOD pairs, the teacher right on the first half."""
    import numpy as np

    from bench.core.cells import Cell, EvalSet

    cells = []
    for seed in seeds:
        teacher = np.array([1.0] * 4 + [0.0] * 4)
        if teacher_flip is not None:
            teacher[teacher_flip] = 1 - teacher[teacher_flip]
        student = np.roll(np.array([1.0] * 6 + [0.0] * 2), seed + len(method))
        ids = tuple(pair_ids or (f"p{i}" for i in range(8)))
        sets = tuple(EvalSet(name, role, ids, teacher, student) for name, role in (("x/a", "id"), ("x/b", "ood")))
        cells.append(Cell(method, seed, "x/a", "helpful", sets))
    return cells


def test_compare_across_model_pairs_needs_one_protocol_one_set_of_cells_and_one_teacher(monkeypatch):
    import bench.core.compare as compare
    from bench.core.errors import BenchError

    groups = {("x", "tiny"): synthetic_cells("naive"), ("x", "tiny+early-stop"): synthetic_cells("naive"),
              ("x", "other-teacher"): synthetic_cells("naive", teacher_flip=5),
              ("x", "one-seed"): synthetic_cells("naive", seeds=(0,)),
              ("x", "other-pairs"): synthetic_cells("naive", pair_ids=[f"q{i}" for i in range(8)]),
              ("y", "gce-only"): synthetic_cells("gce")}
    monkeypatch.setattr(compare, "cells_under", lambda *roots, methods=None: groups)

    def refused(a: str, b: str) -> str:
        with pytest.raises(BenchError) as error:
            compare.board_for(Path("subs"), [a, b])
        return str(error.value)

    board, names = compare.board_for(Path("subs"), ["naive@tiny+early-stop", "naive@tiny"])
    assert names == ["naive@tiny+early-stop", "naive@tiny"] and board.methods == tuple(sorted(names))
    assert board.compare(*names).deltas["nts"].estimate == 0.0          # the same students: no difference
    assert "verdicts differ on 1 of 8 test pairs" in refused("naive@other-teacher", "naive@tiny")
    assert "seed 0, source x/a, on x/a" in refused("naive@other-teacher", "naive@tiny")
    assert refused("naive@one-seed", "naive@tiny").startswith("naive@one-seed has no cell for seed 1 x/a, which the "
                                                              "other side has")
    assert "scored different test pairs" in refused("naive@other-pairs", "naive@tiny")
    assert "is on protocol x and gce@gce-only on y" in refused("naive@tiny", "gce")
    assert "several" not in refused("naive", "naive@tiny") and "give METHOD@PAIR with one of those pairs" in \
        refused("naive", "naive@tiny")                                   # bare naive: on several pairs
    assert "not on model pair smol under subs; its model pairs there: " in refused("naive@smol", "naive@tiny")
    assert refused("ceiling@tiny", "naive@tiny") == "no finished cells of 'ceiling' under subs"
    assert "against itself" in refused("naive@tiny", "naive@tiny")
    groups["y", "tiny"] = synthetic_cells("naive")                      # tiny on two protocols: say where to point
    assert "point --out at one protocol's folder (e.g. subs/x)" in refused("naive@tiny+early-stop", "naive@tiny")


def test_rerun_drift_of_a_submission_against_itself_is_nothing():
    """benchmarks/rerun_drift.py pairs the cells of two folders; the same cells move by nothing."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[1] / "benchmarks" / "rerun_drift.py"
    naive = SUBMISSIONS / "naive"
    out = subprocess.run([sys.executable, str(script), str(naive), str(naive)], capture_output=True, text=True,
                         check=True).stdout
    assert out.startswith("18 cells in both (0 only in A, 0 only in B)")
    assert "verdicts flipped: teacher 0, student 0 of 21600 (cell, test pair) verdicts each" in out
    assert "mean NTS: A +2.06, B +2.06, B − A +0.00" in out
    empty = subprocess.run([sys.executable, str(script), str(naive), str(SUBMISSIONS / "no-such")],
                           capture_output=True, text=True)
    assert empty.returncode == 2 and "no finished cell is in both" in empty.stderr


def test_compare_adds_up_several_folders_and_refuses_a_cell_twice(capsys):
    """--out A B: the cells of both, as if in one folder (more seeds beside the reference ones)."""
    apart = board_for([SUBMISSIONS / "gce_exponent=0.7", SUBMISSIONS / "naive"], ["gce", "naive"])[0]
    together = board_for(SUBMISSIONS, ["gce", "naive"])[0]
    assert apart.compare("gce_exponent=0.7", "naive").deltas == together.compare("gce_exponent=0.7", "naive").deltas
    assert main(["compare", "gce", "naive", "--out", str(SUBMISSIONS / "naive"), str(SUBMISSIONS)]) == 2
    assert "has a cell (seed, source) twice" in capsys.readouterr().err


def test_the_extra_seeds_recompute_and_join_the_reference_seeds(capsys):
    """extra-seeds/ (seeds 3-6 of three methods) recomputes, and with the submissions' seeds 0-2 makes seven."""
    extra = SUBMISSIONS.parents[2] / "extra-seeds" / "mini" / "tiny"
    assert main(["verify", "--out", str(extra)]) == 0
    assert "72 of 72 cells recompute exactly" in capsys.readouterr().out
    board, names = board_for([SUBMISSIONS, extra], ["reliability-filter", "naive"])
    assert board.seeds == tuple(range(7)) and names[0].startswith("reliability-filter_")
    delta = board.compare(*names).deltas["nts"]
    assert delta.t_low < 0 < delta.t_high   # the README's reading: undecided over seven seeds too


def test_a_method_is_found_by_its_registered_name_never_by_parsing_its_slug():
    """A plugin method whose name holds '_' (its slug my_method_alpha=1) is found by that name, and a
    name that is only a slug's prefix finds nothing: cells carry the method's name (bench.core.cells.Cell.name)."""
    import dataclasses

    from bench.core.compare import holds, resolve
    from bench.core.errors import BenchError

    mine = [dataclasses.replace(c, method="my_method_alpha=1", name="my_method") for c in synthetic_cells("naive")]
    other = [dataclasses.replace(c, method="my_alpha=2", name="my") for c in synthetic_cells("naive")]
    cells = mine + other
    assert resolve(cells, "my_method") == "my_method_alpha=1" and resolve(cells, "my") == "my_alpha=2"
    assert resolve(cells, "my_alpha=2") == "my_alpha=2"
    assert holds(cells, "my_method") and not holds(mine, "my")
    with pytest.raises(BenchError, match="'my_method_alpha' is not in these results"):
        resolve(cells, "my_method_alpha")


def test_a_comparison_reads_and_recomputes_only_its_runs_cells(monkeypatch):
    """board_for with names reads the cells of those runs (and the baseline's replicates), not the whole folder's:
    every other cell is left after its result.json, before its scores are read and recomputed. The board is the
    one a whole read gives."""
    from bench.core import compare, results

    checked = []
    recompute = results.recompute
    monkeypatch.setattr(results, "recompute", lambda result, *a: checked.append(result.method.name) or
                        recompute(result, *a))
    board, names = board_for(SUBMISSIONS, ["gce", "naive"])
    assert names == ["gce_exponent=0.7", "naive"] and set(checked) == {"gce", "naive"}
    assert len(checked) == 2 * len(board.seeds) * 6 and board.methods == tuple(names)
    groups = compare.cells_under(SUBMISSIONS)
    assert len(set(checked)) < len({c.method for cells in groups.values() for c in cells})
    whole = compare.Board([c for cells in groups.values() for c in cells if c.method in names])
    assert whole.compare(*names).deltas == board.compare(*names).deltas
    assert compare.run_methods(["naive#1", "anchor_lam=1.0_layers=last", "gce"]) == \
        ["naive", "anchor_lam=1.0_layers=last", "gce"]


def test_until_decided_runs_a_method_file_from_the_very_file_its_cells_ran(tmp_path):
    """bench compare --until-decided reruns a method from a file only with --method-file, and only the file its cells
    ran (same sha256): an edited file is another method. Workers get the file to load."""
    from bench.core.errors import BenchError
    from bench.core.io import sha256_file
    from bench.core.result_schema import CellResult
    from bench.core.store import load_store
    from bench.stages.decide import settings_of

    folder = ROOT / "submissions" / "mini-v2" / "tiny-lr3e-4" / "naive"
    if not folder.is_dir():
        pytest.skip("no reference submissions")
    source = ROOT / "tests" / "plugins" / "shiftbench-example" / "shiftbench_example" / "smoothed.py"
    mine = tmp_path / "smoothed.py"   # a name of its own: the session's other tests register the example's
    mine.write_text(source.read_text().replace("name: smoothed", "name: smoothed-compare"))
    result = CellResult.model_validate_json(load_store(folder).results[0])
    result = result.model_copy(update={"method": result.method.model_copy(update={
        "name": "smoothed-compare", "params": {"eps": 0.2}, "origin": {"kind": "file", "sha256": sha256_file(mine)}})})
    with pytest.raises(BenchError, match="ran from a method file: give it with --method-file"):
        settings_of(result, tmp_path / "out", tmp_path / "cache")
    edited = tmp_path / "edited.py"
    edited.write_bytes(mine.read_bytes() + b"\n# edited\n")
    with pytest.raises(BenchError, match="not the file 'smoothed-compare''s cells ran"):
        settings_of(result, tmp_path / "out", tmp_path / "cache", edited)
    settings = settings_of(result, tmp_path / "out", tmp_path / "cache", mine)
    assert settings.method == "smoothed-compare" and settings.method_file == mine


def test_holm_step_down_from_intervals_decides_what_holm_on_p_values_decides():
    """bench.core.compare.holm decides from nested intervals (decided at level 1 - a when p <= a) what Holm's
    step-down on the p-values decides: in increasing p while p_(k) <= alpha / (m - k + 1)."""
    import numpy as np

    from bench.core.compare import Decision, holm

    def textbook(ps, alpha=0.05):
        decided = set()
        for k, (name, p) in enumerate(sorted(ps.items(), key=lambda item: item[1])):
            if p > alpha / (len(ps) - k):
                break
            decided.add(name)
        return decided

    rng = np.random.default_rng(1)
    for _ in range(200):
        ps = {f"m{i}": float(p) for i, p in enumerate(rng.uniform(0, 0.08, rng.integers(1, 12)))}
        decides = {name: (lambda level, p=p: Decision(-1.0, 1.0, p <= 1 - level + 1e-15, 0.0, 3)) for name, p in ps.items()}
        assert set(holm(decides)) == textbook(ps)
    assert holm({}) == {}
