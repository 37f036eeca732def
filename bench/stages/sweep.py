"""``bench sweep``: one method over a grid of its params; every grid point is an ordinary run.

Each point writes its own results (the params are part of the folder name and of each cell's
key), so a sweep resumes like a run: finished cells are skipped. Every point's params are
validated before the first cell starts, so a typo in the last value fails in the first second.
"""
from __future__ import annotations

import itertools
import sys

from bench.core.errors import BenchError, CellsFailedError
from bench.core.report import params_text
from bench.core.settings import RunSettings
from bench.stages.executors import Executor
from bench.stages.resume import announce


def grid_points(base: dict[str, str], grid: list[tuple[str, list[str]]]) -> list[dict[str, str]]:
    """Every combination of the grid's values, on top of the fixed params; in the order given."""
    keys = [key for key, _ in grid]
    if len(set(keys)) != len(keys):
        raise BenchError(f"--grid names a param twice ({', '.join(keys)}); give each param one --grid")
    clash = sorted(set(keys) & set(base))
    if clash:
        raise BenchError(f"{', '.join(clash)} is both a --param and a --grid; keep one")
    return [{**base, **dict(zip(keys, values))} for values in itertools.product(*(v for _, v in grid))]


def describe(cell: RunSettings) -> str:
    """One cell of a sweep (a grid point, a source and a seed) as failure messages name it."""
    return f"{cell.sources[0]} seed {cell.seeds[0]}, {cell.method} ({params_text(cell.params)})"


def run_sweep_cell(cell: RunSettings) -> tuple[list, list[str]]:
    """One cell, wherever an executor runs it: its result, or the lines saying why it failed."""
    from bench.stages.pipeline import run
    from methods import load_method_file

    if cell.method_file is not None:  # a worker process registers the user's method itself
        load_method_file(cell.method_file)
    try:
        return run(cell), []
    except CellsFailedError as error:  # e.g. one value diverges: the other cells still run
        return error.finished, error.failures


def run_cells(cells: list[RunSettings], runner: Executor) -> tuple[list, list[str]]:
    """One-cell runs through the executor: their results, and the lines saying why any failed (an
    error that is not the harness's own, a bug, also prints the worker's traceback)."""
    results, failures = [], []
    for cell, outcome in zip(cells, runner.map(run_sweep_cell, cells)):
        if isinstance(outcome, BaseException):
            failures.append(f"{describe(cell)}: {type(outcome).__name__}: {outcome}")
            if not isinstance(outcome, BenchError) and outcome.__cause__ is not None:  # concurrent.futures' remote traceback
                print(f"[failed] {describe(cell)}:{outcome.__cause__}", file=sys.stderr)
        else:
            results += outcome[0]
            failures += outcome[1]
    return results, failures


def one_cell_runs(settings: RunSettings) -> list[RunSettings]:
    """A run's cells as runs of one cell each, in the run's order."""
    return [settings.replace(sources=(source,), seeds=(seed,)) for seed, source in settings.cells]


def run_jobs(settings: RunSettings, jobs: int, *, checked: bool = False) -> list:
    """``settings``' cells, ``jobs`` at a time in worker processes (each with cores/jobs torch threads), or with
    one job here. One cell runs here too, with the threads a worker would have: the thread count is part of a
    cell's and a teacher's key, so it must not change with how many cells a run holds. ``checked``: the caller
    has looked at the folder's cells already (bench.stages.resume), so nothing is said of them again."""
    from bench.stages.executors import make_executor
    from bench.stages.pipeline import run

    executor = make_executor("processes", jobs=jobs) if jobs > 1 else None
    if not checked:
        announce(settings, cell_threads(jobs))
    if executor is not None and len(settings.cells) > 1:
        print(f"[run] {len(settings.cells)} cells, up to {jobs} at a time in worker processes with {executor.threads} "
              "torch thread(s) each (--jobs 1: one after another in this process)", file=sys.stderr)
        return run_parallel(settings, executor)
    if executor is not None:
        import torch

        torch.set_num_threads(executor.threads)
    return run(settings)


def cell_threads(jobs: int) -> int | None:
    """Each cell's torch threads when run_jobs runs ``jobs`` cells at once (None: this process's, one job)."""
    from bench.stages.executors import make_executor

    return make_executor("processes", jobs=jobs).threads if jobs > 1 else None


def run_parallel(settings: RunSettings, runner: Executor) -> list:
    """``bench run`` with its cells in worker processes. What ``bench run`` checks before any work is
    checked here first, once (bench.stages.pipeline.checked_method, check_before_work); each cell trains its own
    teacher (source, seed), so no two share work; a finished cell is skipped as in ``bench run``."""
    from bench.core.cache import Cache
    from bench.stages.context import RunContext
    from bench.stages.pipeline import cell_folders, check_before_work, checked_method

    method = checked_method(settings)
    check_before_work(RunContext(settings, method, Cache(settings.cache_dir)), cell_folders(settings, method),
                      list(settings.cells))
    results, failures = run_cells(one_cell_runs(settings), runner)
    if failures:
        raise CellsFailedError(failures, results, settings.out)
    return results


def check_points(settings: RunSettings, points: list[dict[str, str]]) -> None:
    """Fail before any work on a bad value anywhere in the grid, or a student the method cannot train."""
    from bench.stages.pipeline import checked_method

    for params in points:
        checked_method(settings.replace(params=params))


def run_sweep(settings: RunSettings, grid: list[tuple[str, list[str]]], runner: Executor) -> list:
    """Every cell of every grid point through the executor (bench/stages/executors.py). The first point's
    cells run first, on their own: they train every (source, seed)'s teacher once, and the other
    points' cells, run next in parallel, find them in the cache instead of training them again."""
    points = grid_points(settings.params, grid)
    check_points(settings, points)
    if isinstance(threads := getattr(runner, "threads", None), int):   # cells run here, not on a cluster's machines
        for params in points:
            announce(settings.replace(params=params), threads)
    cells = [cell for params in points for cell in one_cell_runs(settings.replace(params=params))]
    first = len(settings.cells)
    results, failures = [], []
    for which, phase in (("grid point 1", cells[:first]), (f"grid points 2 to {len(points)}", cells[first:])):
        if not phase:
            continue
        print(f"[sweep] {which} of {len(points)}: {len(phase)} cells, {type(runner).__name__}", file=sys.stderr)
        done, failed = run_cells(phase, runner)
        results += done
        failures += failed
    if failures:
        raise CellsFailedError(failures, results, settings.out)
    return results
