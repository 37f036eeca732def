"""The board on a protocol seeded per source, whose runs are independent (conftest's ``seq_runs``: looks at 2 and 3
seeds, best-of-4 candidate sets; naive and anchor lam=0.5 grown to a third seed, the ceiling and anchor lam=2.0 on
the protocol's two), beside the plain small runs (a v1 group, its sources sharing their seeds): a difference from
naive is decided over runs (``Δ 95% (runs)``, bench compare's numbers), every row says what its Δ rests on, and the
verdict, the definitions, the ablation and the static page name that rule, while the v1 group keeps its columns."""
import math
import shutil

import pytest
from small_runs import merged

from bench.core.compare import (
    Decision,
    board_for,
    comparison_table,
    decision_rule,
    decision_table,
    interval_text,
)
from bench.core.report import TEACHER
from bench.core.runs import runs_delta
from bench.core.stats import bon_view
from leaderboard import core, figures, render

RUNS_RULE, SEEDS_RULE = decision_rule(True), decision_rule(False)
SEQ_DEFAULT = ["rank", "method", "params", "NTS", "decided", "Δ NTS vs naive", "Δ 95% (runs)", "runs", "NTS 95% CI",
               "rank 95%", "AOG", "WRG", "ID acc", "OOD acc", "BoN NTS", "BoN decided"]


def group(runs) -> tuple[str, str]:
    return next(iter(runs.protocols)), next(iter(runs.model_pairs))


@pytest.fixture(scope="module")
def both(tmp_path_factory, seq_runs, runs):
    return merged(tmp_path_factory, "runs_board", runs, seq_runs)


@pytest.fixture(scope="module")
def board(both, tmp_path_factory):
    return core.load_board(*both, tmp_path_factory.mktemp("validation_cache"))


def pairs_of(board, seq_runs) -> dict[str, list]:
    """slug -> the cells (per-pair correctness) of each validated submission of the per-source group."""
    found = {v.submission["slug"]: v.pairs for v in board.in_group(*group(seq_runs)) if v.ok}
    assert sorted(found) == ["anchor_lam=0.5_layers=last", "anchor_lam=2.0_layers=last", "ceiling", "naive"]
    return found


def test_a_difference_is_decided_over_runs_and_each_row_says_what_it_rests_on(board, seq_runs):
    """Δ NTS vs naive, the interval that decides it and "decided" are bench.core.runs.runs_delta over every seed
    both sides hold (as bench compare prints them); "runs" counts those runs and seeds, so the grown anchor rests on
    more runs than the ceiling; the BoN columns read the interval over runs the same way."""
    assert board.independent(*group(seq_runs))
    cells = pairs_of(board, seq_runs)
    table = core.ranking(board, *group(seq_runs)).set_index("submission")
    rows = {key.rsplit("/", 1)[-1]: row for key, row in table.iterrows() if key}
    assert {slug: rows[slug]["runs"] for slug in cells} == {
        "anchor_lam=0.5_layers=last": "6 runs (3 seeds)", "anchor_lam=2.0_layers=last": "4 runs (2 seeds)",
        "ceiling": "4 runs (2 seeds)", "naive": "6 runs (3 seeds)"}   # naive's own row: what it holds, no Δ
    assert {slug: rows[slug]["held"] for slug in cells} == {"anchor_lam=0.5_layers=last": 3,
                                                            "anchor_lam=2.0_layers=last": 2, "ceiling": 2, "naive": 3}
    for slug in cells:
        if slug == "naive":
            assert rows[slug]["Δ 95% (runs)"] == rows[slug]["decided"] == "" and math.isnan(rows[slug]["Δ NTS vs naive"])
            continue
        found = runs_delta(cells[slug], cells["naive"], "nts", looks=(2, 3))
        row = rows[slug]
        assert row["Δ NTS vs naive"] == pytest.approx(found.estimate)   # over the seeds both hold, not the shared two
        low, high = max(found.low, -200), min(found.high, 200)   # cut to what Δ NTS can be (DIFFERENCE_SPAN)
        assert (row["Δ decides low"], row["Δ decides high"]) == pytest.approx((low, high))
        assert row["Δ 95% (runs)"] == interval_text(low, high) and row["Δ t 95% (seeds)"] == ""
        assert row["decided"] == (("better" if found.estimate > 0 else "worse") if found.decided else "no")
        compared, names = board_for(seq_runs.submissions, [slug, "naive"])
        printed = comparison_table(compared, *names).set_index("metric").loc["NTS"]
        assert printed["deciding 95%"] == f"{row['Δ 95% (runs)']} ({found.runs} runs)"   # bench compare's numbers
        assert printed["deciding Δ"] == f"{found.estimate:+.2f}"   # the deciding interval's centre, the board's Δ
        bon = runs_delta(bon_view(cells[slug]), bon_view(cells["naive"]), "nts", looks=(2, 3))
        assert row["Δ BoN NTS vs naive"] == pytest.approx(bon.estimate)
        assert (row["Δ BoN low"], row["Δ BoN high"]) == pytest.approx((max(bon.low, -200), min(bon.high, 200)))
    shared = decision_table(board_for(seq_runs.submissions)[0]).set_index("method")
    assert shared.loc["anchor_lam=0.5_layers=last", "runs"] == 6 and shared.loc["ceiling", "runs"] == 4


