"""The leaderboard core (no web code): ranking, reference rows, PGR and when it is blank, filters,
the one display format, the context line, matrices, ablations, the validation cache, uploads, and the
static page and markdown table, on submissions of real small runs (and the reference submissions
for what needs three seeds)."""
import io
import json
import math
import re
import shutil
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from bench.report import TEACHER
from leaderboard import cache, core, figures
from small_runs import HOSTILE, flip_one_student_pair, hostile_root, zip_folder

REFERENCE = Path(__file__).resolve().parents[1] / "submissions"


def reference_count() -> int:
    """How many reference submissions the repository holds (each method adds one)."""
    return sum(1 for p in (REFERENCE / "mini" / "tiny").iterdir() if (p / "submission.json").is_file())


def mini_tiny(board, **filters):
    """The reference board's mini x tiny ranking (the only one these tests read; other protocols or model
    pairs, e.g. a capped smol run, may sit beside it)."""
    return core.ranking(board, protocol="mini", models="tiny", **filters)


NUMBER = re.compile(r"[+-]\d+\.\d|\d+\.\d|\[[+-]\d+\.\d, [+-]\d+\.\d\]|\d+|")


@pytest.fixture(scope="module")
def validation_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("validation_cache")


@pytest.fixture(scope="module")
def board(runs, validation_cache):
    return core.load_board(runs.submissions, runs.protocols, runs.model_pairs, validation_cache)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The reference submissions of the repository: every method on mini over three seeds."""
    if not REFERENCE.is_dir():
        pytest.skip("no reference submissions")
    return core.load_board(REFERENCE, cache_dir=tmp_path_factory.mktemp("reference_cache"))


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
    assert (table["status"].iloc[:-1].str.endswith("validated")).all() and table["status"].iloc[-1] == "reference"
    # naive's numbers, recomputed here from its cells' result.json (one seed: plain means over cells)
    cells = cell_results(runs, "naive")
    row = table[table["method"] == "naive"].iloc[0]
    assert row["NTS"] == pytest.approx(mean(m["nts"] for c in cells for m in c["metrics"].values()))
    assert row["AOG"] == pytest.approx(mean(m["aog"] for c in cells for m in c["metrics"].values()))
    assert row["ID acc"] == pytest.approx(mean(c["eval_sets"][c["source"]]["student_acc"] for c in cells))
    assert row["seeds"] == 1 and row["cells"] == 2 and math.isnan(row["NTS ±"])
    assert row["paper"].startswith("Burns et al. 2023") and row["code"] == "methods.naive"


def test_intervals_are_the_bootstraps(board):
    """AOG's and WRG's 95% intervals on the board are bench.stats' (the ones bench report and the
    submission record), not recomputed another way."""
    from bench.stats import Board as Bootstrap

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
    assert [c.name for c in view.columns] == core.DEFAULT_COLUMNS
    assert core.DEFAULT_COLUMNS == ["rank", "method", "params", "NTS", "NTS 95% CI", "rank 95%", "Δ NTS vs naive",
                                    "Δ t 95% (seeds)", "decided", "AOG", "WRG", "ID acc", "OOD acc"]
    [group] = view.groups
    assert [r.role for r in group.references] == ["ceiling", "teacher"]   # pinned above the ranked rows
    assert [r.cells[0].text for r in group.ranked] == [str(i) for i in range(1, reference_count())]  # all but the ceiling
    numbers = [cell.text for row in view.rows for cell in row.cells if cell.number]
    assert numbers and all(NUMBER.fullmatch(text) for text in numbers), [t for t in numbers if not NUMBER.fullmatch(t)]
    assert "-0.0" not in " ".join(numbers)
    naive = next(r for r in group.ranked if r.cells[1].text == "naive")
    assert [c.text for c in naive.cells[3:5]] + [c.text for c in naive.cells[9:11]] == ["+2.1", "[-0.9, +4.4]", "+2.4", "+6.9"]
    assert [c.text for c in naive.cells[6:9]] == ["", "", ""]   # no Δ against itself
    low_high = sorted(group.ranked, key=lambda r: r.cells[5].sort)   # rank 95% sorts as numbers: 2-9 before 10-16
    assert [tuple(map(int, r.cells[5].text.split("-") * 2))[:2] for r in low_high] == \
        sorted(tuple(map(int, r.cells[5].text.split("-") * 2))[:2] for r in group.ranked)
    worse = next(r for r in group.ranked if r.cells[1].text == "anchor" and "lam=10.0" in r.cells[2].text)
    assert [c.text for c in worse.cells[6:9]] == ["-6.5", "[-11.8, -1.2]", "worse"]
    assert naive.paper_url == "https://arxiv.org/abs/2312.09390" and naive.code.url == "code/naive.py.txt"
    teacher = group.references[1]
    assert [teacher.cells[i].text for i in (3, 4, 9)] == ["+0.0", "", "+0.0"]   # NTS, its interval, AOG
    chosen = core.shown(mini_tiny(reference), ["rank", "method", "NTS ±", "decided"], reference)
    assert [c.name for c in chosen.columns] == ["rank", "method", "NTS ±", "decided"]
    spread = {r.cells[1].text: r.cells[2].text for r in chosen.groups[0].ranked}
    assert (spread["naive"], spread["l2-sp"]) == ("2.5", "2.3")


def test_blank_pgr_says_why(reference):
    view = core.shown(mini_tiny(reference, source="travel"), ["rank", "method", "PGR OOD %"], reference)
    cells = [row.cells[2] for row in view.rows]
    assert all(c.text == "" for c in cells) and all("includes 0" in c.title for c in cells)


def test_students_trained_outside_the_harness_are_marked(board):
    """A submission bench evaluate made (marked "external" in submission.json) says so on its row."""
    import copy

    from leaderboard import render

    marked = []
    for v in board.validations:
        v = copy.copy(v)
        if v.key.endswith("/naive"):
            v.submission = {**v.submission, "external": "external training: scores recompute, training not reproduced"}
        marked.append(v)
    other = core.Board(board.root, marked)
    table = core.ranking(other).set_index("method")
    assert table.loc["naive", "status"] == "validated; external training: scores recompute, training not reproduced"
    view = core.shown(core.ranking(other), board=other)
    assert [r.cells[1].text for r in view.rows if r.external] == ["naive"]
    assert 'class="badge external" title="external training: scores recompute' in render.ranking_html(view)


def test_the_context_line_says_what_was_run(reference):
    [line] = core.context(reference, mini_tiny(reference))
    assert (line.protocol, line.version, line.models, line.seeds, line.cells, line.test_pairs, line.submissions) == \
        ("mini", "1.0", "tiny", 3, 12, "400", reference_count())
    assert line.models_words == ("all-MiniLM-L6-v2 cut to its first layer (weak teacher) → all-MiniLM-L6-v2 "
                                 "(strong student)")
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", line.updated) and re.fullmatch(r"[0-9a-f]{7}(, [0-9a-f]{7})*", line.commit)


def test_methods_link_to_their_paper_and_code():
    assert core.paper_url('Kumar et al. 2022, "Fine-Tuning can Distort Pretrained Features and Underperform '
                          'Out-of-Distribution"') == "https://arxiv.org/abs/2202.10054"
    assert core.paper_url('"When In-Distribution Gains Fail" (2026)') == ""   # no address known: no link
    assert core.paper_url("EleutherAI w2s (github.com/EleutherAI/w2s, w2s/loss.py)") == "https://github.com/EleutherAI/w2s"
    assert core.paper_url("mine (github.com/attacker/payload)") == ""   # an address a submission names: no link
    from methods import METHODS   # every built-in method with a source links to it
    unlinked = {name for name in METHODS.names() if not core.paper_url(METHODS.get(name).paper)}
    assert unlinked == {"anchor", "anchor-mid", "teacher-ensemble"}   # the 2026 paper has no address yet; one has none
    code = core.method_code("methods.anchor", "0" * 64)
    assert code.path.name == "anchor.py" and "differs" in code.note
    import hashlib
    assert "same sha256" in core.method_code("methods.anchor", hashlib.sha256(code.path.read_bytes()).hexdigest()).note
    assert core.method_code("os.path", None) is None and core.method_code("methods.../x", None) is None


# --- pictures and tables beside the ranking ---------------------------------------------------------------------
def test_matrix_id_vs_ood_and_ablations(board):
    matrix = core.matrix(board, "mini-test/tiny-test/naive", "aog")
    assert list(matrix.index) == list(matrix.columns) == ["recipes", "travel"]   # targets in the sources' order
    assert math.isnan(matrix.loc["recipes", "recipes"]) and not math.isnan(matrix.loc["recipes", "travel"])
    points = core.id_vs_ood(board)
    assert len(points) == 4 * 2 and {"wrg", "aog", "category"} <= set(points.columns)
    sweeps = core.ablations(board)
    assert list(sweeps) == ["mini-test/tiny-test/anchor"]
    sweep = sweeps["mini-test/tiny-test/anchor"]
    assert sorted(sweep.table["lam"]) == [0.5, 2.0] and core.varying_params(sweep.table) == ["lam"]
    assert (sweep.table["NTS low"] <= sweep.table["NTS"]).all() and (sweep.table["NTS"] <= sweep.table["NTS high"]).all()
    naive = core.ranking(board).set_index("method").loc["naive"]
    assert sweep.baseline["NTS"] == pytest.approx((naive["NTS"], naive["NTS low"], naive["NTS high"]))
    shown = core.sweep_display(sweep)
    assert list(shown.columns[:3]) == ["lam", "layers", "NTS"] and all(NUMBER.fullmatch(t) for t in shown["NTS 95% CI"])


def test_heatmaps_share_one_colour_scale(reference):
    keys = [key for key in reference.by_key if key.startswith("mini/tiny/")]
    limit = core.color_limit(reference, keys, "nts")
    assert 10 < limit < 56   # the 95th percentile of |cell NTS|: length's -56 saturates rather than sets it
    fig = figures.heatmaps({k: core.matrix(reference, k) for k in keys}, "nts", limit)
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert len(images) == reference_count() and {im.get_clim() for im in images} == {(-limit, limit)}


def test_figures_draw_and_keep_dollar_signs_literal(board):
    palette = figures.colours(sorted(board.by_key))
    assert len({colour for colour, _ in palette.values()}) == len(palette)   # one colour per submission
    for fig in (figures.heatmaps({"a $x$ title": core.matrix(board, "mini-test/tiny-test/naive")}, "nts", 5.0),
                figures.id_vs_ood(core.id_vs_ood(board), palette, ["mini-test/tiny-test/naive"]),
                figures.ablation(core.ablations(board)["mini-test/tiny-test/anchor"], "anchor"),
                figures.heatmaps({"empty": pd.DataFrame()}, "nts", 1.0)):
        fig.savefig(io.BytesIO(), format="png")
    assert figures.label("cost $5$") == r"cost \$5\$"
    ablation = figures.ablation(core.ablations(board)["mini-test/tiny-test/anchor"], "anchor")
    assert any(line.get_label().startswith("naive") for line in ablation.axes[0].lines)   # the reference line
    assert ablation.axes[0].containers   # error bars


# --- the validation cache --------------------------------------------------------------------------------------
def outcome(v):
    return ([str(p) for p in v.errors], [str(p) for p in v.warnings], v.submission, [c.model_dump() for c in v.cells],
            [(c.method, c.seed, c.source, [(e.name, e.role, e.pair_ids, e.teacher.tolist(), e.student.tolist())
                                           for e in c.eval_sets]) for c in v.pairs])


def test_validation_is_cached_by_the_files_checksums(runs, tmp_path, monkeypatch):
    root = hostile_root(runs, tmp_path / "subs")
    store = tmp_path / "cache"
    first = cache.validate_tree(root, runs.protocols, runs.model_pairs, store)
    calls = []
    real = cache.validate_submission
    monkeypatch.setattr(cache, "validate_submission", lambda folder, *a, **k: calls.append(folder) or real(folder, *a, **k))
    again = cache.validate_tree(root, runs.protocols, runs.model_pairs, store)
    assert calls == [] and [outcome(v) for v in again] == [outcome(v) for v in first]
    # one changed file: only its submission is validated again, and the change is seen
    naive = root / "mini-test" / "tiny-test" / "naive"
    eval_set = flip_one_student_pair(naive / "cells" / "seed0" / "mini__recipes")
    changed = {v.key: v for v in cache.validate_tree(root, runs.protocols, runs.model_pairs, store)}
    assert calls == [naive]
    assert f"eval_sets.{eval_set}.student_acc" in " ".join(map(str, changed["mini-test/tiny-test/naive"].errors))
    # a damaged entry is ignored and written again
    entry = cache.entry_path(store, root / "mini-test" / "tiny-test" / "ceiling")
    entry.write_text('{"format": 1, "key": "')
    calls.clear()
    rebuilt = {v.key: v for v in cache.validate_tree(root, runs.protocols, runs.model_pairs, store)}
    assert calls == [root / "mini-test" / "tiny-test" / "ceiling"] and rebuilt["mini-test/tiny-test/ceiling"].ok
    assert json.loads(entry.read_text())["format"] == cache.FORMAT
    # another registered protocol spec is another key: everything is validated again
    other = {name: __import__("dataclasses").replace(spec, version="9") for name, spec in runs.protocols.items()}
    calls.clear()
    cache.validate_tree(root, other, runs.model_pairs, store)
    assert len(calls) == 5
    # the entries of a folder that is gone are removed
    shutil.rmtree(root / "mini-test" / "tiny-test" / "hostile")
    cache.validate_tree(root, runs.protocols, runs.model_pairs, store)
    assert not cache.entry_path(store, root / "mini-test" / "tiny-test" / "hostile").exists()


def test_the_cache_key_holds_every_module_validation_runs():
    """VALIDATION_CODE lists the modules whose source decides a validation outcome; a module they import
    from bench that is not listed would change outcomes without changing the key."""
    import ast

    listed, root = set(cache.VALIDATION_CODE), Path(cache.__file__).resolve().parents[1]
    for module in listed - {"bench.protocols", "leaderboard.cache"}:   # the protocols are keyed by their hashes
        tree = ast.parse((root / Path(*module.split("."))).with_suffix(".py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bench"):
                names = [f"{node.module}.{a.name}" for a in node.names]
                found = [n for n in names if (root / Path(*n.split("."))).with_suffix(".py").is_file()] or [node.module]
                assert set(found) <= listed | {"bench.submissions"}, (module, found)


def test_the_cached_tree_checks_what_bench_validate_checks(runs, tmp_path):
    """leaderboard.cache.validate_tree runs tree.validate_tree's checks across submissions on cached
    outcomes; both must find the same problems (a duplicate, a misplaced folder, the hostile text)."""
    from bench.submissions.tree import validate_tree

    root = hostile_root(runs, tmp_path / "subs")
    shutil.copytree(root / "mini-test" / "tiny-test" / "naive", root / "mini-test" / "tiny-test" / "naive-again")
    for _ in range(2):   # from an empty cache, then from the cache
        cached = cache.validate_tree(root, runs.protocols, runs.model_pairs, tmp_path / "cache")
        plain = validate_tree(root, runs.protocols, runs.model_pairs)
        assert [(v.key, [str(p) for p in v.errors], [str(p) for p in v.warnings]) for v in cached] == \
            [(v.key, [str(p) for p in v.errors], [str(p) for p in v.warnings]) for v in plain]
    assert any("duplicates" in str(p) for v in cached for p in v.errors)


# --- static page, markdown, cards ------------------------------------------------------------------------------
def test_markdown_and_static_page_escape_submission_text(runs, tmp_path):
    from leaderboard.static import write_site

    board = core.load_board(hostile_root(runs, tmp_path / "subs"), runs.protocols, runs.model_pairs, tmp_path / "cache")
    text = core.markdown(board)
    assert "<img" not in text and "&lt;img src=x" in text and "\\|\\*\\*bold\\*\\*" in text
    lines = text.splitlines()
    assert all(line.count(" | ") == lines[0].count(" | ") for line in lines if not line.startswith("|---"))
    page = write_site(board, tmp_path / "site", runs.protocols, runs.model_pairs)
    html = page.read_text()
    assert "<img src=x" not in html and "&lt;img src=x onerror=&#34;window.__xss=1&#34;&gt;" in html
    for src in re.findall(r'<img src="([^"]+)"', html):
        assert (tmp_path / "site" / src).read_text().lstrip().startswith(("<?xml", "<svg"))
    assert re.findall(r'<img src="(figures/matrices-\d+.svg)"', html) == ["figures/matrices-0.svg"]   # one grid
    assert "ablation-0.svg" in html and "<code>mini-test</code> (version 1.0)" in html
    assert 'id="context-line"' in html and "1 seed × 2 source → target cells" in html
    assert '<button type="button" class="csv"' in html and "function download()" in html
    assert 'href="code/naive.py.txt"' in html and (tmp_path / "site" / "code" / "naive.py.txt").read_text().startswith('"""')
    assert "Model pair <code>tiny-test</code>" in html and "How to cite" in html and "@software{shiftbench" in html


