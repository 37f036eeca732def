"""bench/core/stats.py: the hierarchical bootstrap against a hand computation, the point estimates against
bench report's, pairing, determinism, and the inputs it refuses."""
import json
from pathlib import Path

import numpy as np
import pytest

from bench.core.cells import cell_from_scores, load_cells
from bench.core.sequential import t_quantile
from bench.core.stats import Board, plain, resamples_from_indices
from bench.core.store import cell_folders, cell_result

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "submissions" / "mini" / "tiny"


def scores(correct):
    """(chosen, rejected) scores that give each correctness: 1 -> 1 > 0, 0 -> 0 < 1, 0.5 -> a tie."""
    return {1: (1.0, 0.0), 0: (0.0, 1.0), 0.5: (0.5, 0.5)}[correct]


def make_cell(method, seed, source, correct, category="c"):
    """A cell from a result dict and scores rows; ``correct[dataset] = (teacher list, student list)``,
    the source's own dataset first."""
    result = {"method": {"name": method, "params": {}}, "seed": seed, "source": source, "category": category,
              "protocol": {"name": "p", "version": "1"}, "eval_sets": {d: {"role": "id" if d == source else "ood"} for d in correct}}
    rows = [{"eval_set": d, "pair_id": f"{d}/{i}", "teacher_chosen": scores(t)[0], "teacher_rejected": scores(t)[1],
             "student_chosen": scores(s)[0], "student_rejected": scores(s)[1]}
            for d, (teacher, student) in correct.items() for i, (t, s) in enumerate(zip(teacher, student))]
    return cell_from_scores(result, rows)


def random_correct(rng, n):
    return list(rng.choice([0, 0.5, 1], size=n, p=[0.3, 0.1, 0.6]))


@pytest.fixture
def tiny_board_cells():
    """2 seeds x 2 sources (p/a, p/b, each the other's target) x methods x and ceil, 4 pairs per dataset.
    x at seed 1 is written out so that one replicate can be checked with numbers worked out by hand."""
    rng = np.random.default_rng(7)
    cells = [make_cell("x", 1, "p/a", {"p/a": ([1, 0, 1, 0.5], [0, 1, 0, 1]), "p/b": ([0, 1, 1, 1], [1, 1, 1, 0])}),
             make_cell("x", 1, "p/b", {"p/b": ([1, 1, 0, 1], [1, 1, 1, 1]), "p/a": ([0, 0, 1, 1], [1, 0, 1, 0.5])})]
    teachers = {(seed, src): {d: random_correct(rng, 4) for d in ("p/a", "p/b")} for seed in (0, 1) for src in ("p/a", "p/b")}
    teachers[1, "p/a"] = {"p/a": [1, 0, 1, 0.5], "p/b": [0, 1, 1, 1]}
    teachers[1, "p/b"] = {"p/b": [1, 1, 0, 1], "p/a": [0, 0, 1, 1]}
    for method, seed in (("x", 0), ("ceil", 0), ("ceil", 1)):
        for src, other in (("p/a", "p/b"), ("p/b", "p/a")):
            cells.append(make_cell(method, seed, src, {d: (teachers[seed, src][d], random_correct(rng, 4))
                                                       for d in (src, other)}))
    return cells


def by_hand(cells, method, seeds, seeds_drawn, pairs_drawn, nested):
    """The definition, pair by pair in plain Python: replicate value = mean over the drawn seed slots of
    that seed's mean over source -> target rows, each accuracy over the drawn pairs of its dataset."""
    out = {k: [] for k in ("wrg", "aog", "nts")}
    for b, draws in enumerate(seeds_drawn):
        slots = []
        for j, k in enumerate(draws):
            rows = []
            for c in (c for c in cells if c.method == method and c.seed == seeds[k]):
                def acc(e, who):
                    idx = pairs_drawn[e.name][b][j] if nested else pairs_drawn[e.name][b]
                    return 100 * sum(float(getattr(e, who)[i]) for i in idx) / len(idx)
                own = next(e for e in c.eval_sets if e.name == c.source)
                for e in (e for e in c.eval_sets if e.role == "ood"):
                    tid, sid, tood, sood = acc(own, "teacher"), acc(own, "student"), acc(e, "teacher"), acc(e, "student")
                    rows.append({"wrg": sid - tid, "aog": sood - tood, "nts": sood - tood - max(0.0, tid - sid)})
            slots.append({k: sum(r[k] for r in rows) / len(rows) for k in out})
        for k in out:
            out[k].append(sum(s[k] for s in slots) / len(slots))
    return out