def test_report_prints_the_runs_a_decision_rests_on_as_integers(seq_runs, capsys):
    """bench report's decision table: "6", not "+6.00" (its float format is for the signed metrics)."""
    from bench.cli import main

    assert main(["report", "--out", str(seq_runs.submissions)]) == 0
    lines = capsys.readouterr().out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.split()[:1] == ["method"] and "runs" in line.split())
    grown = next(line for line in lines[header:] if line.split()[:1] == ["anchor_lam=0.5_layers=last"])
    assert grown.split()[-1] == "6" and "+6.00" not in grown


def test_the_default_columns_follow_the_groups_seeding(board, seq_runs, runs):
    """The per-source group shows the interval over runs and what it rests on instead of a blank t-interval over
    seeds; the v1 group keeps its columns (its rows rest on its seeds); the cells are the one number format."""
    from test_leaderboard import NUMBER

    seq = core.shown(core.ranking(board, *group(seq_runs)), board=board)
    assert [c.name for c in seq.columns] == SEQ_DEFAULT
    shown = {(r.cells[1].text, r.cells[2].text): {c.name: cell.text for c, cell in zip(seq.columns, r.cells)}
             for r in seq.rows}
    anchor = shown["anchor", "lam=0.5, layers=last"]
    assert anchor["runs"] == "6 runs (3 seeds)" and anchor["Δ 95% (runs)"].startswith("[")
    assert shown["naive", ""]["runs"] == "6 runs (3 seeds)" and shown["teacher (weak)", ""]["runs"] == ""
    numbers = [cell.text for row in seq.rows for cell in row.cells if cell.number]
    assert all(NUMBER.fullmatch(t) for t in numbers) and "-0.0" not in numbers
    runs_at = SEQ_DEFAULT.index("runs")
    assert sorted(r.cells[runs_at].sort for r in seq.rows if r.cells[runs_at].text.endswith(")")) == [4, 4, 6, 6]
    plain = core.shown(core.ranking(board, *group(runs)), board=board)
    names = [c.name for c in plain.columns]
    assert "Δ t 95% (seeds)" in names and "Δ 95% (runs)" not in names and "runs" not in names
    assert set(core.ranking(board, *group(runs))["runs"]) - {""} == {"1 seed"}   # what its Δ would rest on
    assert core.shown(core.ranking(board, *group(seq_runs)), ["rank", "method", "Δ t 95% (seeds)"], board).columns[-1] \
        .name == "method"   # asked for, but it does not apply to this group


def test_what_a_row_rests_on_names_the_seeds_its_submission_holds_beyond_naives():
    over_runs = Decision(-1.0, 2.0, False, 0.5, seeds=3, runs=18)
    assert core.rests_on(over_runs, 3) == "18 runs (3 seeds)"
    assert core.rests_on(over_runs, 5) == "18 runs (3 of 5 seeds)"   # grown further than naive
    assert core.rests_on(Decision(-1.0, 2.0, False, 0.5, seeds=3), 3) == "3 seeds"   # v1: decided over seeds
    assert core.rests_on(None, 1) == "1 seed"
    assert core.rests_on(None, 10, runs=60) == "60 runs (10 seeds)"   # naive's own row, on independent runs