def test_protocol_and_model_pair_cards_and_empty_board(runs, tmp_path):
    card = core.protocol_card("mini")
    assert "# Protocol `mini` (version 1.0)" in card and "| harmless | `mini/pharmacy` | `mini/chat`, `mini/cyber` |" in card
    assert "**Hash:** `" in card and "NTS = AOG" in card and "do not edit by hand" not in card
    models = core.model_pair_card("tiny")
    assert "all-MiniLM-L6-v2 cut to its first layer (weak teacher) → all-MiniLM-L6-v2 (strong student)" in models
    assert "| weak teacher | sentence-transformers/all-MiniLM-L6-v2 | 1 |" in models and "From the registry" in models
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
    from leaderboard.app import check_upload

    naive = runs.submissions / "mini-test" / "tiny-test" / "naive"
    report, view = check_upload(str(zip_folder(naive, tmp_path / "naive.zip")), board, runs.protocols, runs.model_pairs)
    assert report.splitlines()[0] == "naive.zip: VALID — passes bench validate"
    assert "shows it in that submission's place" in report
    methods = [(r.cells[1].text, r.role) for r in view.rows]
    assert methods.count(("naive", "upload")) == 1 and ("naive", "method") not in methods   # replaced, not beside
    assert len(view.rows) == len(core.shown(core.ranking(board)).rows)
    bad = zip_folder(naive, tmp_path / "bad.zip", extra={"naive/run_me.py": "print('hi')"})
    report, view = check_upload(str(bad), board, runs.protocols, runs.model_pairs)
    assert report.startswith("bad.zip: REJECTED") and "'naive/run_me.py', which is not part of a submission" in report
    assert view is None


