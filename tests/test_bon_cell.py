"""Best-of-N in the harness (issue 32): a protocol with candidate sets (ProtocolSpec.candidates) scores every
candidate in every cell, writes candidates.csv.gz beside scores.csv.gz, records BoN accuracies and metrics, and
bench validate recomputes them; a protocol without sets is unchanged, hash and files."""
import dataclasses
import gzip
import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest
from small_runs import edit_json, first_cell

from bench.core.errors import BenchError
from bench.core.io import read_csv_gz, sha256_file
from bench.core.metrics import bon_accuracy, bon_cell_metrics
from bench.core.result_schema import CANDIDATES_FILE, RESULT_FILE, SCORES_FILE
from bench.core.results import find_cells, read_cell_files, recompute_folder
from bench.core.settings import RunSettings
from bench.stages import pipeline
from bench.submissions import SUBMISSION_FILE, cell_folder, submit, validate_submission

REPO = Path(__file__).resolve().parents[1]
METHODS = ("naive", "ceiling")


@pytest.fixture(scope="module")
def bon(tmp_path_factory, bon_protocol, small_models):
    """naive and the ceiling on the small protocol with best-of-4 sets, every cell, and their submissions."""
    results, cache, submissions = (tmp_path_factory.mktemp(n) for n in ("bon_results", "bon_cache", "bon_submissions"))
    cells = {}
    for method in METHODS:
        cells[method] = pipeline.run(RunSettings(bon_protocol, small_models, method, {}, list(bon_protocol.datasets),
                                                 list(bon_protocol.seeds), results, cache,
                                                 command=f"bench run --method {method}"))
    protocols, model_pairs = {bon_protocol.name: bon_protocol}, {small_models.name: small_models}
    submit([results], submissions, submitter="test suite", command="bench submit results", protocols=protocols,
           model_pairs=model_pairs, folders=True)   # as cell folders, whose files these tests damage
    return {"results": results, "cache": cache, "submissions": submissions, "cells": cells, "protocols": protocols,
            "model_pairs": model_pairs}


def folders(root: Path, method: str) -> list[Path]:
    return sorted(p.parent for p in root.rglob(RESULT_FILE) if f"/{method}/" in p.as_posix())


def test_a_cell_writes_every_candidate_and_its_bon_numbers_recompute_from_them(bon, bon_protocol):
    for folder in folders(bon["results"], "naive"):
        result = json.loads((folder / RESULT_FILE).read_text())
        assert result["protocol"]["candidates"] == 4 and result["candidates_file"]["name"] == CANDIDATES_FILE
        assert result["candidates_file"]["sha256"] == sha256_file(folder / CANDIDATES_FILE)
        rows = read_csv_gz(folder / CANDIDATES_FILE)
        pairs = {(r["eval_set"], r["pair_id"]): r for r in read_csv_gz(folder / SCORES_FILE)}
        sets = defaultdict(lambda: defaultdict(list))
        for row in rows:
            sets[row["eval_set"]][row["set_id"]].append(row)
        bons = {}
        for name, its in sets.items():
            # one set per test pair, N = 4 candidates in order, the pair's own scores as candidates 0 and 1
            assert len(its) == result["eval_sets"][name]["n_sets"] == result["eval_sets"][name]["n_pairs"] == \
                bon_protocol.test_size
            for set_id, candidates in its.items():
                assert candidates[0]["pair_id"] == set_id   # mini: a set is named after its pair
                assert [c["candidate"] for c in candidates] == ["0", "1", "2", "3"]
                pair = pairs[name, candidates[0]["pair_id"]]
                for who in ("teacher", "student"):
                    assert float(candidates[0][who]) == float(pair[f"{who}_chosen"])
                    assert float(candidates[1][who]) == float(pair[f"{who}_rejected"])
            grades = [[float(c["grade"]) for c in cs] for cs in its.values()]
            bons[name] = {who: bon_accuracy([[float(c[who]) for c in cs] for cs in its.values()], grades)
                          for who in ("teacher", "student")}
            assert (result["eval_sets"][name]["teacher_bon"], result["eval_sets"][name]["student_bon"]) == \
                (bons[name]["teacher"], bons[name]["student"])
        for target, values in bon_cell_metrics(bons, result["source"]).items():
            for metric, value in values.items():
                assert result["metrics"][target][metric] == value
        found = read_cell_files(folder)
        assert found is not None and found.candidates == rows and recompute_folder(folder) == []   # bench verify


