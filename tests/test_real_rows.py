"""w2s-real-v1: the real rows at hand, pinned by sha256 (bench/datasets/pinned.py), the same from a local data dir
and from the Hub; its sources and near and far targets (ProtocolSpec.shifts); far targets reported apart from NTS.
The realdata files are read where they are (../shared/realdata), never copied into the repository: the tests
that need them skip without them."""
import dataclasses
import gzip
import json
import os
from pathlib import Path

import numpy as np
import pytest

from bench.core.cells import EvalSet, far_roles
from bench.core.data import Pair
from bench.core.errors import BenchError
from bench.core.protocols import DATASETS, PROTOCOLS, far_targets, protocol_hash
from bench.core.specs import ProtocolSpec, frozen_map
from bench.datasets import offline_dir, pinned
from bench.datasets.rows import DropReason

REALDATA = Path(os.environ.get("SHIFTBENCH_REALDATA") or Path(__file__).resolve().parents[2] / "shared" / "realdata")
needs_realdata = pytest.mark.skipif(not REALDATA.is_dir(), reason=f"realdata samples not found at {REALDATA}")
PROTOCOL = PROTOCOLS.get("w2s-real-v1")


def transcript(question: str, chosen: str, rejected: str) -> dict:
    return {"chosen": f"\n\nHuman: {question}\n\nAssistant: {chosen}",
            "rejected": f"\n\nHuman: {question}\n\nAssistant: {rejected}"}


# Rows in hh-rlhf's schema: distinct questions, one asked again in other words (its opening turn is the same once
# case and punctuation go, so both go to one side), and one with an empty response (no opening turn: it goes by
# its line)
HH_ROWS = [transcript(f"Question number {i}?", f"A useful answer {i}.", f"No. {i}") for i in range(40)] + [
    transcript("question NUMBER 3", "Again, an answer.", "Again, no."), transcript("Anything?", "", "Something.")]


@pytest.fixture
def hh_dir(tmp_path):
    """A data dir written as offline_dir writes one: the raw test rows cut into train and test by opening turn."""
    raw = tmp_path / "raw.jsonl.gz"
    raw.write_bytes(gzip.compress(b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in HH_ROWS)))
    (tmp_path / "data" / "hh-helpful").mkdir(parents=True)
    offline_dir.split_real_file(raw, tmp_path / "data" / "hh-helpful")
    return tmp_path / "data"


def pinned_spec(data_dir: Path):
    """real/hh-helpful with its rows pinned to those of ``data_dir`` (the digests of the fake rows)."""
    base = DATASETS.get("real/hh-helpful")
    digests = {split: pinned.rows_digest(json.loads(line) for line in
                                          gzip.open(data_dir / "hh-helpful" / f"{split}.jsonl.gz", "rb"))
               for split in ("train", "test")}
    return dataclasses.replace(base, options=frozen_map({**base.kwargs, "rows_sha256": digests}))


def as_tuples(pairs: list[Pair]) -> list[tuple]:
    return [(p.id, p.prompt, p.chosen, p.rejected) for p in pairs]


def test_the_digest_reads_values_not_their_layout():
    row = {"chosen": [{"role": "user", "content": "é"}], "rejected": "x"}
    reordered = {"rejected": "x", "chosen": [{"content": "é", "role": "user"}]}
    assert pinned.rows_digest([row]) == pinned.rows_digest([reordered]) != pinned.rows_digest([row, row])
    assert pinned.rows_digest([DropReason("malformed: line is not valid JSON")]) != pinned.rows_digest([])
    assert pinned.cut({"chosen": "a", "rejected": "b", "score": 3}, ("chosen", "rejected")) == {"chosen": "a",
                                                                                                "rejected": "b"}
    assert pinned.cut({"chosen": "a"}, ("chosen", "rejected")) == {"chosen": "a"}   # left for the normaliser to drop


