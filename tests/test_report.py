"""bench report's tables from hand-made cell results: means, spreads over seeds, the teacher row."""
from bench.core.report import TEACHER, method_table
from bench.core.result_schema import CellMetrics, CellResult, EvalSetResult, MethodRecord, ProtocolRef


def cell(method, seed, source, target, teacher_id, student_id, teacher_ood, student_ood):
    """A hand-made cell result holding only what the tables read (model_construct skips the other fields)."""
    wrg, aog = student_id - teacher_id, student_ood - teacher_ood
    return CellResult.model_construct(
        method=MethodRecord.model_construct(name=method, params={}), models={"name": "m"},
        protocol=ProtocolRef.model_construct(name="p"), category="c", seed=seed, source=f"p/{source}",
        eval_sets={f"p/{source}": EvalSetResult.model_construct(teacher_acc=teacher_id, student_acc=student_id),
                   f"p/{target}": EvalSetResult.model_construct(teacher_acc=teacher_ood, student_acc=student_ood)},
        metrics={f"p/{target}": CellMetrics(wrg=wrg, aog=aog, nts=aog - max(0.0, -wrg))})


def test_methods_ranked_by_nts_with_spread_and_a_teacher_row():
    results = [cell("good", 0, "a", "b", 70, 80, 60, 66), cell("good", 1, "a", "b", 72, 80, 62, 66),
               cell("bad", 0, "a", "b", 70, 75, 60, 58), cell("bad", 1, "a", "b", 72, 70, 62, 60)]
    table = method_table(results)
    assert list(table["method"]) == ["good", TEACHER, "bad"]
    good = table.iloc[0]
    # per-seed NTS: 6 and 4 -> mean 5, sample sd sqrt(2)
    assert good["NTS"] == "+5.0±1.4" and good["cells"] == 1 and good["seeds"] == 2
    teacher = table.iloc[1]
    assert teacher["student ID"] == "71.0±1.4" and teacher["NTS"] == "+0.0±0.0"
    # bad: seed 0 NTS = -2, seed 1 NTS = -2 - 2 = -4 -> -3
    assert table.iloc[2]["NTS"] == "-3.0±1.4"


def test_the_teacher_counts_each_cell_once():
    results = [cell(m, 0, "a", "b", 70, 80, 60, 66) for m in ("x", "y", "z")]
    table = method_table(results)
    assert table.set_index("method").loc[TEACHER, "cells"] == 1


def test_a_replicate_is_its_own_row_and_a_partial_seed_is_left_out():
    results = [cell("naive", s, src, "c", 70, 80, 60, 66) for s in (0, 1) for src in ("a", "b")]
    # the same method trained again: not pooled into naive's row
    replicate = cell("naive", 0, "a", "c", 70, 80, 60, 50).model_copy(update={"replicate": 1})
    stopped = cell("naive", 2, "a", "c", 70, 80, 60, 40)   # seed 2 stopped after one of the two sources
    table = method_table([*results, replicate, stopped]).set_index("method")
    assert table.loc["naive", "NTS"] == "+6.0±0.0" and table.loc["naive", "seeds"] == 2
    assert table.loc["naive#1", "NTS"] == "-10.0" and table.loc["naive#1", "seeds"] == 1
    assert table.attrs["left_out"] == 1
