"""The board's best-of-N view, on submissions of real small runs of a protocol with best-of-4 candidate sets
(conftest's ``bon_runs``: two seeds, so a difference from naive has a t-interval) beside the plain small runs: the BoN column group (BoN NTS and
its interval, BoN gain ID and OOD, Δ BoN NTS vs naive and the interval that decides it) is bench compare --metric
bon-nts's numbers and is absent for a group without candidate sets; the ranking by BoN NTS; the validation cache
keeps the candidate sets' credits; the picture of pair NTS against BoN NTS; the static page and markdown."""
import io
import json
import math

import pytest
from small_runs import merged
from test_leaderboard import NUMBER

import bench.submissions.record as record
from bench.core.report import TEACHER
from leaderboard import core, figures

BON_COLUMNS = [c.name for c in core.BOARD_COLUMNS if c.bon]


@pytest.fixture(scope="module")
def both(tmp_path_factory, bon_runs, runs):
    """One submissions root with both groups: the plain small runs and the runs with candidate sets."""
    return merged(tmp_path_factory, "both", runs, bon_runs)


@pytest.fixture(scope="module")
def board(both, tmp_path_factory):
    return core.load_board(*both, tmp_path_factory.mktemp("validation_cache"))


def group(runs) -> tuple[str, str]:
    return next(iter(runs.protocols)), next(iter(runs.model_pairs))


def recorded(folder, key: str) -> float:
    """The mean over seeds of each seed's mean over source -> target cells of ``key``, from the submission's
    result.json files."""
    per_seed: dict[int, list[float]] = {}
    for path in folder.rglob("result.json"):
        result = json.loads(path.read_text())
        per_seed.setdefault(result["seed"], []).extend(m[key] for m in result["metrics"].values())
    means = [sum(v) / len(v) for v in per_seed.values()]
    return sum(means) / len(means)


def test_the_bon_columns_are_bench_compares_bon_numbers(board, bon_runs):
    """BoN NTS and the gains are the cells' recorded means; BoN NTS's interval is the bootstrap on the cells' BoN
    views; Δ BoN NTS vs naive, the interval that decides it and "BoN decided" are bench compare --metric bon-nts's."""
    from bench.core.compare import board_for, comparison_table, decision_table
    from bench.core.stats import Board as Bootstrap
    from bench.core.stats import bon_view

    table = core.ranking(board, *group(bon_runs)).set_index("submission")
    valid = [v for v in board.in_group(*group(bon_runs)) if v.ok]
    assert len(valid) == 3   # naive, the ceiling and anchor
    boot = Bootstrap(bon_view([c for v in valid for c in v.pairs]))
    for v in valid:
        row = table.loc[v.key]
        for key, name in (("bon_nts", "BoN NTS"), ("bon_gain_id", "BoN gain ID"), ("bon_gain_ood", "BoN gain OOD")):
            assert row[name] == pytest.approx(recorded(v.folder, key))
        stats = boot.stats(v.submission["slug"], ceiling=None).metrics["nts"]
        assert (row["BoN NTS low"], row["BoN NTS high"]) == pytest.approx((stats.low, stats.high))
    anchor = next(v.submission["slug"] for v in valid if v.submission["method"]["name"] == "anchor")
    compared, _ = board_for(bon_runs.submissions, ["anchor", "naive"], metric="bon-nts")
    bon = comparison_table(compared, anchor, "naive", metric="bon-nts").set_index("metric").loc["BoN NTS"]
    assert f"{table.set_index('method').loc['anchor', 'Δ BoN NTS vs naive']:+.2f}" == bon[f"{anchor} − naive"]
    view = core.shown(core.ranking(board, *group(bon_runs)), [*core.DEFAULT_COLUMNS, *BON_COLUMNS], board)
    shown = {r.cells[1].text: {c.name: cell.text for c, cell in zip(view.columns, r.cells)} for r in view.rows}
    assert f"{shown['anchor']['Δ BoN 95% (decides)']} (2 seeds)" == bon["deciding 95%"]   # the t-interval over seeds
    assert shown["anchor"]["BoN decided"] == {"yes": ("better" if bon[f"{anchor} − naive"][0] == "+" else "worse"),
                                              "no": "no"}[bon["decided"]]
    decisions = decision_table(boot, metric="bon-nts").set_index("method")
    assert shown["anchor"]["BoN NTS 95% CI"] == decisions.loc[anchor, "BoN NTS 95% CI"]
    assert shown["naive"]["Δ BoN NTS vs naive"] == shown["naive"]["Δ BoN 95% (decides)"] == \
        shown["naive"]["BoN decided"] == ""   # no Δ against itself
    assert shown[TEACHER]["BoN NTS"] == shown[TEACHER]["BoN gain ID"] == "+0.0"   # its own BoN: gains 0