def test_the_teacher_scores_candidates_once_and_every_method_reuses_them(bon):
    naive, ceiling = (read_csv_gz(folders(bon["results"], m)[0] / CANDIDATES_FILE) for m in METHODS)
    assert [(r["set_id"], r["teacher"]) for r in naive] == [(r["set_id"], r["teacher"]) for r in ceiling]
    assert [r["student"] for r in naive] != [r["student"] for r in ceiling]
    entries = [p.parent for p in (bon["cache"] / "teacher").rglob("candidates.csv.gz")]
    assert len(entries) == len(folders(bon["results"], "naive"))   # one teacher entry per cell, with its candidates
    assert all(c.teacher["reused"] for c in bon["cells"]["ceiling"])


def test_candidate_scores_do_not_depend_on_the_scoring_batch_size(bon_protocol, small_models):
    """Both models of the pair, batch sizes 1, 5 and 64: every candidate's score agrees to float32 rounding
    (a batch's padded length changes the order of sums, as for pairs), and every set's credit is the same."""
    from bench.core.candidates import load_candidate_sets
    from bench.core.data import load_pairs
    from bench.core.metrics import bon_credit
    from bench.core.protocols import DATASETS
    from bench.stages.models import formatter_for, load_reward_model, load_tokenizer
    from bench.stages.scorers import score_candidate_sets, score_eval_sets

    name = bon_protocol.datasets[0]
    evals = {name: load_pairs(DATASETS.get(name), "test", 12).pairs}
    sets = {name: load_candidate_sets(DATASETS.get(name), evals[name], 4)}
    for spec in (small_models.weak, small_models.strong):
        model = load_reward_model(spec, seed=0)
        fmt = formatter_for(spec, load_tokenizer(spec), bon_protocol.max_length)
        runs = {}
        for size in (1, 5, 64):
            pair_scores = score_eval_sets(model, fmt, evals, size, "test")
            runs[size] = score_candidate_sets(model, fmt, sets, evals, pair_scores, size, "test")[name]
        for size in (5, 64):
            assert max(abs(a - b) for one, other in zip(runs[1], runs[size]) for a, b in zip(one, other)) < 1e-6
            assert [bon_credit(row, s.grades) for row, s in zip(runs[size], sets[name])] == \
                [bon_credit(row, s.grades) for row, s in zip(runs[1], sets[name])]
        assert len({x for row in runs[1] for x in row}) > 3 * len(runs[1])   # a real model telling candidates apart


def test_evaluate_scores_an_external_students_candidates_too(bon, bon_protocol, small_models, tmp_path):
    """bench evaluate (a reward model trained elsewhere) on a cell of the protocol: the checkpoint scores every
    candidate against the cell's cached teacher, and its BoN numbers recompute as a harness cell's."""
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from bench.stages.evaluate import evaluate
    from bench.stages.labels import export_labels
    from bench.stages.models import resolve_path
    source = bon_protocol.datasets[0]
    cell = RunSettings(bon_protocol, small_models, "byo-bon", sources=[source], seeds=[0], out=tmp_path / "labels",
                       cache_dir=bon["cache"])
    export_labels(cell)
    path = resolve_path(small_models.strong)
    model = AutoModelForSequenceClassification.from_pretrained(path, num_labels=1, num_hidden_layers=2)
    model.save_pretrained(tmp_path / "student")
    AutoTokenizer.from_pretrained(path).save_pretrained(tmp_path / "student")
    [result] = evaluate(cell.replace(out=tmp_path / "results"), str(tmp_path / "student"), labels=tmp_path / "labels")
    folder = next((tmp_path / "results").rglob(RESULT_FILE)).parent
    assert result.teacher["reused"] and result.candidates_file is not None and recompute_folder(folder) == []
    naive = next(c for c in bon["cells"]["naive"] if c.source == source)
    assert [e.teacher_bon for e in result.eval_sets.values()] == [e.teacher_bon for e in naive.eval_sets.values()]
    assert all(e.n_sets == bon_protocol.test_size for e in result.eval_sets.values())


