"""What submission.json holds: the pydantic models it is checked against, and its fields that are
computed from the cells (``summary``, ``intervals``, ``code_version``), for ``bench submit`` to write
and ``bench validate`` to recompute."""
from __future__ import annotations

import math
from typing import Literal, Mapping

from pydantic import BaseModel, ConfigDict

from bench.core.report import cell_row_dicts, summarise_rows
from bench.core.result_schema import ProtocolRef


class _Strict(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class _Open(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")


class MethodRef(_Open):  # the run may record more (paper, origin); name and params are what identify it
    name: str
    params: dict[str, str | int | float | bool | None]


class ModelsRef(_Open):  # the whole model pair as the run recorded it; its name identifies it
    name: str


class CellRef(_Strict):
    seed: int
    source: str
    result_sha256: str
    scores_sha256: str
    candidates_sha256: str | None = None   # of the cell's candidates.csv.gz, on a protocol with candidate sets
    # r > 0 on naive's submission only: its replicate r of this cell (bench run --replicate r: fresh student randomness,
    # the same teacher and labels). No row and no summary of its own: naive's A/A runs (benchmarks/aa_test.py), and
    # each run's control against naive where the rule applies one (bench.core.runs: since 2026-12-07 it applies none).
    replicate: int = 0


class CodeVersion(_Strict):
    shiftbench: list[str | None]
    git_commits: list[str | None]
    dirty: bool | None


class Intervals(_Strict):
    level: float                       # 0.95
    n_boot: int                        # bootstrap replicates (bench.core.stats.N_BOOT)
    seed: int                          # the bootstrap's seed (bench.core.stats.BOOTSTRAP_SEED)
    metrics: dict[str, list[float]]    # metric -> [low, high]: the hierarchical bootstrap over seeds and test pairs


class SubmissionFile(_Strict):
    schema_version: int
    kind: Literal["shiftbench-submission"]
    slug: str
    method: MethodRef
    protocol: ProtocolRef
    models: ModelsRef
    code_version: CodeVersion
    submitter: str
    created_utc: str
    command: str
    run_commands: list[str]
    cells: list[CellRef]
    summary: dict[str, float | int | None]
    intervals: Intervals
    # Set (to bench.core.result_schema.EXTERNAL_NOTE) when the students were trained outside the harness and scored
    # by bench evaluate: the board shows it beside the row. Absent in the harness's own submissions.
    external: str | None = None
    # Set (bench submit --fresh-from N) when the seeds below N chose this method, e.g. as one of a zoo's best by NTS
    # at the protocol's seeds: its Δ against naive is then decided on the seeds from N on only, as bench compare
    # --fresh-from N decides it, since runs that chose a method because they favoured it would bias its interval.
    fresh_from: int | None = None


def submission_summary(cells: list, protocols: Mapping | None = None) -> dict[str, float | int | None]:
    """Means over cells and seeds, with spreads (None with one seed): what submission.json records (the
    BoN columns too, on a protocol with candidate sets, and the far ones on a protocol with far targets:
    bench.core.report.columns_of; ``protocols``: specs besides the registry's, as cell_rows takes them)."""
    summary = summarise_rows(cell_row_dicts(cells, protocols))
    out: dict[str, float | int | None] = {name: None if isinstance(value, float) and math.isnan(value) else value
                                          for name, value in summary.items()}
    misfits = [c.misfit.disagreement for c in cells if c.misfit is not None]
    out["misfit"] = sum(misfits) / len(misfits) if len(misfits) == len(cells) else None
    return out


def submission_intervals(pairs: list) -> dict:
    """The 95% interval of every summary metric from the cells' per-pair correctness (bench.core.cells.Cell):
    the same draws whatever else is on a board, so a submission's intervals are the board's."""
    from bench.core.sequential import LEVEL
    from bench.core.stats import BOOTSTRAP_SEED, METRICS, N_BOOT, Board

    board = Board(pairs)
    stats = board.stats(board.methods[0], ceiling=None)
    return {"level": LEVEL, "n_boot": N_BOOT, "seed": BOOTSTRAP_SEED,
            "metrics": {k: [stats.metrics[k].low, stats.metrics[k].high] for k in METRICS}}


def code_version(cells: list) -> dict:
    envs = [c.environment for c in cells]
    dirty = [e.get("git", {}).get("dirty") for e in envs]
    return {"shiftbench": sorted({e.get("packages", {}).get("shiftbench") for e in envs}, key=str),
            "git_commits": sorted({e.get("git", {}).get("commit") for e in envs}, key=str),
            "dirty": None if None in dirty else any(dirty)}
