"""Nothing trusted, round two (issue 19): the cache and the cells under two runs at once, cache keys
that follow the code and the platform, a manifest that does not decide what is checked, and late
failures caught before any work. On the shrunken protocol of conftest.py, one source, one seed.
"""
from __future__ import annotations

import dataclasses
import gzip
import json
import os
import pickle
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import bench.stages.context
from bench.cli import main
from bench.core.cache import MANIFEST, Cache, SharedWork
from bench.core.errors import BenchError
from bench.core.result_schema import SCORES_FILE
from bench.core.results import cell_dir, load_cell
from bench.core.settings import RunSettings
from bench.stages import pipeline, teacher

SEED = 0


def settings(protocol, models, out: Path, cache: Path, **changes) -> RunSettings:
    return RunSettings(protocol, models, "naive", {}, [protocol.datasets[0]], [SEED], out, cache, **changes)


def cell(out: Path, protocol, models) -> Path:
    return cell_dir(out, protocol.name, models.name, "naive", SEED, protocol.datasets[0])


def teacher_entry(cache: Path) -> Path:
    [manifest] = (cache / "teacher").glob(f"*/{MANIFEST}")
    return manifest.parent


@pytest.fixture(scope="module")
def first_run(tmp_path_factory, small_protocol, small_models):
    """A naive run of the first source: its results and teacher cache, copied by the tests that alter them."""
    out, cache = tmp_path_factory.mktemp("out"), tmp_path_factory.mktemp("cache")
    [result] = pipeline.run(settings(small_protocol, small_models, out, cache))
    return out, cache, result


def no_work(monkeypatch):
    monkeypatch.setattr(pipeline, "run_cell", lambda *a, **k: pytest.fail("a cell started before the check"))
    monkeypatch.setattr(teacher, "train_reward_model", lambda *a, **k: pytest.fail("a teacher trained before the check"))


# --- 4. two runs on the same folders ------------------------------------------------------------------
HAMMER = '''
import sys, time
from pathlib import Path
from bench.core.cache import Cache

cache, name = Cache(sys.argv[1]), sys.argv[2]
key = cache.key({"shared": True})

def slow_write(folder):   # a writer slow enough that the other process runs into it
    (folder / "model").mkdir()
    for i in range(8):
        (folder / "model" / f"part{i}.bin").write_bytes(bytes([i]) * 65536)
        time.sleep(0.002)
    (folder / "labels.txt").write_text("same numbers from either process")

for _ in range(40):
    folder = cache.load("teacher", key)
    if folder is not None:
        assert (folder / "labels.txt").read_text() == "same numbers from either process"
    # both processes "trained": each stores, as two runs that missed the cache together would
    folder = cache.store("teacher", key, {"shared": True}, slow_write)
    assert (folder / "labels.txt").read_text() == "same numbers from either process"
print(name, "done")
'''


def test_processes_storing_and_loading_one_cache_entry_do_not_race(tmp_path):
    script = tmp_path / "hammer.py"
    script.write_text(HAMMER)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path / "cache"), name], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for name in ("one", "two", "three", "four")]
    outputs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outputs):
        assert p.returncode == 0, err            # no FileNotFoundError, no ENOTEMPTY
        assert "invalid" not in err, err         # and no good entry deleted as invalid
    cache = Cache(tmp_path / "cache")
    assert cache.load("teacher", cache.key({"shared": True})) is not None
    assert [p.name for p in (tmp_path / "cache" / "teacher").iterdir()] == [cache.key({"shared": True})]  # no staging left
    assert {out.split()[0] for out, _ in outputs} == {"one", "two", "three", "four"}


LAUNCHER = '''
import pickle, sys
from bench.core.protocols import MODEL_PAIRS, PROTOCOLS
protocol, models = pickle.loads(open(sys.argv[1], "rb").read())
PROTOCOLS.register(protocol.name, protocol)
MODEL_PAIRS.register(models.name, models)
from bench.cli import main
sys.exit(main(sys.argv[2:]))
'''