def test_local_and_hub_rows_are_the_same_pairs(hh_dir, monkeypatch):
    """From the data dir, and from the Hub's test split taken as offline_dir takes it: the same rows, digest and
    pairs (ids included), in both splits; the rows asked again in other words sit on one side."""
    spec = pinned_spec(hh_dir)
    hub = {}

    def hub_rows(spec, split):
        hub["split"] = split
        return iter([{**r, "extra column": 1} for r in HH_ROWS]), ["chosen", "rejected", "extra column"], {
            "source": "hub", "resolved_commit": "0" * 40, "files": []}

    monkeypatch.setattr(pinned, "hub_rows", hub_rows)
    sides = {}
    for split in ("train", "test"):
        local = pinned.load(spec, split, None, hh_dir)
        from_hub = pinned.load(spec, split, None)
        assert hub["split"] == "test"   # both splits of the protocol come from the Hub's test split
        assert as_tuples(local.pairs) == as_tuples(from_hub.pairs) and local.pairs
        assert local.provenance["rows_sha256"] == from_hub.provenance["rows_sha256"] == dict(spec.kwargs["rows_sha256"])[split]
        sides[split] = {p.prompt[0][1].casefold().strip("?") for p in local.pairs}
    assert "question number 3" in sides["train"] ^ sides["test"]   # asked twice, on one side only
    assert sum(len(pinned.load(spec, s, None, hh_dir).pairs) for s in ("train", "test")) == len(HH_ROWS) - 1   # empty dropped


def test_rows_that_are_not_the_pinned_ones_stop_the_run_naming_the_fix(hh_dir, monkeypatch):
    spec = pinned_spec(hh_dir)
    test_file = hh_dir / "hh-helpful" / "test.jsonl.gz"
    rows = gzip.open(test_file, "rb").read().splitlines(keepends=True)
    test_file.write_bytes(gzip.compress(b"".join(rows[:-1])))   # one row short
    with pytest.raises(BenchError, match=r"split 'test': the \d+ rows of .* have digest [0-9a-f]{64}, not the pinned "
                                         r".*offline_dir DIR --realdata REALDATA"):
        pinned.load(spec, "test", None, hh_dir)
    edited = [{**r, "rejected": r["rejected"] + "!"} for r in HH_ROWS]   # a later revision, say
    monkeypatch.setattr(pinned, "hub_rows", lambda spec, split: (iter(edited), [], {"source": "hub"}))
    with pytest.raises(BenchError, match="the Hub's rows are not the ones this protocol pinned: the rows of "
                                         "Anthropic/hh-rlhf on the Hub's default branch differ .*Pass --data-dir DIR "
                                         "with files that hold the pinned rows") as raised:
        pinned.load(spec, "train", None)
    assert dict(spec.kwargs["rows_sha256"])["train"] in str(raised.value) and "REALDATA" not in str(raised.value)
    with pytest.raises(BenchError, match="has no pinned rows for split 'validation'"):
        pinned.load(spec, "validation", None, hh_dir)


def test_head_takes_the_first_rows_of_the_hub_split():
    spec = DATASETS.get("real/ultrafeedback")
    assert [r["i"] for r in pinned.taken(spec, "test_prefs", ({"i": i} for i in range(800)))] == list(range(500))