def test_the_verdict_definitions_and_cards_name_the_rule_over_runs(board, seq_runs, runs):
    table = core.ranking(board, *group(seq_runs))
    found = core.verdict(board, table)
    assert found.independent and f". Δ NTS vs naive is {RUNS_RULE}. Each row's decided column is its own 95% decision" in found.text()
    ranked = table[table["role"] == "method"].set_index("params")
    for side, names in (("better", found.better), ("worse", found.worse)):
        assert len(names) == (ranked["decided"] == side).sum()
    assert len(found.better + found.worse + found.undecided) == 2   # the two anchors; naive is no contender
    html = render.verdict_html("g", found)
    assert ('<span class="sb-rule">' + found.family_wise() + f'Δ NTS vs naive is {RUNS_RULE}. Each row' +
            "'s decided column is its own 95% decision") in str(html).replace("&#39;", "'")
    assert f'<span class="sb-verdict-head">{found.compact()}</span>' in str(html).replace("&#39;", "'")
    view = core.shown(table, board=board)
    assert view.rules == [("Δ 95% (runs)", RUNS_RULE)]
    page = str(render.ranking_html(view)).replace("&#39;", "'")
    assert f"Δ NTS vs naive is {RUNS_RULE}, the interval shown as <b>Δ 95% (runs)</b>" in page   # the legend
    assert f"<dt>Δ 95% (runs)</dt><dd>{core.HELP['Δ 95% (runs)']}</dd>" in page and RUNS_RULE in core.HELP["Δ 95% (runs)"]
    assert "<dt>runs</dt>" in page and "t-interval" not in page.split('class="sb-legend"')[1].split("</p>")[0]
    assert '<span class="nb">6 runs</span> <span class="nb">(3 seeds)</span>' in page   # breaks between the two
    plain = core.shown(core.ranking(board, *group(runs)), board=board)
    assert plain.rules == [("Δ t 95% (seeds)", SEEDS_RULE)]
    assert f"Δ NTS vs naive is {SEEDS_RULE}" in str(render.ranking_html(plain)).replace("&#39;", "'")
    card = core.protocol_card(group(seq_runs)[0], seq_runs.protocols)
    assert card.rstrip().endswith(f"On this protocol a difference from naive is {RUNS_RULE}.")
    assert core.protocol_card(group(runs)[0], runs.protocols).rstrip().endswith(SEEDS_RULE + ".")


def test_the_ablation_draws_the_interval_over_runs(board, seq_runs):
    """Each setting's bar is naive's value plus the interval over runs that decides it, its point naive's value
    plus the paired Δ (anchor lam=2.0 holds two of naive's three seeds); the table and the picture name the rule."""
    sweep = core.ablations(board, *group(seq_runs))["mini-seq-board/tiny-test/anchor"]
    assert sweep.independent
    table = core.ranking(board, *group(seq_runs)).set_index("submission")
    base = sweep.baseline["NTS"]
    assert base == pytest.approx(table[table["method"] == "naive"]["NTS"].iloc[0])   # naive's row: the seeds all hold
    for _, row in sweep.table.iterrows():
        ranked = table.loc[row["submission"]]
        assert (row["NTS low"], row["NTS high"]) == pytest.approx((base + ranked["Δ decides low"],
                                                                   base + ranked["Δ decides high"]))
        assert row["NTS point"] == pytest.approx(base + ranked["Δ NTS vs naive"])
        assert row["NTS low"] <= row["NTS point"] <= row["NTS high"]
        assert (row["NTS low"] <= base <= row["NTS high"]) == (ranked["decided"] == "no")
        assert row["runs"] == ranked["runs"]
    shown = core.sweep_display(sweep)
    assert {"Δ NTS 95% (runs)", "Δ AOG 95% (runs)", "runs"} <= set(shown.columns)
    assert not any("t 95%" in c for c in shown.columns)
    assert sorted(shown["runs"]) == ["4 runs (2 seeds)", "6 runs (3 seeds)"]
    for narrow in (False, True):
        fig = figures.ablation(sweep, "mini-seq-board/tiny-test/anchor", narrow)
        assert RUNS_RULE in fig.get_suptitle().replace("\n", " ")
        segments = fig.axes[0].containers[0].lines[2][0].get_segments()
        assert sorted((round(s[0][1], 6), round(s[1][1], 6)) for s in segments) == \
            sorted((round(lo, 6), round(hi, 6)) for lo, hi in zip(sweep.table["NTS low"], sweep.table["NTS high"]))


