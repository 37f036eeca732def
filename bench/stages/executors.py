"""Where the cells of a sweep run: in this process, in local worker processes, or as Slurm jobs.

An executor maps a picklable function over picklable tasks and returns, for each task in order,
its result or the exception it raised. Cells are independent and resumable (a finished cell is
skipped on a rerun), so a preempted or failed job costs at most its own cell. Write your own by
implementing ``Executor`` (one method) and registering it in ``EXECUTORS``.

- ``local``: one cell after another in this process (a failed cell is listed and the others go on, as in
  ``bench run``).
- ``processes``: ``--jobs`` worker processes on this machine (concurrent.futures, spawned, so
  each worker starts clean); each gets cores/jobs torch threads unless OMP_NUM_THREADS is set.
- ``slurm``: one Slurm array task per cell through submitit (``pip install -e '.[slurm]'``), at most
  ``--jobs`` running at once; ``--slurm KEY=VALUE`` goes to submitit's ``update_parameters``
  (e.g. ``slurm_partition=gpu``, ``timeout_min=240``, ``gpus_per_node=1``, ``cpus_per_task=8``).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Callable, Protocol, Sequence

from bench.core.errors import BenchError
from bench.core.registry import Registry


class Executor(Protocol):
    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any]) -> list[Any]:
        """``fn(task)`` for every task; each entry is the result or the exception raised."""


class LocalExecutor:
    """In this process, in order; an error a cell's run does not catch itself propagates."""

    def __init__(self, jobs: int | None = None, **_: Any):
        pass

    def map(self, fn, tasks):
        return [fn(task) for task in tasks]


def _limit_threads(threads: int) -> None:
    import torch

    torch.set_num_threads(threads)


class ProcessesExecutor:
    """``jobs`` spawned worker processes on this machine, one cell per task."""

    def __init__(self, jobs: int | None = None, **_: Any):
        self.jobs = jobs or usable_cores()
        # Threads from the configured --jobs, not a call's task count: every cell of a sweep then runs
        # with the same thread count, which float results depend on (to the last bits).
        self.threads = int(os.environ.get("OMP_NUM_THREADS") or max(1, usable_cores() // self.jobs))

    def map(self, fn, tasks):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        jobs = max(1, min(self.jobs, len(tasks)))
        with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                                 initializer=_limit_threads, initargs=(self.threads,)) as pool:
            futures = [pool.submit(fn, task) for task in tasks]
            return [future.exception() or future.result() for future in futures]


class SlurmExecutor:
    """A submitit job array, one task per cell; ``folder`` holds submitit's pickles and logs."""

    def __init__(self, jobs: int | None = None, folder: Path = Path("submitit"), options: dict | None = None,
                 cluster: str = "slurm", **_: Any):
        try:
            import submitit
        except ImportError:
            raise BenchError("--executor slurm needs submitit: pip install -e '.[slurm]'") from None
        try:
            self.executor = submitit.AutoExecutor(folder=folder, cluster=cluster)
        except RuntimeError as error:  # e.g. no srun: not on a Slurm cluster
            raise BenchError(f"--executor slurm: {error} Run the sweep on a Slurm login node, or use "
                             f"--executor processes on this machine") from None
        try:
            parallelism = {"slurm_array_parallelism": jobs} if jobs and cluster == "slurm" else {}
            self.executor.update_parameters(**parallelism, **(options or {}))
        except (ValueError, TypeError) as error:
            raise BenchError(f"--slurm options rejected by submitit: {error}") from None

    def map(self, fn, tasks):
        jobs = self.executor.map_array(fn, list(tasks))
        print(f"[sweep] submitted {len(jobs)} jobs: {', '.join(j.job_id for j in jobs[:5])}"
              f"{' ...' if len(jobs) > 5 else ''}", flush=True)
        outcomes = []
        for job in jobs:
            try:
                outcomes.append(job.result())
            except Exception as error:  # a failed or preempted job: its cell reruns with the sweep
                outcomes.append(error)
        return outcomes


def usable_cores() -> int:
    """The cores this process may run on (its affinity: a Slurm allocation or a container's cpuset),
    not the machine's."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # no affinity on this platform (macOS)
        return os.cpu_count() or 1


def auto_jobs() -> int:
    """How many cells ``bench run`` runs at once by default: in a process started by a launcher
    (accelerate, torchrun), one (the launch is the parallelism); else ``SHIFTBENCH_JOBS`` if set; on a
    GPU, one (the device is shared); on a CPU-only machine, one per usable core, each worker with one
    torch thread, as two one-thread processes outrun one two-thread process on these model sizes
    (docs/performance.md section 6). Never the run's cell count: the thread count a cell computes
    with is part of its key (bench.core.versions.platform_version), and must not change with how many
    cells a run holds."""
    from bench.core.distributed import launched, on_cpu

    if launched():
        return 1
    if os.environ.get("SHIFTBENCH_JOBS"):
        value = os.environ["SHIFTBENCH_JOBS"]
        if not value.isdigit() or int(value) < 1:
            raise BenchError(f"SHIFTBENCH_JOBS={value!r}: give the number of cells to run at once, 1 or more")
        return int(value)
    return usable_cores() if on_cpu() else 1


EXECUTORS: Registry[type] = Registry("executor")
EXECUTORS.register("local", LocalExecutor)
EXECUTORS.register("processes", ProcessesExecutor)
EXECUTORS.register("slurm", SlurmExecutor)


def make_executor(name: str, **options: Any) -> Executor:
    return EXECUTORS.get(name)(**options)