def test_malformed_zips_are_rejected_naming_the_file(runs, board, tmp_path):
    from leaderboard.app import check_upload

    naive = runs.submissions / "mini-test" / "tiny-test" / "naive"
    report, view = check_upload(str(corrupt_zip(naive, tmp_path / "crc.zip")), board, runs.protocols, runs.model_pairs)
    assert report.startswith("crc.zip: REJECTED — the upload's 'naive/submission.json' cannot be read: Bad CRC-32")
    assert view is None
    report, view = check_upload(str(finder_zip(naive, tmp_path / "finder.zip")), board, runs.protocols, runs.model_pairs)
    assert report.startswith("finder.zip: VALID") and view is not None
    two = zip_folder(naive, tmp_path / "two.zip", extra={"other/submission.json": "{}"})
    assert "holds 2 submissions ('naive/submission.json', 'other/submission.json')" in check_upload(str(two), board)[0]
    with zipfile.ZipFile(tmp_path / "none.zip", "w") as zf:
        zf.writestr("notes.txt", "x")
    assert "holds no submission.json (it holds 'notes.txt')" in check_upload(str(tmp_path / "none.zip"), board)[0]
    stray = zip_folder(naive, tmp_path / "stray.zip", extra={"README.md": "x"})
    assert "'README.md', which is not part of a submission" in check_upload(str(stray), board)[0]