def test_the_static_page_markdown_and_cache_keep_the_rule_per_group(board, both, seq_runs, tmp_path):
    from leaderboard.render import markdown_page
    from leaderboard.static import write_site

    _, protocols, model_pairs = both
    page = write_site(board, tmp_path / "site", protocols, model_pairs).read_text().replace("&#39;", "'")
    sections = dict(zip(board.groups, page.split('<section class="sb-group"')[1:]))
    seq = sections[group(seq_runs)]
    assert 'data-col="Δ 95% (runs)"' in seq and 'data-col="runs"' in seq and 'data-col="Δ t 95% (seeds)"' not in seq
    assert f"Δ NTS vs naive is {RUNS_RULE}" in seq and "<th>Δ NTS 95% (runs)</th>" in seq   # verdict; ablation table
    other = next(s for g, s in sections.items() if g != group(seq_runs))
    assert 'data-col="Δ t 95% (seeds)"' in other and 'data-col="runs"' not in other and RUNS_RULE not in other
    text = core.markdown(board, protocol=group(seq_runs)[0])
    assert text.splitlines()[0] == "| " + " | ".join(SEQ_DEFAULT) + " |"
    assert "| 6 runs (3 seeds) |" in text
    page_md = markdown_page(board)   # bench leaderboard --markdown: each group's context, table and verdict
    assert page_md.startswith("Each table below is one protocol and model pair") and page_md.count("### ") == 2
    first_group = page_md.split("### ")[1 + board.groups.index(group(seq_runs))]
    assert f"**Protocol** `{group(seq_runs)[0]}` v" in first_group and text in first_group
    assert f"Δ NTS vs naive is {RUNS_RULE}" in first_group and "**Verdict on " in first_group
    only = markdown_page(board, *group(seq_runs))
    assert only == first_group.split("\n\n", 1)[1].rstrip("\n") and "Each table below" not in only
    again = core.load_board(*both, tmp_path / "cache")   # from a fresh cache, then from the stored entries
    cached = core.load_board(*both, tmp_path / "cache")
    columns = ["submission", "Δ NTS vs naive", "Δ decides low", "Δ 95% (runs)", "runs", "decided"]
    first = core.ranking(again, *group(seq_runs))[columns]
    assert first.equals(core.ranking(cached, *group(seq_runs))[columns]) and cached.independent(*group(seq_runs))


def test_rows_holding_more_seeds_are_ranked_on_the_seeds_every_row_holds(board, seq_runs):
    """naive and anchor lam=0.5, grown to a third seed, are ranked and their NTS shown over the two seeds every row
    holds: NTS, its interval, the rank and its interval are ``decision_table``'s on those seeds (so a rank lies in its
    rank interval), while "held", "runs" and Δ keep the third seed."""
    from bench.core.stats import Board as Bootstrap

    cells = pairs_of(board, seq_runs)
    boot = Bootstrap([c for own in cells.values() for c in own])
    assert boot.seeds == (0, 1)
    expected = decision_table(boot).set_index("method")
    table = core.ranking(board, *group(seq_runs))
    rows = {key.rsplit("/", 1)[-1]: row for key, row in table.set_index("submission").iterrows() if key}
    for slug in cells:
        assert rows[slug]["NTS"] == pytest.approx(expected.loc[slug, "NTS"], abs=1e-9)
        assert rows[slug]["NTS 95% CI"] == expected.loc[slug, "NTS 95% CI"] and rows[slug]["seeds"] == 2
    grown = rows["anchor_lam=0.5_layers=last"]
    assert grown["held"] == 3 and grown["runs"] == "6 runs (3 seeds)"
    assert grown["rank 95%"] == expected.loc["anchor_lam=0.5_layers=last", "rank 95%"]
    low, high = (int(x) for x in str(grown["rank 95%"]).split("-")) if "-" in str(grown["rank 95%"]) else \
        (int(grown["rank 95%"]),) * 2
    assert low <= int(grown["rank"]) <= high
    ranked = table[table["rank"].str.isdigit()]
    assert list(ranked["NTS"]) == sorted(ranked["NTS"], reverse=True)
    assert "the ranks are over the 2 seeds every submission holds" in core.verdict(board, table).text()


