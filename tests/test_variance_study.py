"""The variance study's analysis (benchmarks/variance_study.py) on a hand-made ledger: the per-run SD of
Δ NTS pooled within sources and over arms, and the cost of a run scored on fewer test pairs."""
import importlib.util
import json
import math
import statistics
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def study():
    spec = importlib.util.spec_from_file_location("variance_study", ROOT / "benchmarks" / "variance_study.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["variance_study"] = module
    spec.loader.exec_module(module)
    return module


def entry(run: str, seed: int, source: str, student_id: str, cpu_s: float = 100.0) -> dict:
    """A ledger line whose teacher gets half of every split right and whose student's ID verdicts are
    ``student_id`` (4 pairs); its targets are scored like the teacher, so NTS moves with ID accuracy alone."""
    from bench.core.protocols import PROTOCOLS

    protocol = PROTOCOLS.get("mini")
    category = protocol.category_of(source)
    siblings = [n for c, names in protocol.categories if c == category for n in names if n != source]
    verdicts = {source: {"teacher": "2200", "student": student_id}}
    verdicts.update({name: {"teacher": "2200", "student": "2200"} for name in siblings})
    return {"design": "base", "run": run, "seed": seed, "source": source, "cpu_s": cpu_s, "teacher_trained": False,
            "misfit": {"disagreement": 0.0, "pairs": 4, "squared": 0.0},
            "timings_s": {"student_train": 60.0, "student_score": 40.0, "total": 100.0}, "verdicts": verdicts}


def test_run_cost_scales_the_scoring_stage_alone(study):
    line = entry("naive", 0, "mini/recipes", "2200")
    assert study.run_cost(line, None) == 100.0
    # 3 splits x 4 pairs x 2 sequences + the misfit's 8: 32 sequences scored; at 2 pairs per split, 20
    assert study.run_cost(line, 2) == pytest.approx(100.0 * (1 - 40.0 * (1 - 20 / 32) / 100.0))
    assert study.run_cost(line, 10) == 100.0   # more pairs than a split holds: nothing saved


def test_pooled_rows_of_a_ledger(study, tmp_path, capsys):
    # Two sources, two seeds: naive and two arms whose ID accuracy falls below naive's (50) by known amounts.
    # A student below its teacher in distribution loses the gap from NTS (its targets score like the
    # teacher's), so an arm's per-run Δ NTS is its ID accuracy minus 50.
    ids = {"naive": ("2200", "2200"), "naive#1": ("0200", "0000"), "confidence": ("2200", "0000")}
    lines = [entry(run, seed, source, ids[run][seed]) for run in ids for seed in (0, 1)
             for source in ("mini/recipes", "mini/chat")]
    (tmp_path / "base.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines) + '{"partial')
    args = type("Args", (), {"designs": ["base"], "ledger": tmp_path, "test_size": None, "csv": None, "seeds": None,
                             "reference": None})
    study.analyse(args)
    rows = {cells[1]: cells for cells in ([c.strip() for c in line.strip("|").split("|")]
                                          for line in capsys.readouterr().out.splitlines() if line.startswith("| base |"))}
    aa, confidence, pooled = rows["naive#1"], rows["confidence"], rows["all arms, pooled"]
    # naive#1: Δ -25 then -50 in each source; confidence: 0 then -50
    assert aa[2] == "4" and float(aa[3]) == pytest.approx(-37.5) and aa[6] == "2"
    assert float(aa[4]) == pytest.approx(statistics.stdev([-25.0, -50.0]), abs=0.01)
    assert float(aa[8]) == pytest.approx(float(aa[4]) ** 2 * 100.0, rel=1e-3)
    assert float(confidence[4]) == pytest.approx(statistics.stdev([0.0, -50.0]), abs=0.01)
    # pooled over the arms' within-source sums of squares: (2 x 312.5 + 2 x 1250) / 4 df
    assert pooled[2] == "8" and pooled[6] == "4"
    assert float(pooled[4]) == pytest.approx(math.sqrt((2 * 312.5 + 2 * 1250) / 4), abs=0.01)
    assert int(pooled[9]) == study.runs_for_half_width(math.sqrt((2 * 312.5 + 2 * 1250) / 4))


def test_the_levers_zero_the_students_head_and_average_its_last_half_and_are_undone(study, monkeypatch):
    """zhead starts the student's head at zero; swa ends training at the mean of the weights after each
    step of the second half (here SGD on a known gradient, so the iterates are known); both are undone
    when the design's runs end, or fail; the teacher's loader and loop are never wrapped."""
    import dataclasses

    import torch

    from bench.stages import pipeline, train

    class Student(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = torch.nn.Linear(2, 2)
            self.classifier = torch.nn.Linear(2, 1)

    def fake_load(spec, seed):
        torch.manual_seed(seed)
        return Student()

    def fake_fit(model, examples, cfg, method, seed, desc):   # SGD at lr 1 on a loss whose gradient is 1 everywhere
        optimizer = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=1.0)
        for _ in range(math.ceil(len(examples) / cfg.batch_size) * cfg.epochs):
            optimizer.zero_grad()
            sum(p.sum() for p in model.parameters()).backward()
            optimizer.step()
        return {"steps": 4}

    monkeypatch.setattr(pipeline, "load_reward_model", fake_load)
    monkeypatch.setattr(train, "train_reward_model", fake_fit)
    cfg = dataclasses.replace(study.specs("base")[1].student_train, batch_size=2, epochs=1)
    with study.levers("lr3e-4_zhead_swa"):
        model = pipeline.load_reward_model(None, 3)
        assert all(float(p.detach().abs().sum()) == 0.0 for p in model.classifier.parameters())
        assert float(model.body.weight.detach().abs().sum()) > 0
        start = [p.detach().clone() for p in model.parameters()]
        log = train.train_reward_model(model, [None] * 8, cfg, None, 0, "student")   # 4 steps: average of 3 and 4
    assert log == {"steps": 4, "tail_averaged_steps": 2}
    for before, after in zip(start, model.parameters()):
        assert torch.allclose(after.detach(), before - 3.5, rtol=0, atol=1e-6)
    assert pipeline.load_reward_model is fake_load and train.train_reward_model is fake_fit
    from bench.stages import models, teacher

    teachers = (teacher.train_reward_model, teacher.load_reward_model, models.load_reward_model)
    with pytest.raises(KeyError), study.levers("lr3e-4_zhead_swa"):   # undone when a run fails too
        assert (teacher.train_reward_model, teacher.load_reward_model, models.load_reward_model) == teachers
        raise KeyError("a run failed")
    assert pipeline.load_reward_model is fake_load and train.train_reward_model is fake_fit
    with study.levers("lr3e-4"):   # no lever: nothing is wrapped
        assert pipeline.load_reward_model is fake_load and train.train_reward_model is fake_fit
    with pytest.raises(SystemExit, match="unknown knob 'ema'"):
        study.knobs("lr3e-4_ema")


def test_mini_v2s_committed_runs_are_the_lr3e_4_designs_runs(study):
    """reference_rows computes the SDs of committed runs as analyse does from a ledger; on seeds 0 and 1, mini-v2's
    committed naive and naive#1 are the runs of the study's lr3e-4 design, so their rows agree to the digit (what lets
    the study compare a lever with v2's runs on more seeds than its own ledger holds)."""
    ledger = study.read_ledger(ROOT / "benchmarks" / "results" / "variance-study" / "lr3e-4.jsonl")
    runs = {(r["run"], r["seed"], r["source"]): study.run_metrics(r)["nts"] for r in study.runs_of(ledger, 200)}
    deltas: dict[str, list[float]] = {}
    for (name, seed, source), value in runs.items():
        if name == "naive#1":
            deltas.setdefault(source, []).append(value - runs["naive", seed, source])
    [row] = [r for r in study.reference_rows([ROOT / "submissions" / "mini-v2" / "tiny-lr3e-4" / "naive"], [0, 1])
             if r["arm"] == "naive#1"]
    sd, df = study.pooled_sd(deltas)
    assert (row["runs"], row["df"]) == (12, df) == (12, 6)
    assert row["sd"] == pytest.approx(sd, abs=1e-9)
