"""Nothing lost, nothing trusted (docs/reliability.md lists every case and what the harness did).

Faults: a run killed with SIGKILL mid-training or between its two result files resumes to the bytes
of an uninterrupted run; damaged cache entries and results are detected and rebuilt or reported,
never used; a diverging cell fails alone; a folder that cannot be written, or a full disk, fails
before any work. Determinism: the same seed gives the same bytes, the evaluation batch size does
not change a pair's outcome, and every result records its seeds. Bad input fails fast.
All on the shrunken protocol of conftest.py, one seed.
"""
from __future__ import annotations

import errno
import json
import os
import pickle
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.cli import main
from bench.core.cache import MANIFEST, Cache
from bench.core.data import sub_seed
from bench.core.errors import BenchError, CellsFailedError
from bench.core.io import sha256_file
from bench.core.result_schema import RESULT_FILE, SCORES_FILE
from bench.core.results import cell_dir, load_cell
from bench.core.settings import RunSettings
from bench.stages import pipeline

SEED = 0


def cell(out: Path, protocol, models, source: str, slug: str = "naive") -> Path:
    return cell_dir(out, protocol.name, models.name, slug, SEED, source)


def scores_bytes(out: Path, protocol, models, slug: str = "naive") -> dict[str, bytes]:
    return {source: (cell(out, protocol, models, source, slug) / SCORES_FILE).read_bytes() for source in protocol.datasets}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory, small_protocol, small_models):
    """An uninterrupted naive run on both sources: the numbers every resumed or rebuilt run must equal.
    Its teacher cache is shared, read-only, by the tests that do not damage it."""
    out, cache = tmp_path_factory.mktemp("baseline"), tmp_path_factory.mktemp("baseline_cache")
    results = pipeline.run(RunSettings(small_protocol, small_models, "naive", {}, list(small_protocol.datasets), [SEED], out, cache))
    return out, cache, results


# --- SIGKILL ----------------------------------------------------------------------------------------
# The launcher registers the test protocol and model pair (pickled from the fixtures, so they are the
# same specs) and runs the CLI. With KILL_BEFORE_RESULT_OF=<source> it SIGKILLs itself after that
# cell's scores file is written and before its result.json: a kill in the narrowest window there is.
# The hook lives in this launcher only; the harness has none.
LAUNCHER = '''
import os, pickle, signal, sys
from bench.core.protocols import MODEL_PAIRS, PROTOCOLS
protocol, models = pickle.loads(open(sys.argv[1], "rb").read())
PROTOCOLS.register(protocol.name, protocol)
MODEL_PAIRS.register(models.name, models)
victim = os.environ.get("KILL_BEFORE_RESULT_OF")
if victim:
    import bench.core.results
    write_json = bench.core.results.atomic_write_json
    def write_or_die(path, obj):
        if path.name == "result.json" and obj.get("source") == victim:
            os.kill(os.getpid(), signal.SIGKILL)
        write_json(path, obj)
    bench.core.results.atomic_write_json = write_or_die
from bench.cli import main
sys.exit(main(sys.argv[2:]))
'''


