"""The label stage (bench/stages/label_stage.py) and the label-side methods: each method's label rule against a
hand computation on tiny inputs, raven's combined loss and weight update, the features the probes read,
the stage's cache (reused, recomputed when a param changes), and every label-side method end to end."""
import math
import re
from pathlib import Path

import pytest
import torch

from bench.core.data import OrderedPair, Pair
from bench.core.errors import BenchError
from bench.core.result_schema import RESULT_FILE
from bench.core.results import recompute_folder
from bench.core.settings import RunSettings
from bench.stages import pipeline
from bench.stages.label_stage import checked
from methods import make_method
from methods.api import (
    LabelInputs,
    Labels,
    Method,
    Step,
    check_method_class,
    drop_share,
    has_label_stage,
)
from methods.naive import Naive
from methods.probe_relabel import knn_predictions, logreg_predictions
from methods.raven import combined_targets, weight_step

ROOT = Path(__file__).resolve().parents[1]
LABEL_SIDE = ("teacher-ensemble", "raven", "reliability-filter", "probe-relabel", "probe-filter", "unbiased")


def inputs_of(soft, members=None, features=None, error=None) -> LabelInputs:
    """LabelInputs on toy pairs: ``members`` {m: labels} for teachers 1.., ``features`` a tensor; what the
    method asked for is noted in ``asked``."""
    ordered = [OrderedPair(Pair(f"p{i}", (("user", "q"),), "good", "bad"), True) for i in range(len(soft))]
    asked = []

    def member_labels(m):
        asked.append(m)
        return members[m]

    inputs = LabelInputs(ordered, list(soft), member_labels, lambda: None, lambda: features,
                         held_out_error=None if error is None else lambda: error)
    inputs.asked = asked
    return inputs


# --- the hook ------------------------------------------------------------------------------------------
def test_only_the_label_side_methods_have_a_label_stage():
    assert all(has_label_stage(make_method(name)) for name in LABEL_SIDE)
    assert not any(has_label_stage(make_method(name)) for name in ("naive", "ceiling", "anchor", "window", "length"))


def test_a_label_stage_on_a_method_that_trains_nothing_or_learns_gold_is_refused():
    class Bad(Naive):
        """
        name: bad-labels
        idea: a label stage on gold labels
        """
        labels = "gold"

        def relabel(self, inputs):
            return Labels(inputs.soft_labels)

    with pytest.raises(BenchError, match="learns from gold labels"):
        check_method_class(Bad, "test")
    assert Method.relabel is not Bad.relabel


def test_malformed_labels_fail_with_the_method_named():
    assert checked(Labels([0.2, 0.9]), 2, "m") == ([0, 1], [0.2, 0.9], None)
    assert checked(Labels([0.9], kept=[1], teacher_labels=[[0.8, 1.0]]), 2, "m") == ([1], [0.9], [[0.8, 1.0]])
    for labels, message in ((Labels([], kept=[]), "kept no pairs"), (Labels([0.1, 0.2], kept=[1, 0]), "increasing"),
                            (Labels([0.1], kept=[2]), "increasing"), (Labels([0.5]), "1 targets for 2"),
                            (Labels([0.5, float("nan")]), "outside"), (Labels([0.5, 1.5]), "outside"),
                            (Labels([0.5, 0.5], teacher_labels=[[0.5], [0.5, 0.5]]), "one row per training pair")):
        with pytest.raises(BenchError, match=message):
            checked(labels, 2, "m")


def test_drop_share_drops_the_floor_of_the_share_highest_earlier_first():
    assert drop_share([0.1, 0.5, 0.3, 0.5], 0.5) == [0, 2]          # both 0.5s go
    assert drop_share([0.1, 0.5, 0.3, 0.5], 0.25) == [0, 2, 3]      # one: the earlier of the tie
    assert drop_share([0.1, 0.5, 0.3], 0.3) == [0, 1, 2]            # floor(0.9) = 0