def test_run_summary_and_report_show_bon_columns_after_nts(bon, runs):
    from bench.core.report import cell_table, method_table

    table = cell_table(bon["cells"]["naive"])
    header = table.splitlines()[0]
    assert header.index("NTS") < header.index("BoN teacher ID") < header.index("BoN NTS")
    assert "BoN" not in cell_table(find_cells(runs.results))
    report = method_table([c for cs in bon["cells"].values() for c in cs])
    assert {"BoN NTS", "BoN gain ID", "BoN gain OOD"} <= set(report.columns)
    teacher = report.set_index("method").loc["teacher (weak)"]
    assert teacher["BoN NTS"] == "+0.0" and teacher["BoN student ID"] == teacher["BoN teacher ID"]


def test_compare_on_bon_nts_is_the_paired_machinery_on_per_set_credits(bon):
    from bench.core.compare import board_for, comparison_table, decision_table

    board, names = board_for(bon["results"], ["ceiling", "naive"], metric="bon-nts")
    assert names == ["ceiling", "naive"]
    for method in METHODS:   # its point estimate is the mean of the cells' recorded BoN NTS (one seed)
        recorded = [m.bon_nts for c in bon["cells"][method] for m in c.metrics.values()]
        assert board.stats(method, ceiling=None).metrics["nts"].estimate == pytest.approx(sum(recorded) / len(recorded))
    table = comparison_table(board, "ceiling", "naive", metric="bon-nts")
    assert list(table["metric"]) == ["BoN NTS", "BoN gain OOD", "BoN gain ID"]
    assert "BoN NTS 95% CI" in decision_table(board, metric="bon-nts").columns


def test_the_commands_show_bon(bon, capsys):
    from bench.cli import main

    assert main(["compare", "ceiling", "naive", "--out", str(bon["results"]), "--metric", "bon-nts"]) == 0
    out = capsys.readouterr().out
    assert "BoN NTS" in out and "BoN gain OOD" in out and "BoN gain ID" in out
    assert main(["report", "--out", str(bon["results"])]) == 0
    out = capsys.readouterr().out
    assert out.index("BoN NTS") < out.index("Δ NTS vs naive") < out.index("Δ BoN NTS vs naive")


def test_compare_on_bon_nts_refuses_cells_without_candidate_sets(runs, capsys):
    from bench.cli import main
    from bench.core.compare import board_for

    with pytest.raises(BenchError, match="--metric bon-nts: .*no best-of-N candidate scores"):
        board_for(runs.results, ["ceiling", "naive"], metric="bon-nts")
    # --until-decided too, before any work, naming the fix
    assert main(["compare", "ceiling", "naive", "--out", str(runs.results), "--metric", "bon-nts",
                 "--until-decided"]) == 2
    err = capsys.readouterr().err
    assert "no best-of-N candidate scores (its protocol scores no candidate sets)" in err
    assert "compare its pair metrics (--metric nts), or run a protocol with candidate sets" in err


def test_until_decided_grows_a_comparison_on_bon_nts(tmp_path, capsys, bon_protocol, registered_small, monkeypatch):
    """bench compare --until-decided --metric bon-nts on a protocol with candidate sets seeded per source: every
    look is the runs delta of the cells' BoN NTS, each run's the mean over its targets of the BoN NTS its result.json
    records, and the seeds it adds score their candidates too."""
    from bench.cli import main
    from bench.core.compare import interval_text
    from bench.core.protocols import PROTOCOLS
    from bench.core.results import load_cell
    from bench.core.runs import runs_delta, stratified
    from bench.core.stats import bon_view

    _, models = registered_small
    protocol = dataclasses.replace(bon_protocol, name="mini-seq-bon", seeding="per-source", looks=(2, 3), seeds=(0, 1))
    # registered for this test only: the registries are part of the validation record's key (conftest.py's
    # committed_validations is read again by later tests only while they are the same)
    monkeypatch.setitem(PROTOCOLS._entries, protocol.name, protocol)
    out = tmp_path / "out"
    for method in METHODS:
        pipeline.run(RunSettings(protocol, models, method, {}, protocol.datasets, [0, 1], out, tmp_path / "cache"))
    assert main(["compare", "ceiling", "naive", "--out", str(out), "--until-decided", "--metric", "bon-nts",
                 "--precision", "0", "--cache-dir", str(tmp_path / "cache")]) == 0
    printed = capsys.readouterr().out
    assert f"ceiling − naive on {protocol.name}/{models.name}: BoN NTS over independent runs" in printed
    bon_nts = {}   # (method, seed, source) -> the run's BoN NTS, from its result.json
    for path in out.rglob(RESULT_FILE):
        result = load_cell(path.parent)
        assert result.candidates_file is not None   # the seeds the command added scored their candidates
        bon_nts[result.method.name, result.seed, result.source] = \
            sum(m.bon_nts for m in result.metrics.values()) / len(result.metrics)
    seeds = sorted({seed for _, seed, _ in bon_nts})
    assert seeds in ([0, 1], [0, 1, 2]) and len(bon_nts) == len(METHODS) * len(seeds) * len(protocol.datasets)
    diffs = {s: [bon_nts["ceiling", j, s] - bon_nts["naive", j, s] for j in seeds] for s in protocol.datasets}
    estimate, low, high, runs, *_ = stratified(diffs, protocol.looks)
    assert f"{estimate:+.2f} {interval_text(low, high)} over {runs} runs ({len(seeds)} seeds)" in printed.splitlines()[-1]
    # bench.core.runs.runs_delta on the cells' BoN views: each run's difference is its BoN NTS difference
    from bench.core.cells import load_cells

    cells = {m: load_cells(p.parent for p in sorted((out / protocol.name / models.name / m).rglob(RESULT_FILE)))
             for m in METHODS}
    delta = runs_delta(bon_view(cells["ceiling"]), bon_view(cells["naive"]), looks=protocol.looks)
    assert delta.per_run == pytest.approx(tuple(diffs[s][j] for j in range(len(seeds)) for s in sorted(diffs)))