# --- a method chosen on the protocol's seeds (bench submit --fresh-from) ---------------------------------------
FRESH = "anchor_lam=0.5_layers=last"


def resubmit(runs, root, slug: str, *, fresh_from=None, seeds=None) -> None:
    """Pack ``slug``'s runs again into ``root``: chosen on the protocol's seed (``fresh_from``), or only ``seeds``."""
    from bench.submissions.pack import submit

    folder = runs.results / next(iter(runs.protocols)) / next(iter(runs.model_pairs)) / slug
    submit([folder / f"seed{s}" for s in seeds] if seeds else [folder], root, "test suite", force=True,
           protocols=runs.protocols, model_pairs=runs.model_pairs, fresh_from=fresh_from)


@pytest.fixture(scope="module")
def fresh_root(fresh_runs, tmp_path_factory):
    """fresh_runs' submissions with anchor lam=0.5 packed as chosen on seed 0, the protocol's own: --fresh-from 1."""
    root = fresh_runs.copy_submissions(tmp_path_factory.mktemp("fresh") / "submissions")
    resubmit(fresh_runs, root, FRESH, fresh_from=1)
    return root


def test_a_method_chosen_on_the_protocols_seeds_is_decided_on_the_others(fresh_root, fresh_runs, tmp_path, capsys):
    """Its Δ, the interval that decides it and "decided" are bench compare --fresh-from 1's: the runs of seeds 1 and 2
    of both sides, the plan's boundary at two seeds; its row, the markdown page and the verdict say so, its own NTS
    is over every seed it holds, and bench compare without --fresh-from says how to get the board's numbers."""
    from bench.cli import main
    from leaderboard.render import markdown_page

    plain = core.load_board(fresh_runs.submissions, fresh_runs.protocols, fresh_runs.model_pairs, tmp_path / "c1")
    fresh = core.load_board(fresh_root, fresh_runs.protocols, fresh_runs.model_pairs, tmp_path / "c2")
    assert [v.submission.get("fresh_from") for v in fresh.in_group(*group(fresh_runs)) if v.ok].count(1) == 1
    before, table = (core.ranking(b, *group(fresh_runs)).set_index("submission") for b in (plain, fresh))
    key = next(k for k in table.index if FRESH in k)
    row, was = table.loc[key], before.loc[key]
    cells = {v.submission["slug"]: v.pairs for v in fresh.in_group(*group(fresh_runs)) if v.ok}
    found = runs_delta(*([c for c in cells[s] if c.seed >= 1] for s in (FRESH, "naive")), "nts", looks=(2, 3))
    everything = runs_delta(cells[FRESH], cells["naive"], "nts", looks=(2, 3))
    assert found.runs == 4 and everything.runs == 6
    assert was["Δ NTS vs naive"] == pytest.approx(everything.estimate)
    assert row["Δ NTS vs naive"] == pytest.approx(found.estimate) != pytest.approx(everything.estimate)
    assert (row["Δ decides low"], row["Δ decides high"]) == pytest.approx((max(found.low, -200), min(found.high, 200)))
    assert row["decided"] == (("better" if found.estimate > 0 else "worse") if found.decided else "no")
    assert row["runs"] == "4 runs (2 of 3 seeds, from seed 1)" and row["fresh from"] == 1
    assert was["runs"] == "6 runs (3 seeds)" and was["fresh from"] == 0
    assert row["NTS"] == pytest.approx(was["NTS"])   # not about Δ: over the seeds every row holds
    # its rank: by naive's NTS plus its Δ on the fresh seeds, not by its own NTS on the seed that chose it
    ranked = table[table["rank"].str.isdigit()]
    naive_nts = ranked.loc[ranked["method"] == "naive", "NTS"].iloc[0]
    value = {k: naive_nts + r["Δ NTS vs naive"] if r["fresh from"] else r["NTS"] for k, r in ranked.iterrows()}
    assert sorted(value, key=lambda k: -value[k]) == sorted(ranked.index, key=lambda k: int(ranked.loc[k, "rank"]))
    assert value[key] == pytest.approx(naive_nts + found.estimate)
    bon = runs_delta(*(bon_view([c for c in cells[s] if c.seed >= 1]) for s in (FRESH, "naive")), "nts", looks=(2, 3))
    assert row["Δ BoN NTS vs naive"] == pytest.approx(bon.estimate)
    text = core.verdict(fresh, table.reset_index()).text()
    assert "anchor was chosen on its first seeds" in text and "--fresh-from" in text
    assert "chosen on" not in core.verdict(plain, before.reset_index()).text()
    assert "| 4 runs (2 of 3 seeds, from seed 1) |" in markdown_page(fresh)
    compared, names = board_for(fresh_root, [FRESH, "naive"], from_seed=1)   # bench compare --fresh-from 1
    assert compared.runs_delta(*names).estimate == pytest.approx(found.estimate)
    capsys.readouterr()
    assert main(["compare", FRESH, "naive", "--out", str(fresh_root)]) == 0   # without --fresh-from: says to add it
    assert "chosen on the seeds below 1 (fresh_from)" in capsys.readouterr().err
    assert main(["compare", FRESH, "naive", "--out", str(fresh_root), "--fresh-from", "1"]) == 0
    printed = capsys.readouterr()
    assert "fresh_from" not in printed.err and f"{row['Δ 95% (runs)']} (4 runs)" in printed.out   # the board's numbers