def test_shifts_name_sources_and_near_and_far_targets():
    assert PROTOCOL.sources == ("real/hh-helpful", "real/hh-harmless") and "real/ultrafeedback" in PROTOCOL.datasets
    assert PROTOCOL.targets_of("real/hh-helpful") == ("real/ultrafeedback", "real/hh-harmless")
    assert PROTOCOL.far_targets_of("real/hh-harmless") == ("real/hh-helpful",)
    assert (PROTOCOL.max_length, PROTOCOL.models, PROTOCOL.seeding, PROTOCOL.looks) == (256, "mpnet", "per-source", (3, 10))
    capped = PROTOCOL.capped(40, 20, 64)
    assert capped.shifts == PROTOCOL.shifts and far_targets(capped.name, "real/hh-helpful") == ("real/hh-harmless",)
    assert far_targets("mini-v2", "mini/travel") == () == far_targets("no-such-protocol", "real/hh-helpful")
    unregistered = dataclasses.replace(PROTOCOL, name="real-elsewhere")   # a spec given by its caller (tests, a board)
    assert far_targets("real-elsewhere", "real/hh-helpful") == ()
    assert far_targets("real-elsewhere", "real/hh-helpful", {"real-elsewhere": unregistered}) == ("real/hh-harmless",)
    assert far_targets(unregistered.capped(40, 20).name, "real/hh-harmless", {"real-elsewhere": unregistered}) == (
        "real/hh-helpful",)
    mini = PROTOCOLS.get("mini")
    assert mini.sources == mini.datasets and mini.far_targets_of("mini/chat") == ()
    assert protocol_hash(mini).startswith("527dcbde0926")   # a protocol without shifts keeps its hash


@pytest.mark.parametrize("shifts, problem", [
    ((("real/hh-helpful", (), ("real/hh-harmless",)),), "no near target, so no NTS"),
    ((("real/hh-helpful", ("w2s/rail-hh-10k",), ()),), r"\['w2s/rail-hh-10k'\] are not among its datasets"),
    ((("real/hh-helpful", ("real/ultrafeedback",), ("real/ultrafeedback",)),), "must be distinct datasets"),
    ((("real/hh-helpful", ("real/ultrafeedback",), ()),) * 2, "are not one or more distinct datasets"),
])
def test_shifts_that_do_not_describe_the_protocol_are_refused(shifts, problem):
    with pytest.raises(BenchError, match=f"protocol 'x': shifts are not .*{problem}"):
        dataclasses.replace(PROTOCOL, name="x", shifts=shifts)
    assert isinstance(dataclasses.replace(PROTOCOL, name="y"), ProtocolSpec)


def test_far_targets_are_read_apart_from_the_near_ones():
    """A result.json lists every target as "ood" (the pipeline's eval sets); readers mark the protocol's far ones."""
    ones = np.ones(2)
    sets = [EvalSet(name, role, ("a", "b"), ones, ones) for name, role in
            (("real/hh-helpful", "id"), ("real/ultrafeedback", "ood"), ("real/hh-harmless", "ood"))]
    result = {"protocol": {"name": "w2s-real-v1+cap-train40-test20-len64"}, "source": "real/hh-helpful"}
    assert [s.role for s in far_roles(result, sets)] == ["id", "ood", "far"]
    assert [s.role for s in far_roles({**result, "protocol": {"name": "mini"}}, sets)] == ["id", "ood", "ood"]


def test_the_key_of_a_w2s_real_v1_cell_holds_the_code_that_makes_its_pairs():
    """A teacher's and a cell's code version holds the loader modules of its datasets (RunContext.loaders): for
    w2s-real-v1, bench.datasets.pinned and the modules it reads its rows through (pinned.KEY_MODULES), every
    normaliser of its datasets among them; the other protocols' lists are what they were, so their keys stay."""
    from types import SimpleNamespace

    from bench.stages.context import RunContext

    def loaders(protocol: str, source: str) -> tuple[str, ...]:
        return RunContext.loaders(SimpleNamespace(protocol=PROTOCOLS.get(protocol)), source)

    for source in PROTOCOL.sources:
        assert loaders("w2s-real-v1", source) == ("bench.datasets.pinned", *sorted(pinned.KEY_MODULES))
    assert {"bench.datasets.loading", "bench.datasets.offline_dir"} <= set(pinned.KEY_MODULES)
    assert {DATASETS.get(n).kwargs["normalizer_module"] for n in PROTOCOL.datasets} <= set(pinned.KEY_MODULES)
    assert loaders("mini", "mini/chat") == ("bench.suites.mini",)
    assert loaders("mini-v2", "mini/chat") == ("bench.suites.mini", "bench.core.candidates",
                                               "bench.suites.mini.candidates")
    assert all(loaders("w2s-shift-v1", s) == ("bench.datasets.loading",) for s in PROTOCOLS.get("w2s-shift-v1").sources)