def test_a_protocol_without_candidates_keeps_its_hash_and_writes_no_candidates(runs, small_protocol):
    from bench.core.protocols import PROTOCOLS, protocol_hash

    mini = PROTOCOLS.get("mini")
    committed = json.loads((REPO / "submissions" / "mini" / "tiny" / "naive" / SUBMISSION_FILE).read_text())
    assert protocol_hash(mini) == protocol_hash(dataclasses.replace(mini, candidates=None)) == \
        committed["protocol"]["hash"]
    assert protocol_hash(dataclasses.replace(mini, candidates=4)) != protocol_hash(mini)
    assert not list(runs.results.rglob(CANDIDATES_FILE)) and not list(runs.submissions.rglob(CANDIDATES_FILE))
    for path in runs.results.rglob(RESULT_FILE):
        result = json.loads(path.read_text())
        assert "candidates" not in result["protocol"] and "candidates_file" not in result
        assert not any("n_sets" in e or "teacher_bon" in e for e in result["eval_sets"].values())
        assert not any("bon_nts" in m for m in result["metrics"].values())
    meta = json.loads(next(runs.submissions.rglob(SUBMISSION_FILE)).read_text())
    assert not any("bon" in key for key in meta["summary"]) and not any("candidates_sha256" in c for c in meta["cells"])


def test_a_candidate_set_size_is_checked():
    from bench.core.protocols import PROTOCOLS

    for bad in (1, 0, 2.5, True, "4"):
        with pytest.raises(BenchError, match="candidates=.* is not a candidate-set size"):
            dataclasses.replace(PROTOCOLS.get("mini"), candidates=bad)


def test_a_dataset_without_candidate_sets_is_refused_before_any_work(tmp_path, bon_protocol, small_models,
                                                                      monkeypatch):
    from bench.core import candidates
    from bench.core.protocols import DATASETS

    with pytest.raises(BenchError, match="dataset w2s/helpsteer3 has no best-of-N candidate sets"):
        candidates.load_candidate_sets(DATASETS.get("w2s/helpsteer3"), [], 4)
    monkeypatch.setattr(candidates, "CANDIDATE_LOADERS", {})
    settings = RunSettings(bon_protocol, small_models, "naive", {}, [bon_protocol.datasets[0]], [0], tmp_path / "out",
                           tmp_path / "cache")
    with pytest.raises(BenchError, match="dataset mini/recipes has no best-of-N candidate sets"):
        pipeline.run(settings)
    assert not list((tmp_path / "cache").rglob("*.safetensors"))   # no teacher was trained


# --- bench submit and bench validate --------------------------------------------------------------------------
def check(bon, folder):
    return validate_submission(folder, bon["protocols"], bon["model_pairs"])


def errors(validation) -> str:
    return "\n".join(map(str, validation.errors))


def naive_copy(bon, tmp_path) -> Path:
    import shutil

    folder = tmp_path / "naive"
    shutil.copytree(next(p.parent for p in bon["submissions"].rglob(SUBMISSION_FILE) if p.parent.name == "naive"),
                    folder)
    return folder


