"""Methods that train the student several times (warm's members, s2s's rounds), the early-stopping
rule and the learning-rate schedule of the training loop, each against what it must compute, on the
tiny 2-layer student."""
from __future__ import annotations

import dataclasses
import math

import pytest
import torch
from helpers import train_examples

from bench.core.data import sub_seed
from bench.core.errors import BenchError
from bench.core.specs import EarlyStopping, canonical_json, stable_hash
from bench.stages.batches import score
from bench.stages.models import load_reward_model
from bench.stages.train import (
    TrainingLoop,
    apply_freezing,
    epoch_batches,
    holdout_split,
    lr_schedule,
    train_reward_model,
    validation_metrics,
)
from methods import make_method
from methods.api import load_trainable_state, trainable_state
from methods.naive import Naive

TARGETS = (0.8, 0.3, 0.65, 0.1)   # soft labels that vary from pair to pair, none exactly 0.5


@pytest.fixture(scope="module")
def examples(strong_spec):
    """16 pairs of mini/recipes (chosen as a, rejected as b) with varied soft labels."""
    return train_examples(strong_spec, 16, TARGETS)


@pytest.fixture
def cfg(small_models):
    return dataclasses.replace(small_models.student_train, batch_size=4)   # 16 pairs: 4 steps


def fresh_student(small_models, cfg):
    """The pretrained student as bench.stages.train.train_student hands it to a method: seeded head, pair's freezing."""
    student = load_reward_model(small_models.strong, seed=0)
    apply_freezing(student, cfg)
    return student


@dataclasses.dataclass(frozen=True)
class Recording(TrainingLoop):
    """The real loop, recording each run: its seed, the labels it trained on, and the trainable weights
    it started from and ended with. ``dataclasses.replace`` (warm's new seeds) keeps the same record."""

    runs: list = dataclasses.field(default_factory=list)

    def __call__(self, model, examples, cfg):
        start = trainable_state(model)
        log = super().__call__(model, examples, cfg)
        self.runs.append({"seed": self.seed, "targets": [e.target for e in examples], "start": start,
                          "end": trainable_state(model), "log": log})
        return log


