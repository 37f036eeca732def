"""Each method's loss or weight update against a hand computation on tiny tensors, the adapter
interface (front-matter, params), and method files."""
import math
import textwrap

import pytest
import torch
from helpers import step_of
from torch import nn

from bench.core.errors import BenchError
from methods import (
    METHODS,
    get_method_class,
    load_method_file,
    make_method,
    method_origin,
)
from methods.api import Step, head_parameter_names, parse_front_matter
from methods.confidence import hardened_predictions, mixing_weight


class Toy(nn.Module):
    """A backbone ("body") and a head, named as transformers names them."""

    base_model_prefix = "body"

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(2, 2, bias=False)
        self.classifier = nn.Linear(2, 1, bias=False)
        with torch.no_grad():
            self.body.weight.copy_(torch.tensor([[1.0, 2.0], [3.0, 4.0]]))
            self.classifier.weight.copy_(torch.tensor([[0.5, -1.0]]))


def test_every_method_has_front_matter_and_valid_defaults():
    for name in METHODS.names():
        cls = get_method_class(name)
        assert cls.name == name and cls.summary and cls.paper
        make_method(name)  # defaults validate
    assert parse_front_matter("\n    name: x\n    idea: y\n\n    name: not this\n") == {"name": "x", "idea": "y"}


def test_aliases_and_did_you_mean():
    assert make_method("logconf").name == "confidence"
    with pytest.raises(BenchError, match="Did you mean 'wiseft'"):
        make_method("wiseft2")


def test_naive_is_soft_bt():
    d = 0.8
    loss, _ = make_method("naive").loss(step_of([1.0], [0.2], [0.7]))
    expected = -(0.7 * math.log(1 / (1 + math.exp(-d))) + 0.3 * math.log(1 / (1 + math.exp(d))))
    assert loss.item() == pytest.approx(expected, rel=1e-6)


# --- confidence -----------------------------------------------------------------------------------
def test_confidence_hardening_matches_the_weak_label_rate():
    p = torch.tensor([0.9, 0.2, 0.6, 0.4])
    # quantile(p, 0.5) of sorted [0.2, 0.4, 0.6, 0.9] = 0.5, so the top half is hardened to 1
    assert hardened_predictions(p, torch.tensor(0.5)).tolist() == [1.0, 0.0, 1.0, 0.0]
    # weak labels say a wins 25% of the time: only the largest p becomes 1
    assert hardened_predictions(p, torch.tensor(0.25)).tolist() == [1.0, 0.0, 0.0, 0.0]


def test_confidence_schedules():
    assert mixing_weight(0.05, 0.5, 0.1, "linear") == pytest.approx(0.25)
    assert mixing_weight(0.05, 0.5, 0.1, "reference") == pytest.approx(0.025)
    assert mixing_weight(0.1, 0.5, 0.1, "reference") == pytest.approx(0.05)   # the reference's jump ...
    assert mixing_weight(0.11, 0.5, 0.1, "reference") == pytest.approx(0.5)   # ... to alpha just after
    assert mixing_weight(0.5, 0.5, 0.1, "linear") == pytest.approx(0.5)
    assert mixing_weight(0.0, 0.5, 0.0, "linear") == pytest.approx(0.5)


def test_confidence_loss_by_hand_and_as_the_reference_two_class_form():
    r_a, r_b, q = [2.0, -1.0, 0.5, 0.0], [0.0, 0.0, 0.0, 1.0], [0.8, 0.6, 0.3, 0.3]
    method = make_method("confidence", {"alpha": 0.5, "warmup": 0.1})
    loss, logs = method.loss(step_of(r_a, r_b, q, index=5, total=10))   # progress 0.5: alpha_t = 0.5
    d = [a - b for a, b in zip(r_a, r_b)]                               # [2, -1, 0.5, -1]
    # p = sigmoid(d); mean q = 0.5; quantile(p, 0.5) between 0.269 and 0.622 -> h = [1, 0, 1, 0]
    h = [1.0, 0.0, 1.0, 0.0]
    target = [0.5 * qi + 0.5 * hi for qi, hi in zip(q, h)]
    def sig(x):
        return 1 / (1 + math.exp(-x))
    expected = -sum(t * math.log(sig(x)) + (1 - t) * math.log(1 - sig(x)) for t, x in zip(target, d)) / 4
    assert loss.item() == pytest.approx(expected, rel=1e-6)
    assert logs["alpha_t"] == 0.5 and logs["hard_positive_rate"] == 0.5
    # the reference's form: logits [d, 0], labels [q, 1-q], cross-entropy with the blended target
    logits = torch.stack([torch.tensor(d), torch.zeros(4)], dim=1)
    two_class = torch.nn.functional.cross_entropy(logits, torch.tensor([[t, 1 - t] for t in target]))
    assert loss.item() == pytest.approx(two_class.item(), rel=1e-6)