class Launcher:
    def __init__(self, folder: Path, protocol, models, out: Path, cache: Path):
        self.folder, self.out, self.cache, self.runs = folder, out, cache, 0
        self.specs = folder / "specs.pickle"
        self.specs.write_bytes(pickle.dumps((protocol, models)))
        (folder / "launcher.py").write_text(LAUNCHER)
        self.argv = ["run", "--method", "naive", "--protocol", protocol.name, "--models", models.name,
                     "--seeds", str(SEED), "--out", str(out), "--cache-dir", str(cache)]

    def start(self, **env: str) -> tuple[subprocess.Popen, Path]:
        self.runs += 1
        log = self.folder / f"run{self.runs}.stderr"
        with log.open("w") as stderr:   # the child keeps its own copy of the handle
            process = subprocess.Popen([sys.executable, str(self.folder / "launcher.py"), str(self.specs), *self.argv],
                                       cwd=self.folder, stdout=subprocess.DEVNULL, stderr=stderr,
                                       env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", **env})
        return process, log

    def run(self, **env: str) -> tuple[int, str]:
        process, log = self.start(**env)
        return process.wait(timeout=300), log.read_text()

    def kill_when(self, marker: str) -> tuple[int, str]:
        """SIGKILL the run from outside as soon as ``marker`` shows in its stderr (a progress bar's name)."""
        process, log = self.start()
        deadline = time.monotonic() + 300
        while marker not in log.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                pytest.fail(f"the run ended before {marker!r} showed:\n{log.read_text()[-3000:]}")
            time.sleep(0.02)
        process.send_signal(signal.SIGKILL)
        return process.wait(timeout=60), log.read_text()


@pytest.fixture(scope="module")
def killed_twice(tmp_path_factory, small_protocol, small_models, baseline):
    """One results folder through two kills and a resume, with what each step left on disk:
    1. killed from outside while the second cell's student trains;
    2. rerun, and killed between the second cell's scores file and its result.json;
    3. rerun to the end."""
    _, cache, _ = baseline
    folder = tmp_path_factory.mktemp("killed")
    launcher = Launcher(folder, small_protocol, small_models, folder / "results", cache)
    first, second = small_protocol.datasets
    first_cell, second_cell = (cell(launcher.out, small_protocol, small_models, s) for s in (first, second))
    steps = {}

    code, log = launcher.kill_when(f"student {second} s{SEED}")
    steps["training"] = {"code": code, "log": log, "first_result": (first_cell / RESULT_FILE).read_bytes(),
                         "second_files": sorted(p.name for p in second_cell.glob("*")) if second_cell.exists() else []}

    code, log = launcher.run(KILL_BEFORE_RESULT_OF=second)
    verify_code = main(["verify", "--out", str(launcher.out)])
    steps["writing"] = {"code": code, "log": log, "second_files": sorted(p.name for p in second_cell.glob("*")),
                        "second_loads": load_cell(second_cell), "verify_code": verify_code}

    code, log = launcher.run()
    steps["resumed"] = {"code": code, "log": log, "first_result": (first_cell / RESULT_FILE).read_bytes(),
                        "verify_code": main(["verify", "--out", str(launcher.out)])}
    return launcher.out, steps


def test_sigkill_during_student_training_loses_only_that_cell(killed_twice, baseline, small_protocol, small_models):
    out, steps = killed_twice
    first, second = small_protocol.datasets
    killed = steps["training"]
    assert killed["code"] == -signal.SIGKILL
    before, during = killed["log"].split(f"student {second} s{SEED}", 1)
    assert "scoring student" in before and "scoring student" not in during   # killed in the second cell's training
    assert killed["second_files"] == []                                        # which wrote nothing
    # the reruns skip the finished cell: its result is the very file the killed run wrote
    assert f"[skip] {first} seed {SEED}" in steps["writing"]["log"]
    assert f"[skip] {first} seed {SEED}" in steps["resumed"]["log"]
    assert steps["resumed"]["first_result"] == killed["first_result"]
    assert steps["resumed"]["code"] == 0 and steps["resumed"]["verify_code"] == 0
    assert scores_bytes(out, small_protocol, small_models) == scores_bytes(baseline[0], small_protocol, small_models)
    for result in (load_cell(cell(out, small_protocol, small_models, s)) for s in (first, second)):
        expected = next(r for r in baseline[2] if r.source == result.source)
        assert result.cell_key == expected.cell_key and result.metrics == expected.metrics


def test_sigkill_between_scores_and_result_json_is_redone(killed_twice, baseline, small_protocol, small_models):
    out, steps = killed_twice
    second = small_protocol.datasets[1]
    killed = steps["writing"]
    assert killed["code"] == -signal.SIGKILL
    assert killed["second_files"] == [SCORES_FILE]   # cut off after the scores, before result.json
    assert killed["second_loads"] is None            # so the cell is not finished ...
    assert killed["verify_code"] == 1                # ... and bench verify says so
    assert f"[skip] {second}" not in steps["resumed"]["log"]  # the resume recomputed it
    assert (cell(out, small_protocol, small_models, second) / SCORES_FILE).read_bytes() == \
        scores_bytes(baseline[0], small_protocol, small_models)[second]


# --- damaged cache entries and results ---------------------------------------------------------------
def flip_byte(path: Path, offset: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if offset is None else offset
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))