# --- teacher-ensemble ----------------------------------------------------------------------------------
def test_teacher_ensemble_is_the_mean_of_k_teachers():
    inputs = inputs_of([0.9, 0.2, 0.6], members={1: [0.7, 0.4, 0.5], 2: [0.8, 0.3, 0.1]})
    labels = make_method("teacher-ensemble").relabel(inputs)
    assert labels.targets == pytest.approx([0.8, 0.3, 0.4])          # (0.9+0.7+0.8)/3, (0.2+0.4+0.3)/3, (0.6+0.5+0.1)/3
    assert labels.kept is None and inputs.asked == [1, 2]            # member 0 is the cell's own teacher
    assert make_method("teacher-ensemble", {"k": 2}).relabel(inputs).targets == pytest.approx([0.8, 0.3, 0.55])


# --- reliability-filter --------------------------------------------------------------------------------
Q10 = [0.9, 0.45, 0.7, 0.2, 0.52, 0.99, 0.1, 0.6, 0.35, 0.8]   # |q - 1/2|: .4 .05 .2 .3 .02 .49 .4 .1 .15 .3


def test_reliability_filter_drops_the_least_confident_tenth():
    labels = make_method("reliability-filter").relabel(inputs_of(Q10))
    assert labels.kept == [0, 1, 2, 3, 5, 6, 7, 8, 9]               # pair 4 (|0.52 - 0.5| = 0.02) dropped
    assert labels.targets == [Q10[i] for i in labels.kept] and labels.info["dropped"] == 1
    assert make_method("reliability-filter", {"share": 0.2}).relabel(inputs_of(Q10)).kept == [0, 2, 3, 5, 6, 7, 8, 9]


def test_reliability_filter_by_disagreement_drops_the_largest_variance():
    members = {1: [0.9, 0.8, 0.7, 0.2], 2: [0.9, 0.5, 0.5, 0.6]}
    inputs = inputs_of([0.9, 0.2, 0.6, 0.4], members)
    # per pair (q, q1, q2): (.9,.9,.9) var 0; (.2,.8,.5) var (.09+.09+0)/3 = .06; (.6,.7,.5) var .02/3; (.4,.2,.6) var .08/3
    labels = make_method("reliability-filter", {"by": "disagreement", "share": 0.25}).relabel(inputs)
    assert labels.kept == [0, 2, 3] and labels.targets == [0.9, 0.6, 0.4] and inputs.asked == [1, 2]


# --- probe-relabel and probe-filter ----------------------------------------------------------------------
X = torch.tensor([[0.0], [1.0], [2.0], [10.0], [11.0], [12.0]])
QX = [0.9, 0.8, 0.1, 0.2, 0.3, 0.7]


def test_knn_relabels_with_the_mean_of_the_k_nearest_itself_included():
    q = torch.tensor(QX, dtype=torch.float64)
    # k=3: the two clusters {0,1,2} and {3,4,5}: means (0.9+0.8+0.1)/3 = 0.6 and (0.2+0.3+0.7)/3 = 0.4
    assert knn_predictions(X, q, 3).tolist() == pytest.approx([0.6, 0.6, 0.6, 0.4, 0.4, 0.4])
    # k=2: itself and the nearest other; pair 1 and pair 4 have two at distance 1: the earlier is taken
    assert knn_predictions(X, q, 2).tolist() == pytest.approx([0.85, 0.85, 0.45, 0.25, 0.25, 0.5])
    labels = make_method("probe-relabel", {"k": 3}).relabel(inputs_of(QX, features=X))
    assert labels.targets == pytest.approx([0.6, 0.6, 0.6, 0.4, 0.4, 0.4]) and labels.kept is None
    # agreement with the teacher on the preferred side: 0.6 vs .9 .8 .1 and 0.4 vs .2 .3 .7 -> 4 of 6
    assert labels.info == {"probe": "knn", "k": 3, "agreement_with_teacher": pytest.approx(400 / 6)}
    # k larger than half B: every pair, i.e. the mean label
    assert make_method("probe-relabel").relabel(inputs_of(QX, features=X)).info["k"] == 6


