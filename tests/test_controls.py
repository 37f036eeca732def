"""The baseline's replicates as each run's control (bench.core.runs, bench.core.stats.Board.runs_delta,
bench.core.compare). The rule applies no control (bench.core.runs.CONTROL_FROM None): the replicates a board holds
or is given correct nothing. A variant that sets CONTROL_FROM (the benchmarks that measure it): where they ran every
cell of a comparison's seeds they correct it, they never decide which seeds a board holds, and the decision says it
rests on them."""
import dataclasses

import numpy as np
import pytest

import bench.core.runs
from bench.core.cells import cell_from_scores
from bench.core.compare import deciding_interval
from bench.core.runs import VARIANT_CONTROL_FROM, runs_delta
from bench.core.stats import Board

SOURCES = ("p/a", "p/b")
PAIRS = 20


def cell(method, seed, source, teacher, student, replicate=0):
    """A per-source-seeded cell whose source's split and its one target are scored with these correctness lists."""
    other = SOURCES[1 - SOURCES.index(source)]
    result = {"method": {"name": method, "params": {}}, "seed": seed, "source": source, "category": "c",
              "replicate": replicate, "protocol": {"name": "p", "version": "2", "seeding": "per-source"},
              "eval_sets": {source: {"role": "id"}, other: {"role": "ood"}}}
    rows = [{"eval_set": d, "pair_id": f"{d}/{i}", "teacher_chosen": float(t), "teacher_rejected": float(1 - t),
             "student_chosen": float(s), "student_rejected": float(1 - s)}
            for d in (source, other) for i, (t, s) in enumerate(zip(teacher[d], student[d]))]
    return cell_from_scores(result, rows)


@pytest.fixture(scope="module")
def runs():
    """naive, two replicates and a method m at 6 seeds; replicate 2 misses seed 5. Each run is right on a random
    share of pairs, so the cells' NTS differ run to run."""
    rng = np.random.default_rng(3)
    out = []
    for seed in range(6):
        for source in SOURCES:
            teacher = {d: rng.integers(0, 2, PAIRS) for d in SOURCES}
            for method, replicate in (("naive", 0), ("naive", 1), ("naive", 2), ("m", 0)):
                if (replicate, seed) == (2, 5):
                    continue
                student = {d: (rng.random(PAIRS) < rng.uniform(0.4, 0.9)).astype(int) for d in SOURCES}
                out.append(cell(method, seed, source, teacher, student, replicate))
    return out


def of(cells, method, seeds=range(6)):
    return [c for c in cells if c.method == method and c.seed in seeds]


@pytest.fixture
def variant(monkeypatch):
    """The control as a variant applies it (and as the rule did until 2026-12-07): from VARIANT_CONTROL_FROM seeds."""
    monkeypatch.setattr(bench.core.runs, "CONTROL_FROM", VARIANT_CONTROL_FROM)


def test_the_rule_corrects_nothing_by_the_replicates(runs):
    """Given or held, naive's replicates leave the rule's interval the plain one, and the decision does not name them."""
    five = range(5)
    plain = runs_delta(of(runs, "m", five), of(runs, "naive", five))
    given = runs_delta(of(runs, "m", five), of(runs, "naive", five),
                       controls=[of(runs, "naive#1", five), of(runs, "naive#2", five)])
    assert bench.core.runs.CONTROL_FROM is None and given == plain and given.controls == 0
    rows = Board([c for c in runs if c.seed < 5], n_boot=50)
    assert rows.replicates_of("naive") == ["naive#1", "naive#2"] and rows.runs_delta("m", "naive") == plain
    decision = deciding_interval(rows, "m", "naive", "nts", None, None, rows.compare("m", "naive").deltas["nts"])
    assert decision.controls == 0 and decision.rests_on == "10 runs (5 seeds)"
    assert (decision.low, decision.high, decision.estimate) == (plain.low, plain.high, plain.estimate)


def test_replicates_that_ran_every_cell_correct_the_difference(runs, variant):
    five = range(5)
    plain = runs_delta(of(runs, "m", five), of(runs, "naive", five))
    both = runs_delta(of(runs, "m", five), of(runs, "naive", five),
                      controls=[of(runs, "naive#1", five), of(runs, "naive#2", five)])
    assert plain.controls == 0 and both.controls == 2
    assert both.per_run == plain.per_run and both.estimate != plain.estimate   # the same runs, corrected
    # at 6 seeds replicate 2 misses seed 5, so only replicate 1 is used; before CONTROL_FROM seeds, none
    assert runs_delta(of(runs, "m"), of(runs, "naive"), controls=[of(runs, "naive#1"), of(runs, "naive#2")]).controls == 1
    assert runs_delta(of(runs, "m", range(4)), of(runs, "naive", range(4)), controls=[of(runs, "naive#1")]).controls == 0


