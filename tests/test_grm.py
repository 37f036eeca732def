"""GRM (methods/grm.py) on the tiny random Llama and Qwen2 decoders, with untied LM heads (read from the
checkpoint) and tied ones (the input embeddings): its LM term is the causal LM's log-likelihood of each
response on its own sequence, in pair rows and in the two-sequence layout alike; its gradient reaches the
backbone (and LoRA adapters) and is the same in both layouts and with chunked logits; encoders fail
clearly; and one run goes through the pipeline on a tiny decoder pair."""
import dataclasses
import math
import shutil
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from decoder_fixtures import FAMILIES
from test_pair_rows import _pairs

import methods.grm as grm
from bench.core.errors import BadParamsError, BenchError
from bench.core.formatting import formatter_for
from bench.core.settings import RunSettings
from bench.core.specs import ModelPairSpec, TrainConfig, frozen_map
from bench.stages import pipeline
from bench.stages.batches import collate, reward_forward
from bench.stages.models import load_reward_model
from bench.stages.pair_rows import collate_pairs, shared_prefix
from methods import make_method
from methods.api import Step, soft_bt_loss

TARGET = torch.tensor([0.8, 0.3, 0.6])


@pytest.fixture(scope="module")
def tied_specs(specs, tmp_path_factory):
    """The tiny decoders again with tied LM heads (as SmolLM2, Qwen2.5-0.5B and Llama-3.2-1B have): Qwen2 with
    spare embedding rows (no resize), Llama with none (the reward model grows a pad row the LM must not see)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    out = {}
    for family, spec in specs.items():
        folder = tmp_path_factory.mktemp(f"tied-{family}")
        for f in Path(spec.path).iterdir():   # the tokenizer and its chat template
            if f.name.startswith("tokenizer") or f.suffix == ".jinja":
                shutil.copy(f, folder / f.name)
        config = AutoConfig.from_pretrained(spec.path)
        config.tie_word_embeddings = True
        torch.manual_seed(1)
        AutoModelForCausalLM.from_config(config).save_pretrained(folder)
        out[family] = dataclasses.replace(spec, name=f"tiny-{family}-tied", path=str(folder))
    return out


def _spec(specs, tied_specs, family, tied):
    return (tied_specs if tied else specs)[family]


def _by_hand(causal, enc) -> float:
    """log pi(response | prompt) with the causal LM on the sequence alone: every response token from the logits
    at the position before it."""
    ids = torch.tensor([enc.input_ids])
    with torch.no_grad():
        logp = causal(input_ids=ids).logits[0].float().log_softmax(-1)
    return sum(logp[t - 1, ids[0, t]].item() for t, m in enumerate(enc.response_mask) if m and t > 0)


def _forward(model, pairs, layout):
    model.shiftbench_pair_rows = layout == "pairs"
    batch = (collate_pairs(pairs, model.config.pad_token_id) if layout == "pairs"
             else collate([a for a, _ in pairs] + [b for _, b in pairs], model.config.pad_token_id))
    rewards, hidden = reward_forward(model, batch, output_hidden_states=True)
    return batch, rewards, hidden


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
@pytest.mark.parametrize("family", list(FAMILIES))
def test_lm_term_is_the_causal_lm_on_each_sequence_alone(family, tied, specs, tied_specs, tokenizers):
    from transformers import AutoModelForCausalLM

    spec = _spec(specs, tied_specs, family, tied)
    pairs = _pairs(formatter_for(spec, tokenizers[family], 96))
    causal = AutoModelForCausalLM.from_pretrained(spec.path).eval()
    expected = torch.tensor([_by_hand(causal, a) for a, _ in pairs] + [_by_hand(causal, b) for _, b in pairs])
    counts = torch.tensor([sum(a.response_mask) for a, _ in pairs] + [sum(b.response_mask) for _, b in pairs])

    model = load_reward_model(spec, seed=0)
    method = make_method("grm")
    method.setup(model)
    vocab = causal.get_output_embeddings().weight.shape[0]
    assert method.lm_head.shape[0] == vocab and method.lm_head_source.startswith("tied" if tied else "untied")
    if family == "llama":   # no spare rows: the reward model grew a pad row, which the LM head leaves out
        assert model.get_input_embeddings().num_embeddings == vocab + 1
    for layout in ("pairs", "sequences"):
        with torch.no_grad():
            batch, rewards, hidden = _forward(model, pairs, layout)
            sums, logp, got_counts = grm.response_logprob_sums(hidden[-1], batch, method.lm_head)
            assert torch.allclose(sums, expected, atol=1e-4) and torch.equal(got_counts, counts)
            loss, logs = method.loss(Step(r_a=rewards[:3], r_b=rewards[3:], target=TARGET, batch=batch,
                                          hidden_states=hidden, model=model))
        ell = -F.logsigmoid(0.1 * expected)
        sft = (TARGET * ell[:3] + (1 - TARGET) * ell[3:]).mean()
        bt = soft_bt_loss(rewards[:3], rewards[3:], TARGET)
        assert logs["grm_sft"].item() == pytest.approx(sft.item(), rel=1e-5)
        assert loss.item() == pytest.approx(0.99 * bt.item() + 0.01 * sft.item(), rel=1e-5)
        assert logs["lm_nll"].item() == pytest.approx(-expected.sum().item() / counts.sum().item(), rel=1e-5)

    # the test has teeth: predicting b's first response token from a's last token (the row's previous
    # token) instead of the shared prompt's last token changes b's log-likelihood. On Qwen's template both
    # are "\n", which a random 2-layer model hardly tells apart; on Llama's they are <|eot_id|> and "\n\n"
    if family != "llama":
        return
    model.shiftbench_pair_rows = True
    batch, _, hidden = _forward(model, pairs, "pairs")
    a, b = pairs[0]
    assert shared_prefix(a, b) == b.response_mask.index(1)   # b's rest starts with its response
    wrong = dict(batch, position_ids=batch["position_ids"].clone())
    wrong["position_ids"][0, len(a)] = len(a)   # the source of b's first token becomes row index len(a) - 1
    with torch.no_grad():
        off = grm.response_logprob_sums(hidden[-1], wrong, method.lm_head)[0]
    assert abs(off[3].item() - expected[3].item()) > 1e-3


def test_nll_variant_and_hard_labels_are_grms_own_term(specs, tokenizers):
    """sft=nll is GRM's no_logsigmoid_sft (-log pi of the chosen); q = 1 / 0 regularises only a / only b."""
    spec = specs["qwen"]
    pairs = _pairs(formatter_for(spec, tokenizers["qwen"], 96))
    model = load_reward_model(spec, seed=0)
    method = make_method("grm", {"sft": "nll", "alpha": 0.5})
    method.setup(model)
    with torch.no_grad():
        batch, rewards, hidden = _forward(model, pairs, "pairs")
        sums = grm.response_logprob_sums(hidden[-1], batch, method.lm_head)[0]
        hard = torch.tensor([1.0, 0.0, 1.0])
        loss, logs = method.loss(Step(r_a=rewards[:3], r_b=rewards[3:], target=hard, batch=batch,
                                      hidden_states=hidden, model=model))
    chosen = torch.stack([sums[0], sums[4], sums[2]])
    assert logs["grm_sft"].item() == pytest.approx(-chosen.mean().item(), rel=1e-6)
    bt = soft_bt_loss(rewards[:3], rewards[3:], hard).item()
    assert loss.item() == pytest.approx(0.5 * bt - 0.5 * chosen.mean().item(), rel=1e-6)