@needs_realdata
def test_the_realdata_rows_are_the_pinned_ones_whole(tmp_path):
    """offline_dir's data dir from the realdata files holds exactly the pinned rows; the protocol takes its pools and
    test splits whole; and the Hub's raw test rows, taken as the Hub route takes them, give the same pairs."""
    offline_dir.build(tmp_path, REALDATA, rows=4)
    counts = {}
    for name in PROTOCOL.datasets:
        spec = DATASETS.get(name)
        for split, size in ((spec.train_split, PROTOCOL.train_pool_size), (spec.test_split, PROTOCOL.test_size)):
            loaded = pinned.load(spec, split, size, tmp_path)
            counts[name, split] = loaded.provenance["kept"]
            assert loaded.provenance["kept"] == loaded.provenance["usable"]   # whole: nothing sampled away
    assert counts == {("real/hh-helpful", "train"): 1436, ("real/hh-helpful", "test"): 912,
                      ("real/hh-harmless", "train"): 1384, ("real/hh-harmless", "test"): 924,
                      ("real/ultrafeedback", "train_prefs"): 497, ("real/ultrafeedback", "test_prefs"): 487}
    for name in ("hh-helpful", "hh-harmless"):
        spec = DATASETS.get(f"real/{name}")
        raw = [json.loads(line) for line in gzip.open(REALDATA / f"hh_rlhf_{name[3:]}" / "test.jsonl.gz", "rb")]
        for split in ("train", "test"):
            from_hub = list(pinned.taken(spec, split, (pinned.cut(r, spec.kwargs["columns"]) for r in raw)))
            assert pinned.rows_digest(from_hub) == dict(spec.kwargs["rows_sha256"])[split], (name, split)


@needs_realdata
def test_a_run_reports_the_far_score_apart_and_the_board_leaves_it_out_of_nts(tmp_path, capsys):
    """A capped run of w2s-real-v1 (tiny, 40 train pairs, 20 test pairs, 64 tokens) end to end: its table has far
    columns in rows of their own, every number recomputes, and the statistics' NTS is the near targets' alone."""
    from bench.cli import main
    from bench.core.cells import load_cells
    from bench.core.report import cell_rows, summarise
    from bench.core.results import find_cells
    from bench.core.runs import cell_value
    from bench.core.stats import Board

    offline_dir.build(tmp_path / "data", REALDATA, rows=4)
    out = tmp_path / "results"
    assert main(["run", "--protocol", "w2s-real-v1", "--models", "tiny", "--data-dir", str(tmp_path / "data"),
                 "--cap-train", "40", "--cap-test", "20", "--cap-length", "64", "--method", "ceiling", "--seeds", "0",
                 "--jobs", "1", "--out", str(out)]) == 0
    table = capsys.readouterr().out
    assert "far AOG" in table and "far NTS" in table
    assert main(["verify", "--out", str(out)]) == 0
    results = find_cells(out)
    assert sorted(r.source for r in results) == ["real/hh-harmless", "real/hh-helpful"]
    assert all(set(r.eval_sets) == {"real/hh-helpful", "real/hh-harmless", "real/ultrafeedback"} for r in results)
    rows = cell_rows(results)
    assert sorted(rows["role"]) == ["far", "far", "ood", "ood"] and rows[rows["role"] == "far"]["nts"].isna().all()
    summary = summarise(rows)
    near = [r.metrics["real/ultrafeedback"].nts for r in results]
    far = [r.metrics[PROTOCOL.far_targets_of(r.source)[0]].nts for r in results]
    assert summary["nts"] == pytest.approx(np.mean(near)) and summary["far_nts"] == pytest.approx(np.mean(far))
    assert summary["cells"] == 2
    cells = load_cells(sorted({str(p.parent) for p in out.rglob("result.json")}))
    assert all([e.role for e in c.eval_sets] == ["id", "ood", "far"] for c in cells)
    assert [cell_value(c, "nts") for c in sorted(cells, key=lambda c: c.source)] == pytest.approx(
        [r.metrics["real/ultrafeedback"].nts for r in sorted(results, key=lambda r: r.source)])
    board = Board(cells)
    assert board.stats(board.methods[0], ceiling=None).metrics["nts"].estimate == pytest.approx(np.mean(near))