def reseal_candidates(folder: Path) -> None:
    """Update every checksum after an edit of a candidates file, as a careful forger would."""
    meta = json.loads((folder / SUBMISSION_FILE).read_text())
    for ref in meta["cells"]:
        cell = folder / cell_folder(ref["seed"], ref["source"])
        ref["candidates_sha256"] = digest = sha256_file(cell / CANDIDATES_FILE)
        edit_json(cell / RESULT_FILE, lambda r, digest=digest: r["candidates_file"].update(sha256=digest))
        ref["result_sha256"] = sha256_file(cell / RESULT_FILE)
    (folder / SUBMISSION_FILE).write_text(json.dumps(meta))


def tamper(cell: Path, pick) -> tuple[str, str]:
    """Rewrite one candidate's teacher score (the first row ``pick(rows, i)`` accepts, to the value it returns);
    returns that row's eval set and set id."""
    lines = gzip.decompress((cell / CANDIDATES_FILE).read_bytes()).decode().splitlines()
    rows = [line.split(",") for line in lines]
    for i, row in enumerate(rows[1:], start=1):
        value = pick(rows, i)
        if value is not None:
            row[5] = repr(value)
            lines[i] = ",".join(row)
            (cell / CANDIDATES_FILE).write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
            return row[0], row[1]
    raise AssertionError("no candidate to tamper with")


def test_submit_packs_candidates_and_the_submission_validates(bon):
    for folder in (p.parent for p in bon["submissions"].rglob(SUBMISSION_FILE)):
        v = check(bon, folder)
        assert v.ok, errors(v)
        meta = json.loads((folder / SUBMISSION_FILE).read_text())
        assert meta["protocol"]["candidates"] == 4 and "bon_nts" in meta["summary"]
        for ref in meta["cells"]:
            assert ref["candidates_sha256"] == sha256_file(folder / cell_folder(ref["seed"], ref["source"]) /
                                                           CANDIDATES_FILE)
        assert all(c.bon for c in v.pairs)   # what the board's BoN statistics read


def test_validate_refuses_a_changed_candidate_score(bon, tmp_path):
    folder = naive_copy(bon, tmp_path)
    cell = first_cell(folder)

    def new_wrong_candidate(rows, i):   # a wrong new candidate raised above a set the teacher got right
        row = rows[i]
        teacher = [float(r[5]) for r in rows[1:] if r[0] == row[0] and r[1] == row[1]]
        if row[3] != "2" or float(row[4]) != 0.0 or teacher[0] <= max(teacher[1:]):
            return None
        return teacher[0] + 1.0

    eval_set, _ = tamper(cell, new_wrong_candidate)
    v = check(bon, folder)   # checksums left as they were: the file is named as changed
    assert not v.ok and f"{cell_folder(0, 'mini/recipes')}/{CANDIDATES_FILE}: its sha256 is not the one" in errors(v)
    reseal_candidates(folder)   # checksums updated: the recompute refuses it, naming the file and the eval set
    text = errors(v := check(bon, folder))
    assert not v.ok and f"eval_sets.{eval_set}.teacher_bon: is " in text
    assert f"but the candidate scores in {CANDIDATES_FILE} give" in text


def test_validate_refuses_a_candidate_that_is_not_its_pairs_response_naming_the_set(bon, tmp_path):
    folder = naive_copy(bon, tmp_path)
    cell = first_cell(folder)
    eval_set, set_id = tamper(cell, lambda rows, i: float(rows[i][5]) + 0.5 if rows[i][3] == "0" else None)
    reseal_candidates(folder)
    v = check(bon, folder)
    rel = f"{cell_folder(0, 'mini/recipes')}/{CANDIDATES_FILE}"
    assert not v.ok and f"{rel}: candidates.{eval_set}.{set_id}: set {set_id!r} of {eval_set}: candidate 0's teacher " \
        f"score in {CANDIDATES_FILE} is" in errors(v)