def test_a_chosen_method_is_undecided_where_naive_holds_none_of_the_other_seeds(fresh_root, fresh_runs, tmp_path):
    root = tmp_path / "submissions"
    shutil.copytree(fresh_root, root)
    resubmit(fresh_runs, root, "naive", seeds=[0])   # naive at the protocol's seed alone
    board = core.load_board(root, fresh_runs.protocols, fresh_runs.model_pairs, tmp_path / "cache")
    table = core.ranking(board, *group(fresh_runs))
    row = table[table["submission"].str.contains(FRESH, regex=False)].iloc[0]
    assert row["decided"] == "no" and math.isnan(row["Δ NTS vs naive"]) and row["Δ 95% (runs)"] == ""
    assert row["runs"] == "none: naive holds no whole seed from 1 on"


def test_fresh_from_is_the_first_seed_after_the_protocols_own(fresh_root, fresh_runs, seq_runs, runs, tmp_path):
    """Only that seed (a start one may pick could pick the seeds that decide), on a protocol whose plan looks at
    seeds after its own, never on naive, and with a seed held from it on; each refusal names the fix."""
    from small_runs import edit_json

    from bench.core.errors import BenchError
    from bench.submissions import validate_submission

    protocol, models = group(fresh_runs)
    assert validate_submission(fresh_root / protocol / models / FRESH, fresh_runs.protocols, fresh_runs.model_pairs).ok

    def problems(source, fresh_from, on):
        folder = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
        shutil.copytree(source, folder)
        edit_json(folder / "submission.json", lambda meta: meta.update(fresh_from=fresh_from))
        return [str(e) for e in validate_submission(folder, on.protocols, on.model_pairs).errors if "fresh_from" in str(e)]

    ours = fresh_runs.submissions / protocol / models
    [error] = problems(ours / FRESH, 2, fresh_runs)
    assert "is 2; on mini-fresh it is 1, the first seed after the protocol's own [0]" in error
    assert error.endswith("Fix: bench submit again with --fresh-from 1")
    [error] = problems(ours / "naive", 1, fresh_runs)
    assert "on naive, which nothing chose" in error
    seq = seq_runs.submissions / group(seq_runs)[0] / group(seq_runs)[1] / FRESH   # plan: 3 seeds, its own 2
    [error] = problems(seq, 2, seq_runs)
    assert "has no sequential plan that looks at 2 seeds after its own [0, 1]" in error
    [error] = problems(runs.submissions / group(runs)[0] / group(runs)[1] / FRESH, 1, runs)   # v1: no plan
    assert "no sequential plan" in error
    with pytest.raises(BenchError, match="holds no seed from 1 on.*bench compare anchor_lam=0.5_layers=last naive"):
        resubmit(fresh_runs, tmp_path / "alone", FRESH, fresh_from=1, seeds=[0])