def test_logistic_probe_fits_the_labels_by_hand():
    # x = +1 and -1 with labels 0.8 and 0.2: the minimiser is sigmoid(w) = 0.8, w = ln 4 (no penalty)
    p = logreg_predictions(torch.tensor([[1.0], [-1.0]]), torch.tensor([0.8, 0.2], dtype=torch.float64), 0.0)
    assert p.tolist() == pytest.approx([0.8, 0.2], abs=1e-6)
    # with an L2 penalty the weight shrinks: the stationarity condition -(0.8 - s(w)) + 2 * l2 * w = 0 holds
    p = logreg_predictions(torch.tensor([[1.0], [-1.0]]), torch.tensor([0.8, 0.2], dtype=torch.float64), 0.1)
    w = math.log(p[0] / (1 - p[0]))
    assert -(0.8 - p[0].item()) + 2 * 0.1 * w == pytest.approx(0.0, abs=1e-6) and p[0] < 0.8


def test_probe_filter_drops_the_pairs_the_probe_disagrees_with_most():
    q = [1.0, 0.5, 0.0, 0.25, 0.25, 0.625]   # exact in binary, so that the tie below is one
    # k=3 predictions: the cluster means 1.5/3 = 0.5 and 1.125/3 = 0.375; |p - q| = .5 0 .5 .125 .125 .25
    one = make_method("probe-filter", {"k": 3, "share": 0.17}).relabel(inputs_of(q, features=X))
    assert one.kept == [1, 2, 3, 4, 5] and one.info["dropped"] == 1    # floor(1.02): pair 0, the earlier of the tie
    three = make_method("probe-filter", {"k": 3, "share": 0.5}).relabel(inputs_of(q, features=X))
    assert three.kept == [1, 3, 4] and three.targets == [0.5, 0.25, 0.25]   # pairs 0, 2 (0.5) and 5 (0.25) dropped


# --- raven -----------------------------------------------------------------------------------------------
LN4 = math.log(4.0)


def test_raven_labels_are_the_uniform_combination_of_the_teachers_logits():
    inputs = inputs_of([0.8, 0.8], members={1: [0.5, 0.8], 2: [0.2, 0.5]})
    labels = make_method("raven").relabel(inputs)
    # pair 0: logits ln4, 0, -ln4 -> mean 0 -> 0.5; pair 1: ln4, ln4, 0 -> mean 2 ln4 / 3
    assert labels.targets == pytest.approx([0.5, 1 / (1 + 4 ** (-2 / 3))])
    assert labels.teacher_labels == [[0.8, 0.5, 0.2], [0.8, 0.8, 0.5]] and labels.kept is None


def raven_step(d, teacher_labels, progress_index=0, total=10):
    return Step(r_a=torch.tensor(d), r_b=torch.zeros(len(d)), target=torch.full((len(d),), 0.5), batch={},
                hidden_states=None, index=progress_index, total=total, teacher_labels=torch.tensor(teacher_labels))


def test_raven_loss_is_bt_on_the_combined_target_and_its_weights_follow_the_student():
    method = make_method("raven", {"lr": 0.1, "hold": 0.0})
    loss, logs = method.loss(raven_step([2.0], [[0.8, 0.5, 0.2]]))
    # uniform weights: target = sigmoid((ln4 + 0 - ln4) / 3) = 0.5; loss = -[0.5 log s(2) + 0.5 log s(-2)]
    s = 1 / (1 + math.exp(-2.0))
    assert loss.item() == pytest.approx(-(0.5 * math.log(s) + 0.5 * math.log(1 - s)), rel=1e-6)
    # dloss/dw_k = -d * t (1 - t) * z_k = -2 * 0.25 * (ln4, 0, -ln4); w - 0.1 * grad already sums to 1
    expected = [1 / 3 + 0.05 * LN4, 1 / 3, 1 / 3 - 0.05 * LN4]
    assert method.weights.tolist() == pytest.approx(expected, rel=1e-5)
    assert [logs[f"w{k}"].item() for k in range(3)] == pytest.approx(expected, rel=1e-5)
    # the next step's target uses the moved weights: the student preferred a, as teacher 0 does
    assert combined_targets(torch.tensor([[0.8, 0.5, 0.2]]), method.weights).item() > 0.5


