"""The leaderboard core (no web code): ranking, reference rows, PGR, filters, matrices, ablations,
and the static page and markdown table, on submissions of real small runs."""
import json
import math
import re

import pandas as pd
import pytest

from bench.report import TEACHER
from leaderboard import core, figures
from small_runs import HOSTILE, hostile_root, small_runs, zip_folder


@pytest.fixture(scope="module")
def runs(tmp_path_factory, small_protocol, small_models):
    return small_runs(tmp_path_factory, small_protocol, small_models)


@pytest.fixture(scope="module")
def board(runs):
    return core.load_board(runs.submissions, runs.protocols, runs.model_pairs)


def cell_results(runs, slug):
    return [json.loads(p.read_text()) for p in sorted((runs.submissions / "mini-test" / "tiny-test" / slug).rglob("result.json"))]


def mean(values):
    values = list(values)
    return sum(values) / len(values)


def test_methods_are_ranked_by_nts_with_reference_rows_last(board, runs):
    table = core.ranking(board)
    assert list(table.columns) == core.RANKING_COLUMNS
    ranked = table[table["rank"] != "ref"]
    assert list(ranked["rank"]) == [str(i) for i in range(1, len(ranked) + 1)]
    assert list(ranked["NTS"]) == sorted(ranked["NTS"], reverse=True)
    assert set(ranked["method"]) == {"naive", "anchor"}
    assert list(table[table["rank"] == "ref"]["method"]) == ["ceiling", TEACHER]
    assert (table["status"].iloc[:-1].str.endswith("validated")).all() and table["status"].iloc[-1] == "reference"
    # naive's numbers, recomputed here from its cells' result.json (one seed: plain means over cells)
    cells = cell_results(runs, "naive")
    row = table[table["method"] == "naive"].iloc[0]
    assert row["NTS"] == pytest.approx(mean(m["nts"] for c in cells for m in c["metrics"].values()))
    assert row["AOG"] == pytest.approx(mean(m["aog"] for c in cells for m in c["metrics"].values()))
    assert row["ID acc"] == pytest.approx(mean(c["eval_sets"][c["source"]]["student_acc"] for c in cells))
    assert row["seeds"] == 1 and row["cells"] == 2 and math.isnan(row["NTS ±"])


def test_teacher_row_and_pgr(board, runs):
    table = core.ranking(board).set_index("method")
    cells = cell_results(runs, "naive")
    teacher = table.loc[TEACHER]
    assert teacher["ID acc"] == pytest.approx(mean(c["eval_sets"][c["source"]]["teacher_acc"] for c in cells))
    assert teacher["NTS"] == teacher["AOG"] == teacher["WRG"] == 0.0
    ceiling = table.loc["ceiling"]
    for pgr, metric in (("PGR ID", "WRG"), ("PGR OOD", "AOG")):
        if ceiling[metric] >= core.MIN_PGR_GAP:
            assert table.loc["naive", pgr] == pytest.approx(table.loc["naive", metric] / ceiling[metric])
            assert ceiling[pgr] == pytest.approx(1.0)
        else:  # no gap to recover: PGR is blank rather than noise
            assert math.isnan(table.loc["naive", pgr])


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
    board = core.load_board(root, runs.protocols, runs.model_pairs)
    table = core.ranking(board)
    bad = table[table["submission"] == "mini-test/tiny-test/hostile"].iloc[0]
    assert bad["status"].startswith("NOT VALIDATED") and bad["rank"] == "–"
    assert "submission.json: submitter: text" in bad["problem"]
    assert bad["method"] == HOSTILE and bad["submitter"] == HOSTILE  # the data is kept as is; renderers escape it
    ranked = table[table["rank"].str.isdigit()]
    assert list(ranked["rank"]) == ["1", "2", "3"]
    assert "mini-test/tiny-test/hostile" not in set(core.ranking(board, validated_only=True)["submission"])


def test_matrix_id_vs_ood_and_ablations(board):
    matrix = core.matrix(board, "mini-test/tiny-test/naive", "aog")
    assert set(matrix.index) == {"recipes", "travel"} and set(matrix.columns) == {"recipes", "travel"}
    assert math.isnan(matrix.loc["recipes", "recipes"]) and not math.isnan(matrix.loc["recipes", "travel"])
    points = core.id_vs_ood(board)
    assert len(points) == 4 * 2 and {"wrg", "aog"} <= set(points.columns)
    sweeps = core.ablations(board)
    assert list(sweeps) == ["mini-test/tiny-test/anchor"]
    assert sorted(sweeps["mini-test/tiny-test/anchor"]["lam"]) == [0.5, 2.0]
    assert core.varying_params(sweeps["mini-test/tiny-test/anchor"]) == ["lam"]