def teacher_entries(cache: Path) -> dict[str, Path]:
    """Source -> its teacher cache entry."""
    entries = {}
    for manifest in (cache / "teacher").glob(f"*/{MANIFEST}"):
        entries[json.loads(manifest.read_text())["inputs"]["source"]] = manifest.parent
    return entries


def weights_file(entry: Path) -> Path:
    return next(p for p in (entry / "model").iterdir() if p.suffix in (".safetensors", ".bin"))


@pytest.mark.parametrize("damage, reported", [
    (lambda e: flip_byte(e / "labels.csv.gz"), "checksum mismatch in labels.csv.gz"),
    (lambda e: flip_byte(e / "scores.csv.gz", offset=-1), "checksum mismatch in scores.csv.gz"),
    (lambda e: (e / "info.json").write_text((e / "info.json").read_text()[:20]), "checksum mismatch in info.json"),
    (lambda e: (e / "model" / "config.json").unlink(), "missing file model/config.json"),
    (lambda e: (e / MANIFEST).write_text((e / MANIFEST).read_text()[:-40]), "unreadable manifest"),
], ids=["labels-flipped-byte", "scores-flipped-byte", "info-truncated", "config-deleted", "manifest-truncated"])
def test_damaged_teacher_entry_is_detected_never_used(damage, reported, baseline, tmp_path, capsys):
    _, cache, _ = baseline
    entry = next(iter(teacher_entries(cache).values()))
    copy = tmp_path / "teacher" / entry.name
    shutil.copytree(entry, copy)
    assert Cache(tmp_path).load("teacher", entry.name) == copy   # intact: used
    damage(copy)
    assert Cache(tmp_path).load("teacher", entry.name) is None   # damaged: not used, and removed
    assert not copy.exists()
    err = capsys.readouterr().err
    assert f"[cache] teacher/{entry.name} is invalid ({reported}" in err and "); rebuilding it" in err


def test_damaged_teacher_weights_are_rebuilt_to_the_same_numbers(baseline, tmp_path, small_protocol, small_models, capsys):
    base_out, cache, base_results = baseline
    source = small_protocol.datasets[1]
    shutil.copytree(cache, tmp_path / "cache")
    entry = teacher_entries(tmp_path / "cache")[source]
    flip_byte(weights_file(entry))
    [result] = pipeline.run(RunSettings(small_protocol, small_models, "naive", {}, [source], [SEED], tmp_path / "out", tmp_path / "cache"))
    err = capsys.readouterr().err
    assert f"[cache] teacher/{entry.name} is invalid (checksum mismatch in model/{weights_file(entry).name})" in err
    assert result.teacher["reused"] is False   # rebuilt, not read
    assert (cell(tmp_path / "out", small_protocol, small_models, source) / SCORES_FILE).read_bytes() == \
        scores_bytes(base_out, small_protocol, small_models)[source]
    assert Cache(tmp_path / "cache").load("teacher", entry.name) is not None   # and the rebuilt entry is sound