def test_raven_weights_stay_uniform_while_held_and_are_projected_on_the_simplex():
    method = make_method("raven")                                    # hold 0.1: steps 0 of 10 are held
    method.loss(raven_step([2.0], [[0.8, 0.5, 0.2]], progress_index=0))
    assert method.weights.tolist() == pytest.approx([1 / 3] * 3)
    method.loss(raven_step([2.0], [[0.8, 0.5, 0.2]], progress_index=1))
    assert method.weights[0] > 1 / 3 > method.weights[2]
    # a step that pushes a weight below zero: clamped at 1e-6, then every weight renormalised. Here z = (ln4, 0, -ln4),
    # t = s(0.97 ln4), grad = 50 t (1 - t) z, and w - 10 grad = (0.98 - 10 g, 0.01, 0.01 + 10 g), g = 50 t (1 - t) ln4
    w = weight_step(torch.tensor([0.98, 0.01, 0.01]), torch.tensor([[0.8, 0.5, 0.2]]), torch.tensor([-50.0]), 10.0)
    t = 1 / (1 + math.exp(-0.97 * LN4))
    g = 50 * t * (1 - t) * LN4
    unnormalised = [1e-6, 0.01, 0.01 + 10 * g]
    assert w.tolist() == pytest.approx([x / sum(unnormalised) for x in unnormalised], rel=1e-4)


def test_raven_weights_get_the_gradient_of_the_loss():
    """weight_step's update is -lr times autograd's gradient of the combined loss, checked against the
    analytic one, mean over pairs of -d_i t_i (1 - t_i) z_ik."""
    labels = torch.tensor([[0.8, 0.5, 0.2], [0.3, 0.6, 0.9]])
    d, w = torch.tensor([1.5, -0.5]), torch.tensor([0.5, 0.3, 0.2])
    z = torch.logit(labels)
    t = torch.sigmoid(z @ w)
    grad = (-(d * t * (1 - t))[:, None] * z).mean(0)
    assert weight_step(w, labels, d, 1e-3).tolist() == pytest.approx(((w - 1e-3 * grad) / (w - 1e-3 * grad).sum()).tolist(),
                                                                      rel=1e-5)


def test_raven_without_teacher_labels_says_how_to_run_it():
    with pytest.raises(BenchError, match="Step.teacher_labels"):
        make_method("raven").loss(Step(torch.tensor([1.0]), torch.tensor([0.0]), torch.tensor([0.5]), {}, None))


# --- the features the probes read --------------------------------------------------------------------------
def _check_features_are_what_the_head_reads(model, fmt):
    from bench.core.anatomy import head_of, inner_model
    from bench.stages.batches import score
    from bench.stages.label_stage import head_input_differences

    prompt = (("user", "how do I boil an egg?"),)
    texts = [("Simmer it for nine minutes.", "Microwave it."), ("Shake it.", "Start in cold water, then simmer."),
             ("Peel it first.", "Nine minutes.")]
    pairs = [(fmt.encode(prompt, a), fmt.encode(prompt, b)) for a, b in texts]
    features = head_input_differences(model, pairs, batch_size=4)     # two pairs per batch: two batches
    rewards = score(model, [a for a, _ in pairs] + [b for _, b in pairs], 8, pairs=True)
    _, head = head_of(inner_model(model))
    gaps = features @ head.weight.detach().float()[0]                 # the head is linear: w . (f(a) - f(b))
    assert features.shape[0] == 3
    assert gaps.tolist() == pytest.approx([a - b for a, b in zip(rewards[:3], rewards[3:])], abs=1e-4)


def test_features_are_what_the_encoder_head_reads(strong_spec):
    import dataclasses

    from bench.core.formatting import formatter_for
    from bench.stages.models import load_reward_model, load_tokenizer

    spec = dataclasses.replace(strong_spec, num_layers=1)
    _check_features_are_what_the_head_reads(load_reward_model(spec, seed=0), formatter_for(spec, load_tokenizer(spec), 48))
    mean = dataclasses.replace(spec, readout="response_mean")           # the head runs twice; the reward's call counts
    _check_features_are_what_the_head_reads(load_reward_model(mean, seed=0), formatter_for(mean, load_tokenizer(mean), 48))


def test_features_are_what_the_decoder_head_reads_on_pair_rows(tmp_path):
    from decoder_fixtures import save_tiny_decoder

    from bench.core.formatting import formatter_for
    from bench.core.specs import ModelSpec
    from bench.stages.models import load_reward_model, load_tokenizer

    save_tiny_decoder(tmp_path, "qwen")
    spec = ModelSpec(name="tiny-qwen", path=str(tmp_path), architecture="decoder")
    _check_features_are_what_the_head_reads(load_reward_model(spec, seed=0), formatter_for(spec, load_tokenizer(spec), 128))


