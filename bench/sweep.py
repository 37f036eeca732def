"""``bench sweep``: one method over a grid of its params; every grid point is an ordinary run.

Each point writes its own results (the params are part of the folder name and of each cell's
key), so a sweep resumes like a run: finished cells are skipped. Every point's params are
validated before the first cell starts, so a typo in the last value fails in the first second.
"""
from __future__ import annotations

import itertools
import sys
from pathlib import Path

from bench.errors import BenchError
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


def run_sweep(protocol: ProtocolSpec, models: ModelPairSpec, method_name: str, base: dict[str, str],
              grid: list[tuple[str, list[str]]], sources: list[str], seeds: list[int], out: Path, cache_dir: Path,
              force: bool = False, command: str = "") -> list[dict]:
    from bench.pipeline import run
    from methods import make_method

    points = grid_points(base, grid)
    for params in points:  # fail before any work on a bad value anywhere in the grid
        make_method(method_name, params, models.defaults_for(method_name))
    results = []
    for i, params in enumerate(points, 1):
        shown = ", ".join(f"{k}={v}" for k, v in params.items())
        print(f"[sweep] point {i} of {len(points)}: {shown}", file=sys.stderr)
        results += run(protocol, models, method_name, params, sources, seeds, out, cache_dir, force=force,
                       command=command)
    return results