def test_a_forged_teacher_candidate_is_refused_beside_naive_and_a_forged_grade_by_the_protocol(bon, tmp_path):
    """With no committed reference (mini-bon-test), the naive submission beside a forged one is its reference teacher,
    credits in the candidate sets included; the protocol's sets are generated again, grades included."""
    from small_runs import forge_candidates, raise_wrong_candidates, regrade_one_set

    from bench.submissions.tree import validate_tree

    root = Path(shutil.copytree(bon["submissions"], tmp_path / "root"))
    ceiling = next(p.parent for p in root.rglob(SUBMISSION_FILE) if p.parent.name == "ceiling")
    forge_candidates(ceiling, raise_wrong_candidates)
    assert check(bon, ceiling).ok   # alone, with no reference teacher: its teacher's picks cannot be checked ...
    by_key = {v.key: v for v in validate_tree(root, bon["protocols"], bon["model_pairs"])}
    [forged] = [v for key, v in by_key.items() if key.endswith("/ceiling")]
    assert "the teacher's best-of-N picks differ from those of the reference teacher (the submission " \
        f"{bon_protocol_name(bon)}/" in errors(forged), errors(forged)   # ... beside naive, they are
    assert all(v.ok for key, v in by_key.items() if not key.endswith("/ceiling"))
    regraded = naive_copy(bon, tmp_path)
    forge_candidates(regraded, regrade_one_set)
    found = errors(check(bon, regraded))
    assert "best-of-N candidate sets differ from the protocol's in its gold grades" in found, found
    assert "the protocol's test splits, generated again" in found


def bon_protocol_name(bon) -> str:
    return next(iter(bon["protocols"]))


def test_validate_refuses_a_missing_or_foreign_candidates_file(bon, runs, tmp_path):
    folder = naive_copy(bon, tmp_path)
    (first_cell(folder) / CANDIDATES_FILE).unlink()
    v = check(bon, folder)
    assert not v.ok and f"{CANDIDATES_FILE}: is missing (seed 0 mini/recipes: mini-bon-test scores best-of-N" in errors(v)
    from small_runs import submission_copy

    plain = submission_copy(runs, tmp_path / "plain")
    (first_cell(plain) / CANDIDATES_FILE).write_bytes((first_cell(folder) / SCORES_FILE).read_bytes())
    v = validate_submission(plain, runs.protocols, runs.model_pairs)
    assert not v.ok and f"{CANDIDATES_FILE}: is not listed in submission.json" in errors(v)


def test_validate_reads_no_more_candidate_rows_than_declared(bon, tmp_path):
    folder = naive_copy(bon, tmp_path)
    cell = first_cell(folder)
    data = gzip.decompress((cell / CANDIDATES_FILE).read_bytes()).decode()
    lines = data.splitlines()
    (cell / CANDIDATES_FILE).write_bytes(gzip.compress((data + "\n".join(lines[1:]) + "\n").encode()))
    reseal_candidates(folder)
    text = errors(check(bon, folder))
    assert "holds more than" in text and "reading stopped at line" in text


def test_protocol_card_documents_the_candidate_sets(bon_protocol):
    from bench.core.card import protocol_card

    card = protocol_card(bon_protocol)
    assert "## Best-of-N candidate sets" in card and "- **Candidates per set (N):** 4" in card
    assert "(`bench.suites.mini.candidates`)" in card and "**Cues.**" in card
    assert "- `mini/recipes`: each new candidate carries its own cue" in card and "with probability 0.25" in card


def test_rank_agreement_of_nts_and_bon_nts(bon, bon_protocol, small_models, tmp_path, capsys):
    """naive, entropy and the rule-based length (and the ceiling, a reference, and naive's replicate, a control,
    both left out unless named) ranked by NTS and by BoN NTS: each rank difference has an interval from the shared
    replicates, rho is the point rankings', and bench report prints both where the board has three ranked methods."""
    import numpy as np
    from scipy.stats import spearmanr

    from bench.cli import main
    from bench.core.compare import cells_under, rank_agreement
    from bench.core.stats import Board, bon_view

    more = tmp_path / "more"
    for method, replicate in (("length", 0), ("entropy", 0), ("naive", 1)):
        pipeline.run(RunSettings(bon_protocol, small_models, method, {}, list(bon_protocol.datasets),
                                 list(bon_protocol.seeds), more, bon["cache"], replicate=replicate))
    [cells] = cells_under(bon["results"], more).values()
    pair, view = Board(cells), Board(bon_view(cells))
    methods = ["entropy_alpha=0.5_warmup=0.1", "length", "naive"]   # slugs: entropy with its default params
    found = rank_agreement(pair, view)
    assert list(found.table["method"]) == methods   # the ceiling is a reference, naive#1 a control: not ranked
    assert list(rank_agreement(pair, view, [*methods, "naive#1"]).table["method"]) == [*methods, "naive#1"]
    points = [[b.stats(m, ceiling=None).metrics["nts"].estimate for m in methods] for b in (pair, view)]
    assert found.spearman == pytest.approx(spearmanr(*points).statistic)
    assert found.low <= found.spearman <= found.high or np.isnan(found.low)
    table = found.table.set_index("method")
    assert list(table["rank by NTS"]) == [1 + sum(p > x for p in points[0]) for x in points[0]]
    assert set(table["differs"]) <= {"yes", "no"}
    with pytest.raises(BenchError, match="at least 3"):
        rank_agreement(pair, view, ["naive", "length"])

    both = tmp_path / "both"
    shutil.copytree(more, both, dirs_exist_ok=True)
    shutil.copytree(bon["results"], both, dirs_exist_ok=True)
    assert main(["report", "--out", str(both)]) == 0
    out = capsys.readouterr().out
    assert "Rank by NTS against rank by BoN NTS: Spearman's rho" in out