# --- the stage in a run: cache and end to end ----------------------------------------------------------------
@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("label_cache")


def run_one(protocol, models, method, params, out, cache):
    [result] = pipeline.run(RunSettings(protocol, models, method, params, [protocol.datasets[0]], [0], out, cache))
    return result


def test_the_label_stage_is_cached_and_a_changed_param_recomputes_it(small_protocol, small_models, tmp_path, cache):
    first = run_one(small_protocol, small_models, "reliability-filter", {}, tmp_path / "a", cache)
    stage, half_b = first.label_stage, first.sizes["half_b"]
    assert stage["reused"] is False and stage["pairs"] == half_b and stage["kept"] == half_b - math.floor(0.1 * half_b)
    assert first.labels.pairs == stage["kept"] and first.labels.stage == stage["cache_key"]
    assert first.student["train"]["pairs"] == stage["kept"] and (cache / "labels" / stage["cache_key"]).is_dir()
    again = run_one(small_protocol, small_models, "reliability-filter", {}, tmp_path / "b", cache)
    assert again.label_stage["reused"] is True and again.label_stage["cache_key"] == stage["cache_key"]
    assert again.labels == first.labels                               # the same labels, read back from the entry
    other = run_one(small_protocol, small_models, "reliability-filter", {"share": 0.25}, tmp_path / "c", cache)
    assert other.label_stage["reused"] is False and other.label_stage["cache_key"] != stage["cache_key"]
    assert other.label_stage["kept"] == half_b - math.floor(0.25 * half_b)
    # a method without a label stage records none, and its cell key holds no label-stage code
    naive = run_one(small_protocol, small_models, "naive", {}, tmp_path / "d", cache)
    assert naive.label_stage is None and naive.labels.stage is None and naive.labels.pairs == half_b


@pytest.mark.parametrize("name", LABEL_SIDE)
def test_every_label_side_method_runs_end_to_end(name, small_protocol, small_models, tmp_path, cache):
    result = run_one(small_protocol, small_models, name, {}, tmp_path, cache)
    assert recompute_folder(next(tmp_path.rglob(RESULT_FILE)).parent) == []
    stage, half_b = result.label_stage, result.sizes["half_b"]
    assert result.labels.stage == stage["cache_key"] and result.labels.pairs == stage["kept"]
    assert stage["kept"] == (half_b - math.floor(0.1 * half_b) if name.endswith("filter") else half_b)
    if name in ("teacher-ensemble", "raven"):   # three teachers: the cell's and two more, each its own entry
        assert [t["member"] for t in stage["teachers"]] == [0, 1, 2]
        assert stage["teachers"][0]["cache_key"] == result.teacher["cache_key"]
        assert len({t["cache_key"] for t in stage["teachers"]}) == 3
    if name == "raven":
        weights = result.student["train"]["raven_weights"]
        assert len(weights) == 3 and sum(weights) == pytest.approx(1.0)
        cfg = small_models.student_train   # the reference's lr per training pair: once per batch of 2, over 2 epochs
        assert result.student["train"]["raven_step_lr"] == pytest.approx(0.01 * cfg.batch_size / cfg.epochs)
    if name.startswith("probe"):
        assert stage["features"]["width"] == 384 and stage["probe"] == "knn"
    if name == "unbiased":   # hard labels, and the flip rate of a teacher trained on ~80% of half A, scored on the rest
        held = stage["held_out_teacher"]
        assert math.floor(0.2 * result.sizes["half_a"]) <= held["pairs"] < result.sizes["half_a"]   # whole groups
        assert held["cache_key"] != result.teacher["cache_key"]
        assert stage["eps"] == held["error"] and 0.0 <= held["error"] < 0.5 and stage["eps_from"] == "teacher held-out error"
        assert result.student["train"]["last_step_logs"]["eps"] == pytest.approx(held["error"])