def test_bootstrap_matches_a_hand_computation_with_injected_resamples(tiny_board_cells):
    seeds_drawn = [[1, 1], [0, 1]]
    pairs = {"p/a": [[0, 0, 1, 2], [3, 3, 3, 1]], "p/b": [[1, 2, 2, 0], [0, 1, 2, 3]]}
    board = Board(tiny_board_cells, resamples_from_indices(seeds_drawn, pairs))
    # Replicate 0 draws seed 1 twice; x's seed-1 cells on pairs a[0,0,1,2] and b[1,2,2,0]:
    #   source a: teacher ID [1,1,0,1] 75, student ID [0,0,1,0] 25 -> WRG -50; OOD teacher [1,1,1,0] 75,
    #             student [1,1,1,1] 100 -> AOG 25, NTS 25 - 50 = -25
    #   source b: teacher ID [1,0,0,1] 50, student ID 100 -> WRG 50; OOD teacher [0,0,0,1] 25,
    #             student [1,1,0,1] 75 -> AOG 50, NTS 50
    #   mean of the two rows: WRG 0, AOG 37.5, NTS 12.5
    assert board.replicates("wrg")["x"][0] == pytest.approx(0.0)
    assert board.replicates("aog")["x"][0] == pytest.approx(37.5)
    assert board.replicates("nts")["x"][0] == pytest.approx(12.5)
    for method in ("x", "ceil"):
        expected = by_hand(tiny_board_cells, method, (0, 1), seeds_drawn, pairs, nested=False)
        for metric, values in expected.items():
            assert board.replicates(metric)[method] == pytest.approx(values, abs=1e-12)
    # PGR OOD of a replicate is x's AOG over the ceiling's AOG in that same replicate
    x = board.stats("x", ceiling="ceil").metrics["pgr_ood"]
    ratio = np.array(by_hand(tiny_board_cells, "x", (0, 1), seeds_drawn, pairs, False)["aog"]) / \
        np.array(by_hand(tiny_board_cells, "ceil", (0, 1), seeds_drawn, pairs, False)["aog"])
    assert (x.low, x.high) == pytest.approx((np.quantile(ratio, 0.025), np.quantile(ratio, 0.975)))


def test_nested_resamples_use_a_pair_draw_per_seed_slot(tiny_board_cells):
    seeds_drawn = [[1, 1], [1, 0]]
    pairs = {"p/a": [[[0, 0, 1, 2], [3, 3, 2, 2]], [[1, 1, 1, 1], [0, 1, 2, 3]]],
             "p/b": [[[1, 2, 2, 0], [0, 0, 0, 3]], [[2, 3, 2, 3], [3, 2, 1, 0]]]}
    board = Board(tiny_board_cells, resamples_from_indices(seeds_drawn, pairs), nested=True)
    expected = by_hand(tiny_board_cells, "x", (0, 1), seeds_drawn, pairs, nested=True)
    assert board.replicates("nts")["x"] == pytest.approx(expected["nts"], abs=1e-12)
    assert board.replicates("nts")["x"][0] != pytest.approx(12.5)   # slot 2 no longer repeats slot 1's pairs