def same_weights(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


# --- warm ---------------------------------------------------------------------------------------------
def test_warm_is_the_mean_of_members_trained_from_one_start_in_different_orders(small_models, examples, cfg):
    student = fresh_student(small_models, cfg)
    pretrained = trainable_state(student)
    loop = Recording(make_method("warm"), seed=11, desc="warm")
    log = loop.method.fit(student, examples[:8], cfg, loop)   # 2 steps a member

    seeds = [11, sub_seed(11, "warm-member-1"), sub_seed(11, "warm-member-2")]   # the run's own seed first
    assert [run["seed"] for run in loop.runs] == seeds
    assert [member["seed"] for member in log["members"]] == seeds and all(m["steps"] == 2 for m in log["members"])
    orders = [epoch_batches([0] * 8, 4, torch.Generator().manual_seed(s)) for s in seeds]
    assert orders[0] != orders[1] and orders[0] != orders[2] and orders[1] != orders[2]
    assert all(same_weights(run["start"], pretrained) for run in loop.runs)   # every member from the same start
    members = [run["end"] for run in loop.runs]
    assert not any(same_weights(members[i], members[j]) for i, j in ((0, 1), (0, 2), (1, 2)))
    # what is left in the student: the members' mean, parameter by parameter (float32 all through here)
    assert "bert.embeddings.word_embeddings.weight" not in pretrained   # frozen by the pair: not averaged
    assert same_weights(trainable_state(student), {k: (members[0][k] + members[1][k] + members[2][k]) / 3
                                                   for k in pretrained})


def test_warm_with_one_member_is_naive(small_models, examples, cfg):
    warm = fresh_student(small_models, cfg)
    make_method("warm", {"members": 1}).fit(warm, examples[:8], cfg, TrainingLoop(make_method("warm"), 11, "warm"))
    naive = fresh_student(small_models, cfg)
    train_reward_model(naive, examples[:8], cfg, Naive(), seed=11, desc="naive")
    assert same_weights(trainable_state(warm), trainable_state(naive))


def test_warm_needs_the_training_loop(small_models, examples, cfg):
    with pytest.raises(BenchError, match="needs a bench.stages.train.TrainingLoop"):
        make_method("warm").fit(fresh_student(small_models, cfg), examples, cfg, lambda *args: {})


# --- s2s ----------------------------------------------------------------------------------------------
def test_s2s_trains_a_fresh_student_on_the_first_students_own_soft_labels(small_models, examples, cfg):
    student = fresh_student(small_models, cfg)
    pretrained = trainable_state(student)
    loop = Recording(make_method("s2s"), seed=5, desc="s2s")
    log = loop.method.fit(student, examples, cfg, loop)

    first, second = loop.runs   # rounds=1: the teacher's labels, then one round of the student's own
    assert first["targets"] == [e.target for e in examples]
    # the first student's labels by hand: its rewards on every pair, scored as the pipeline scores
    judge = fresh_student(small_models, cfg)
    load_trainable_state(judge, first["end"])
    n = len(examples)
    rewards = score(judge, [e.a for e in examples] + [e.b for e in examples], 2 * cfg.batch_size, pairs=True)
    r_a, r_b = rewards[:n], rewards[n:]
    assert second["targets"] == pytest.approx([1.0 / (1.0 + math.exp(-(a - b))) for a, b in zip(r_a, r_b)],
                                              rel=1e-12, abs=0)
    assert second["targets"] != first["targets"]
    assert same_weights(first["start"], pretrained) and same_weights(second["start"], pretrained)   # a fresh student
    assert second["seed"] == first["seed"]   # in the same data order
    assert same_weights(trainable_state(student), second["end"])   # the last round's student is the result
    # the log: each round's training and how its student fits the labels it trained on (teacher's: all a-wins
    # at 0.8 and 0.65, b-wins at 0.3 and 0.1, none a tie)
    assert [r["steps"] for r in log["rounds"]] == [4, 4]
    agree = sum((a > b) == (q > 0.5) for a, b, q in zip(r_a, r_b, first["targets"]))
    assert log["rounds"][0]["fit_to_labels"]["agreement"] == pytest.approx(100.0 * agree / n)


# --- early stopping --------------------------------------------------------------------------------------
def test_the_holdout_is_a_seeded_disjoint_share():
    stopping = EarlyStopping(holdout=0.1)
    kept, held = holdout_split(40, stopping, seed=3)
    assert len(held) == 4 and sorted(kept + held) == list(range(40))   # disjoint, together every example
    drawn = torch.randperm(40, generator=torch.Generator().manual_seed(sub_seed(3, "early-stopping"))).tolist()
    assert held == sorted(drawn[:4])
    assert holdout_split(40, stopping, seed=3) == (kept, held)
    assert holdout_split(40, stopping, seed=4)[1] != held
    for n, share in ((3, 0.1), (2, 0.9)):   # nothing to validate on, or nothing to train on
        with pytest.raises(BenchError, match="each needs at least one"):
            holdout_split(n, EarlyStopping(holdout=share), seed=0)


def test_early_stopping_settings_are_checked():
    for bad, message in (({"holdout": 1.0}, "strictly between 0 and 1"), ({"every": 0}, "whole number >= 1"),
                         ({"metric": "auroc"}, "not one of loss, agreement")):
        with pytest.raises(BenchError, match=message):
            EarlyStopping(**bad)


def test_validation_metrics_by_hand():
    # d = 1, -2, 0; labels 0.9, 0.5, 0.2: agreement 1 + 1/2 (label tie) + 1/2 (reward tie) of 3
    metrics = validation_metrics([1.0, 0.0, 3.0], [0.0, 2.0, 3.0], [0.9, 0.5, 0.2])
    def sig(x):
        return 1.0 / (1.0 + math.exp(-x))
    bt = [-(q * math.log(sig(d)) + (1 - q) * math.log(sig(-d))) for d, q in ((1.0, 0.9), (-2.0, 0.5), (0.0, 0.2))]
    assert metrics["loss"] == pytest.approx(sum(bt) / 3, rel=1e-12)
    assert metrics["agreement"] == pytest.approx(100.0 * 2 / 3)


def test_early_stopping_restores_the_best_checkpoint_of_the_curve(small_models, examples):
    """The held-out pairs' labels say b wins, the trained-on ones that a wins: every step makes the
    held-out loss worse, so the last checkpoint is not the best and the run must end on an earlier one."""
    stopping = EarlyStopping(holdout=0.25, every=3)
    cfg = dataclasses.replace(small_models.student_train, batch_size=2, learning_rate=1e-3, early_stopping=stopping)
    kept, held = holdout_split(len(examples), stopping, seed=7)
    contradicting = [dataclasses.replace(e, target=0.0 if i in held else 1.0) for i, e in enumerate(examples)]
    student = fresh_student(small_models, cfg)
    log = train_reward_model(student, contradicting, cfg, Naive(), seed=7, desc="early stopping")

    assert log["pairs"] == 12 and log["steps"] == 6   # only the kept pairs are trained on
    record = log["early_stopping"]
    assert record["holdout_pairs"] == 4 and record["every"] == 3 and record["metric"] == "loss"
    curve = record["curve"]
    assert [point["step"] for point in curve] == [3, 6]   # every 3 steps, and after the last (here the same)
    best = min(curve, key=lambda point: point["loss"])
    assert curve[-1]["loss"] > best["loss"] and record["chosen_step"] == best["step"]
    # the weights left in the student are that checkpoint's: its held-out loss is the curve's best
    n = len(held)
    rewards = score(student, [examples[i].a for i in held] + [examples[i].b for i in held], 2 * cfg.batch_size,
                    pairs=True)
    assert validation_metrics(rewards[:n], rewards[n:], [0.0] * n)["loss"] == pytest.approx(best["loss"], rel=1e-9)


def test_raven_logs_the_teacher_weights_of_the_checkpoint_early_stopping_keeps(small_models, examples):
    """With early stopping the student ends on an earlier step's weights; RAVEN's teacher weights in the
    log must be that step's too, not the last step's. Held-out labels contradict the trained-on ones (as
    above), so the kept checkpoint is not the last; the teachers disagree, so the weights move every step."""
    stopping = EarlyStopping(holdout=0.25, every=1)
    cfg = dataclasses.replace(small_models.student_train, batch_size=2, learning_rate=1e-3, early_stopping=stopping)
    _, held = holdout_split(len(examples), stopping, seed=7)
    trio = [dataclasses.replace(e, target=0.0 if i in held else 1.0, teacher_labels=(0.9, 0.5, 0.1))
            for i, e in enumerate(examples)]
    method = make_method("raven", {"hold": 0.0, "lr": 0.5})
    log = method.fit(fresh_student(small_models, cfg), trio, cfg, TrainingLoop(method, 7, "raven early stopping"))
    chosen = log["early_stopping"]["chosen_step"]
    assert chosen < log["steps"] and len(method.after_step) == log["steps"]
    assert log["raven_weights"] == method.after_step[chosen - 1].tolist() != method.weights.tolist()
    assert sum(log["raven_weights"]) == pytest.approx(1.0)


def test_early_stopping_by_agreement_keeps_the_first_of_equals(small_models, examples):
    stopping = EarlyStopping(holdout=0.25, every=1, metric="agreement")
    cfg = dataclasses.replace(small_models.student_train, batch_size=4, early_stopping=stopping)
    log = train_reward_model(fresh_student(small_models, cfg), examples, cfg, Naive(), seed=7, desc="agreement")
    curve, chosen = log["early_stopping"]["curve"], log["early_stopping"]["chosen_step"]
    assert [point["step"] for point in curve] == [1, 2, 3]
    top = max(point["agreement"] for point in curve)
    assert chosen == next(point["step"] for point in curve if point["agreement"] == top)


def test_early_stopping_keeps_each_steps_example_index_into_the_methods_examples(small_models, examples):
    """ANCHOR looks its precomputed pretrained states up by the batch's example_index: with a held-out share
    the indices must still point into the list the method was given, not into the trained-on part, or the
    penalty would compare other sequences' states. At a learning rate that moves nothing the penalty is 0."""
    stopping = EarlyStopping(holdout=0.25, every=2)
    cfg = dataclasses.replace(small_models.student_train, batch_size=4, learning_rate=1e-30, early_stopping=stopping)
    method = make_method("anchor")
    seen = []

    class Watching(type(method)):
        def loss(self, step):
            seen.append(step.host_batch["example_index"].tolist())
            return super().loss(step)

    watching = Watching(method.params)
    log = watching.fit(fresh_student(small_models, cfg), examples, cfg, TrainingLoop(watching, 7, "anchor"))
    kept, held = holdout_split(len(examples), stopping, seed=7)
    assert sorted({i for indices in seen for i in indices}) == kept   # every kept example by its own index
    assert log["last_step_logs"]["anchor_mse"] < 1e-10


def test_early_stopping_off_leaves_spec_hashes_and_cell_keys_as_they_were(small_protocol, small_models, tmp_path):
    from bench.core.cache import Cache
    from bench.core.protocols import MODEL_PAIRS
    from bench.core.settings import RunSettings
    from bench.stages.context import RunContext

    tiny = MODEL_PAIRS.get("tiny")
    assert tiny.student_train.early_stopping is None
    # the tiny pair's hash and its student config's canonical JSON from before the option existed
    assert stable_hash(tiny) == "97fbfe6e7b575c3b"
    assert canonical_json(tiny.student_train) == \
        '{"batch_size":16,"epochs":1,"freeze_word_embeddings":true,"learning_rate":0.0001}'

    def cell_key(models) -> str:
        settings = RunSettings(small_protocol, models, "naive", out=tmp_path, cache_dir=tmp_path)
        return RunContext(settings, make_method("naive"), Cache(tmp_path)).cell_key(small_protocol.datasets[0], 0)

    explicit_off = dataclasses.replace(small_models, student_train=dataclasses.replace(
        small_models.student_train, early_stopping=None))
    stopped = small_models.early_stopped(EarlyStopping())
    assert cell_key(explicit_off) == cell_key(small_models) != cell_key(stopped)
    assert stopped.name == "tiny-test+early-stop"
    assert small_models.early_stopped(EarlyStopping(holdout=0.2, metric="agreement")).name == \
        "tiny-test+early-stop-holdout0.2-agreement"


def test_early_stopping_from_the_command_line_to_the_result_and_the_board(registered_small, session_cache, tmp_path,
                                                                         capsys):
    """`bench run --early-stopping every=2`: the pair is renamed, so its cells have their own folder and
    rows; the student's log holds the curve and the chosen step; the report and the model pair card say so;
    `bench compare naive@PAIR+early-stop naive@PAIR` pairs it with the same method trained without it."""
    from bench.cli import build_parser, main
    from bench.commands.settings import cell_settings
    from bench.core.results import find_cells

    protocol, models = registered_small
    argv = ["run", "--method", "naive", "--protocol", protocol.name, "--models", models.name, "--source", "recipes",
            "--out", str(tmp_path / "out"), "--cache-dir", str(session_cache)]   # the session's teachers
    assert cell_settings(build_parser().parse_args(argv), "naive").models == models   # off unless asked
    with pytest.raises(BenchError, match="every='two' is not a whole number"):
        cell_settings(build_parser().parse_args([*argv, "--early-stopping", "every=two"]), "naive")
    assert main([*argv, "--early-stopping", "every=2"]) == 0
    [cell] = find_cells(tmp_path / "out")
    assert cell.models["name"] == f"{models.name}+early-stop-every2"
    assert cell.models["student_train"]["early_stopping"] == {"holdout": 0.1, "every": 2, "metric": "loss"}
    record = cell.student["train"]["early_stopping"]
    steps = cell.student["train"]["steps"]
    assert [p["step"] for p in record["curve"]] == [s for s in range(1, steps + 1) if s % 2 == 0 or s == steps]
    assert record["chosen_step"] == min(record["curve"], key=lambda p: p["loss"])["step"]
    assert (tmp_path / "out" / protocol.name / f"{models.name}+early-stop-every2" / "naive").is_dir()
    capsys.readouterr()
    assert main(["report", "--out", str(tmp_path / "out")]) == 0
    assert f"{models.name}+early-stop-every2" in capsys.readouterr().out
    # submitted (once its other source has run, as the refusal says how), its settings are checked against
    # the registered pair with the recorded setting
    assert main(["submit", str(tmp_path / "out"), "--out", str(tmp_path / "subs"), "--submitter", "test"]) == 2
    hint = f"--models {models.name} --early-stopping holdout=0.1,every=2,metric=loss"
    assert hint in capsys.readouterr().err
    assert main([*argv[:-5], "travel", *argv[-4:], *hint.split()[2:]]) == 0
    assert main(["submit", str(tmp_path / "out"), "--out", str(tmp_path / "subs"), "--submitter", "test"]) == 0
    [folder] = [p.parent for p in (tmp_path / "subs").rglob("submission.json")]
    capsys.readouterr()
    assert main(["validate", str(folder)]) == 0
    assert "cannot be checked" not in capsys.readouterr().out
    # against naive without it, paired across the two pairs: the same cached teacher on both sides
    plain = [*argv[:-5], "recipes", "travel", *argv[-4:]]
    assert main(plain) == 0
    capsys.readouterr()
    stopped_pair = f"{models.name}+early-stop-every2"
    assert main(["compare", f"naive@{stopped_pair}", f"naive@{models.name}", "--out", str(tmp_path / "out")]) == 0
    out = capsys.readouterr().out
    assert f"naive@{stopped_pair} − naive@{models.name}, paired" in out and "NTS" in out
    assert main(["compare", "naive", f"naive@{models.name}", "--out", str(tmp_path / "out")]) == 2
    assert "give METHOD@PAIR with one of those pairs" in capsys.readouterr().err   # bare naive: on both pairs

    from leaderboard.core import context, load_board, model_pair_card, ranking

    board = load_board(tmp_path / "subs")   # the board's context row over the ranking says how its students trained
    [row] = [c for c in context(board, ranking(board)) if c.models == stopped_pair]
    assert row.models_words.endswith("; students early-stopped: the best checkpoint on 0.1 of the training pairs "
                                     "held out, checked every 2 steps by loss")

    card = model_pair_card(cell.models["name"], {cell.models["name"]: models.early_stopped(EarlyStopping(every=2))})
    assert "early-stopped: the best checkpoint on 0.1 of the training pairs held out, checked every 2 steps by loss" in card
    assert "students early-stopped: the best" not in card   # said once, on the student's line, not in the header too


# --- the learning-rate schedule ------------------------------------------------------------------
def test_lr_schedule_warms_up_from_its_first_step_then_decays_to_zero():
    """25 steps, warm-up ratio 0.1: round(2.5) = 2 warm-up steps at lr/2 and lr, then (25 - s) / 23.
    transformers' schedule would run its first step at lr 0 (bench_trl.py's trl-ours uses this one)."""
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    schedule, seen = lr_schedule(optimizer, total=25, warmup_ratio=0.1), []
    for _ in range(25):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        schedule.step()
    assert seen[:3] == [0.5, 1.0, 1.0] and seen[3] == pytest.approx(22 / 23) and seen[-1] == pytest.approx(1 / 23)
    assert sum(seen) == pytest.approx(0.5 + 1 + 276 / 23)