def test_naives_replicates_are_carried_and_correct_what_the_rule_says(fresh_root, fresh_runs, tmp_path, monkeypatch):
    """naive's submission holds its replicate (cells/replicate1/...), validated as its own cells are, but no row and no
    part of its summary. The rule applies no control, so the board's Δ against naive is the plain runs delta, as bench
    compare's on the same folder; where a variant sets CONTROL_FROM (3 here, to reach it on three seeds) the board
    corrects each run's Δ by their A/A difference, as bench compare does, and says so."""
    import json

    import bench.core.runs
    from bench.submissions import validate_submission
    from bench.submissions.limits import cell_folder

    protocol, models = group(fresh_runs)
    folder = fresh_runs.submissions / protocol / models / "naive"
    meta = json.loads((folder / "submission.json").read_text())
    sources = fresh_runs.protocols[protocol].datasets
    assert sorted((ref["seed"], ref["source"]) for ref in meta["cells"] if ref.get("replicate") == 1) == \
        sorted((seed, source) for seed in (0, 1, 2) for source in sources)
    assert (folder / cell_folder(2, sources[0], 1) / "result.json").is_file()
    v = validate_submission(folder, fresh_runs.protocols, fresh_runs.model_pairs)
    assert v.ok and {c.method for c in v.controls} == {"naive#1"} and len(v.controls) == len(v.pairs) == 3 * len(sources)
    resubmit(fresh_runs, tmp_path / "alone", "naive")   # without the replicate: the same summary and intervals
    alone = json.loads((tmp_path / "alone" / protocol / models / "naive" / "submission.json").read_text())
    assert (alone["summary"], alone["intervals"]) == (meta["summary"], meta["intervals"])

    root = fresh_runs.submissions
    ruled = core.load_board(root, fresh_runs.protocols, fresh_runs.model_pairs, tmp_path / "cache")
    cells = {v.submission["slug"]: v.pairs for v in ruled.in_group(protocol, models)}
    plain = runs_delta(cells[FRESH], cells["naive"], looks=(2, 3))
    compared, names = board_for(root, [FRESH, "naive"])   # bench compare's, on the same folder
    assert compared.runs_delta(*names) == plain and plain.controls == 0
    row = core.ranking(ruled, protocol, models).set_index("method").loc["anchor"]
    assert row["runs"] == f"{3 * len(sources)} runs (3 seeds)" and row["Δ NTS vs naive"] == pytest.approx(plain.estimate)

    monkeypatch.setattr(bench.core.runs, "CONTROL_FROM", 3)
    board = core.load_board(root, fresh_runs.protocols, fresh_runs.model_pairs, tmp_path / "cache")
    table = core.ranking(board, protocol, models).set_index("method")
    compared, names = board_for(root, [FRESH, "naive"])   # bench compare's, on the same folder
    expected = compared.runs_delta(*names)
    assert expected.controls == 1 and expected.estimate != pytest.approx(plain.estimate)
    row = table.loc["anchor"]
    assert row["Δ NTS vs naive"] == pytest.approx(expected.estimate)
    assert (row["Δ decides low"], row["Δ decides high"]) == pytest.approx((max(expected.low, -200),
                                                                          min(expected.high, 200)))
    assert row["runs"] == f"{3 * len(sources)} runs (3 seeds), 1 control replicate"
    assert table.loc["naive", "runs"] == f"{3 * len(sources)} runs (3 seeds), 1 replicate"
    assert sorted(table.index) == sorted(["naive", "anchor", TEACHER])   # the replicate is no row
    again = core.load_board(root, fresh_runs.protocols, fresh_runs.model_pairs, tmp_path / "cache")   # from the cache
    assert [len(v.controls) for v in again.validations] == [len(v.controls) for v in board.validations]