def test_damaged_results_are_reported_by_verify_and_recomputed(baseline, tmp_path, small_protocol, small_models, capsys):
    base_out, cache, _ = baseline
    first, second = small_protocol.datasets
    out = tmp_path / "results"
    shutil.copytree(base_out, out)
    truncated, flipped = (cell(out, small_protocol, small_models, s) for s in (first, second))
    (truncated / RESULT_FILE).write_text((truncated / RESULT_FILE).read_text()[:100])
    flip_byte(flipped / SCORES_FILE)
    assert load_cell(truncated) is None and load_cell(flipped) is None
    capsys.readouterr()
    assert main(["verify", "--out", str(out)]) == 1
    report = capsys.readouterr().out
    assert f"FAIL {truncated}\n     incomplete" in report and f"FAIL {flipped}\n     incomplete" in report
    assert "0 of 2 cells recompute exactly" in report
    pipeline.run(RunSettings(small_protocol, small_models, "naive", {}, list(small_protocol.datasets), [SEED], out, cache))
    assert "[skip]" not in capsys.readouterr().err   # both recomputed, neither trusted
    assert scores_bytes(out, small_protocol, small_models) == scores_bytes(base_out, small_protocol, small_models)
    assert main(["verify", "--out", str(out)]) == 0


# --- a diverging cell ---------------------------------------------------------------------------------
DIVERGING = '''
from pydantic import BaseModel, ConfigDict
from methods.naive import Naive


class NanOnFirstCell(Naive):
    """
    name: nan-first-cell
    idea: naive, whose loss is NaN in the first cell it trains (with blowup=true): a divergence test
    paper: none
    """

    class Params(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        blowup: bool = True

    def __init__(self, params=None):
        super().__init__(params)
        self.cells_trained = 0

    def fit(self, student, examples, cfg, train):
        self.cells_trained += 1
        return super().fit(student, examples, cfg, train)

    def loss(self, step):
        loss, logs = super().loss(step)
        if self.params.blowup and self.cells_trained == 1:
            loss = loss * float("nan")
        return loss, logs
'''


@pytest.fixture(scope="module")
def diverging_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("methods") / "nan_first_cell.py"
    path.write_text(DIVERGING)
    return path


def test_diverging_cell_fails_alone_and_the_run_goes_on(diverging_file, registered_small, baseline, tmp_path, capsys):
    protocol, models = registered_small
    first, second = protocol.datasets
    argv = ["run", "--method-file", str(diverging_file), "--protocol", protocol.name, "--models", models.name,
            "--out", str(tmp_path), "--cache-dir", str(baseline[1])]
    assert main(argv) == 1
    err = capsys.readouterr().err
    lr = models.student_train.learning_rate
    assert (f"bench: 1 of 2 cells failed and wrote no result; the finished ones (1) are in {tmp_path}" in err)
    assert (f"  {first} seed {SEED}, nan-first-cell (blowup=True): student {first} s{SEED}: loss became nan at step 1 "
            f"of 2. Lower the learning rate (now {lr}) or the method's weights, or check the labels.") in err
    slug = "nan-first-cell_blowup=True"
    assert not (cell(tmp_path, protocol, models, first, slug) / RESULT_FILE).exists()
    assert load_cell(cell(tmp_path, protocol, models, second, slug)).source == second
    # a rerun keeps the finished cell and retries the failed one (which, on these settings, fails again)
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"[skip] {second} seed {SEED}" in err and f"[failed] {first} seed {SEED}" in err


def test_sweep_goes_on_past_a_diverging_point(diverging_file, registered_small, baseline, tmp_path, capsys):
    protocol, models = registered_small
    source = protocol.datasets[0]
    argv = ["sweep", "--method-file", str(diverging_file), "--grid", "blowup=true,false", "--source", source,
            "--protocol", protocol.name, "--models", models.name, "--out", str(tmp_path), "--cache-dir", str(baseline[1])]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "1 of 2 cells failed" in err and f"{source} seed {SEED}, nan-first-cell (blowup=True): student" in err
    assert load_cell(cell(tmp_path, protocol, models, source, "nan-first-cell_blowup=False")) is not None


NAN_HEAD = '''
import torch
from methods.api import head_parameter_names
from methods.naive import Naive


class NanHead(Naive):
    """
    name: nan-head
    idea: naive, whose finish() leaves the head's weights NaN: the loss stays finite, every score is NaN
    paper: none
    """

    def finish(self, student):
        head = head_parameter_names(student)
        with torch.no_grad():
            for name, p in student.named_parameters():
                if name in head:
                    p.fill_(float("nan"))
'''