def test_point_estimate_by_hand(tiny_board_cells):
    # x, seed 1, all pairs: source a WRG 50 - 62.5 = -12.5, AOG 75 - 75 = 0, NTS 0 - 12.5 = -12.5;
    # source b WRG 100 - 75 = 25, AOG 62.5 - 50 = 12.5, NTS 12.5 -> WRG 6.25, AOG 6.25, NTS 0
    seed1 = Board([c for c in tiny_board_cells if c.seed == 1], n_boot=20).stats("x").metrics
    assert (seed1["wrg"].estimate, seed1["aog"].estimate, seed1["nts"].estimate) == (6.25, 6.25, 0.0)
    assert (seed1["teacher_id"].estimate, seed1["student_id"].estimate) == (68.75, 75.0)
    both = Board(tiny_board_cells, n_boot=20)
    seed0 = Board([c for c in tiny_board_cells if c.seed == 0], n_boot=20).stats("x").metrics["nts"].estimate
    assert both.stats("x").metrics["nts"].estimate == pytest.approx((seed0 + 0.0) / 2)
    assert both.compare("x", "ceil").deltas["nts"].per_seed[1] == pytest.approx(
        0.0 - Board([c for c in tiny_board_cells if c.seed == 1], n_boot=20).stats("ceil").metrics["nts"].estimate)


def reference_results(slug):
    """The result.json files as bench report reads them (dicts, or the schema objects where there is one)."""
    data = [json.loads(cell_result(f)) for f in reference_folders(slug)]   # the store's cells, or folders
    try:
        from bench.core.result_schema import read_result
    except ImportError:
        return data
    return [read_result(d) for d in data]


def reference_folders(slug):
    """The method's own cells (not replicates), as the folders they are or were (bench.core.store.cell_folders)."""
    return [f for f in cell_folders(REFERENCE / slug) if f.relative_to(REFERENCE / slug).parts[1].startswith("seed")]


@pytest.mark.skipif(not (REFERENCE / "naive").is_dir(), reason="no reference submission")
def test_point_estimates_equal_bench_report_on_a_reference_submission():
    from bench.core.report import COLUMNS, cell_rows, summarise

    slugs = ["naive", *(["ceiling"] if (REFERENCE / "ceiling").is_dir() else [])]
    board = Board(load_cells([f for s in slugs for f in reference_folders(s)]), n_boot=200)
    rows = cell_rows(reference_results("naive"))
    for key, value, n_rows in ((None, None, 12), ("category", "helpful", 6), ("category", "harmless", 6),
                               ("source", "chat", 2)):
        expected = summarise(rows if key is None else rows[rows[key] == value])
        stats = board.stats("naive", **({key: value} if key else {}))
        for column in COLUMNS:
            assert stats.metrics[column].estimate == pytest.approx(expected[column], abs=1e-9)
            assert stats.metrics[column].low <= stats.metrics[column].estimate <= stats.metrics[column].high
        assert (stats.seeds, stats.rows) == (3, n_rows)
    if "ceiling" in slugs:
        ceiling = summarise(cell_rows(reference_results("ceiling")))
        naive = summarise(rows)
        pgr = board.stats("naive").metrics
        assert pgr["pgr_ood"].estimate == pytest.approx(naive["aog"] / ceiling["aog"], abs=1e-12)
        assert pgr["pgr_id"].estimate == pytest.approx(naive["wrg"] / ceiling["wrg"], abs=1e-12)


def two_close_methods(n=300, flip=0.03, seeds=(0, 1, 2)):
    """Methods a and b whose students agree on all but ``flip`` of the pairs, on a 2-source protocol."""
    rng = np.random.default_rng(3)
    cells = []
    for seed in seeds:
        for src, other in (("p/a", "p/b"), ("p/b", "p/a")):
            correct = {d: (random_correct(rng, n), random_correct(rng, n)) for d in (src, other)}
            cells.append(make_cell("a", seed, src, correct))
            changed = {d: (t, [1 - v if rng.random() < flip else v for v in s]) for d, (t, s) in correct.items()}
            cells.append(make_cell("b", seed, src, changed))
    return cells