def test_bench_leaderboard_markdown_and_html(runs, tmp_path, monkeypatch, capsys):
    from bench.cli import main
    from bench.protocols import MODEL_PAIRS, PROTOCOLS

    monkeypatch.setenv("SHIFTBENCH_CACHE", str(tmp_path / "cache"))
    for registry, specs in ((PROTOCOLS, runs.protocols), (MODEL_PAIRS, runs.model_pairs)):
        for name, spec in specs.items():
            monkeypatch.setitem(registry._entries, name, spec)
    assert main(["leaderboard", "--submissions", str(runs.submissions), "--markdown", "--html", str(tmp_path / "site")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| rank | method | params | NTS | NTS 95% CI |") and "| 1 | " in out and TEACHER in out
    assert (tmp_path / "site" / "index.html").is_file() and list((tmp_path / "cache" / "leaderboard").glob("*.json"))
    assert main(["leaderboard", "--submissions", str(tmp_path / "missing")]) == 2
    assert "no submissions folder" in capsys.readouterr().err
    only = ["leaderboard", "--submissions", str(runs.submissions), "--markdown", "--only", "mini-test"]
    assert main([*only, "tiny-test"]) == 0 and capsys.readouterr().out == out   # the only pair there: the same table
    assert main([*only, "smol"]) == 2
    assert "--only mini-test smol: no submission of that protocol and model pair" in capsys.readouterr().err
    assert main([*only[:3], "--html", str(tmp_path / "site2"), *only[4:], "tiny-test"]) == 2   # --only needs --markdown
    assert "--only chooses the rows of --markdown" in capsys.readouterr().err and not (tmp_path / "site2").exists()