def test_confidence_hardening_carries_no_gradient():
    r_a = torch.tensor([2.0, -1.0], requires_grad=True)
    method = make_method("confidence", {"alpha": 1.0, "warmup": 0.0})
    loss, _ = method.loss(Step(r_a, torch.zeros(2), torch.tensor([0.5, 0.5]), {}, None))
    loss.backward()
    # target = h exactly ([1, 0]); d loss / d r_a = (sigmoid(d) - h) / B
    assert r_a.grad.tolist() == pytest.approx([(1 / (1 + math.exp(-2)) - 1) / 2, (1 / (1 + math.exp(1))) / 2])


# --- length ---------------------------------------------------------------------------------------
def test_length_rewards_the_longer_response_and_trains_nothing():
    length = make_method("length")
    assert not length.trains
    assert length.rule_reward((("user", "hi"),), "four") == 4.0


# --- wise-ft, l2-sp, lp-ft --------------------------------------------------------------------------
def test_head_parameters_are_those_outside_the_backbone():
    assert head_parameter_names(Toy()) == {"classifier.weight"}


def test_wise_ft_interpolates_the_backbone_and_keeps_the_head():
    model, method = Toy(), make_method("wise-ft", {"alpha": 0.25})
    method.setup(model)
    with torch.no_grad():
        model.body.weight.copy_(torch.tensor([[5.0, 6.0], [7.0, 8.0]]))   # "fine-tuned"
        model.classifier.weight.copy_(torch.tensor([[2.0, 2.0]]))
    method.finish(model)
    # 0.75 * pretrained + 0.25 * fine-tuned
    assert model.body.weight.tolist() == [[2.0, 3.0], [4.0, 5.0]]
    assert model.classifier.weight.tolist() == [[2.0, 2.0]]


def test_wise_ft_leaves_frozen_weights_alone():
    model, method = Toy(), make_method("wise-ft", {"alpha": 0.0})
    model.body.weight.requires_grad_(False)
    method.setup(model)
    assert method.pretrained == {}


def test_l2_sp_penalty_by_hand():
    model, method = Toy(), make_method("l2-sp", {"alpha": 0.1, "beta": 0.2})
    method.setup(model)
    with torch.no_grad():
        model.body.weight.add_(torch.tensor([[1.0, 0.0], [0.0, -2.0]]))   # squared drift 1 + 4 = 5
    loss, logs = method.loss(step_of([0.0], [0.0], [0.5]))
    bt = math.log(2.0)
    head = 0.5 ** 2 + 1.0 ** 2                                            # 1.25
    assert logs["sq_drift"] == pytest.approx(5.0) and logs["head_sq_norm"] == pytest.approx(head)
    assert loss.item() == pytest.approx(bt + 0.05 * 5.0 + 0.1 * head, rel=1e-6)


def test_l2_sp_gradient_pulls_towards_the_start():
    model, method = Toy(), make_method("l2-sp", {"alpha": 2.0})
    method.setup(model)
    with torch.no_grad():
        model.body.weight.add_(1.0)
    r = model.classifier(model.body(torch.ones(1, 2))).sum()
    loss, _ = method.loss(Step(r.reshape(1), r.reshape(1).detach(), torch.tensor([0.5]), {}, None))
    loss.backward()
    # BT's gradient is sigmoid(d) - q = 0 at d = 0, q = 0.5; what is left is alpha * (w - w0) = 2 * 1
    assert model.body.weight.grad.flatten().tolist() == pytest.approx([2.0] * 4)
    assert model.classifier.weight.grad.flatten().tolist() == pytest.approx([0.0, 0.0])