def test_an_unregistered_protocol_with_a_far_target_submits_exports_and_shows_without_it(
        tmp_path, monkeypatch, small_protocol, small_models):
    """A small protocol with a far target, given by its caller rather than registered (as a board's or a test's
    specs are): one naive run, submitted and validated, keeps the far target out of the summary's NTS; bench export
    gives it the role "far" in its tables, so the card's own code recomputes the summary (far AOG and NTS too); the
    board's matrices and ID-vs-OOD points leave it out instead of showing it blank."""
    import contextlib
    import io
    import re

    import pandas as pd

    from bench.commands.export import export_submission
    from bench.core.settings import RunSettings, default_cache_dir
    from bench.stages import pipeline
    from bench.submissions.pack import submit
    from leaderboard import core, plots

    protocol = dataclasses.replace(small_protocol, name="mini-far-test",
                                   categories=(("helpful", ("mini/recipes", "mini/travel", "mini/techsupport")),),
                                   shifts=(("mini/recipes", ("mini/travel",), ("mini/techsupport",)),))
    protocols, model_pairs = {protocol.name: protocol}, {small_models.name: small_models}
    results, submissions = tmp_path / "results", tmp_path / "submissions"
    pipeline.run(RunSettings(protocol, small_models, "naive", {}, list(protocol.sources), [0], results,
                             default_cache_dir(), command="bench run --method naive"))
    [folder] = submit([results], submissions, submitter="test suite", command="bench submit results",
                      protocols=protocols, model_pairs=model_pairs)
    meta = json.loads((folder / "submission.json").read_text())
    [result] = [json.loads(p.read_text()) for p in results.rglob("result.json")]
    assert meta["summary"]["cells"] == 1
    assert meta["summary"]["nts"] == pytest.approx(result["metrics"]["mini/travel"]["nts"])
    assert meta["summary"]["far_nts"] == pytest.approx(result["metrics"]["mini/techsupport"]["nts"])

    out = export_submission(folder, tmp_path / "export", protocols=protocols, model_pairs=model_pairs)
    cells = pd.read_parquet(out / "data" / "cells.parquet")
    assert dict(zip(cells["target"], cells["role"])) == {"mini/travel": "ood", "mini/techsupport": "far"}
    scores = pd.read_parquet(out / "data" / "scores.parquet")
    assert dict(scores.groupby("eval_set")["role"].first()) == {"mini/recipes": "id", "mini/travel": "ood",
                                                                "mini/techsupport": "far"}
    card = (out / "README.md").read_text()
    monkeypatch.chdir(out)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):   # asserts its recomputed numbers equal the summary's
        exec(re.findall(r"```python\n(.*?)```", card, flags=re.S)[0], {})
    assert "'far_nts'" in printed.getvalue()

    board = core.load_board(submissions, protocols, model_pairs, cache_dir=tmp_path / "board-cache")
    assert set(board.cells["role"]) == {"ood", "far"}
    [matrix] = plots.matrices(board, board.entries[0].key, "nts").values()
    assert list(matrix.columns) == ["recipes", "travel"] and int(matrix.notna().to_numpy().sum()) == 1
    assert list(plots.id_vs_ood(board)["target"]) == ["travel"]
