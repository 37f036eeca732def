"""`bench sweep` through its executors: local worker processes and Slurm (submitit's local stand-in).

One sweep on worker processes covers what an executor must keep: the first grid point's cell
trains the teacher and the next points reuse it from the cache; a user's --method-file reaches the
workers; a cell that crashes is reported while the other cells finish and are written; and a rerun
skips the finished cells.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from bench.core.errors import CellsFailedError

METHOD_FILE = '''
from pydantic import BaseModel, ConfigDict
from methods.naive import Naive


class Probe(Naive):
    """
    name: probe-executor
    idea: naive, except that boom=2 crashes at its first step
    paper: none
    """

    class Params(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        boom: int = 0

    def loss(self, step):
        if self.params.boom == 2:
            raise RuntimeError("boom")
        return super().loss(step)
'''


def scores(result, out: Path) -> bytes:
    [folder] = [p.parent for p in out.rglob("result.json") if p.read_text().count(result.cell_key)]
    return gzip.decompress((folder / "scores.csv.gz").read_bytes())


def test_processes_executor_shares_teachers_isolates_failures_and_resumes(small_protocol, small_models, tmp_path):
    from bench.core.settings import RunSettings
    from bench.stages.executors import make_executor
    from bench.stages.sweep import run_sweep
    from methods import load_method_file

    method_file = tmp_path / "probe.py"
    method_file.write_text(METHOD_FILE)
    load_method_file(method_file)
    sources, out, cache = [small_protocol.datasets[0]], tmp_path / "results", tmp_path / "cache"
    with pytest.raises(CellsFailedError) as failed:
        run_sweep(RunSettings(small_protocol, small_models, "probe-executor", {}, sources, [0], out, cache,
                              method_file=method_file), [("boom", ["0", "1", "2"])], make_executor("processes", jobs=2))
    [failure] = failed.value.failures
    assert "boom=2" in failure and "RuntimeError: boom" in failure
    first, second = sorted(failed.value.finished, key=lambda r: r.method.params["boom"])
    assert not first.teacher["reused"] and second.teacher["reused"]  # trained once, by grid point 1
    assert scores(first, out) == scores(second, out)  # boom=0 and boom=1 train alike, in different workers
    assert len(list((cache / "teacher").iterdir())) == 1

    again = run_sweep(RunSettings(small_protocol, small_models, "probe-executor", {}, sources, [0], out, cache,
                                  method_file=method_file), [("boom", ["0", "1"])], make_executor("processes", jobs=2))
    # skipped: already finished (at the same thread count, which is part of a cell's key)
    assert [r.cell_key for r in again] == [first.cell_key, second.cell_key]


def test_slurm_executor_runs_cells_as_submitit_jobs(small_protocol, small_models, tmp_path):
    pytest.importorskip("submitit")
    from bench.core.settings import RunSettings
    from bench.stages.executors import make_executor
    from bench.stages.sweep import run_sweep

    out = tmp_path / "results"
    results = run_sweep(RunSettings(small_protocol, small_models, "naive", {}, [small_protocol.datasets[0]], [0], out,
                                    tmp_path / "cache"), [],
                        make_executor("slurm", folder=tmp_path / "jobs", cluster="local", options={"timeout_min": 10}))
    assert len(results) == 1 and len(list(out.rglob("result.json"))) == 1
    assert list((tmp_path / "jobs").glob("*_result.pkl"))  # the cell really ran as a submitit job


def test_sweep_cli_takes_executor_options():
    from bench.cli import build_parser
    from bench.commands.args import typed

    args = build_parser().parse_args(["sweep", "--method", "anchor", "--grid", "lam=1,2", "--executor", "slurm",
                                      "--jobs", "4", "--slurm", "timeout_min=90", "--slurm", "slurm_partition=gpu"])
    assert (args.executor, args.jobs) == ("slurm", 4)
    assert {k: typed(v) for k, v in args.slurm} == {"timeout_min": 90, "slurm_partition": "gpu"}


def test_slurm_executor_off_a_cluster_says_what_to_do(tmp_path):
    import shutil

    pytest.importorskip("submitit")
    if shutil.which("srun"):
        pytest.skip("this machine is a Slurm node")
    from bench.core.errors import BenchError
    from bench.stages.executors import make_executor

    with pytest.raises(BenchError, match="--executor processes"):
        make_executor("slurm", jobs=2, folder=tmp_path)


def test_run_with_jobs_runs_each_cell_in_a_worker_and_resumes(registered_small, tmp_path, capsys):
    from bench.cli import main
    from bench.core.result_schema import RESULT_FILE

    protocol, models = registered_small
    argv = ["run", "--method", "naive", "--protocol", protocol.name, "--models", models.name, "--seeds", "0",
            "--out", str(tmp_path / "results"), "--cache-dir", str(tmp_path / "cache"), "--jobs", "2"]
    assert main(argv) == 0
    table = capsys.readouterr().out
    written = {path: path.stat().st_mtime_ns for path in (tmp_path / "results").rglob(RESULT_FILE)}
    assert len(written) == len(protocol.datasets) == 2   # one cell per source, each from a worker
    assert all(source.split("/")[-1] in table for source in protocol.datasets)
    assert main(argv) == 0   # a rerun finds both cells finished (same thread count) and writes nothing
    assert {path: path.stat().st_mtime_ns for path in (tmp_path / "results").rglob(RESULT_FILE)} == written
    capsys.readouterr()
    assert main([*argv[:-1], "0"]) == 2
    assert "--jobs 0" in capsys.readouterr().err


def test_auto_jobs_is_one_per_core_on_a_cpu_and_one_on_a_gpu_or_under_a_launcher(monkeypatch):
    import torch

    from bench.core.errors import BenchError
    from bench.stages import executors

    monkeypatch.delenv("SHIFTBENCH_JOBS", raising=False)
    monkeypatch.delenv("WORLD_SIZE", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(executors, "usable_cores", lambda: 4)
    assert executors.auto_jobs() == 4   # whatever the run's cell count: threads per cell stay cores / jobs
    assert executors.ProcessesExecutor(jobs=executors.auto_jobs()).threads == 1
    monkeypatch.setenv("SHIFTBENCH_JOBS", "3")
    assert executors.auto_jobs() == 3
    monkeypatch.setenv("WORLD_SIZE", "2")   # accelerate launch / torchrun: the processes are the launcher's
    assert executors.auto_jobs() == 1
    monkeypatch.delenv("WORLD_SIZE")
    monkeypatch.delenv("SHIFTBENCH_JOBS")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert executors.auto_jobs() == 1
    monkeypatch.setenv("SHIFTBENCH_JOBS", "two")
    with pytest.raises(BenchError, match="SHIFTBENCH_JOBS='two'"):
        executors.auto_jobs()