def test_two_bench_runs_on_one_out_and_cache_do_the_work_once(tmp_path, small_protocol, small_models):
    (tmp_path / "launcher.py").write_text(LAUNCHER)
    (tmp_path / "specs.pickle").write_bytes(pickle.dumps((small_protocol, small_models)))
    source = small_protocol.datasets[0]
    argv = [sys.executable, str(tmp_path / "launcher.py"), str(tmp_path / "specs.pickle"), "run", "--method", "naive",
            "--protocol", small_protocol.name, "--models", small_models.name, "--source", source,
            "--seeds", str(SEED), "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    logs = [tmp_path / "first.stderr", tmp_path / "second.stderr"]
    with logs[0].open("w") as err:
        first = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err, env=env)
    deadline = time.monotonic() + 300
    while f"teacher {source} s{SEED}" not in logs[0].read_text():   # the first run is training: start the second
        assert first.poll() is None and time.monotonic() < deadline, logs[0].read_text()[-3000:]
        time.sleep(0.05)
    with logs[1].open("w") as err:
        second = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=err, env=env)
    codes = [first.wait(timeout=300), second.wait(timeout=300)]
    first_log, second_log = (log.read_text() for log in logs)
    assert codes == [0, 0], second_log[-3000:] + first_log[-3000:]
    assert f"[lock] another run is working on cell {source} seed {SEED} (naive, no params); waiting for it" in second_log
    assert f"[skip] {source} seed {SEED}: finished by another run meanwhile" in second_log
    assert f"teacher {source}" not in second_log and f"student {source}" not in second_log   # trained nothing
    assert load_cell(cell(tmp_path / "out", small_protocol, small_models)) is not None
    assert len(list((tmp_path / "cache" / "teacher").glob(f"*/{MANIFEST}"))) == 1


# --- 5. keys follow the code and the platform ----------------------------------------------------------
def test_changed_code_changes_the_keys_and_the_run_retrains(first_run, tmp_path, small_protocol, small_models,
                                                            monkeypatch, capsys):
    out, cache, before = first_run
    shutil.copytree(out, tmp_path / "out")
    shutil.copytree(cache, tmp_path / "cache")
    inputs = json.loads((teacher_entry(cache) / MANIFEST).read_text())["inputs"]
    ctx = pipeline.RunContext(settings(small_protocol, small_models, out, cache), pipeline.make_method("naive"), Cache(cache))
    assert inputs["code"] == teacher.teacher_code(ctx.loaders(small_protocol.datasets[0]))
    assert inputs["platform"] == teacher.platform_version()
    real = bench.stages.context.code_version
    for module in (bench.stages.context, teacher):   # the cell's key and the teacher's
        monkeypatch.setattr(module, "code_version", lambda modules, functions=(): "edited-" + real(modules, functions))
    [after] = pipeline.run(settings(small_protocol, small_models, tmp_path / "out", tmp_path / "cache"))
    assert "[skip]" not in capsys.readouterr().err    # the finished cell is from other code: run again
    assert after.cell_key != before.cell_key
    assert after.teacher["reused"] is False and after.teacher["cache_key"] != before.teacher["cache_key"]
    assert len(list((tmp_path / "cache" / "teacher").iterdir())) == 2   # the old entry is not overwritten either


def test_another_platform_changes_the_cell_and_teacher_keys(first_run, tmp_path, small_protocol, small_models,
                                                             monkeypatch):
    out, cache, before = first_run
    real = bench.stages.context.platform_version
    ctx = pipeline.RunContext(settings(small_protocol, small_models, out, cache), pipeline.make_method("naive"),
                              Cache(cache))
    assert ctx.cell_key(small_protocol.datasets[0], SEED) == before.cell_key
    monkeypatch.setattr(bench.stages.context, "platform_version", lambda: {**real(), "threads": real()["threads"] + 1})
    assert ctx.cell_key(small_protocol.datasets[0], SEED) != before.cell_key