def test_paired_interval_is_narrower_than_the_unpaired_one():
    cells = two_close_methods()
    paired = Board(cells).compare("a", "b").deltas["nts"]
    a = Board([c for c in cells if c.method == "a"], seed=1).replicates("nts")["a"]
    b = Board([c for c in cells if c.method == "b"], seed=2).replicates("nts")["b"]
    low, high = np.quantile(a - b, [0.025, 0.975])
    assert paired.low <= paired.estimate <= paired.high
    assert (paired.high - paired.low) < 0.5 * (high - low)


def test_same_input_same_output_whatever_the_order():
    cells = two_close_methods(n=60)

    def everything(board):
        return json.dumps(plain([board.stats("a", ceiling="b"), board.compare("a", "b"), *board.ranks()]))
    first = everything(Board(cells))
    assert everything(Board(list(reversed(cells)))) == first
    assert everything(Board(cells, seed=1)) != first          # the recorded seed is what fixes the draws


def test_a_board_of_many_methods_computes_them_a_step_at_a_time_to_the_same_numbers(monkeypatch):
    """Past METHODS_KEPT methods a board keeps no replicates' accuracies and computes them METHODS_PER_STEP methods at a
    time (a board of a thousand submissions would hold GBs): every interval, comparison and rank is the same."""
    import bench.core.stats as stats

    rng = np.random.default_rng(3)
    base = two_close_methods(n=60)
    cells = base + [make_cell(f"m{k}", c.seed, c.source, {e.name: (list(e.teacher), random_correct(rng, len(e.student)))
                                                          for e in c.eval_sets})
                    for k in range(5) for c in base if c.method == "a"]

    def everything(board):
        return json.dumps(plain([*(board.stats(m, ceiling="b") for m in board.methods), board.compare("m3", "a"),
                                 *board.ranks(), board.stats("m4", ceiling=None, source="b")]))
    whole = Board(cells, n_boot=300)
    expected = everything(whole)
    assert whole._acc[True] is not None
    monkeypatch.setattr(stats, "METHODS_KEPT", 2)
    monkeypatch.setattr(stats, "METHODS_PER_STEP", 2)
    stats._KNOWN.clear()   # computed again a step at a time, not taken from the whole board's
    stepped = Board(cells, n_boot=300)
    assert everything(stepped) == expected
    assert stepped._acc[True] is None and len(stepped._steps()) == 4


def test_a_method_has_the_same_replicates_on_every_board_and_a_board_takes_them_from_its_own(monkeypatch):
    """What lets a group's board take a method's replicate values from its submission's board (stats._KNOWN): where
    every count is exact, a method's values are those of its own rows alone, bit for bit, so computed afresh on a
    board of many methods, a step at a time, they equal those of its own board. A board takes them only for the same
    cells, rows and draws, and keeps none whose counts are not exact (a BoN credit such as 1/3). Nine seeds and 37
    pairs: a mean over 8 seeds or more added pairwise differs from one added in order (as numpy added them on a board
    of one method, and in order on one of several)."""
    import dataclasses

    import bench.core.stats as stats

    rng = np.random.default_rng(4)
    base = two_close_methods(n=37, seeds=tuple(range(9)))
    cells = base + [make_cell(f"m{k}", c.seed, c.source, {e.name: (list(e.teacher), random_correct(rng, len(e.student)))
                                                          for e in c.eval_sets})
                    for k in range(5) for c in base if c.method == "a"]
    methods = sorted({c.method for c in cells})

    def alone():   # each method on its own board, as its submission's validation computes it
        boards = {m: Board([c for c in cells if c.method == m], n_boot=300) for m in methods}
        return {m: board for m, board in boards.items() if board.replicates("nts")[m] is not None}
    own = {m: {k: board.replicates(k)[m] for k in stats.METRICS} for m, board in alone().items()}
    monkeypatch.setattr(stats, "METHODS_KEPT", 2)
    monkeypatch.setattr(stats, "METHODS_PER_STEP", 2)
    stats._KNOWN.clear()
    fresh = Board(cells, n_boot=300)
    for k in stats.METRICS:
        assert all(np.array_equal(fresh.replicates(k)[m], own[m][k]) for m in methods)
    assert fresh._acc[True] is None   # computed, a step at a time

    stats._KNOWN.clear()
    alone()
    every = Board(cells, n_boot=300)
    every.replicates("nts")
    assert True not in every._acc   # all known: no replicate's accuracy computed
    assert all(np.array_equal(every.replicates(k)[m], own[m][k]) for k in stats.METRICS for m in methods)
    other = Board(cells, n_boot=200)   # other draws: computed
    other.replicates("nts")
    assert other._acc[True] is None

    stats._KNOWN.clear()
    graded = [dataclasses.replace(c, eval_sets=tuple(dataclasses.replace(e, teacher=e.teacher * 0.3)
                                                     for e in c.eval_sets)) for c in cells if c.method == "a"]
    Board(graded, n_boot=300).replicates("nts")
    assert not stats._KNOWN