def test_a_replicate_scored_by_another_teacher_is_not_a_control(runs, variant):
    five = range(5)
    other = [dataclasses.replace(c, eval_sets=tuple(dataclasses.replace(e, teacher=1 - e.teacher) for e in c.eval_sets))
             if (c.seed, c.source) == (2, SOURCES[0]) else c for c in of(runs, "naive#1", five)]
    found = runs_delta(of(runs, "m", five), of(runs, "naive", five), controls=[other, of(runs, "naive#2", five)])
    assert found.controls == 1


def test_a_board_uses_the_replicates_it_holds_or_is_given_and_keeps_its_seeds(runs, variant):
    """As rows (bench report on a results folder) or as controls only (bench compare A naive): the same
    decision, which names them; given as controls they do not narrow the seeds the board holds."""
    rows = Board([c for c in runs if c.seed < 5], n_boot=50)
    given = Board(of(runs, "m") + of(runs, "naive"), n_boot=50, controls=of(runs, "naive#1") + of(runs, "naive#2"))
    assert given.seeds == tuple(range(6)) and given.methods == ("m", "naive")
    assert given.replicates_of("naive") == ["naive#1", "naive#2"] and rows.replicates_of("naive") == ["naive#1", "naive#2"]
    at_six = given.runs_delta("m", "naive")
    assert at_six.seeds == 6 and at_six.controls == 1
    decision = deciding_interval(rows, "m", "naive", "nts", None, None, rows.compare("m", "naive").deltas["nts"])
    assert decision.controls == 2 and decision.rests_on == "10 runs (5 seeds), 2 control replicates"
    assert rows.runs_delta("naive#1", "naive").controls == 1   # an A/A comparison: the other replicate is the control


def test_an_interval_wider_than_the_difference_can_be_is_cut_to_its_span():
    """Two seeds, one source that swings from all right to all wrong and one that barely moves: the rule's
    interval (Welch df near 1 at the first look) reaches past ±200 points of NTS, the most two students of one
    teacher can differ by; the decision shows it cut there, decided or not as before."""
    a, b = SOURCES
    right, wrong, half = np.ones(PAIRS, int), np.zeros(PAIRS, int), np.arange(PAIRS) % 2
    teacher = {a: right, b: right}
    one_off = half.copy()
    one_off[0] = 1
    cells = []
    for seed, swing in ((0, right), (1, wrong)):
        for source in SOURCES:
            cells.append(cell("naive", seed, source, teacher, {a: half, b: half}))
            cells.append(cell("m", seed, source, teacher, {a: swing, b: swing} if source == a else {a: half, b: one_off}))
    board = Board(cells, n_boot=50)
    raw = board.runs_delta("m", "naive")
    assert raw.low < -200 and raw.high > 200   # the case this is about
    decision = deciding_interval(board, "m", "naive", "nts", None, None, board.compare("m", "naive").deltas["nts"])
    assert (decision.low, decision.high) == (-200.0, 200.0) and decision.decided == raw.decided is False
    assert decision.estimate == raw.estimate and decision.runs == raw.runs == 4


def test_a_seed_cut_mid_way_waits_for_its_other_cells(runs):
    """A comparison stopped mid-seed leaves the method part of a seed: the board takes the whole seeds both hold
    (it used to refuse the folder), and the runs delta is the one without that seed's cells."""
    cut = [c for c in runs if not (c.method == "m" and c.seed == 5 and c.source == SOURCES[1])]
    board = Board(of(cut, "m") + of(cut, "naive"), n_boot=50)
    assert board.seeds == tuple(range(5))
    assert board.runs_delta("m", "naive") == runs_delta(of(runs, "m", range(5)), of(runs, "naive", range(5)))


def test_the_committed_plans_under_the_rule_are_v1_and_the_controls_plans_are_refused():
    """The rule (no control) is mini-v2-reference v1's: its rule checks clean, while v2 and v3, which fixed the
    control from 5 seeds, are refused as another rule, naming it (bench.core.plans.rule_problems)."""
    from pathlib import Path

    from bench.core.plans import read_plans, rule_problems
    from bench.core.protocols import PROTOCOLS
    from bench.core.sequential import LEVEL

    plans = read_plans(Path(__file__).resolve().parents[1] / "plans")
    found = {plan.version: rule_problems(plan, PROTOCOLS.get(plan.protocol), plan.metric, bench.core.runs.CONTROL_FROM,
                                         LEVEL) for plan in plans if plan.plan == "mini-v2-reference"}
    assert sorted(found) == [1, 2, 3] and found[1] == []
    for version in (2, 3):
        assert found[version] == ["it fixed the control from 5 seeds, and this harness applies no control"]


def test_a_benchmark_asking_for_the_control_under_the_rule_is_told(monkeypatch):
    """control_applied: a caller measuring the control as a variant gets an error where CONTROL_FROM is the rule's
    None (its controls would change nothing), and the seeds where a variant set them."""
    with pytest.raises(ValueError, match="applied only where bench.core.runs.CONTROL_FROM is set"):
        bench.core.runs.control_applied()
    monkeypatch.setattr(bench.core.runs, "CONTROL_FROM", VARIANT_CONTROL_FROM)
    assert bench.core.runs.control_applied() == 5
