"""``bench sweep``: one method over a grid of its params; every grid point is an ordinary run.

Each point writes its own results (the params are part of the folder name and of each cell's
key), so a sweep resumes like a run: finished cells are skipped. Every point's params are
validated before the first cell starts, so a typo in the last value fails in the first second.
"""
from __future__ import annotations

import itertools
import sys
from dataclasses import dataclass
from pathlib import Path

from bench.errors import BenchError, CellsFailedError
from bench.specs import ModelPairSpec, ProtocolSpec


def grid_points(base: dict[str, str], grid: list[tuple[str, list[str]]]) -> list[dict[str, str]]:
    """Every combination of the grid's values, on top of the fixed params; in the order given."""
    keys = [key for key, _ in grid]
    if len(set(keys)) != len(keys):
        raise BenchError(f"--grid names a param twice ({', '.join(keys)}); give each param one --grid")
    clash = sorted(set(keys) & set(base))
    if clash:
        raise BenchError(f"{', '.join(clash)} is both a --param and a --grid; keep one")
    return [{**base, **dict(zip(keys, values))} for values in itertools.product(*(v for _, v in grid))]


@dataclass(frozen=True)
class SweepCell:
    """One cell of a sweep -- a grid point, a source and a seed -- with all it needs to run anywhere."""

    protocol: ProtocolSpec
    models: ModelPairSpec
    method: str
    params: dict
    source: str
    seed: int
    out: Path
    cache_dir: Path
    force: bool = False
    command: str = ""
    data_dir: Path | None = None
    method_file: Path | None = None
    scorer: str = "hf"

    def __str__(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.source} seed {self.seed}, {self.method} ({shown})"


def run_sweep_cell(cell: SweepCell) -> tuple[list[dict], list[str]]:
    """One cell, wherever an executor runs it: its result, or the lines saying why it failed."""
    from bench.pipeline import run
    from methods import load_method_file

    if cell.method_file is not None:  # a worker process registers the user's method itself
        load_method_file(cell.method_file)
    try:
        return run(cell.protocol, cell.models, cell.method, cell.params, [cell.source], [cell.seed], cell.out,
                   cell.cache_dir, force=cell.force, command=cell.command, data_dir=cell.data_dir,
                   scorer=cell.scorer), []
    except CellsFailedError as error:  # e.g. one value diverges: the other cells still run
        return error.finished, error.failures


def run_sweep(protocol: ProtocolSpec, models: ModelPairSpec, method_name: str, base: dict[str, str],
              grid: list[tuple[str, list[str]]], sources: list[str], seeds: list[int], out: Path, cache_dir: Path,
              force: bool = False, command: str = "", data_dir: Path | None = None, executor: str = "local",
              jobs: int | None = None, method_file: Path | None = None, executor_options: dict | None = None,
              scorer: str = "hf") -> list[dict]:
    """Every cell of every grid point through the executor (bench/executors.py). The first point's
    cells run first, on their own: they train every (source, seed)'s teacher once, and the other
    points' cells, run next in parallel, find them in the cache instead of training them again."""
    from bench.executors import make_executor
    from methods import make_method

    points = grid_points(base, grid)
    for params in points:  # fail before any work on a bad value anywhere in the grid
        make_method(method_name, params, models.defaults_for(method_name))
    runner = make_executor(executor, jobs=jobs, **(executor_options or {}))
    cells = [SweepCell(protocol, models, method_name, params, source, seed, Path(out), Path(cache_dir), force, command,
                       data_dir, method_file, scorer) for params in points for seed in seeds for source in sources]
    first = len(sources) * len(seeds)
    results, failures = [], []
    for which, phase in (("grid point 1", cells[:first]), (f"grid points 2 to {len(points)}", cells[first:])):
        if not phase:
            continue
        print(f"[sweep] {which} of {len(points)}: {len(phase)} cells, {executor} executor", file=sys.stderr)
        for cell, outcome in zip(phase, runner.map(run_sweep_cell, phase)):
            if isinstance(outcome, BaseException):
                failures.append(f"{cell}: {type(outcome).__name__}: {outcome}")
            else:
                results += outcome[0]
                failures += outcome[1]
    if failures:
        raise CellsFailedError(failures, results, out)
    return results