def test_replicate_counts_in_float32_and_kept_teacher_rows_are_float64s_to_the_bit():
    """The bootstrap's counts of correct pairs come from a float32 product (and a group's teacher rows are kept
    and reused) only where that is exact: whole weights, correctness 0, 0.5 or 1. They equal float64's product
    bit for bit, whatever the rows beside a row; weights that are not whole take float64's product itself."""
    from bench.core.stats import _counts

    rng = np.random.default_rng(5)
    n, B = 180, 400
    drawn = resamples_from_indices(rng.integers(0, 3, (B, 3)), {"d": rng.integers(0, n, (B, n))})
    correct = rng.choice([0.0, 0.5, 1.0], size=(7, n))
    exact = correct @ drawn.weights["d"].reshape(B, n).T
    assert np.array_equal(_counts(drawn, "d", 1, correct, shared=False), exact)
    assert np.array_equal(_counts(drawn, "d", 1, correct[2:5], shared=True), exact[2:5])
    assert np.array_equal(_counts(drawn, "d", 1, correct[::-1], shared=True), exact[::-1])   # kept rows and new ones
    from bench.core.stats import _MADE

    kept = len(_MADE[drawn]["rows", "d", 1])   # the seven rows above
    one = rng.choice([0.0, 0.5, 1.0], size=(1, n))
    counts = _counts(drawn, "d", 1, np.repeat(one, 600, axis=0), shared=True)   # one teacher row in 600 methods
    assert len(_MADE[drawn]["rows", "d", 1]) == kept + 1   # kept once, past _KEPT_ROWS copies of it
    assert np.array_equal(counts[-1], (one @ drawn.weights["d"].reshape(B, n).T)[0])
    graded = correct * 0.3   # not a tie's halves: float32 would round
    assert np.array_equal(_counts(drawn, "d", 1, graded, shared=True), graded @ drawn.weights["d"].reshape(B, n).T)


