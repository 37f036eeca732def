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


def test_a_summary_is_exact_sums_whatever_the_row_order_and_the_rows_a_column_skips():
    """Each seed's mean over the rows that hold a column, then the mean and the sample SD of those means, every sum
    math.fsum's: a summary's bits do not depend on the rows' order (nor on how pandas adds a group's rows)."""
    import math

    import numpy as np
    import pandas as pd

    from bench.core.report import COLUMNS, FAR_COLUMNS, summarise, summarise_rows

    rng = np.random.default_rng(7)
    n = 40
    frame = pd.DataFrame({c: rng.integers(0, 2001, n) / 20 for c in COLUMNS})   # accuracies in steps of 0.05
    frame["seed"] = rng.integers(0, 5, n)
    frame["role"] = np.where(rng.random(n) < 0.25, "far", "ood")
    for c in FAR_COLUMNS:   # a far target's row holds only the far columns, a near target's none of them
        frame[c] = np.where(frame["role"] == "far", rng.integers(0, 2001, n) / 20, np.nan)
    frame.loc[frame["role"] == "far", COLUMNS] = np.nan
    got = summarise(frame)
    for c in ["nts", "far_aog"]:
        held = frame[frame[c].notna()]
        per_seed = [math.fsum(g[c]) / len(g) for _, g in held.groupby("seed")]
        mean = math.fsum(per_seed) / len(per_seed)
        assert got[c] == mean
        assert got[f"{c}_sd"] == math.sqrt(math.fsum((x - mean) ** 2 for x in per_seed) / (len(per_seed) - 1))
    assert (got["seeds"], got["cells"]) == (5, int((frame["role"] != "far").sum()) // 5)
    shuffled = summarise(frame.sample(frac=1, random_state=3))
    assert shuffled.index.tolist() == got.index.tolist() and np.array_equal(shuffled.to_numpy(), got.to_numpy(),
                                                                              equal_nan=True)
    as_rows = summarise_rows(frame.to_dict("records"))
    assert list(as_rows) == got.index.tolist() and np.array_equal(list(as_rows.values()), got.to_numpy(), equal_nan=True)
    one_seed = summarise(frame[frame["seed"] == 0])
    assert math.isnan(one_seed["nts_sd"]) and one_seed["seeds"] == 1