def test_the_bon_column_group_is_absent_without_candidate_sets(board, bon_runs, runs):
    pair = [c for c in core.DEFAULT_COLUMNS if c not in BON_COLUMNS and c not in ("Δ 95% (runs)", "runs")]
    plain = core.shown(core.ranking(board, *group(runs)), board=board)
    assert [c.name for c in plain.columns] == pair   # both groups' sources share their seeds: decided over seeds
    assert not any(c in [c.name for c in plain.columns] for c in BON_COLUMNS)
    chosen = core.shown(core.ranking(board, *group(runs)), ["rank", "method", "BoN NTS"], board)
    assert [c.name for c in chosen.columns] == ["rank", "method"]   # asked for, but nothing to show
    view = core.shown(core.ranking(board, *group(bon_runs)), board=board)
    names = [c.name for c in view.columns]
    # after the pair columns, in the order the pair NTS columns come: BoN NTS and what decides it, so that the compact
    # default fits a 1,440 px screen (tests/test_leaderboard_browser.py); the rest a reader adds
    assert names == [*pair, "BoN NTS", "BoN decided"]
    every = [c.name for c in core.shown(core.ranking(board, *group(bon_runs)), [*core.DEFAULT_COLUMNS, *BON_COLUMNS],
                                        board).columns]
    assert every[every.index("OOD acc") + 1:] == ["BoN NTS", "BoN decided", "Δ BoN NTS vs naive", "Δ BoN 95% (decides)",
                                                  "BoN NTS 95% CI", "BoN NTS ±", "BoN gain OOD", "BoN gain ID"]
    numbers = [cell.text for row in view.rows for cell in row.cells if cell.number]
    assert all(NUMBER.fullmatch(t) for t in numbers) and "-0.0" not in numbers
    assert "BoN NTS" in core.HELP and "only for a protocol with candidate sets" in core.HELP["BoN NTS"]


def test_a_group_with_candidate_sets_ranks_by_bon_nts(board, bon_runs, runs):
    from bench.core.compare import decision_table
    from bench.core.stats import Board as Bootstrap
    from bench.core.stats import bon_view

    by_nts, by_bon = (core.ranking(board, *group(bon_runs), by=by) for by in ("nts", "bon-nts"))
    for table, key in ((by_nts, "NTS"), (by_bon, "BoN NTS")):
        ranked = table[table["role"] == "method"]
        assert list(ranked[key]) == sorted(ranked[key], reverse=True)
        assert list(ranked["rank"]) == ["1", "2"]
    assert set(by_nts["submission"]) == set(by_bon["submission"])
    boot = Bootstrap(bon_view([c for v in board.in_group(*group(bon_runs)) if v.ok for c in v.pairs]))
    ranks = decision_table(boot, metric="bon-nts").set_index("method")["rank 95%"]
    rows = by_bon.set_index("submission")
    for v in board.in_group(*group(bon_runs)):
        if v.submission["slug"] != "ceiling":   # the ceiling is a reference, ranked with no one
            assert rows.loc[v.key, "rank 95%"] == ranks[v.submission["slug"]]
    with pytest.raises(ValueError, match="mini-test x tiny-test has no BoN NTS for every submission .* rank it by NTS"):
        core.ranking(board, *group(runs), by="bon-nts")
    with pytest.raises(ValueError, match="rank by 'aog': give one of nts, bon-nts"):
        core.ranking(board, *group(runs), by="aog")