def test_p_value_and_t_interval():
    cells = two_close_methods(n=60)
    board = Board(cells, n_boot=400)
    same = board.compare("a", "a").deltas["nts"]
    assert (same.estimate, same.low, same.high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    delta = board.compare("a", "b").deltas["nts"]
    reps = board.replicates("nts")
    d = reps["a"] - reps["b"]
    p = min(1.0, 2 * min(np.mean(d <= 0), np.mean(d >= 0)))
    assert delta.p_value == pytest.approx(max(p, 1 / 400))
    assert delta.p_text == ("< 0.0025" if p == 0 else f"{p:.3g}")
    per_seed = np.array(delta.per_seed)
    half = 4.302652729749 * per_seed.std(ddof=1) / np.sqrt(3)      # t(0.975, 2 df)
    assert (delta.t_low, delta.t_high) == pytest.approx((per_seed.mean() - half, per_seed.mean() + half))
    assert per_seed.mean() == pytest.approx(delta.estimate)


def test_t_quantile_matches_the_tables():
    for df, value in ((1, 12.7062), (2, 4.3027), (3, 3.1824), (4, 2.7764), (9, 2.2622), (30, 2.0423)):
        assert t_quantile(0.975, df) == pytest.approx(value, abs=1e-4)


def test_rank_intervals():
    cells = two_close_methods(n=200)
    strong = [make_cell("c", c.seed, c.source, {e.name: (list(e.teacher), [1] * len(e.student)) for e in c.eval_sets})
              for c in cells if c.method == "a"]
    ranks = {r.method: r for r in Board(cells + strong, n_boot=300).ranks()}
    assert (ranks["c"].rank, ranks["c"].low, ranks["c"].high) == (1, 1, 1)   # every student pair right
    assert {ranks["a"].rank, ranks["b"].rank} == {2, 3} and ranks["a"].low >= 2 and ranks["b"].high <= 3


def test_mismatched_cells_or_pair_ids_are_refused():
    cells = two_close_methods(n=20)
    renamed = []
    for c in cells:
        if c.method == "b" and c.seed == 1 and c.source == "p/a":
            e = c.eval_sets[1]
            c = type(c)(c.method, c.seed, c.source, c.category,
                        (c.eval_sets[0], type(e)(e.name, e.role, tuple(reversed(e.pair_ids)), e.teacher, e.student)))
        renamed.append(c)
    with pytest.raises(ValueError, match="pair ids of p/b differ"):
        Board(renamed)
    with pytest.raises(ValueError, match="different cells"):
        Board([c for c in cells if not (c.method == "b" and c.seed == 2)])
    with pytest.raises(ValueError, match="twice"):
        Board(cells + cells[:1])


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf"])
def test_non_finite_scores_are_refused(bad):
    result = {"method": {"name": "m", "params": {}}, "seed": 0, "source": "p/a", "category": "c",
              "protocol": {"name": "p", "version": "1"}, "eval_sets": {"p/a": {"role": "id"}, "p/b": {"role": "ood"}}}
    rows = [{"eval_set": d, "pair_id": f"{d}/{i}", "teacher_chosen": "1", "teacher_rejected": "0",
             "student_chosen": "1", "student_rejected": "0"} for d in ("p/a", "p/b") for i in range(3)]
    rows[4]["student_rejected"] = bad
    with pytest.raises(ValueError, match=r"non-finite score in eval set p/b \(pair p/b/1\)"):
        cell_from_scores(result, rows, "cell X")


def test_load_cells_refuses_a_changed_scores_file(tmp_path):
    if not (REFERENCE / "naive").is_dir():
        pytest.skip("no reference submission")
    from bench.core.store import unpack

    unpack(REFERENCE / "naive", tmp_path / "naive")   # the committed store's cells as the files they were
    folder = sorted(p.parent for p in (tmp_path / "naive").rglob("result.json"))[0]
    copy = tmp_path / "cell"
    copy.mkdir()
    (copy / "result.json").write_bytes((folder / "result.json").read_bytes())
    (copy / "scores.csv.gz").write_bytes((folder / "scores.csv.gz").read_bytes() + b"\0")
    with pytest.raises(ValueError, match="does not match the sha256"):
        load_cells([copy])


def test_above_counts_what_pairwise_comparisons_count():
    """bench.core.stats.above (how many values of a replicate are above each: its rank - 1) equals the count by
    comparisons, with ties, signed zeros, infinities and a NaN (which takes the comparisons' own path)."""
    from bench.core.stats import above

    rng = np.random.default_rng(7)
    for m, b in ((1, 4), (3, 9), (70, 50)):
        x = np.round(rng.standard_normal((m, b)), 1)
        x[0, 0], x[-1, 1], x[0, 2] = -0.0, np.inf, -np.inf
        for values in (x, np.where(np.arange(b) == 3, np.nan, x)):
            assert np.array_equal(above(values), (values[None, :, :] > values[:, None, :]).sum(1))
