"""The loss-side methods (entropy, window, product, adaptconf, gce, bsr) and unbiased's loss against hand
computations on tiny tensors, their parameter checks, and probe: only the reward head trains."""
import dataclasses
import math
import re
from types import SimpleNamespace

import pytest
import torch
from helpers import step_of
from torch import nn

from bench.core.errors import BadParamsError, BenchError
from methods import METHODS, make_method
from methods.api import Step

NEW = ("entropy", "window", "product", "adaptconf", "gce", "unbiased", "bsr", "probe")


def sig(x):
    return 1 / (1 + math.exp(-x))


def bce(d, t):
    """-[t log s(d) + (1 - t) log s(-d)], the soft-label BT loss of one pair, written out."""
    return -(t * math.log(sig(d)) + (1 - t) * math.log(sig(-d)))


def test_the_new_methods_are_registered_and_listed(capsys):
    from bench.cli import main

    assert set(NEW) <= set(METHODS.names())
    assert main(["list", "methods"]) == 0
    out = capsys.readouterr().out
    for name in NEW:
        assert re.search(rf"^{re.escape(name)} +\S", out, re.M), name
    assert "radius: median|float = 0.15" in out and "eps: auto|float = 'auto'" in out
    assert make_method("rdpo").name == "unbiased" and make_method("linear-probe").name == "probe"


# --- entropy --------------------------------------------------------------------------------------
def test_entropy_blends_the_teacher_label_with_the_soft_student_prediction():
    step = step_of([1.0, -0.5], [0.0, 0.0], [0.9, 0.3], index=5, total=10, grad=True)   # progress 0.5
    loss, logs = make_method("entropy").loss(step)                      # alpha 0.5, warmup 0.1: alpha_t = 0.5
    p = [sig(1.0), sig(-0.5)]
    target = [0.5 * 0.9 + 0.5 * p[0], 0.5 * 0.3 + 0.5 * p[1]]
    assert logs["alpha_t"] == 0.5
    assert loss.item() == pytest.approx((bce(1.0, target[0]) + bce(-0.5, target[1])) / 2, rel=1e-6)
    loss.backward()
    # the student's part of the target is detached: the gradient is naive's times (1 - alpha_t)
    assert step.r_a.grad.tolist() == pytest.approx([0.5 * (p[0] - 0.9) / 2, 0.5 * (p[1] - 0.3) / 2], rel=1e-5)


def test_entropy_warms_alpha_up_linearly():
    _, logs = make_method("entropy", {"alpha": 0.4}).loss(step_of([1.0], [0.0], [0.9], index=1, total=20))
    assert logs["alpha_t"] == pytest.approx(0.4 * 0.05 / 0.1)           # progress 0.05, half the warm-up


# --- window ---------------------------------------------------------------------------------------
def test_window_learns_only_uncertain_pairs_and_averages_over_the_whole_batch():
    r_a, q = [0.1, 2.0, -0.3, -3.0], [0.8, 0.7, 0.2, 0.1]
    loss, logs = make_method("window").loss(step_of(r_a, [0.0] * 4, q))
    # p = 0.525, 0.881, 0.426, 0.047: |p - 1/2| < 0.15 for the first and third only
    assert abs(sig(0.1) - 0.5) < 0.15 and abs(sig(-0.3) - 0.5) < 0.15 and abs(sig(2.0) - 0.5) > 0.15
    assert loss.item() == pytest.approx((bce(0.1, 0.8) + bce(-0.3, 0.2)) / 4, rel=1e-6)
    assert logs["uncertain_rate"] == 0.5


def test_window_on_an_all_confident_batch_is_a_finite_zero_with_a_graph():
    step = step_of([3.0, -4.0], [0.0, 0.0], [0.9, 0.2], grad=True)
    loss, _ = make_method("window").loss(step)
    assert loss.item() == 0.0 and loss.requires_grad
    loss.backward()
    assert step.r_a.grad.tolist() == [0.0, 0.0]


def test_window_median_radius_is_set_from_the_training_labels():
    method = make_method("window", {"radius": "median"})
    with pytest.raises(BenchError, match="radius=median"):
        method.loss(step_of([0.0], [0.0], [0.5]))
    seen = []
    examples = [SimpleNamespace(target=t) for t in (0.9, 0.6, 0.2, 0.5)]
    log = method.fit(None, examples, None, lambda student, ex, cfg: seen.append(method.radius) or {"steps": 1})
    # |q - 1/2| = 0.4, 0.1, 0.3, 0.0; sorted 0.0, 0.1, 0.3, 0.4: the lower middle value, as torch's median
    assert seen == [pytest.approx(0.1)] and log == {"steps": 1, "window_radius": pytest.approx(0.1)}
    loss, _ = method.loss(step_of([0.2, 1.0], [0.0, 0.0], [0.7, 0.7]))   # |p - 1/2| = 0.050 and 0.231
    assert loss.item() == pytest.approx(bce(0.2, 0.7) / 2, rel=1e-6)