def test_a_non_finite_score_fails_its_cell_naming_model_and_eval_set(registered_small, baseline, tmp_path, capsys):
    protocol, models = registered_small
    method_file = tmp_path / "nan_head.py"
    method_file.write_text(NAN_HEAD)
    out = tmp_path / "out"
    argv = ["run", "--method-file", str(method_file), "--protocol", protocol.name, "--models", models.name,
            "--source", protocol.datasets[0], "--out", str(out), "--cache-dir", str(baseline[1])]
    assert main(argv) == 1   # before: student accuracy 0.0 (NaN counted as a wrong pair), exit 0
    err = capsys.readouterr().err
    assert f"student {models.strong.name} gave" in err and "non-finite scores (NaN or infinite) on eval set" in err
    assert "rerun the cell" in err and "1 of 1 cells failed and wrote no result" in err
    assert not list(out.rglob(RESULT_FILE))


def test_verify_reports_a_non_finite_score(baseline, tmp_path, small_protocol, small_models, capsys):
    import gzip

    out = tmp_path / "results"
    shutil.copytree(baseline[0], out)
    folder = cell(out, small_protocol, small_models, small_protocol.datasets[0])
    lines = gzip.decompress((folder / SCORES_FILE).read_bytes()).decode().splitlines()
    row = lines[1].split(",")
    row[4] = "nan"   # one student score
    lines[1] = ",".join(row)
    (folder / SCORES_FILE).write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    result = json.loads((folder / RESULT_FILE).read_text())   # resealed: only the NaN is wrong
    result["scores_file"]["sha256"] = sha256_file(folder / SCORES_FILE)
    (folder / RESULT_FILE).write_text(json.dumps(result))
    capsys.readouterr()
    assert main(["verify", "--out", str(out)]) == 1   # before: verify passed it
    report = capsys.readouterr().out
    assert f"FAIL {folder}" in report and "student_chosen = nan, not a finite score" in report


def test_divergence_in_run_is_collected_not_raised_mid_loop(small_protocol, small_models, baseline, tmp_path, monkeypatch):
    """run() itself: the failures come out after the loop as one CellsFailedError holding the finished cells."""
    from bench.core.errors import TrainingDivergedError

    first, second = small_protocol.datasets
    done = next(r for r in baseline[2] if r.source == second)

    def run_cell(ctx, source, seed):
        if source == first:
            raise TrainingDivergedError("student: loss became inf at step 1 of 2. Lower the learning rate")
        return done

    monkeypatch.setattr(pipeline, "run_cell", run_cell)
    with pytest.raises(CellsFailedError) as failed:
        pipeline.run(RunSettings(small_protocol, small_models, "naive", {}, [first, second], [SEED], tmp_path, baseline[1]))
    assert failed.value.finished == [done]
    assert failed.value.failures == [f"{first} seed {SEED}, naive (no params): student: loss became inf at step 1 of 2. "
                                     f"Lower the learning rate"]


# --- folders that cannot take the results ---------------------------------------------------------------
def no_work(monkeypatch):
    monkeypatch.setattr(pipeline, "run_cell", lambda *a, **k: pytest.fail("a cell started before the folder check"))


@pytest.mark.parametrize("flag", ["--out", "--cache-dir"])
def test_folder_that_cannot_be_created_fails_before_any_work(flag, registered_small, tmp_path, monkeypatch, capsys):
    protocol, models = registered_small
    no_work(monkeypatch)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    folders = {"--out": tmp_path / "out", "--cache-dir": tmp_path / "cache", flag: blocker / "sub"}
    argv = ["run", "--method", "naive", "--protocol", protocol.name, "--models", models.name,
            "--out", str(folders["--out"]), "--cache-dir", str(folders["--cache-dir"])]
    assert main(argv) == 2
    what = {"--out": "results folder (--out)", "--cache-dir": "teacher cache (--cache-dir)"}[flag]
    assert f"bench: error: {what} {blocker / 'sub'} cannot be created (Not a directory); pass a folder you can write to" \
        in capsys.readouterr().err