def test_figures_draw_and_keep_dollar_signs_literal(board):
    for fig in (figures.heatmap(core.matrix(board, "mini-test/tiny-test/naive"), "a $x$ title"),
                figures.id_vs_ood(core.id_vs_ood(board)),
                figures.ablation(core.ablations(board)["mini-test/tiny-test/anchor"], "anchor"),
                figures.heatmap(pd.DataFrame(), "empty")):
        fig.savefig(__import__("io").BytesIO(), format="png")
    assert figures.label("cost $5$") == r"cost \$5\$"


def test_markdown_and_static_page_escape_submission_text(runs, tmp_path):
    from leaderboard.static import write_site

    board = core.load_board(hostile_root(runs, tmp_path / "subs"), runs.protocols, runs.model_pairs)
    text = core.markdown(board)
    assert "<img" not in text and "&lt;img src=x" in text and "\\|\\*\\*bold\\*\\*" in text
    lines = text.splitlines()
    assert all(line.count(" | ") == lines[0].count(" | ") for line in lines if not line.startswith("|---"))
    page = write_site(board, tmp_path / "site", runs.protocols)
    html = page.read_text()
    assert "<img src=x" not in html and "&lt;img src=x onerror=&#34;window.__xss=1&#34;&gt;" in html
    for src in re.findall(r'<img src="([^"]+)"', html):
        assert (tmp_path / "site" / src).read_text().lstrip().startswith(("<?xml", "<svg"))
    assert len(re.findall(r'<img src="figures/matrix-\d+.svg"', html)) == len(board.entries)
    assert "ablation-0.svg" in html and "<code>mini-test</code> (version 1.0)" in html


def test_protocol_card_and_empty_board(runs, tmp_path):
    card = core.protocol_card("mini")
    assert "# Protocol `mini` (version 1.0)" in card and "| harmless | `mini/pharmacy` | `mini/chat`, `mini/cyber` |" in card
    assert "**Hash:** `" in card and "NTS = AOG" in card and "do not edit by hand" not in card
    empty = core.load_board(tmp_path / "nothing")
    assert core.ranking(empty).empty and core.markdown(empty) == "(no submissions)"


def test_an_upload_is_validated_and_previewed(runs, tmp_path):
    from leaderboard.app import check_upload

    board = core.load_board(runs.submissions, runs.protocols, runs.model_pairs)
    good = zip_folder(runs.submissions / "mini-test" / "tiny-test" / "naive", tmp_path / "naive.zip")
    report, preview = check_upload(str(good), board, runs.protocols, runs.model_pairs)
    assert "VALID" in report.splitlines()[0]
    uploaded = preview[preview["submission"] == "upload: naive.zip"]
    assert len(uploaded) == 1 and uploaded.iloc[0]["status"].startswith("UPLOADED (preview, not saved)")
    bad = zip_folder(runs.submissions / "mini-test" / "tiny-test" / "naive", tmp_path / "bad.zip",
                     extra={"naive/run_me.py": "print('hi')"})
    report, preview = check_upload(str(bad), board, runs.protocols, runs.model_pairs)
    assert report.startswith("bad.zip: REJECTED") and "run_me.py" in report and preview.empty


def test_bench_leaderboard_markdown_and_html(runs, tmp_path, monkeypatch, capsys):
    from bench.cli import main
    from bench.protocols import MODEL_PAIRS, PROTOCOLS

    for registry, specs in ((PROTOCOLS, runs.protocols), (MODEL_PAIRS, runs.model_pairs)):
        for name, spec in specs.items():
            monkeypatch.setitem(registry._entries, name, spec)
    assert main(["leaderboard", "--submissions", str(runs.submissions), "--markdown", "--html", str(tmp_path / "site")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("| rank | method |") and "| 1 | " in out and TEACHER in out
    assert (tmp_path / "site" / "index.html").is_file()
    assert main(["leaderboard", "--submissions", str(tmp_path / "missing")]) == 2
    assert "no submissions folder" in capsys.readouterr().err