def test_reference_states_are_recomputed_for_other_code_or_platform(tmp_path, monkeypatch):
    import torch

    import bench.core.versions

    shared = SharedWork(Cache(tmp_path), {"strong": "tiny"})
    computed = []

    def compute():
        computed.append(1)
        return {"layer1": torch.arange(6.0).reshape(3, 2)}

    assert shared.tensors("anchor-reference", {"layers": [1]}, compute)[1] is False
    assert shared.tensors("anchor-reference", {"layers": [1]}, compute)[1] is True       # same code: reused
    real = bench.core.versions.code_version
    monkeypatch.setattr(bench.core.versions, "code_version", lambda modules, functions=(): "edited-" + real(modules, functions))
    assert shared.tensors("anchor-reference", {"layers": [1]}, compute)[1] is False      # other code: computed
    monkeypatch.setattr(bench.core.versions, "platform_version", lambda: {"torch": "0.0", "device": "elsewhere"})
    assert shared.tensors("anchor-reference", {"layers": [1]}, compute)[1] is False      # other platform: computed
    assert len(computed) == 3


# --- 6. the stage, not the manifest, decides what is checked ---------------------------------------------
def rewrite_labels(entry: Path) -> None:
    """Every label q turned into 1 - q, written as a valid gzip'd CSV (only a checksum tells)."""
    lines = gzip.decompress((entry / "labels.csv.gz").read_bytes()).decode().splitlines()
    header, rows = lines[0], [line.split(",") for line in lines[1:]]
    text = "\n".join([header, *(",".join([*r[:-1], repr(1.0 - float(r[-1]))]) for r in rows)]) + "\n"
    (entry / "labels.csv.gz").write_bytes(gzip.compress(text.encode()))


def test_manifest_listing_no_files_and_tampered_labels_are_rebuilt_not_used(first_run, tmp_path, small_protocol,
                                                                            small_models, capsys):
    out, cache, before = first_run
    shutil.copytree(cache, tmp_path / "cache")
    entry = teacher_entry(tmp_path / "cache")
    manifest = json.loads((entry / MANIFEST).read_text())
    (entry / MANIFEST).write_text(json.dumps({**manifest, "files": {}}))
    rewrite_labels(entry)
    [after] = pipeline.run(settings(small_protocol, small_models, tmp_path / "out", tmp_path / "cache"))
    err = capsys.readouterr().err
    assert f"[cache] teacher/{entry.name} is invalid (manifest does not list model/config.json); rebuilding it" in err
    assert after.teacher["reused"] is False
    assert (cell(tmp_path / "out", small_protocol, small_models) / SCORES_FILE).read_bytes() == \
        (cell(out, small_protocol, small_models) / SCORES_FILE).read_bytes()     # the labels it used were the real ones


@pytest.mark.parametrize("cut, reported", [
    (lambda files: {k: v for k, v in files.items() if k != "labels.csv.gz"}, "manifest does not list labels.csv.gz"),
    (lambda files: {k: v for k, v in files.items() if k != "model/config.json"}, "manifest does not list model/config.json"),
    (lambda files: {k: v for k, v in files.items() if not k.endswith(".safetensors")}, "manifest does not list model/*.safetensors"),
    (lambda files: [], "manifest lists no files"),
], ids=["labels-unlisted", "config-unlisted", "weights-unlisted", "files-not-a-dict"])
def test_teacher_entry_missing_a_file_its_stage_needs_is_invalid(cut, reported, first_run, tmp_path, capsys):
    entry = teacher_entry(first_run[1])
    copy = tmp_path / "teacher" / entry.name
    shutil.copytree(entry, copy)
    manifest = json.loads((copy / MANIFEST).read_text())
    (copy / MANIFEST).write_text(json.dumps({**manifest, "files": cut(manifest["files"])}))
    assert Cache(tmp_path).load("teacher", entry.name, required=teacher.TEACHER_FILES) is None
    assert f"[cache] teacher/{entry.name} is invalid ({reported}); rebuilding it" in capsys.readouterr().err
    assert not copy.exists()


def test_a_file_not_in_the_manifest_makes_the_entry_invalid(tmp_path, capsys):
    cache = Cache(tmp_path)
    folder = cache.store("teacher", "k", {}, lambda f: (f / "labels.csv.gz").write_bytes(b"x"))
    (folder / "extra.bin").write_bytes(b"slipped in")
    assert cache.load("teacher", "k") is None
    assert "[cache] teacher/k is invalid (file extra.bin is not in the manifest); rebuilding it" in capsys.readouterr().err