# --- product --------------------------------------------------------------------------------------
def test_product_target_multiplies_student_and_teacher():
    step = step_of([1.0, -2.0], [0.0, 0.0], [0.8, 0.4], grad=True)
    loss, _ = make_method("product").loss(step)                          # alpha = beta = 1
    p = [sig(1.0), sig(-2.0)]
    t = [p[0] * 0.8 / (p[0] * 0.8 + (1 - p[0]) * 0.2), p[1] * 0.4 / (p[1] * 0.4 + (1 - p[1]) * 0.6)]
    assert loss.item() == pytest.approx((bce(1.0, t[0]) + bce(-2.0, t[1])) / 2, rel=1e-6)
    loss.backward()
    assert step.r_a.grad.tolist() == pytest.approx([(p[0] - t[0]) / 2, (p[1] - t[1]) / 2], rel=1e-5)  # t detached


def test_product_exponents_and_a_teacher_certain_label():
    loss, _ = make_method("product", {"alpha": 2.0, "beta": 0.5}).loss(step_of([1.5], [0.0], [0.3]))
    p = sig(1.5)
    t = p ** 0.5 * 0.3 ** 2 / (p ** 0.5 * 0.3 ** 2 + (1 - p) ** 0.5 * 0.7 ** 2)
    assert loss.item() == pytest.approx(bce(1.5, t), rel=1e-6)
    # alpha = 0: q^0 = 1 even at q = 0, so the target is the student's own p (beta = 1), not 0/0
    loss, logs = make_method("product", {"alpha": 0.0}).loss(step_of([1.5], [0.0], [0.0]))
    assert logs["target_mean"].item() == pytest.approx(p) and loss.item() == pytest.approx(bce(1.5, p), rel=1e-6)
    # q = 1 with alpha > 0 puts all the target on a, however sure the student is of b
    _, logs = make_method("product").loss(step_of([-30.0], [0.0], [1.0]))
    assert logs["target_mean"].item() == 1.0


# --- adaptconf ------------------------------------------------------------------------------------
def test_adaptconf_weights_by_hand():
    d, q, T = [2.0, -1.0, 0.5], [0.9, 0.8, 0.3], 0.5
    loss, logs = make_method("adaptconf").loss(step_of(d, [0.0] * 3, q))
    # hard labels: the student's [1, 0, 1], the teacher's [1, 1, 0]
    own, teacher = [1, 0, 1], [1, 1, 0]
    beta = []
    for di, hs, hw in zip(d, own, teacher):
        ce_s, ce_w = bce(di, hs), bce(di, hw)
        beta.append(math.exp(ce_s / T) / (math.exp(ce_s / T) + math.exp(ce_w / T)))
    assert beta[0] == 0.5                                                # agreement: 1/2
    assert beta[1] == pytest.approx(sig(-1.0 / T)) and beta[2] == pytest.approx(sig(-0.5 / T))  # disagreement
    expected = sum((1 - b) * bce(di, qi) + b * bce(di, hs) for b, di, qi, hs in zip(beta, d, q, own)) / 3
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    assert logs["beta_mean"].item() == pytest.approx(sum(beta) / 3, rel=1e-6)


def test_adaptconf_weight_is_not_differentiated():
    step = step_of([-1.0], [0.0], [0.8], grad=True)
    loss, _ = make_method("adaptconf", {"temperature": 2.0}).loss(step)
    loss.backward()
    b, p = sig(-1.0 / 2.0), sig(-1.0)
    # d/dd of (1 - b) l(d, 0.8) + b l(d, 0) with b held: (1 - b)(p - 0.8) + b p
    assert step.r_a.grad.item() == pytest.approx((1 - b) * (p - 0.8) + b * p, rel=1e-5)


