"""Nothing trusted, round three (issue 31): each test breaks what a hostile or unlucky user broke by hand
and checks the harness's answer (docs/reliability.md, "Round three")."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from small_runs import as_folders, edit_json, first_cell, reseal, write_candidates, zip_folder

from bench.submissions import SUBMISSION_FILE, cell_folder, validate_submission


def check(runs, folder):
    return validate_submission(folder, runs.protocols, runs.model_pairs)


def errors(validation) -> str:
    return "\n".join(map(str, validation.errors))


# --- 12. derived seeds --------------------------------------------------------------------------------------
def test_an_edited_derived_seed_is_refused(runs, naive):
    edit_json(first_cell(naive) / "result.json", lambda r: r["derived_seeds"].update(split=12345))
    reseal(naive)
    found = errors(check(runs, naive))
    assert "derived_seeds.split: is 12345, but seed 0 of mini/recipes derives" in found
    assert "seeds are derived, never chosen" in found


def test_a_missing_or_foreign_stage_seed_is_refused(runs, naive):
    def change(result):
        result["derived_seeds"].pop("student-order")
        result["derived_seeds"]["lucky"] = 7
    edit_json(first_cell(naive) / "result.json", change)
    reseal(naive)
    assert "derived_seeds: names the stages ['lucky', 'order'" in errors(check(runs, naive))


# --- 1 and 2. a forged teacher, dropped test pairs ---------------------------------------------------------
REPOSITORY = Path(__file__).resolve().parents[1]


def forge(folder: Path, edit) -> None:
    """``edit(seed, source, rows) -> rows`` on every cell's per-pair scores, then every number recomputed
    with the harness's own functions and every checksum resealed, as a careful forger would: only the
    reference teacher is left to notice."""
    from bench.core.cells import load_cells
    from bench.core.io import csv_gz_bytes, read_csv_gz, sha256_file
    from bench.core.metrics import cell_metrics
    from bench.core.result_schema import SCORE_COLUMNS, read_result
    from bench.core.results import accuracies_from_scores
    from bench.submissions.schema import submission_intervals, submission_summary

    meta = json.loads((folder / SUBMISSION_FILE).read_text())
    results, cells = [], []
    for ref in meta["cells"]:
        if ref.get("replicate", 0):   # naive's replicates (its board controls) are left as they are
            continue
        cell = folder / cell_folder(ref["seed"], ref["source"])
        rows = edit(ref["seed"], ref["source"], read_csv_gz(cell / "scores.csv.gz"))
        (cell / "scores.csv.gz").write_bytes(csv_gz_bytes(SCORE_COLUMNS, [[r[c] for c in SCORE_COLUMNS] for r in rows]))
        result = json.loads((cell / "result.json").read_text())
        accuracies = accuracies_from_scores(rows)
        for name, e in result["eval_sets"].items():
            e.update(teacher_acc=accuracies[name]["teacher"], student_acc=accuracies[name]["student"],
                     n_pairs=accuracies[name]["n_pairs"])
        result["metrics"] = {target: {**result["metrics"][target], **values}
                             for target, values in cell_metrics(accuracies, result["source"]).items()}
        if (cell / "candidates.csv.gz").is_file():   # best-of-N: candidates 0 and 1 of a pair's set are its two responses
            scored = {(r["eval_set"], r["pair_id"]): r for r in rows}
            candidates = read_csv_gz(cell / "candidates.csv.gz")
            for c in candidates:
                pair = scored.get((c["eval_set"], c["pair_id"])) if c["candidate"] in ("0", "1") else None
                if pair is not None:
                    side = "chosen" if c["candidate"] == "0" else "rejected"
                    c["teacher"], c["student"] = pair[f"teacher_{side}"], pair[f"student_{side}"]
            write_candidates(cell, result, ref, candidates)
        result["scores_file"]["sha256"] = ref["scores_sha256"] = sha256_file(cell / "scores.csv.gz")
        (cell / "result.json").write_text(json.dumps(result))
        ref["result_sha256"] = sha256_file(cell / "result.json")
        results.append(read_result(result))
        cells.append(cell)
    meta["summary"], meta["intervals"] = submission_summary(results), submission_intervals(load_cells(cells))
    (folder / SUBMISSION_FILE).write_text(json.dumps(meta))


def flip_teacher_wins(n: int, seed: int, source: str):
    """An edit: the teacher's first ``n`` wins on the source's own test split, in cell (seed, source), swapped."""
    def edit(cell_seed, cell_source, rows):
        if (cell_seed, cell_source) == (seed, source):
            wins = [r for r in rows if r["eval_set"] == source and float(r["teacher_chosen"]) > float(r["teacher_rejected"])]
            for row in wins[:n]:
                row["teacher_chosen"], row["teacher_rejected"] = row["teacher_rejected"], row["teacher_chosen"]
        return rows
    return edit


def drop_student_losses(n: int):
    """An edit: from every eval set, ``n`` pairs the student of the first cell scoring it gets wrong (or
    all it gets wrong and the first others), dropped in every cell, so that the intervals still compute."""
    chosen: dict[str, set[str]] = {}

    def edit(seed, source, rows):
        for name in {row["eval_set"] for row in rows} - set(chosen):
            own = [row for row in rows if row["eval_set"] == name]
            own.sort(key=lambda row: float(row["student_chosen"]) >= float(row["student_rejected"]))  # losses first
            chosen[name] = {row["pair_id"] for row in own[:n]}
        return [row for row in rows if row["pair_id"] not in chosen[row["eval_set"]]]
    return edit


def reference_copy(tmp_path: Path, slug: str = "naive") -> Path:
    folder = REPOSITORY / "submissions" / "mini" / "tiny" / slug
    if not folder.is_dir():
        pytest.skip("no reference submissions")
    return as_folders(Path(shutil.copytree(folder, tmp_path / "mini" / "tiny" / slug)))


def validate_cli(folder: Path, capsys) -> tuple[int, str]:
    from bench.cli import main

    code = main(["validate", str(folder)])
    return code, capsys.readouterr().out


def upload(folder: Path, tmp_path: Path, board=None, runs=None) -> str:
    from leaderboard import core
    from leaderboard.uploads import check_upload

    archive = zip_folder(folder, tmp_path / f"{folder.name}.zip")
    board = board or core.Board(tmp_path / "empty", [])
    return check_upload(str(archive), board, *((runs.protocols, runs.model_pairs) if runs else ()))[0]


def test_a_forged_teacher_is_refused_by_validate_compare_and_the_board_upload(tmp_path, capsys):
    """Ten of the teacher's wins flipped in a copy of naive's reference submission, every number recomputed
    and resealed: it passed validation and ranked first on the board. The committed reference teacher of
    mini x tiny (built from naive's submission) refuses it, naming the cell, the eval set and the count."""
    forged = reference_copy(tmp_path)
    forge(forged, flip_teacher_wins(10, 0, "mini/recipes"))
    code, out = validate_cli(forged, capsys)
    message = ("cells/seed0/mini__recipes/result.json: eval_sets.mini/recipes: the teacher's verdicts differ from those "
               "of the reference teacher (submission mini/tiny/naive) on 10 of 400 test pairs")
    assert code == 1 and message in out, out
    assert out.count("verdicts differ") == 1   # the other 17 cells and the targets of this one hold
    report = upload(forged, tmp_path)
    assert report.startswith("naive.zip: REJECTED") and message in report, report
    # bench compare pairs a method with naive only on one teacher: the forged naive beside the real ceiling
    shutil.copytree(REPOSITORY / "submissions" / "mini" / "tiny" / "ceiling", tmp_path / "mini" / "tiny" / "ceiling")
    from bench.cli import main

    assert main(["compare", "ceiling", "naive", "--out", str(tmp_path / "mini" / "tiny")]) == 2
    assert "its teacher's verdicts on mini/recipes differ from those of 'ceiling' on 10 of 400 test pairs" in \
        capsys.readouterr().err


def test_an_early_stopped_pair_without_a_reference_of_its_own_is_checked_against_its_base_pairs(tmp_path):
    """Early stopping changes only the student: a forged teacher under ``tiny+early-stop``, where no reference of that
    pair is committed, is refused by the base pair's reference (before, it passed with a warning)."""
    from bench.submissions.check import validate_submission
    from bench.submissions.limits import REFERENCES

    folder = REPOSITORY / "submissions" / "mini" / "tiny+early-stop" / "naive"
    if not folder.is_dir():
        pytest.skip("no reference submissions")
    forged = as_folders(Path(shutil.copytree(folder, tmp_path / "mini" / "tiny+early-stop" / "naive")))
    forge(forged, flip_teacher_wins(5, 0, "mini/recipes"))
    only_base = tmp_path / "references"
    only_base.mkdir()
    shutil.copy(REFERENCES / "mini__tiny.json", only_base)
    found = "\n".join(map(str, validate_submission(forged, references=only_base).errors))
    assert ("eval_sets.mini/recipes: the teacher's verdicts differ from those of the reference teacher (submission "
            "mini/tiny/naive) on 5 of 400 test pairs") in found, found


def test_dropped_test_pairs_are_refused_by_validate_and_the_board_upload(tmp_path, capsys):
    forged = reference_copy(tmp_path)
    forge(forged, drop_student_losses(4))
    code, out = validate_cli(forged, capsys)
    message = ("cells/seed0/mini__recipes/result.json: eval_sets.mini/recipes: scores 396 test pairs where the "
               "protocol's test split has 400: 4 of its pairs are missing and 0 are not in it")
    assert code == 1 and message in out, out
    assert out.count("4 of its pairs are missing") == 54   # every eval set of every cell: 18 cells x 3
    report = upload(forged, tmp_path)
    assert report.startswith("naive.zip: REJECTED") and message in report, report


def test_without_a_committed_reference_generated_test_splits_and_the_boards_naive_check(runs, tmp_path):
    """mini-test has no committed reference: its test splits are generated again (dropped pairs are
    refused by validate_submission alone), and in a folder of submissions, or on the board's upload, its
    naive submission is the reference teacher of the others."""
    from bench.submissions.tree import validate_tree

    dropped = runs.copy_submissions(tmp_path / "dropped") / "mini-test" / "tiny-test" / "anchor_lam=0.5_layers=last"
    forge(dropped, drop_student_losses(2))
    found = errors(check(runs, dropped))
    assert "eval_sets.mini/travel: scores 22 test pairs where the protocol's test split has 24: 2 of its pairs are " \
           "missing and 0 are not in it" in found and "the protocol's test splits, generated again" in found
    root = runs.copy_submissions(tmp_path / "forged")
    forge(root / "mini-test" / "tiny-test" / "ceiling", flip_teacher_wins(3, 0, "mini/travel"))
    alone = check(runs, root / "mini-test" / "tiny-test" / "ceiling")
    assert alone.ok   # a submission alone, with no reference: its teacher cannot be checked ...
    [warning] = validate_tree(root / "mini-test" / "tiny-test" / "ceiling", runs.protocols, runs.model_pairs)[0].warnings
    assert "no reference teacher for mini-test/tiny-test" in str(warning)   # ... and validate says so
    by_key = {v.key: v for v in validate_tree(root, runs.protocols, runs.model_pairs)}
    message = ("cells/seed0/mini__travel/result.json: eval_sets.mini/travel: the teacher's verdicts differ from those "
               "of the reference teacher (the submission mini-test/tiny-test/naive) on 3 of 24 test pairs")
    assert message in errors(by_key["mini-test/tiny-test/ceiling"])
    assert all(v.ok for key, v in by_key.items() if not key.endswith("ceiling"))
    from leaderboard import core

    board = core.load_board(runs.submissions, runs.protocols, runs.model_pairs, tmp_path / "cache")
    report = upload(root / "mini-test" / "tiny-test" / "ceiling", tmp_path, board, runs)
    assert report.startswith("ceiling.zip: REJECTED") and "on 3 of 24 test pairs" in report, report


def test_the_committed_reference_teachers_are_their_submissions(tmp_path):
    """Each committed reference equals what its reference submission of naive gives now."""
    from bench.submissions import make_reference
    from bench.submissions.limits import REFERENCES

    committed = sorted(REFERENCES.glob("*.json"))
    assert [p.name for p in committed] == ["mini+cap-train800-test200__smol.json", "mini-v2__tiny-lr3e-4.json",
                                           "mini__tiny+early-stop.json", "mini__tiny.json"]
    folders = [REPOSITORY / "submissions" / Path(*p.stem.replace("__", "/").split("/")) / "naive" for p in committed]
    assert make_reference.main([*map(str, folders), "--root", str(tmp_path)]) == 0
    for path in committed:
        assert (tmp_path / path.name).read_bytes() == path.read_bytes(), path.name


# --- 11. bench submit on cells of different test splits ---------------------------------------------------
def test_submit_refuses_cells_of_different_test_splits_naming_the_cell(runs, tmp_path):
    """One cell's scores name another test pair (its numbers recompute, so it is a finished cell): bench
    submit ended in a raw ValueError from bench.core.stats.Board; now a refusal naming the cell."""
    from bench.core.errors import BenchError
    from bench.core.io import csv_gz_bytes, read_csv_gz, sha256_file
    from bench.core.result_schema import SCORE_COLUMNS
    from bench.submissions import submit

    results = tmp_path / "results" / "naive"
    shutil.copytree(runs.results / "mini-test" / "tiny-test" / "naive", results)
    cell = results / "seed0" / "mini__travel"
    rows = read_csv_gz(cell / "scores.csv.gz")
    renamed = next(row for row in rows if row["eval_set"] == "mini/recipes")
    renamed["pair_id"] = "recipes/test/99999"
    (cell / "scores.csv.gz").write_bytes(csv_gz_bytes(SCORE_COLUMNS, [[r[c] for c in SCORE_COLUMNS] for r in rows]))
    edit_json(cell / "result.json", lambda r: r["scores_file"].update(sha256=sha256_file(cell / "scores.csv.gz")))
    with pytest.raises(BenchError) as raised:
        submit([results], tmp_path / "out", "me", protocols=runs.protocols, model_pairs=runs.model_pairs)
    assert "seed 0 mini/travel scores other test pairs of mini/recipes than seed 0 mini/recipes (24 pairs against " \
           "24: 1 of those missing, 1 others): the cells were run on different test splits" in str(raised.value)
    assert not (tmp_path / "out").exists()


# --- 4. a failing cell, in this process as in worker processes --------------------------------------------
BROKEN = '''
import torch
from pydantic import BaseModel, ConfigDict
from typing import Literal
from methods.naive import Naive


class Broken(Naive):
    """
    name: broken
    idea: naive, broken on purpose in one of the ways a method's code breaks
    paper: none
    """

    class Params(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        how: Literal["raise", "nograd", "constant", "vector"] = "raise"

    def fit(self, student, examples, cfg, train):
        if self.params.how == "raise":
            raise ValueError("this method has a bug")
        return super().fit(student, examples, cfg, train)

    def loss(self, step):
        loss, logs = super().loss(step)
        if self.params.how == "nograd":
            return loss.detach(), logs
        if self.params.how == "constant":
            return torch.tensor(1.0), logs
        if self.params.how == "vector":
            return (step.r_a - step.r_b) ** 2, logs
        return loss, logs
'''


@pytest.fixture(scope="module")
def broken_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("broken") / "broken.py"
    path.write_text(BROKEN)
    return path


@pytest.fixture(scope="module")
def shared_cache(session_cache):
    """The session's teacher cache: these tests count no cache entries."""
    return session_cache


def run_broken(how: str, jobs: int, broken_file, registered_small, out: Path, cache: Path, capsys) -> tuple[int, str]:
    from bench.cli import main

    protocol, models = registered_small
    code = main(["run", "--method-file", str(broken_file), "--param", f"how={how}", "--protocol", protocol.name,
                 "--models", models.name, "--out", str(out), "--cache-dir", str(cache), "--jobs", str(jobs)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize("how, message", [
    ("raise", "ValueError: this method has a bug (raised at {file}:"),
    ("nograd", "student mini/recipes s0: the loss(step) of method 'broken' has no gradient, so training would change "
               "nothing"),
    ("constant", "student mini/recipes s0: the loss(step) of method 'broken' has no gradient"),
    ("vector", "student mini/recipes s0: the loss(step) of method 'broken' returned a tensor of shape (16,), not one "
               "number: reduce it over the batch"),
])
def test_a_failing_cell_fails_alone_with_jobs_1(how, message, broken_file, registered_small, shared_cache, tmp_path,
                                                capsys):
    """With --jobs 1 a method that raises in fit, or whose loss has no gradient or is a vector, ended the run
    with a raw traceback and the next cell never ran; now each cell fails alone, as in worker processes."""
    code, err = run_broken(how, 1, broken_file, registered_small, tmp_path, shared_cache, capsys)
    assert code == 1, err
    assert "bench: 2 of 2 cells failed and wrote no result" in err and "Traceback" not in err
    assert f"  mini/recipes seed 0, broken (how={how}): " in err and f"  mini/travel seed 0, broken (how={how}): " in err
    assert message.format(file=broken_file) in err


def test_jobs_1_and_worker_processes_list_the_same_failures(broken_file, registered_small, shared_cache, tmp_path,
                                                            capsys):
    lists = []
    for jobs in (1, 2):
        code, err = run_broken("vector", jobs, broken_file, registered_small, tmp_path / str(jobs), shared_cache, capsys)
        assert code == 1 and "Traceback" not in err, err
        lists.append(sorted(line for line in err.splitlines() if line.startswith("  mini/")))
    assert lists[0] == lists[1] and len(lists[0]) == 2


# --- 6. replacing a folder: a kill at any point loses nothing, and what killed runs left is swept -------------
KILLED_SWAP = '''
import os, signal, sys
from pathlib import Path
from bench.core.io import staged_folder

dest, when = Path(sys.argv[1]), sys.argv[2]
rename = Path.rename


def killing_rename(self, target):
    if when == "swap" and Path(target) == dest:   # the new folder about to take the destination's place
        os.kill(os.getpid(), signal.SIGKILL)
    return rename(self, target)


Path.rename = killing_rename
with staged_folder(dest) as staging:
    (staging / "new.txt").write_text("new")
    if when == "block":
        os.kill(os.getpid(), signal.SIGKILL)
'''


def killed_replacing(dest: Path, when: str) -> None:
    """A process that replaces ``dest`` through bench.core.io.staged_folder (as bench submit, export and labels
    do with --force), SIGKILLed in the swap (``swap``) or while filling the new folder (``block``)."""
    import signal
    import subprocess
    import sys

    child = subprocess.run([sys.executable, "-c", KILLED_SWAP, str(dest), when], capture_output=True, text=True,
                           timeout=120)
    assert child.returncode == -signal.SIGKILL, child.stderr


def hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_kill_while_replacing_a_folder_loses_neither(tmp_path):
    """The old code deleted the old folder before renaming the new one in: a kill in between left
    neither. Now the old one is moved aside first, and the next replacement (or sweep) puts it back."""
    from bench.core.io import staged_folder, sweep_staging

    dest = tmp_path / "naive"
    dest.mkdir()
    (dest / "old.txt").write_text("old")
    killed_replacing(dest, "swap")
    assert not dest.exists()   # killed between the two renames ...
    [aside] = [p for p in tmp_path.iterdir() if p.name.startswith(".naive.old.")]
    assert (aside / "old.txt").read_text() == "old"   # ... the old folder is whole, beside it
    sweep_staging(dest)
    assert (dest / "old.txt").read_text() == "old" and hidden(tmp_path) == []   # put back, the new one's staging gone
    with staged_folder(dest) as staging:   # and replacing it now works as before
        (staging / "new.txt").write_text("new")
    assert [p.name for p in dest.iterdir()] == ["new.txt"] and hidden(tmp_path) == []


def test_what_killed_runs_staged_is_swept_by_the_next_submit(runs, tmp_path):
    """12 of 30 random kills of bench submit --force left a hidden .naive.* staging folder that nothing
    removed; the next bench submit (or export, or labels) of that folder removes them."""
    from bench.submissions import submit

    out = runs.copy_submissions(tmp_path / "subs")
    dest = out / "mini-test" / "tiny-test" / "naive"
    killed_replacing(dest, "block")
    killed_replacing(dest, "block")
    assert len(hidden(dest.parent)) == 1   # the second run swept what the first left; its own is left
    submit([runs.results / "mini-test" / "tiny-test" / "naive"], out, "me", force=True, protocols=runs.protocols,
           model_pairs=runs.model_pairs)
    assert hidden(dest.parent) == [] and check(runs, dest).ok


def test_a_live_runs_staging_is_not_swept(tmp_path):
    from bench.core.io import staged_folder, sweep_staging

    dest = tmp_path / "naive"
    with staged_folder(dest) as staging:
        (staging / "new.txt").write_text("new")
        assert sweep_staging(dest) == [] and staging.is_dir()   # this process is alive: its staging is its work
    assert (dest / "new.txt").read_text() == "new"


# --- 9. read-only destinations of bench submit and bench export --------------------------------------------
def test_read_only_destinations_of_submit_and_export_are_clear_errors():
    """bench submit and bench export into a folder that cannot be written raised a raw PermissionError
    (or OSError: read-only file system); now exit 2 naming the folder. Root ignores permissions, so the
    commands run in a child process that drops to user 65534 (nobody), as test_reliability.py's check."""
    import os
    import subprocess
    import sys
    import tempfile

    source = REPOSITORY / "submissions" / "mini" / "tiny" / "naive"
    if not source.is_dir():
        pytest.skip("no reference submissions")
    work = Path(tempfile.mkdtemp(prefix="shiftbench-read-only-"))   # outside pytest's 0700 tmp, so nobody reaches it
    try:
        as_folders(shutil.copytree(source, work / "naive"))   # a results folder's layout: one folder per cell
        locked = work / "locked"
        locked.mkdir()
        for path in [work, *work.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        locked.chmod(0o555)
        drop = "os.setgid(65534); os.setuid(65534)" if os.geteuid() == 0 else "pass"
        # every harness module (and so what the commands import) imported before dropping: nobody may not read
        # the installed files or the clone's folder; the test is about the destination, not the install
        code = ("import os, sys, importlib, pkgutil, statistics, pandas, bench\n"
                # the store's reader imports pyarrow when it first reads one (bench.core.store)
                "import pyarrow, pyarrow.parquet, pyarrow.compute\n"
                "for m in pkgutil.walk_packages(bench.__path__, 'bench.'):\n"
                "    if not m.name.endswith('__main__') and 'vllm' not in m.name: importlib.import_module(m.name)\n"
                # and the committed reference teacher read before dropping, kept for validation to find
                "import bench.submissions.reference as R\nfrom bench.core.protocols import PROTOCOLS\n"
                "ref = R.committed(PROTOCOLS.get('mini'), 'tiny')\n"
                "R.committed = lambda protocol, models, root=None: ref\n"
                f"from bench.cli import main\n{drop}\nsys.exit(main(sys.argv[1:]))")
        env = {**os.environ, "HOME": str(work), "HF_HUB_OFFLINE": "1"}
        outcomes = {}
        for argv in (["submit", str(work / "naive" / "cells"), "--out", str(locked / "subs"), "--submitter", "me"],
                     ["export", str(work / "naive"), str(locked / "export")]):
            child = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=600,
                                   env=env)
            if "PermissionError: [Errno 1] Operation not permitted" in child.stderr:
                pytest.skip("running as root without the right to switch user: root writes into any folder")
            outcomes[argv[0]] = child.returncode, child.stderr
        assert outcomes["submit"][0] == 2 and (
            f"bench: error: submissions folder (--out) {locked / 'subs' / 'mini' / 'tiny'} cannot be written (Permission "
            "denied); pass a folder you can write to") in outcomes["submit"][1], outcomes["submit"]
        assert outcomes["export"][0] == 2 and (
            f"bench: error: export folder (DEST) {locked} cannot be written (Permission denied); pass a folder you can "
            "write to") in outcomes["export"][1], outcomes["export"]
        assert list(locked.iterdir()) == []
    finally:
        for path in [work, *work.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(work)


# --- 10. a folder where a cell's result.json belongs -------------------------------------------------------
def test_a_folder_where_result_json_belongs_fails_before_any_work(registered_small, tmp_path, monkeypatch, capsys):
    """It was found only when the trained cell was written, and every rerun trained it again."""
    from bench.cli import main
    from bench.stages import pipeline

    protocol, models = registered_small
    monkeypatch.setattr(pipeline, "run_cell", lambda *a, **k: pytest.fail("a cell started before the check"))
    blocker = tmp_path / "out" / protocol.name / models.name / "naive" / "seed0" / "mini__travel" / "result.json"
    blocker.mkdir(parents=True)
    assert main(["run", "--method", "naive", "--protocol", protocol.name, "--models", models.name, "--jobs", "1",
                 "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]) == 2
    assert (f"bench: error: the result.json of mini/travel seed 0 {blocker} cannot be written: it is a folder where a "
            f"file belongs. Move or delete {blocker} and rerun") in capsys.readouterr().err


# --- 8. a disk that fills while the teacher's cache entry is written -------------------------------------------
FULL_DISK_RUN = '''
import dataclasses, sys
import bench.stages.preflight
from bench.core.protocols import MODEL_PAIRS, PROTOCOLS

# The cache's disk has room at the start (the floor check passes) and fills while the teacher is written.
bench.stages.preflight.check_free_space = lambda folder, what, minimum=0: None
tiny = MODEL_PAIRS.get("tiny")
PROTOCOLS.register("mini-full", dataclasses.replace(
    PROTOCOLS.get("mini"), name="mini-full", categories=(("helpful", ("mini/recipes", "mini/travel")),),
    train_pool_size=48, test_size=24, seeds=(0,)))
MODEL_PAIRS.register("tiny-full", dataclasses.replace(
    tiny, name="tiny-full", strong=dataclasses.replace(tiny.strong, num_layers=2),
    teacher_train=dataclasses.replace(tiny.teacher_train, epochs=1),
    student_train=dataclasses.replace(tiny.student_train, epochs=1)))
from bench.cli import main
sys.exit(main(["run", "--method", "naive", "--protocol", "mini-full", "--models", "tiny-full", "--source", "recipes",
               "--jobs", "1", "--out", sys.argv[1], "--cache-dir", sys.argv[2]]))
'''


def test_a_disk_that_fills_during_the_teacher_cache_write_stops_the_run_clearly(tmp_path):
    """The cache on a real 16 MB tmpfs, mounted in a private mount namespace (``unshare``): the teacher's
    53 MB entry does not fit, and safetensors raises its own error type (SafetensorError: "I/O error: No
    space left on device (os error 28)"), which ended the run with a raw traceback and exit 1."""
    import subprocess
    import sys

    cache, out = tmp_path / "cache", tmp_path / "out"
    cache.mkdir()
    script = tmp_path / "full_disk_run.py"
    script.write_text(FULL_DISK_RUN)
    shell = f'mount -t tmpfs -o size=16m tmpfs "{cache}" && exec "{sys.executable}" "{script}" "{out}" "{cache}"'
    child = None
    for prefix in (["unshare", "-m"], ["unshare", "-rm"]):   # as root; else in a user namespace of one's own
        try:
            child = subprocess.run([*prefix, "sh", "-c", shell], capture_output=True, text=True, timeout=600)
        except FileNotFoundError:   # no unshare command
            break
        if not child.stderr.startswith(("unshare:", "mount:")):
            break
    if child is None or child.stderr.startswith(("unshare:", "mount:")):
        pytest.skip(f"cannot mount a small tmpfs here: {child.stderr[:200] if child else 'no unshare command'}")
    assert child.returncode == 2, child.stderr[-3000:]
    assert "Traceback" not in child.stderr
    assert (f"bench: error: mini/recipes seed 0 stopped: No space left on device ({cache}/teacher/") in child.stderr
    assert (f"while writing the results folder {out} or the teacher cache {cache}. Free space there (or make it "
            "writable) and rerun: finished cells are kept") in child.stderr


def test_a_cache_entry_a_killed_run_was_staging_is_swept_when_it_is_stored(tmp_path):
    """docs/reliability.md's "not covered": a SIGKILL inside a cache write left CACHE/teacher/.KEY.* for good."""
    import socket
    import subprocess
    import sys

    from bench.core.cache import Cache

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    cache, key = Cache(tmp_path), "k" * 24
    left = tmp_path / "teacher" / f".{key}.new.{int(gone.stdout)}@{socket.gethostname()}.abcd1234"
    (left / "model").mkdir(parents=True)
    cache.store("teacher", key, {}, lambda folder: (folder / "info.json").write_text("{}"), required=("info.json",))
    assert sorted(p.name for p in (tmp_path / "teacher").iterdir()) == [key]


# --- 5. a 50 MB row in --data-dir -----------------------------------------------------------------------------
def test_a_row_over_the_size_limit_is_dropped_and_counted_before_it_is_tokenized(tmp_path):
    """A 50 MB row made a run take minutes and gigabytes: the tokenizer reads the whole text before the
    sequence is cut to the protocol's length. A row over MAX_ROW_CHARS is now dropped as it is read,
    counted in the split's provenance; the other rows keep their ids."""
    from bench.core.data import load_pairs
    from bench.core.protocols import DATASETS
    from bench.datasets import loading

    def row(question: str, answer: str) -> str:
        prompt = f"\n\nHuman: {question}\n\nAssistant:"
        return json.dumps({"chosen": f"{prompt} {answer}", "rejected": f"{prompt} No."}) + "\n"

    (tmp_path / "hh-helpful").mkdir()
    huge = "word " * (loading.MAX_ROW_CHARS // 5 + 1)
    (tmp_path / "hh-helpful" / "test.jsonl").write_text(row("Hi?", "Hello.") + row("Big?", huge) + row("Bye?", "Bye."))
    loaded = load_pairs(DATASETS.get("w2s/hh-helpful"), "test", None, tmp_path)
    assert [p.id for p in loaded.pairs] == ["w2s/hh-helpful/test/0", "w2s/hh-helpful/test/2"]
    assert loaded.provenance["dropped"] == {"too long: more than 200,000 characters of text": 1}
    assert loaded.provenance["rows_read"] == 3 and loaded.provenance["kept"] == 2


# --- 7. the offline data dir's train/test split of the real hh-rlhf rows -------------------------------------
REALDATA = REPOSITORY.parent / "shared" / "realdata"


@pytest.mark.skipif(not REALDATA.is_dir(), reason=f"realdata samples not found at {REALDATA}")
def test_no_test_prompt_of_the_real_rows_opens_a_train_conversation(tmp_path):
    """Split by a hash of each line, 40 harmless and 33 helpful test rows shared their opening turns with a
    train conversation (w2s/hh-harmless/test/516, "call me a bad name"); split by the opening user turn,
    none does, and every real row is still on one side."""
    from bench.core.data import load_pairs
    from bench.core.protocols import DATASETS
    from bench.datasets.offline_dir import build

    build(tmp_path, REALDATA, rows=8)
    for name in ("hh-helpful", "hh-harmless"):
        spec = DATASETS.get(f"w2s/{name}")
        train, test = (load_pairs(spec, split, None, tmp_path) for split in ("train", "test"))
        def opening(pair):
            return " ".join(pair.prompt[0][1].casefold().split())
        shared = {opening(p) for p in test.pairs} & {opening(p) for p in train.pairs}
        assert not shared, (name, sorted(shared)[:5])
        assert not {p.prompt_key for p in test.pairs} & {p.prompt_key for p in train.pairs}
        assert 0.5 < len(train.pairs) / (len(train.pairs) + len(test.pairs)) < 0.7   # still about 60 / 40
    helpful = [load_pairs(DATASETS.get("w2s/hh-helpful"), s, None, tmp_path).provenance for s in ("train", "test")]
    assert sum(p["rows_read"] for p in helpful) == 2354   # every real row, on one side


# --- 3. what a method trains on, its source, and no machine path -------------------------------------------
CHEAT = '''
from methods.naive import Naive


class Cheat(Naive):
    """
    name: cheat
    idea: naive, trained on the source's test split with its gold labels
    paper: none
    """

    def fit(self, student, examples, cfg, train):
        from bench.core.data import load_pairs
        from bench.stages.models import formatter_for, load_tokenizer
        from bench.core.protocols import DATASETS, MODEL_PAIRS
        from bench.stages.train import TrainExample

        spec, strong = DATASETS.get("mini/recipes"), MODEL_PAIRS.get("tiny").strong
        encode = formatter_for(strong, load_tokenizer(strong), 512).encode
        test = load_pairs(spec, spec.test_split, 24).pairs
        gold = [TrainExample(encode(p.prompt, p.chosen), encode(p.prompt, p.rejected), 1.0) for p in test]
        return train(student, examples + gold, cfg)
'''

HONEST = '''
from methods.naive import Naive


class Honest(Naive):
    """
    name: honest-file
    idea: naive, from a method file
    paper: none
    """
'''


def test_a_method_that_trains_on_the_test_split_fails_its_cells(registered_small, shared_cache, tmp_path, capsys):
    """It trained on the test split's gold labels and got NTS +33.3; the training loop now checks that every
    pair a method trains on is one of its half B."""
    from bench.cli import main

    protocol, models = registered_small
    (tmp_path / "cheat.py").write_text(CHEAT)
    assert main(["run", "--method-file", str(tmp_path / "cheat.py"), "--protocol", protocol.name, "--models",
                 models.name, "--out", str(tmp_path / "out"), "--cache-dir", str(shared_cache), "--jobs", "1"]) == 1
    err = capsys.readouterr().err
    assert ("  mini/recipes seed 0, cheat (no params): student mini/recipes s0: method 'cheat' trains on 24 of 47 pairs "
            "that are not its half B, the pairs fit() was given") in err and "2 of 2 cells failed" in err
    assert not list((tmp_path / "out").rglob("result.json"))


@pytest.fixture(scope="module")
def file_method(tmp_path_factory, small_protocol, small_models):
    """A method from a method file, run on the small protocol and submitted."""
    from bench.core.settings import RunSettings
    from bench.stages import pipeline
    from bench.submissions import submit
    from methods import load_method_file

    work = tmp_path_factory.mktemp("file_method")
    (work / "honest.py").write_text(HONEST)
    load_method_file(work / "honest.py")
    results = pipeline.run(RunSettings(small_protocol, small_models, "honest-file", {}, list(small_protocol.datasets),
                                       [0], work / "results", work / "cache", method_file=work / "honest.py"))
    [folder] = submit([work / "results"], work / "subs", "me", protocols={small_protocol.name: small_protocol},
                      model_pairs={small_models.name: small_models})
    return work, results, folder


def strings_of(value):
    if isinstance(value, str):
        yield value
    for item in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
        yield from strings_of(item)


def test_a_method_file_s_source_goes_with_its_submission_and_no_path_does(runs, file_method):
    from bench.submissions.limits import LOCAL_PATH_RE

    work, results, folder = file_method
    for result in results:
        assert result.method.origin["file"] == "honest.py"   # was its absolute path
        assert result.student["trained_on"] == {
            "check": "every pair a run of the training loop trained on is one of the student's half-B pairs (by its "
                     "token ids)", "loop_runs": 1, "pairs": result.sizes["half_b"], "of": result.sizes["half_b"]}
        assert not [text for text in strings_of(result.to_json()) if LOCAL_PATH_RE.match(text)]
    assert (folder / "method_source.py").read_text() == HONEST
    v = check(runs, folder)
    assert v.ok, errors(v)
    from bench.core.store import load_store

    store = load_store(folder)   # bench submit keeps the cells' result.json in its store
    texts = [path.read_text() for path in folder.rglob("*.json")] + [store.cell(i).result.decode()
                                                                     for i in range(len(store.paths))]
    assert len(texts) > 1 and not [text for text in texts if str(work) in text]   # no folder of this machine


def test_a_method_file_s_submission_without_its_source_or_with_another_is_refused(runs, file_method, tmp_path):
    from leaderboard import core

    _, _, folder = file_method
    missing = Path(shutil.copytree(folder, tmp_path / "missing"))
    (missing / "method_source.py").unlink()
    assert ("method_source.py: is missing: the method is not built in (its origin: file), and a submission of such a "
            "method carries its source for a reviewer to read") in errors(check(runs, missing))
    other = Path(shutil.copytree(folder, tmp_path / "other"))
    (other / "method_source.py").write_text(HONEST + "\n# and something else\n")
    assert ("cells/seed0/mini__recipes/result.json: method.origin.sha256: is not the sha256 of the submission's "
            "method_source.py: the cell ran other code than the source the submission carries") in errors(check(runs, other))
    board = core.Board(folder.parent, [check(runs, folder)])
    assert set(board.cells["status"]) == {"validated; method from a method file, not built in: its source is in the "
                                          "submission (method_source.py)"}


def test_a_machine_path_in_a_submission_is_refused(runs, naive):
    edit_json(first_cell(naive) / "result.json", lambda r: r["method"]["origin"].update(file="/home/me/cheat.py"))
    reseal(naive)
    assert ("cells/seed0/mini__recipes/result.json: method.origin.file: holds the local path '/home/me/cheat.py': a "
            "submission records no folder of the machine it was made on") in errors(check(runs, naive))


# --- also: params a float cannot hold, seeds written other ways, bench evaluate's NaN message ----------------
@pytest.mark.parametrize("method, param, message", [
    ("anchor", "lam=1e-400", "lam: 1e-400 is too small for a float: it would be 0.0, which turns the method into "
                             "another. Give 0, or a number of at least 5e-324"),
    ("gce", "exponent=nan", "exponent: must be a finite number, got 'nan'"),
    ("anchor", "lam=inf", "lam: must be a finite number, got 'inf'"),
    ("anchor", "lam=1e400", "lam: 1e400 is too large for a float (it would be infinite); give a finite number"),
])
def test_a_float_param_that_a_float_cannot_hold_is_refused(method, param, message, capsys):
    """lam=1e-400 silently underflowed to 0.0 (naive), and exponent=nan was refused as "should be <= 1"."""
    from bench.cli import main

    assert main(["run", "--method", method, "--param", param]) == 2
    assert f"bench: error: bad params for method {method!r}: {message}. Valid params:" in capsys.readouterr().err


def test_tiny_and_zero_floats_still_parse():
    from methods import make_method

    assert make_method("anchor", {"lam": "0"}).params.lam == 0.0
    assert make_method("anchor", {"lam": "0.0e-7"}).params.lam == 0.0
    assert make_method("anchor", {"lam": "1e-310"}).params.lam == 1e-310   # a subnormal float is still a float


@pytest.mark.parametrize("seed, message", [
    ("+1", "invalid int value: '+1' (--seeds takes whole numbers written with the digits 0-9, without a sign"),
    ("1_0", "invalid int value: '1_0'"),
    ("\u0663", "invalid int value: '\u0663'"),   # ARABIC-INDIC DIGIT THREE, which int() reads as 3
    ("-0", "seed -0 is out of range: a seed is a whole number from 0 to 2147483647"),
])
def test_a_seed_is_plain_digits(seed, message, capsys):
    from bench.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["run", "--method", "naive", "--seeds", seed])
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_bench_evaluate_s_nan_message_is_about_the_checkpoint(registered_small, shared_cache, tmp_path):
    """It talked about training and finish(), which do not apply to a checkpoint trained elsewhere."""
    import dataclasses

    import torch

    from bench.core.errors import NonFiniteScoresError
    from bench.core.settings import RunSettings
    from bench.stages.evaluate import evaluate
    from bench.stages.labels import export_labels
    from bench.stages.models import load_reward_model, load_tokenizer
    from methods.api import head_parameter_names

    protocol, models = registered_small
    settings = RunSettings(protocol, models, "naive", sources=["mini/recipes"], seeds=[0], out=tmp_path / "labels",
                           cache_dir=shared_cache)
    export_labels(settings)
    broken = load_reward_model(models.strong, seed=0)
    with torch.no_grad():
        for name, weight in broken.named_parameters():
            if name in head_parameter_names(broken):
                weight.fill_(float("nan"))
    broken.save_pretrained(tmp_path / "nan")
    load_tokenizer(models.strong).save_pretrained(tmp_path / "nan")
    with pytest.raises(NonFiniteScoresError) as raised:
        evaluate(dataclasses.replace(settings, method="byo", out=tmp_path / "results"), str(tmp_path / "nan"),
                 labels=tmp_path / "labels")
    assert (f"checkpoint {tmp_path / 'nan'} gave 48 non-finite scores (NaN or infinite) on eval set mini/recipes "
            "(mini/recipes seed 0): the checkpoint's weights are broken (NaN or infinite somewhere). Check it where it "
            "was trained (load it and score a pair), save or export it again, then rerun bench evaluate; nothing was "
            "written for it") == str(raised.value)
    assert "finish()" not in str(raised.value) and not list((tmp_path / "results").rglob("result.json"))


def test_the_round_three_table_names_tests_of_this_file():
    """docs/reliability.md's round-three table points at the tests here: each it names exists."""
    import re

    doc = (REPOSITORY / "docs" / "reliability.md").read_text()
    table = doc[doc.index("## Round three"):doc.index("## Round four")]
    named = set(re.findall(r"`::(test_\w+)`", table))
    defined = set(re.findall(r"^def (test_\w+)", Path(__file__).read_text(), flags=re.M))
    assert len(named) >= 20 and named <= defined, sorted(named - defined)