def _lm_grads(model, method, pairs, layout):
    model.zero_grad(set_to_none=True)
    batch, rewards, hidden = _forward(model, pairs, layout)
    loss, _ = method.loss(Step(r_a=rewards[:3], r_b=rewards[3:], target=TARGET, batch=batch, hidden_states=hidden,
                               model=model))
    loss.backward()
    return {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("tied", [False, True], ids=["untied", "tied"])
def test_the_lm_term_trains_the_backbone_alike_in_both_layouts_and_chunked(tied, specs, tied_specs, tokenizers,
                                                                         monkeypatch):
    spec = _spec(specs, tied_specs, "llama", tied)
    pairs = _pairs(formatter_for(spec, tokenizers["llama"], 96))
    model = load_reward_model(spec, seed=0)
    model.train()
    method = make_method("grm", {"alpha": 1.0})   # the LM term alone
    method.setup(model)
    pairs_grads = _lm_grads(model, method, pairs, "pairs")
    sequence_grads = _lm_grads(model, method, pairs, "sequences")
    monkeypatch.setattr(grm, "CHUNK_LOGITS", 3 * method.lm_head.shape[0])   # 3 tokens a chunk, recomputed
    chunked = _lm_grads(model, method, pairs, "pairs")
    up = "model.layers.0.mlp.up_proj.weight"
    assert pairs_grads[up].abs().max() > 0 and pairs_grads["model.norm.weight"].abs().max() > 0
    assert "score.weight" not in pairs_grads or not pairs_grads["score.weight"].any()   # the reward head: BT only
    for other in (sequence_grads, chunked):
        assert other.keys() == pairs_grads.keys()
        assert all(torch.allclose(pairs_grads[n], other[n], atol=1e-6, rtol=1e-4) for n in pairs_grads)


def test_lora_adapters_get_the_lm_gradient(specs, tokenizers):
    spec = dataclasses.replace(specs["qwen"], lora=frozen_map(r=4, alpha=8, target_modules=("q_proj", "up_proj")))
    pairs = _pairs(formatter_for(spec, tokenizers["qwen"], 96))
    model = load_reward_model(spec, seed=0)
    model.train()
    method = make_method("grm", {"alpha": 1.0})
    method.setup(model)
    assert method.lm_head_source.startswith("untied")
    grads = _lm_grads(model, method, pairs, "pairs")
    assert any("lora_B" in n and g.abs().max() > 0 for n, g in grads.items())
    assert not method.lm_head.requires_grad   # the LM head itself stays the pretrained one


def test_encoders_fail_clearly_and_params_are_grms(strong_spec, specs):
    with pytest.raises(BenchError, match=r"grm.*decoder.*BertForSequenceClassification.*encoder.*--models smol"):
        make_method("grm").setup(load_reward_model(strong_spec, seed=0))
    with pytest.raises(BenchError, match=r"grm.*decoder.*'minilm-l6' is an encoder.*--models smol"):
        grm.GRM.check_student(strong_spec)   # from the spec alone, for a check before any work
    grm.GRM.check_student(specs["llama"])
    params = make_method("grm").params
    assert (params.alpha, params.beta, params.sft) == (0.01, 0.1, "logsigmoid")
    with pytest.raises(BadParamsError, match="alpha"):
        make_method("grm", {"alpha": "1.5"})


def test_end_to_end_on_a_tiny_decoder_pair(specs, small_protocol, tmp_path):
    lora = dataclasses.replace(specs["llama"], gradient_checkpointing=True,
                               lora=frozen_map(r=4, alpha=8, target_modules=("q_proj", "v_proj")))
    models = ModelPairSpec(
        name="tiny-llama-grm-test", description="tiny random Llama: 1 layer weak, 2 layers strong with LoRA",
        weak=dataclasses.replace(specs["llama"], name="tiny-llama-l1", num_layers=1), strong=lora,
        teacher_train=TrainConfig(learning_rate=1e-3, epochs=1, batch_size=8),
        student_train=TrainConfig(learning_rate=1e-3, epochs=1, batch_size=8), score_batch_size=32)
    [result] = pipeline.run(RunSettings(small_protocol, models, "grm", {"alpha": "0.1"}, [small_protocol.datasets[0]],
                                        [0], tmp_path / "out", tmp_path / "cache"))
    train = result.student["train"]
    assert train["grm_lm_head"].startswith("untied") and math.isfinite(train["final_loss"])
    # a random 420-token LM: about log(420) = 6 nats a token, and a response's sum well past beta's knee
    assert 4 < train["last_step_logs"]["lm_nll"] < 8 and train["last_step_logs"]["grm_sft"] > 1
    assert all(0 <= getattr(s, k) <= 100 for s in result.eval_sets.values() for k in ("teacher_acc", "student_acc"))


def test_an_untied_head_is_read_from_sharded_checkpoints_and_its_absence_is_clear(specs, tmp_path):
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    from bench.stages.models import pretrained_lm_head

    causal = AutoModelForCausalLM.from_pretrained(specs["qwen"].path)
    for name, save in (("sharded", lambda d: causal.save_pretrained(d, max_shard_size="20KB")),
                       ("headless", lambda d: AutoModel.from_config(AutoConfig.from_pretrained(specs["qwen"].path))
                        .save_pretrained(d))):
        folder = tmp_path / name
        save(folder)
        for f in Path(specs["qwen"].path).iterdir():
            if f.name.startswith("tokenizer") or f.suffix == ".jinja":
                shutil.copy(f, folder / f.name)
        model = load_reward_model(dataclasses.replace(specs["qwen"], path=str(folder)), seed=0)
        if name == "sharded":
            assert (folder / "model.safetensors.index.json").exists()
            weight, source = pretrained_lm_head(model)
            assert torch.equal(weight, causal.lm_head.weight) and source == "untied: lm_head.weight from the checkpoint"
        else:
            with pytest.raises(BenchError, match=r"language-modelling head \(lm_head.weight or embed_out.weight\)"):
                pretrained_lm_head(model)