# --- gce ------------------------------------------------------------------------------------------
def test_gce_by_hand_and_its_two_ends():
    k = 0.7
    loss, _ = make_method("gce").loss(step_of([0.4, -1.2], [0.0, 0.0], [0.7, 0.2]))
    p = [sig(0.4), sig(-1.2)]
    per = [q * (1 - pi ** k) / k + (1 - q) * (1 - (1 - pi) ** k) / k for pi, q in zip(p, [0.7, 0.2])]
    assert loss.item() == pytest.approx(sum(per) / 2, rel=1e-6)
    # exponent 1: mean absolute error q (1 - p) + (1 - q) p
    mae, _ = make_method("gce", {"exponent": 1.0}).loss(step_of([0.4], [0.0], [0.7]))
    assert mae.item() == pytest.approx(0.7 * (1 - p[0]) + 0.3 * p[0], rel=1e-6)
    # exponent -> 0: naive's cross-entropy ((1 - p^k) / k = -log p - k log^2 p / 2 + ...; in float64, where
    # 1 - p^k keeps its digits)
    near_ce, _ = make_method("gce", {"exponent": 1e-6}).loss(step_of([0.4], [0.0], [0.7], dtype=torch.float64))
    assert near_ce.item() == pytest.approx(bce(0.4, 0.7), rel=1e-5)


# --- unbiased -------------------------------------------------------------------------------------
def test_unbiased_with_a_given_flip_rate():
    loss, logs = make_method("unbiased", {"eps": "0.2"}).loss(step_of([1.0, -0.5], [0.0, 0.0], [1.0, 0.0]))
    per = [(0.8 * bce(1.0, 1.0) - 0.2 * bce(1.0, 0.0)), (0.8 * bce(-0.5, 0.0) - 0.2 * bce(-0.5, 1.0))]
    assert loss.item() == pytest.approx(sum(per) / 2 / (1 - 2 * 0.2), rel=1e-6)
    assert logs["eps"].item() == pytest.approx(0.2)
    # the same as BT on the target (y - eps) / (1 - 2 eps), outside [0, 1]
    t = [(1.0 - 0.2) / 0.6, (0.0 - 0.2) / 0.6]
    assert loss.item() == pytest.approx((bce(1.0, t[0]) + bce(-0.5, t[1])) / 2, rel=1e-6)
    # eps = 0 is naive on the hard labels
    plain, _ = make_method("unbiased", {"eps": 0.0}).loss(step_of([1.0], [0.0], [1.0]))
    assert plain.item() == pytest.approx(bce(1.0, 1.0), rel=1e-6)


def test_unbiased_auto_takes_its_flip_rate_from_the_label_stage():
    method = make_method("unbiased")
    with pytest.raises(BenchError, match="label stage.*--param eps"):
        method.loss(step_of([1.0], [0.0], [1.0]))
    method.relabelled({"eps": 0.25, "eps_from": "teacher held-out error"})   # what the stage hands it
    loss, logs = method.loss(step_of([1.0, -0.5], [0.0, 0.0], [1.0, 1.0]))
    per = [0.75 * bce(1.0, 1.0) - 0.25 * bce(1.0, 0.0), 0.75 * bce(-0.5, 1.0) - 0.25 * bce(-0.5, 0.0)]
    assert logs["eps"].item() == 0.25 and loss.item() == pytest.approx(sum(per) / 2 / 0.5, rel=1e-6)


# --- bsr ------------------------------------------------------------------------------------------
def test_bsr_adds_the_squared_batch_mean_of_all_rewards():
    loss, logs = make_method("bsr", {"lam": 0.1}).loss(step_of([1.0, 2.0], [0.0, -1.0], [0.7, 0.6]))
    mean = (1.0 + 2.0 + 0.0 - 1.0) / 4                                   # chosen and rejected alike: 0.5
    penalty = 0.1 * 2 * mean ** 2                                        # lam * B * mean^2, B = 2 pairs
    bt = (bce(1.0, 0.7) + bce(3.0, 0.6)) / 2
    assert logs["reward_mean"].item() == pytest.approx(0.5) and logs["bsr_penalty"].item() == pytest.approx(0.05)
    assert loss.item() == pytest.approx(bt + penalty, rel=1e-6)


def test_bsr_gradient_on_each_reward_is_lam_times_the_mean():
    r_a, r_b = torch.tensor([1.0, 1.0], requires_grad=True), torch.tensor([1.0, 1.0], requires_grad=True)
    loss, _ = make_method("bsr", {"lam": 0.3}).loss(Step(r_a, r_b, torch.tensor([0.5, 0.5]), {}, None))
    loss.backward()
    # BT's gradient is s(0) - 1/2 = 0; lam * B * 2 * mean / 2B = lam * mean = 0.3 on every reward
    assert r_a.grad.tolist() == pytest.approx([0.3, 0.3]) and r_b.grad.tolist() == pytest.approx([0.3, 0.3])