def test_lp_ft_trains_the_head_alone_then_everything_the_pair_trains():
    from bench.core.specs import TrainConfig

    model, method = Toy(), make_method("lp-ft", {"lp_epochs": 3, "lp_lr": 0.5})
    model.body.weight.requires_grad_(True)
    seen = []

    def train(student, examples, cfg):
        seen.append(({n for n, p in student.named_parameters() if p.requires_grad}, cfg.learning_rate, cfg.epochs))
        return {"steps": cfg.epochs}

    cfg = TrainConfig(learning_rate=1e-4, epochs=1, batch_size=4)
    log = method.fit(model, [], cfg, train)
    assert seen == [({"classifier.weight"}, 0.5, 3), ({"body.weight", "classifier.weight"}, 1e-4, 1)]
    assert log == {"steps": 1, "linear_probe": {"steps": 3}}
    # a weight the pair keeps frozen stays frozen in the fine-tuning phase
    model.body.weight.requires_grad_(False)
    seen.clear()
    method.fit(model, [], cfg, train)
    assert seen[1][0] == {"classifier.weight"}


# --- anchor-mid ------------------------------------------------------------------------------------
def test_anchor_mid_defaults_to_the_mid_layers_and_takes_the_pair_defaults():
    from bench.core.protocols import MODEL_PAIRS

    tiny = MODEL_PAIRS.get("tiny")
    method = make_method("anchor-mid", {}, tiny.defaults_for("anchor-mid"))
    assert method.params.layers == "mid" and method.params.lam == tiny.defaults_for("anchor")["lam"]


# --- method files ------------------------------------------------------------------------------------
GOOD_FILE = '''
from pydantic import BaseModel, ConfigDict
from methods.naive import Naive


class Halved(Naive):
    """
    name: halved-{tag}
    idea: naive with the loss halved
    paper: none

    For tests.
    """

    def loss(self, step):
        loss, logs = super().loss(step)
        return 0.5 * loss, logs
'''


def test_method_file_registers_its_methods_and_records_their_origin(tmp_path):
    path = tmp_path / "halved.py"
    path.write_text(GOOD_FILE.format(tag="a"))
    assert load_method_file(path) == ["halved-a"]
    assert load_method_file(path) == ["halved-a"]  # loading the same file again is fine
    method = make_method("halved-a")
    loss, _ = method.loss(step_of([1.0], [1.0], [0.5]))
    assert loss.item() == pytest.approx(0.5 * math.log(2.0))
    origin = method_origin(type(method))
    assert origin["kind"] == "file" and origin["file"] == path.name and len(origin["sha256"]) == 64   # no machine path


@pytest.mark.parametrize("text, message", [
    ("raise RuntimeError('boom')", "raised RuntimeError on import: boom"),
    ("x = 1", "defines no subclass of methods.api.Method"),
    ("from methods.naive import Naive\nclass NoDoc(Naive):\n    pass\n", "docstring front-matter"),
    ("from methods.api import Method\nclass NoLoss(Method):\n    '''\n    name: noloss\n    idea: x\n    '''\n",
     "defines no loss"),
    (GOOD_FILE.format(tag="x").replace("halved-x", "naive"), "taken by another method"),
])
def test_bad_method_files_fail_with_the_fix(tmp_path, text, message):
    path = tmp_path / "bad.py"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(BenchError, match=message):
        load_method_file(path)


def test_missing_method_file(tmp_path):
    with pytest.raises(BenchError, match="not found"):
        load_method_file(tmp_path / "nope.py")


def test_a_methods_code_digest_covers_the_method_files_it_inherits_from():
    """Cell and label-stage keys hold method_code: editing probe_relabel.py must recompute probe-filter's cells.
    Each file counts by its code (bench.core.versions.code_digest), so a docstring edit recomputes none."""
    import hashlib
    from pathlib import Path

    from bench.core.versions import DIGEST_SCHEME, code_digest
    from methods import METHODS, method_code

    def expected(*names: str) -> str:
        scheme = f"code digest scheme {DIGEST_SCHEME}\0".encode()
        return hashlib.sha256(scheme + b"".join(code_digest((root / n).read_bytes()).encode() + b"\0" for n in names)).hexdigest()

    root = Path(__file__).resolve().parents[1] / "methods"
    assert method_code(METHODS.get("probe-filter")) == expected("probe_filter.py", "probe_relabel.py", "naive.py")
    assert method_code(METHODS.get("naive")) == expected("naive.py")
