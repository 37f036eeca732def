"""Two CPU processes (torchrun, gloo; DDP through accelerate) give the metrics of one process.

The small protocol's cell is run once in this process and once launched on 2 processes. Batch
sizes are picked so that shards are uneven (student: batches of 7 pairs, shards of 3 and 4) and
one shard is empty (teacher: 24 pairs in batches of 23 and 1), the loop's edge cases. Measured
(2 processes against 1): per-pair scores within 2e-5, accuracies identical. Asserted: per-pair
scores within 1e-4, and accuracies within one pair of each other (gradients are the same sums in
another order, so rounding may differ; it cannot move a score by 1e-4 in two steps).
"""
from __future__ import annotations

import csv
import dataclasses
import gzip
import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import torch

LAUNCHER = """
import pickle, sys
from pathlib import Path
from bench.stages import pipeline
from bench.core.settings import RunSettings
protocol, models, method, sources, out, cache = pickle.loads(Path(sys.argv[1]).read_bytes())
pipeline.run(RunSettings(protocol, models, method, {}, sources, [0], out, cache))
"""
SCORE_TOLERANCE = 1e-4


def read_cell(out: Path) -> tuple[dict, list[dict]]:
    [result] = list(out.rglob("result.json"))
    with gzip.open(result.parent / "scores.csv.gz", "rt") as f:
        return json.loads(result.read_text()), list(csv.DictReader(f))


@pytest.mark.skipif(not torch.distributed.is_available(), reason="torch.distributed is not available")
def test_two_processes_give_the_metrics_of_one(tmp_path, small_protocol, small_models):
    from bench.core.settings import RunSettings
    from bench.stages import pipeline

    models = dataclasses.replace(small_models,
                                 teacher_train=dataclasses.replace(small_models.teacher_train, batch_size=23),
                                 student_train=dataclasses.replace(small_models.student_train, batch_size=7))
    sources = list(small_protocol.datasets[:1])
    pipeline.run(RunSettings(small_protocol, models, "anchor", {}, sources, [0], tmp_path / "one", tmp_path / "cache_one"))

    (tmp_path / "launch.py").write_text(LAUNCHER)
    (tmp_path / "specs.pkl").write_bytes(pickle.dumps(
        (small_protocol, models, "anchor", sources, tmp_path / "two", tmp_path / "cache_two")))
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    run = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          str(tmp_path / "launch.py"), str(tmp_path / "specs.pkl")],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]

    one, one_scores = read_cell(tmp_path / "one")
    two, two_scores = read_cell(tmp_path / "two")  # exactly one cell: only the main process wrote it
    assert len(list((tmp_path / "cache_two" / "teacher").iterdir())) == 1  # one cache entry, no staging left over
    assert [(r["eval_set"], r["pair_id"]) for r in one_scores] == [(r["eval_set"], r["pair_id"]) for r in two_scores]
    for who in ("teacher", "student"):
        gap = max(abs(float(a[k]) - float(b[k])) for a, b in zip(one_scores, two_scores) for k in a if k.startswith(who))
        assert gap < SCORE_TOLERANCE, f"{who} scores differ by {gap}"
    assert one["student"]["train"]["steps"] == two["student"]["train"]["steps"] == 4  # 24 pairs in 7s: 3 + 1 steps
    for name, entry in one["eval_sets"].items():
        one_pair = 100.0 / entry["n_pairs"]
        for who in ("teacher_acc", "student_acc"):
            assert abs(entry[who] - two["eval_sets"][name][who]) <= one_pair + 1e-9
    # the loss logged by 2 processes is the whole batch's, as with 1
    assert two["student"]["train"]["loss_curve"] == pytest.approx(one["student"]["train"]["loss_curve"], abs=1e-4)