def test_reference_states_entry_with_an_empty_manifest_is_recomputed(tmp_path, capsys):
    import torch

    shared = SharedWork(Cache(tmp_path), {})
    shared.tensors("anchor-reference", {}, lambda: {"layer1": torch.zeros(2, 2)})
    [manifest] = (tmp_path / "anchor-reference").glob(f"*/{MANIFEST}")
    manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "files": {}}))
    tensors, reused = shared.tensors("anchor-reference", {}, lambda: {"layer1": torch.ones(2, 2)})
    assert reused is False and torch.equal(tensors["layer1"], torch.ones(2, 2))
    assert "is invalid (manifest does not list tensors.safetensors)" in capsys.readouterr().err


# --- 7. late failures, now caught before any work ----------------------------------------------------------
def test_vllm_scorer_on_an_encoder_student_fails_before_any_work(registered_small, tmp_path, monkeypatch, capsys):
    protocol, models = registered_small
    no_work(monkeypatch)
    argv = ["run", "--method", "naive", "--protocol", protocol.name, "--models", models.name, "--scorer", "vllm",
            "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")]
    assert main(argv) == 2
    assert (f"bench: error: --scorer vllm scores decoder reward models; {models.strong.name!r} is an encoder. "
            "Use --scorer hf") in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_vllm_scorer_without_vllm_fails_before_any_work(small_protocol, small_models, tmp_path, monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a))
    no_work(monkeypatch)
    decoder = dataclasses.replace(small_models, strong=dataclasses.replace(small_models.strong, architecture="decoder"))
    with pytest.raises(BenchError) as error:
        pipeline.run(settings(small_protocol, decoder, tmp_path / "out", tmp_path / "cache", scorer="vllm"))
    assert str(error.value) == "--scorer vllm needs vLLM: pip install -e '.[vllm]' on a machine with a CUDA GPU"


def test_one_pair_train_pool_fails_before_the_teacher_trains(small_protocol, small_models, tmp_path, monkeypatch):
    no_work(monkeypatch)
    tiny_pool = dataclasses.replace(small_protocol, train_pool_size=1)
    with pytest.raises(BenchError) as error:
        pipeline.run(settings(tiny_pool, small_models, tmp_path / "out", tmp_path / "cache"))
    assert str(error.value) == (
        f"{small_protocol.datasets[0]} seed {SEED}: its train pool of 1 pairs (1 prompt groups) splits into 1 pairs for "
        "the teacher (half A) and 0 for the student (half B); each half needs at least 2. Use a larger train pool "
        "(the protocol's train_pool_size, or a larger --cap-train) or a source with more prompts")


def test_teacher_entry_replaced_by_a_file_is_rebuilt(first_run, tmp_path, small_protocol, small_models, capsys):
    out, cache, before = first_run
    shutil.copytree(cache, tmp_path / "cache")
    entry = teacher_entry(tmp_path / "cache")
    shutil.rmtree(entry)
    entry.write_text("a file where the entry's folder belongs")
    [after] = pipeline.run(settings(small_protocol, small_models, tmp_path / "out", tmp_path / "cache"))
    assert f"[cache] teacher/{entry.name} is invalid (not a folder); rebuilding it" in capsys.readouterr().err
    assert after.teacher["reused"] is False and entry.is_dir()
    assert (cell(tmp_path / "out", small_protocol, small_models) / SCORES_FILE).read_bytes() == \
        (cell(out, small_protocol, small_models) / SCORES_FILE).read_bytes()


@pytest.mark.parametrize("blocked", ["cache/teacher", "out/mini-test"])
def test_a_file_where_a_folder_belongs_fails_before_any_work(blocked, small_protocol, small_models, tmp_path, monkeypatch):
    no_work(monkeypatch)
    (tmp_path / blocked).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / blocked).write_text("not a folder")
    with pytest.raises(BenchError) as error:
        pipeline.run(settings(small_protocol, small_models, tmp_path / "out", tmp_path / "cache"))
    assert f"cannot be used: {tmp_path / blocked} is a file where a folder belongs. Move or delete " \
           f"{tmp_path / blocked} and rerun" in str(error.value)