def test_the_validation_cache_keeps_the_candidate_sets_credits(both, bon_runs, tmp_path, monkeypatch):
    """A board from the cache has every cell's BoN credits, as validated, so its BoN columns are the same."""
    store = tmp_path / "cache"
    first = core.load_board(*both, store)
    monkeypatch.setattr(record, "validate_submission", lambda *a, **k: pytest.fail("validated again, not cached"))
    again = core.load_board(*both, store)

    def credits(board):
        return {v.key: [[(e.name, e.role, e.pair_ids, e.teacher.tolist(), e.student.tolist()) for e in c.bon]
                        for c in v.pairs] for v in board.validations}

    assert credits(again) == credits(first)
    assert sum(bool(c.bon) for v in again.validations for c in v.pairs) == 3 * 2 * 2   # methods x seeds x sources
    ranked = [core.ranking(b, *group(bon_runs))[["submission", "BoN NTS", "BoN NTS low", "Δ BoN low", "BoN decided"]]
              for b in (first, again)]
    assert ranked[0].equals(ranked[1]) and ranked[0]["BoN NTS"].notna().all()


def test_pair_nts_against_bon_nts(board, bon_runs, runs):
    """One point per method and the ceiling, at its NTS and BoN NTS, with its rank by either; the picture draws
    them with the diagonal and names both ranks; a group without candidate sets gets a picture that says so."""
    table = core.ranking(board, *group(bon_runs))
    points = core.nts_vs_bon(table)
    assert list(points["submission"]) == core.shown_order(table)   # the ceiling, then by rank
    rows = table.set_index("submission")
    for _, point in points.iterrows():
        assert (point["NTS"], point["BoN NTS"]) == (rows.loc[point["submission"], "NTS"],
                                                    rows.loc[point["submission"], "BoN NTS"])
    methods = points[points["role"] == "method"]
    assert sorted(methods["rank by NTS"]) == [1.0, 2.0] and sorted(methods["rank by BoN NTS"]) == [1.0, 2.0]
    assert points[points["role"] == "ceiling"][["rank by NTS", "rank by BoN NTS"]].isna().all(axis=None)
    for narrow in (False, True):
        fig = figures.nts_vs_bon(points, figures.colours(sorted(board.by_key)), narrow)
        [ax] = fig.axes
        assert [tuple(c.get_offsets()[0]) for c in ax.collections] == list(zip(points["NTS"], points["BoN NTS"]))
        diagonal = [line for line in ax.lines if line.get_label() == "BoN NTS = NTS"]
        assert len(diagonal) == 1 and list(diagonal[0].get_xdata()) == list(diagonal[0].get_ydata())
        labels = [t.get_text() for t in fig.legends[0].get_texts()]
        for _, m in methods.iterrows():
            assert f"{m['method']} ({m['params']}): #{m['rank by NTS']:.0f} → #{m['rank by BoN NTS']:.0f}" in labels \
                or f"{m['method']}: #{m['rank by NTS']:.0f} → #{m['rank by BoN NTS']:.0f}" in labels
        assert "ceiling: reference, not ranked" in labels
        fig.savefig(io.BytesIO(), format="png")
    assert core.nts_vs_bon(core.ranking(board, *group(runs))).empty
    empty = figures.nts_vs_bon(core.nts_vs_bon(core.ranking(board, *group(runs))), {})
    assert "its protocol scores no candidate sets" in empty.texts[0].get_text().replace("\n", " ")


def test_the_static_page_and_markdown_show_bon_for_its_group_only(board, both, bon_runs, tmp_path):
    from leaderboard.static import write_site

    _, protocols, model_pairs = both
    page = write_site(board, tmp_path / "site", protocols, model_pairs).read_text()
    assert page.count("<h3>NTS vs best-of-N NTS</h3>") == 1
    index = board.groups.index(group(bon_runs))
    assert f'src="figures/nts-vs-bon-{index}.svg"' in page and (tmp_path / "site" / "figures" /
                                                                  f"nts-vs-bon-{index}-narrow.svg").is_file()
    sections = page.split('<section class="sb-group"')[1:]
    assert ['data-col="BoN decided"' in s for s in sections] == [g == group(bon_runs) for g in board.groups]
    text = core.markdown(board, protocol=group(bon_runs)[0])
    assert text.splitlines()[0].endswith("| OOD acc | BoN NTS | BoN decided |")
    chosen = core.markdown(board, [*core.DEFAULT_COLUMNS, "Δ BoN 95% (decides)", "BoN gain ID"], protocol=group(bon_runs)[0])
    assert chosen.splitlines()[0].endswith("| BoN NTS | BoN decided | Δ BoN 95% (decides) | BoN gain ID |")
    assert "BoN" not in core.markdown(board, protocol="mini-test")
    assert math.isnan(core.ranking(board, protocol="mini-test")["BoN NTS"].iloc[0])
