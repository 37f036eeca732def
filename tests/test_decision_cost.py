"""benchmarks/decision_cost.py: a method's runs' cost in all, from its cells' own stage timers."""
import json
import sys
from pathlib import Path

import pytest

from bench.core.store import cell_folders, cell_result

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "benchmarks"))
import decision_cost  # noqa: E402

CELLS = REPO / "extra-seeds" / "mini-v2" / "tiny-lr3e-4"


def test_the_cost_is_every_run_of_the_method_teacher_stages_left_out(capsys):
    """The ceiling's committed v2 cells: each run counts the stages a cached teacher leaves (labels, the
    student's training and scoring), summed by hand here from the result.json files."""
    folder = CELLS / "ceiling"
    if not folder.is_dir():
        pytest.skip("no committed v2 cells")
    timers = [json.loads(cell_result(f))["timings_s"] for f in cell_folders(folder)]   # a store's cells too
    expected = sum(t["teacher_label"] + t["student_train"] + t["student_score"] + t["student_candidates"] for t in timers)
    assert sum(t["teacher_train"] for t in timers) > 0   # some cells trained the teacher: that is left out
    assert decision_cost.main([str(folder)]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[:3] == ["ceiling", str(len(timers)), str(len({f.parent.name for f in cell_folders(folder)}))]
    assert float(row[-1]) == pytest.approx(expected / 3600, abs=0.005)


def test_no_cells_is_an_error_that_names_the_folder(tmp_path, capsys):
    assert decision_cost.main([str(tmp_path)]) == 1
    assert str(tmp_path) in capsys.readouterr().err


def test_seeds_count_only_the_runs_of_those_seeds(capsys):
    """naive's committed v2 cells at seeds 3 to 5 (a fresh comparison's first three): 18 runs, summed by hand."""
    folder = CELLS / "naive"
    held = list(cell_folders(folder)) if folder.is_dir() else []
    if not any(f.parent.name == "seed5" for f in held):
        pytest.skip("no committed v2 cells")
    timers = [json.loads(cell_result(f))["timings_s"] for f in held if f.parent.name in ("seed3", "seed4", "seed5")]
    expected = sum(t["teacher_label"] + t["student_train"] + t["student_score"] + t["student_candidates"] for t in timers)
    for argv in ([str(CELLS), "naive", "--seeds", "3", "5"], [str(CELLS), "--seeds", "3", "5", "naive"]):
        assert decision_cost.main(argv) == 0
        row = capsys.readouterr().out.splitlines()[1].split()
        assert row[:3] == ["naive", "18", "3"]
        assert float(row[-1]) == pytest.approx(expected / 3600, abs=0.005)


def test_seeds_out_of_order_or_unheld_are_errors_that_say_so(capsys):
    with pytest.raises(SystemExit) as stop:
        decision_cost.main([str(CELLS), "--seeds", "5", "3"])
    assert stop.value.code == 2
    assert "the first seed is after the last" in capsys.readouterr().err
    if CELLS.is_dir():
        assert decision_cost.main([str(CELLS), "naive", "--seeds", "900", "901"]) == 1
        assert "at seeds 900 to 901" in capsys.readouterr().err