def test_read_only_folder_fails_before_any_work():
    """A folder without write permission. Root ignores permissions, so as root the check runs in a child
    process that drops to the unprivileged user 65534 (nobody) once bench is imported."""
    folder = Path(tempfile.mkdtemp(prefix="shiftbench-read-only-"))   # outside pytest's 0700 tmp, so nobody can reach it
    try:
        folder.chmod(0o555)
        drop = "os.setgid(65534); os.setuid(65534)" if os.geteuid() == 0 else "pass"
        code = ("import os, sys; from pathlib import Path; from bench.stages.preflight import preflight\n"
                f"{drop}\npreflight({{'results folder (--out)': Path(sys.argv[1])}})")
        child = subprocess.run([sys.executable, "-c", code, str(folder)], capture_output=True, text=True, timeout=120)
        if "PermissionError: [Errno 1] Operation not permitted" in child.stderr:
            pytest.skip("running as root without the right to switch user: root writes into any folder")
        assert child.returncode == 1, child.stderr
        assert (f"BenchError: results folder (--out) {folder} is not writable (Permission denied); "
                f"fix its permissions or pass another folder") in child.stderr
        assert list(folder.iterdir()) == []   # the probe left nothing
    finally:
        folder.chmod(0o755)
        shutil.rmtree(folder)


def test_full_disk_fails_before_any_work(registered_small, tmp_path, monkeypatch, capsys):
    import bench.stages.preflight

    protocol, models = registered_small
    no_work(monkeypatch)
    monkeypatch.setattr(bench.stages.preflight.shutil, "disk_usage", lambda path: SimpleNamespace(free=10 * 2**20))
    argv = ["run", "--method", "naive", "--protocol", protocol.name, "--models", models.name,
            "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 2
    assert (f"bench: error: results folder (--out) {tmp_path / 'out'} has 10 MB free; a run needs at least 256 MB there "
            f"(a teacher cache entry of the tiny pair is 53 MB). Free some space or pass a folder on another disk"
            in capsys.readouterr().err)


def test_disk_filling_mid_run_stops_with_a_clear_error(small_protocol, small_models, baseline, tmp_path, monkeypatch):
    first = small_protocol.datasets[0]
    full = tmp_path / "out" / "scores.csv.gz"

    def run_cell(ctx, source, seed):  # what a write on a full disk raises
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(full))

    monkeypatch.setattr(pipeline, "run_cell", run_cell)
    with pytest.raises(BenchError) as stopped:
        pipeline.run(RunSettings(small_protocol, small_models, "naive", {}, [first], [SEED], tmp_path / "out", baseline[1]))
    assert str(stopped.value) == (
        f"{first} seed {SEED} stopped: No space left on device ({full}) while writing the results folder "
        f"{tmp_path / 'out'} or the teacher cache {baseline[1]}. Free space there (or make it writable) and rerun: "
        f"finished cells are kept")


# --- determinism ------------------------------------------------------------------------------------------
def test_same_seed_gives_byte_identical_scores_from_scratch(baseline, tmp_path, small_protocol, small_models):
    """A second run with an empty cache (the teacher is trained again too) writes the same bytes."""
    base_out, _, base_results = baseline
    source = small_protocol.datasets[0]
    [again] = pipeline.run(RunSettings(small_protocol, small_models, "naive", {}, [source], [SEED], tmp_path / "out", tmp_path / "cache"))
    assert again.teacher["reused"] is False
    assert (cell(tmp_path / "out", small_protocol, small_models, source) / SCORES_FILE).read_bytes() == \
        scores_bytes(base_out, small_protocol, small_models)[source]
    expected = next(r for r in base_results if r.source == source)
    assert again.eval_sets == expected.eval_sets and again.metrics == expected.metrics