def test_a_submission_of_a_filtering_method_validates(small_protocol, small_models, tmp_path, cache):
    from bench.submissions.check import validate_submission
    from bench.submissions.pack import submit

    pipeline.run(RunSettings(small_protocol, small_models, "reliability-filter", {}, list(small_protocol.datasets), [0],
                             tmp_path / "results", cache))   # a submission holds every cell of the protocol
    [folder] = submit([tmp_path / "results"], tmp_path / "submissions", submitter="test suite", command="bench submit",
                      protocols={small_protocol.name: small_protocol}, model_pairs={small_models.name: small_models})
    v = validate_submission(folder, {small_protocol.name: small_protocol}, {small_models.name: small_models})
    assert v.ok, v.errors


def test_unbiased_relabels_with_the_teachers_hard_labels_and_its_held_out_error():
    labels = make_method("unbiased").relabel(inputs_of([0.9, 0.3, 0.5, 0.51], error=0.2))
    assert labels.targets == [1.0, 0.0, 0.5, 1.0] and labels.kept is None
    assert labels.info == {"eps": 0.2, "eps_from": "teacher held-out error"}
    given = make_method("unbiased", {"eps": 0.1}).relabel(inputs_of([0.9], error=0.4))
    assert given.info == {"eps": 0.1, "eps_from": "param"}
    with pytest.raises(BenchError, match="held-out error is 0.500.*no better than chance"):
        make_method("unbiased").relabel(inputs_of([0.9], error=0.5))
    with pytest.raises(BenchError, match="needs a pipeline run"):
        make_method("unbiased").relabel(inputs_of([0.9]))


def test_the_held_out_teachers_split_keeps_every_group_on_one_side():
    from bench.stages.teacher import split_half_a

    half_a = [Pair(f"p{i}", (("user", f"q{i % 7}"),), "good", "bad", group=f"topic{i % 5}") for i in range(40)]
    train, held = split_half_a(half_a, 0.2, seed=3)
    assert sorted(p.id for p in train + held) == sorted(p.id for p in half_a)     # a partition of half A ...
    assert [p.id for p in train] == [p.id for p in half_a if p in train]          # ... each part in half A's order
    assert not {p.group_key for p in train} & {p.group_key for p in held}         # no topic on both sides
    assert len(held) == 8                                     # 5 topics of 8 pairs: one whole topic reaches 20%
    assert split_half_a(half_a, 0.2, seed=3) == (train, held) and split_half_a(half_a, 0.2, seed=4) != (train, held)
    assert len(split_half_a(half_a, 0.5, seed=3)[1]) == 24   # groups are added until the share is reached
    with pytest.raises(BenchError, match="1 prompt group.*--cap-train"):
        split_half_a([Pair("x", (("user", "q"),), "a", "b"), Pair("y", (("user", "q"),), "c", "d")], 0.2, seed=0)


def test_unbiased_on_a_cached_label_stage_still_gets_its_flip_rate(small_protocol, small_models, tmp_path, cache):
    """The second run reads the labels from the cache, so relabel does not run: the flip rate must reach the
    loss through Method.relabelled all the same (a fresh method object in each run)."""
    first = run_one(small_protocol, small_models, "unbiased", {}, tmp_path / "a", cache)
    again = run_one(small_protocol, small_models, "unbiased", {}, tmp_path / "b", cache)
    assert again.label_stage["reused"] is True and again.label_stage["eps"] == first.label_stage["eps"]
    assert again.student["train"]["last_step_logs"]["eps"] == pytest.approx(first.label_stage["held_out_teacher"]["error"])
    assert again.student == first.student and again.labels == first.labels


# --- the doc ---------------------------------------------------------------------------------------------
def test_the_label_side_example_of_the_doc_runs_by_hand():
    doc = (ROOT / "docs" / "adding-a-method.md").read_text()
    [block] = [b for b in re.findall(r"```python\n(.*?)```", doc, flags=re.S) if "def relabel" in b]
    namespace: dict = {}
    exec(block, namespace)
    method = namespace["Confident"](namespace["Confident"].Params(margin=0.2))
    labels = method.relabel(inputs_of([0.9, 0.55, 0.3, 0.65]))       # |q - 1/2| = .4 .05 .2 .15
    assert labels.kept == [0, 2] and labels.targets == [0.9, 0.3]