def test_default_lambda_is_the_references():
    assert make_method("bsr").params.lam == 1e-3


# --- parameters -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name, params, message", [
    ("entropy", {"alpha": "1.5"}, r"alpha: .*Valid params: alpha: float = 0.5, warmup: float = 0.1"),
    ("window", {"radius": "widest"}, r"Valid params: radius: median\|float = 0.15"),
    ("window", {"radius": "0.7"}, r"radius.*less than or equal to 0.5"),
    ("window", {"radius": "0"}, r"radius.*greater than 0"),
    ("product", {"gamma": "1"}, r"gamma: Extra inputs are not permitted.*alpha: float = 1.0, beta: float = 1.0"),
    ("product", {"alpha": "-1"}, r"alpha"),
    ("adaptconf", {"temperature": "0"}, r"temperature.*Valid params: temperature: float = 0.5"),
    ("gce", {"q": "0.7"}, r"q: Extra inputs.*Valid params: exponent: float = 0.7"),
    ("gce", {"exponent": "1.5"}, r"exponent"),
    ("unbiased", {"eps": "0.5"}, r"eps.*less than 0.5.*Valid params: eps: auto\|float = 'auto'"),
    ("unbiased", {"eps": "often"}, r"eps"),
    ("bsr", {"lambda": "1e-3"}, r"lambda: Extra inputs.*Valid params: lam: float = 0.001"),
    ("probe", {"lp_lr": "1e-3"}, r"lp_lr: Extra inputs.*Valid params: lr: float = 0.001, epochs: int = 1"),
    ("probe", {"epochs": "0"}, r"epochs"),
])
def test_bad_params_fail_with_the_valid_ones(name, params, message):
    with pytest.raises(BadParamsError, match=message):
        make_method(name, params)


def test_params_from_the_command_line_are_coerced():
    assert make_method("window", {"radius": "0.2"}).params.radius == 0.2
    assert make_method("window", {"radius": "median"}).params.radius == "median"
    assert make_method("unbiased", {"eps": "0.1"}).params.eps == 0.1
    assert make_method("gce", {"exponent": "0.5"}).params.exponent == 0.5


# --- probe ----------------------------------------------------------------------------------------
def test_probe_hands_the_loop_the_head_alone_with_its_own_rate_and_epochs():
    from bench.core.specs import TrainConfig

    class Toy(nn.Module):   # a backbone ("body") and a head, named as transformers names them
        base_model_prefix = "body"

        def __init__(self):
            super().__init__()
            self.body, self.classifier = nn.Linear(2, 2), nn.Linear(2, 1, bias=False)

    model, seen = Toy(), []
    log = make_method("probe", {"lr": 0.5, "epochs": 2}).fit(
        model, [], TrainConfig(learning_rate=1e-4, epochs=1, batch_size=4),
        lambda student, examples, cfg: seen.append(({n for n, p in student.named_parameters() if p.requires_grad},
                                                     cfg.learning_rate, cfg.epochs)) or {"steps": 2})
    assert seen == [({"classifier.weight"}, 0.5, 2)] and log == {"steps": 2}   # body.weight, body.bias frozen
    assert all(p.requires_grad for p in model.parameters())              # as they were before


def test_probe_trains_only_the_head_of_the_tiny_student(strong_spec):
    """The real loop on the tiny student, one step: the backbone's weights stay bit for bit, the head's move."""
    from bench.core.formatting import formatter_for
    from bench.core.specs import TrainConfig
    from bench.stages.models import load_reward_model, load_tokenizer
    from bench.stages.train import TrainExample, TrainingLoop
    from methods.api import head_parameter_names

    spec = dataclasses.replace(strong_spec, num_layers=1)
    model, fmt = load_reward_model(spec, seed=0), formatter_for(spec, load_tokenizer(spec), 32)
    prompt = (("user", "how do I boil an egg?"),)
    pairs = [("Simmer it for nine minutes.", "Microwave it.", 0.8), ("Shake it.", "Start in cold water.", 0.3)]
    examples = [TrainExample(fmt.encode(prompt, a), fmt.encode(prompt, b), q) for a, b, q in pairs]
    head = head_parameter_names(model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    method = make_method("probe")
    log = method.fit(model, examples, TrainConfig(learning_rate=1e-4, epochs=1, batch_size=2, warmup_ratio=0.0),
                     TrainingLoop(method, seed=0, desc="probe test"))
    assert log["steps"] == 1
    after = dict(model.named_parameters())
    moved = {n for n in before if not torch.equal(before[n], after[n].detach())}
    assert head and moved and moved <= head                              # the head trained, nothing else did