def test_pair_outcomes_do_not_depend_on_the_evaluation_batch_size(small_protocol, small_models):
    """A real test split, both models, batch sizes 1, 7 and 64. Scores agree to float32
    rounding (not bit for bit: a batch's padded length changes the order of sums), and which response
    of each pair wins, hence every accuracy, is the same. The batch size is part of every cache and cell
    key, so stored results never mix batch sizes."""
    from bench.core.data import load_pairs
    from bench.core.metrics import accuracy
    from bench.core.protocols import DATASETS
    from bench.stages.batches import score
    from bench.stages.models import formatter_for, load_reward_model, load_tokenizer

    pairs = load_pairs(DATASETS.get(small_protocol.datasets[0]), "test", 16).pairs
    for spec in (small_models.weak, small_models.strong):
        model = load_reward_model(spec, seed=sub_seed(SEED, "teacher-init"))
        fmt = formatter_for(spec, load_tokenizer(spec), small_protocol.max_length)
        sequences = [fmt.encode(p.prompt, p.chosen) for p in pairs] + [fmt.encode(p.prompt, p.rejected) for p in pairs]
        runs = {size: score(model, sequences, size) for size in (1, 7, 64)}
        n = len(pairs)
        for size in (7, 64):
            assert max(abs(a - b) for a, b in zip(runs[1], runs[size])) < 1e-6
            assert [c > r for c, r in zip(runs[size][:n], runs[size][n:])] == [c > r for c, r in zip(runs[1][:n], runs[1][n:])]
            assert accuracy(runs[size][:n], runs[size][n:]) == accuracy(runs[1][:n], runs[1][n:])
        assert len(set(runs[1])) > n   # a real model that tells the inputs apart


def test_every_result_records_the_seeds_it_used(baseline):
    out, _, _ = baseline
    results = [load_cell(p.parent) for p in sorted(out.rglob(RESULT_FILE))]
    assert len(results) == 2
    for path, result in zip(sorted(out.rglob(RESULT_FILE)), results):
        assert path.parent.parent.name == f"seed{result.seed}" and result.seed == SEED
        stages = {"split", "order", "teacher-init", "teacher-order", "student-init", "student-order"}
        assert set(result.derived_seeds) == stages
        assert result.derived_seeds == {stage: sub_seed(SEED, stage) for stage in stages}


# --- bad input ----------------------------------------------------------------------------------------------
def test_method_file_raising_on_import_fails_fast_from_the_cli(tmp_path, capsys):
    bad = tmp_path / "broken.py"
    bad.write_text("import no_such_module_anywhere\n")
    assert main(["run", "--method-file", str(bad), "--out", str(tmp_path / "out")]) == 2
    assert (f"bench: error: method file {str(bad)!r} raised ModuleNotFoundError on import: No module named "
            f"'no_such_module_anywhere'. Fix the file (run `python {bad}` to see the traceback)") in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_source_of_another_protocol_fails_fast(registered_small, tmp_path, capsys):
    protocol, models = registered_small
    argv = ["run", "--method", "naive", "--protocol", protocol.name, "--models", models.name, "--source", "mini/chat",
            "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"unknown source of protocol {protocol.name!r} 'mini/chat'." in err and "Valid choices: mini/recipes" in err
    assert not (tmp_path / "out").exists()


def test_ill_typed_seed_fails_fast(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["run", "--method", "naive", "--seeds", "first"])
    assert exited.value.code == 2 and "--seeds: invalid int value: 'first'" in capsys.readouterr().err


def test_repeated_seed_or_source_runs_once(small_protocol, small_models, baseline, tmp_path, monkeypatch):
    first = small_protocol.datasets[0]
    done = next(r for r in baseline[2] if r.source == first)
    calls = []
    monkeypatch.setattr(pipeline, "run_cell", lambda ctx, source, seed: calls.append((source, seed)) or done)
    pipeline.run(RunSettings(small_protocol, small_models, "naive", {}, [first, first], [SEED, SEED], tmp_path, baseline[1]))
    assert calls == [(first, SEED)]