def test_only_naive_holds_whole_replicates(fresh_runs, tmp_path):
    """A replicate in another method's submission, one missing a source of its seed, or one that is no A/A run of
    naive's cell is refused with the fix; bench submit refuses replicates given without naive's own runs."""
    import json

    from small_runs import edit_json

    from bench.core.errors import BenchError
    from bench.core.io import sha256_file
    from bench.submissions import validate_submission
    from bench.submissions.limits import cell_folder
    from bench.submissions.pack import submit

    protocol, models = group(fresh_runs)
    ours = fresh_runs.submissions / protocol / models

    def errors(folder):
        return " ".join(map(str, validate_submission(folder, fresh_runs.protocols, fresh_runs.model_pairs).errors))

    naive = tmp_path / "naive"
    shutil.copytree(ours / "naive", naive)
    meta = json.loads((naive / "submission.json").read_text())
    dropped = next(ref for ref in meta["cells"] if ref.get("replicate") and ref["seed"] == 2)
    meta["cells"].remove(dropped)
    shutil.rmtree(naive / "cells" / "replicate1" / "seed2" / dropped["source"].replace("/", "__"))
    (naive / "submission.json").write_text(json.dumps(meta))
    assert "replicate 1 of seed 2 is not whole" in errors(naive) and "--replicate 1" in errors(naive)

    other = tmp_path / "anchor"
    shutil.copytree(ours / FRESH, other)
    shutil.copytree(ours / "naive" / "cells" / "replicate1", other / "cells" / "replicate1")
    meta = json.loads((other / "submission.json").read_text())
    naive_meta = json.loads((ours / "naive" / "submission.json").read_text())
    meta["cells"] += [ref for ref in naive_meta["cells"] if ref.get("replicate")]
    (other / "submission.json").write_text(json.dumps(meta))
    assert "but only naive's submission holds them" in errors(other)

    alike = tmp_path / "alike"   # a replicate trained on other labels is no A/A run of naive's cell
    shutil.copytree(ours / "naive", alike)
    meta = json.loads((alike / "submission.json").read_text())
    ref = next(ref for ref in meta["cells"] if ref.get("replicate"))
    result_file = alike / cell_folder(ref["seed"], ref["source"], 1) / "result.json"
    edit_json(result_file, lambda result: result["labels"].update(digest="0" * 64))
    ref["result_sha256"] = sha256_file(result_file)
    (alike / "submission.json").write_text(json.dumps(meta))
    assert "labels.digest: is '0000" in errors(alike) and "differs from it in the student's randomness alone" in \
        errors(alike)

    with pytest.raises(BenchError, match="holds only replicates.*give naive's own results folder"):
        submit([fresh_runs.results / protocol / models / "naive#1"], tmp_path / "subs", "test suite",
               protocols=fresh_runs.protocols, model_pairs=fresh_runs.model_pairs)
    runs = fresh_runs.results / protocol / models
    twice = tmp_path / "twice" / "naive#1"   # one replicate cell in two results folders: which one is meant?
    shutil.copytree(runs / "naive#1" / "seed0", twice / "seed0")
    with pytest.raises(BenchError, match="replicate 1 of seed 0 .* also in .*give one results folder"):
        submit([runs / "naive", runs / "naive#1", twice], tmp_path / "subs", "test suite",
               protocols=fresh_runs.protocols, model_pairs=fresh_runs.model_pairs)


def test_a_row_chosen_on_its_first_seeds_ranks_by_naive_plus_its_fresh_delta():
    """rank_value: a chosen row whose own NTS (lifted by the choice) would rank it first ranks by naive's NTS plus
    its Δ on the fresh seeds, below a row it beat on its own NTS; without naive or a Δ, by its own NTS."""
    from leaderboard.ranking import rank_value

    chosen = {"NTS": 3.6, "Δ NTS vs naive": 0.2, "fresh from": 3, "Δ BoN NTS vs naive": math.nan, "BoN NTS": 1.0}
    other = {"NTS": 2.0, "Δ NTS vs naive": 1.4, "fresh from": 0, "Δ BoN NTS vs naive": math.nan, "BoN NTS": 0.5}
    naive = 0.6
    assert rank_value(chosen, naive) == pytest.approx(0.8)
    assert rank_value(chosen, naive) < rank_value(other, naive) == 2.0 < chosen["NTS"]
    assert rank_value(chosen, math.nan) == 3.6   # no naive in the group: its own NTS
    assert rank_value(chosen, naive, "bon-nts") == 1.0   # no Δ BoN: its own BoN NTS

