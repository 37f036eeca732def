"""A run over a folder that already holds cells says which finished cells it replaces and why, and warns
where the folder's cells of the seeds and sources it adds were made with other CPU kernels
(bench/stages/resume.py): both were silent, and a session on an AVX2 machine retrained a comparison's
baseline over cells made with AVX512 kernels."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.core.errors import BenchError
from bench.core.result_schema import RESULT_FILE
from bench.core.settings import RunSettings
from bench.stages.resume import SHOWN, Finding, announce, refuse_to_mix, why_rerun


def test_why_rerun_names_the_platform_field_that_differs_else_the_code():
    here = {"packages": {"torch": "2.13.0+cpu", "transformers": "5.25.0"}, "device": "cpu", "torch_threads": 1}
    there = {**here, "packages": {**here["packages"], "transformers": "5.24.0"}, "torch_threads": 2}
    assert why_rerun(there, here) == "transformers 5.24.0 there, 5.25.0 here; torch threads 2 there, 1 here"
    assert why_rerun(here, here) == "its code or settings differ from this run's"
    # the record names the GPU count, the key only the model; a commit apart may or may not be why
    gpus = {**here, "device": "cuda: H200 x8", "git": {"commit": "93c101831bbf"}}
    assert why_rerun(gpus, {**gpus, "device": "cuda: H200 x1"}) == "its code or settings differ from this run's"
    assert why_rerun(gpus, {**gpus, "git": {"commit": "1bea2ba0"}}) == \
        "commit 93c1018 there, 1bea2ba here: its code or settings may differ too"


def test_a_run_names_the_cells_it_replaces_and_warns_of_cells_made_with_other_cpu_kernels(runs, tmp_path, capsys):
    protocol, models = (next(iter(d.values())) for d in (runs.protocols, runs.model_pairs))
    out = tmp_path / "results"
    shutil.copytree(runs.results, out)
    settings = RunSettings(protocol, models, "naive", {}, list(protocol.datasets), list(protocol.seeds), out,
                           tmp_path / "cache", command="bench run --method naive")
    seed, source = protocol.seeds[0], protocol.datasets[0]
    group = out / protocol.name / models.name
    cell = f"seed{seed}/{source.replace('/', '__')}/{RESULT_FILE}"
    # the cells' own thread count (in their key), whatever an earlier test left this process's at
    threads = json.loads((group / "naive" / cell).read_text())["environment"]["torch_threads"]
    announce(settings, threads)
    assert capsys.readouterr().err == ""   # every cell finished with this run's key: nothing to say

    def edit(slug: str, change) -> None:
        path = group / slug / cell
        data = json.loads(path.read_text())
        change(data)
        path.write_text(json.dumps(data))

    edit("naive", lambda r: r.update(cell_key="0" * 24) or r["environment"]["packages"].update(transformers="0.0.1"))
    edit("ceiling", lambda r: r["environment"]["cpu"].update(torch_capability="AVX9"))
    announce(settings, threads)
    err = capsys.readouterr().err
    [rerun] = [line for line in err.splitlines() if line.startswith("[rerun]")]
    assert rerun.startswith(f"[rerun] 1 finished cell(s) of naive in {group} have another key (transformers 0.0.1 "
                            "there, ") and rerun.endswith(f"so they are run again and replaced: seed {seed} {source}")
    [warning] = [line for line in err.splitlines() if line.startswith("[warning]")]
    assert "made with other CPU kernels (AVX9 CPU kernels there, " in warning and f": seed {seed} {source})" in warning
    assert "bench validate warns" in warning


def test_a_refusal_names_cells_of_other_kernels_once_with_every_side_that_meets_them():
    """The sides of a comparison (A, B, B's replicates) meet the same cells of another CPU's kernels: the refusal
    names those cells once, with every side, and its fix once; nothing found, nothing refused."""
    refuse_to_mix("bench compare --until-decided", [])
    cells = ("seed 11 mini-v2/chat", "seed 11 mini-v2/cyber")
    found = [Finding("kernels", run, Path("out"), "AVX512 CPU kernels there, AVX2 here", cells)
             for run in ("warm_members=3", "naive", "naive#1")]
    with pytest.raises(BenchError) as refused:
        refuse_to_mix("bench compare --until-decided", found)
    said = str(refused.value)
    assert "the folder's cells of the next seeds of warm_members=3, naive, naive#1 were made with other CPU kernels " \
        "(AVX512 CPU kernels there, AVX2 here)" in said
    assert said.count("seed 11 mini-v2/chat, seed 11 mini-v2/cyber") == 1 and said.count("grow it on a machine") == 1
    # sides that meet different cells are named apart, even where the cells shown (the first SHOWN) agree
    shown = tuple(f"seed {seed} mini-v2/chat" for seed in range(10, 10 + SHOWN))
    apart = [Finding("kernels", run, Path("out"), "AVX512 CPU kernels there, AVX2 here", shown + (last,))
             for run, last in (("warm_members=3", "seed 30 mini-v2/chat"), ("naive", "seed 31 mini-v2/chat"))]
    assert apart[0].named() == apart[1].named()
    with pytest.raises(BenchError) as refused:
        refuse_to_mix("bench compare --until-decided", apart)
    said = str(refused.value)
    assert "next seeds of warm_members=3 were made" in said and "next seeds of naive were made" in said