# --- bench export ---------------------------------------------------------------------------------------------
def test_export_carries_the_candidates_and_its_bon_numbers_recompute_from_them(bon, runs, tmp_path, monkeypatch):
    """bench export of a submission with candidate sets writes every candidate (config ``candidates``) and the
    cells' BoN accuracies; the BoN numbers recompute from the export alone, and so does the card's own code. A
    protocol without sets exports no candidates table."""
    import contextlib
    import io
    import re

    import pandas as pd
    from datasets import load_dataset

    from bench.commands.export import export_submission

    folder = next(p.parent for p in bon["submissions"].rglob(SUBMISSION_FILE) if p.parent.name == "naive")
    meta = json.loads((folder / SUBMISSION_FILE).read_text())
    out = export_submission(folder, tmp_path / "export", protocols=bon["protocols"], model_pairs=bon["model_pairs"])
    candidates = load_dataset(str(out), "candidates", split="train").to_pandas()
    cells = pd.read_parquet(out / "data" / "cells.parquet")
    results = {(r["seed"], r["source"]): r for r in (json.loads(p.read_text()) for p in folder.rglob(RESULT_FILE))}
    assert len(candidates) == 4 * sum(e["n_sets"] for r in results.values() for e in r["eval_sets"].values())
    for (seed, source), own in candidates.groupby(["seed", "source"]):
        bons = {}
        for eval_set, rows in own.groupby("eval_set"):
            sets = [s.sort_values("candidate") for _, s in rows.groupby("set_id", sort=False)]
            bons[eval_set] = {who: bon_accuracy([s[who].tolist() for s in sets], [s["grade"].tolist() for s in sets])
                              for who in ("teacher", "student")}
            assert bons[eval_set]["teacher"] == results[seed, source]["eval_sets"][eval_set]["teacher_bon"]
        for target, values in bon_cell_metrics(bons, source).items():
            row = cells[(cells["seed"] == seed) & (cells["source"] == source) & (cells["target"] == target)].iloc[0]
            assert (row["teacher_bon_ood"], row["student_bon_ood"]) == (bons[target]["teacher"], bons[target]["student"])
            assert (row["teacher_bon_id"], row["student_bon_id"]) == (bons[source]["teacher"], bons[source]["student"])
            for metric, value in values.items():
                assert row[metric] == value == results[seed, source]["metrics"][target][metric]
    card = (out / "README.md").read_text()
    assert 'config_name: "candidates"' in card and "| BoN NTS | " in card and "- `candidates`: one row per" in card
    code = re.findall(r"```python\n(.*?)```", card, flags=re.S)[0]
    monkeypatch.chdir(out)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(code, {})   # asserts its recomputed WRG, AOG, NTS and BoN gain ID, BoN gain OOD, BoN NTS equal the summary's
    assert f"'bon_nts': {round(meta['summary']['bon_nts'], 2)}" in \
        printed.getvalue().replace("np.float64(", "").replace(")", "")
    plain = export_submission(next(p.parent for p in runs.submissions.rglob(SUBMISSION_FILE)), tmp_path / "plain",
                              protocols=runs.protocols, model_pairs=runs.model_pairs)
    assert not (plain / "data" / "candidates.parquet").exists() and "candidates" not in \
        (plain / "README.md").read_text().split("---")[1]
