"""`bench compare` and the decision table on the reference submissions: paired Δ against naive,
decided only by the t-interval over seeds, and the same numbers on the leaderboard."""
import re
from pathlib import Path

import pytest

from bench.cli import main
from bench.compare import board_for, decision_table

SUBMISSIONS = Path(__file__).resolve().parents[1] / "submissions" / "mini" / "tiny"
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
    assert "category=helpful" in out and "category=harmless" in out and "t 95% (3 seeds)" in out
    assert main(["compare", "anchor", "naive", "--out", str(SUBMISSIONS)]) == 2   # three settings: say which
    assert "ambiguous" in capsys.readouterr().err


def test_the_board_shows_the_same_decisions():
    from leaderboard import core

    table = core.ranking(core.load_board(SUBMISSIONS.parents[1]))
    row = table[(table["method"] == "anchor") & (table["params"] == "lam=10.0, layers=last")].iloc[0]
    decisions = decision_table(board_for(SUBMISSIONS)[0]).set_index("method").loc["anchor_lam=10.0_layers=last"]
    assert row["decided"] == "worse" and row["Δ t 95% (seeds)"] == "[-11.8, -1.2]"
    assert row["rank 95%"] == decisions["rank 95%"] != ""
