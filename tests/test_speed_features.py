"""What makes runs cheaper must not change what they compute: length-grouped batches, ANCHOR's
precomputed reference states, and vLLM scoring (run only where vLLM and a GPU exist)."""
from __future__ import annotations

import dataclasses
import random

import pytest
import torch
from helpers import train_examples

from bench.core.specs import TrainConfig, canonical_json
from bench.stages.batches import collate, model_inputs
from bench.stages.models import frozen_copy, load_reward_model
from bench.stages.reference import ReferenceStates
from bench.stages.train import epoch_batches, train_reward_model, train_student
from methods import make_method
from methods.anchor import anchor_layers, response_mse
from methods.naive import Naive


# --- length-grouped batches -----------------------------------------------------------------------
def padded_tokens(batches: list[list[int]], lengths: list[int]) -> int:
    return sum(len(b) * max(lengths[i] for i in b) for b in batches)


def test_length_grouping_keeps_every_pair_once_and_cuts_padding():
    rng = random.Random(0)
    lengths = [rng.choice([20, 40, 80, 160, 320]) + rng.randrange(20) for _ in range(1000)]
    plain = epoch_batches(lengths, 16, torch.Generator().manual_seed(3))
    grouped = epoch_batches(lengths, 16, torch.Generator().manual_seed(3), group_by_length=True)
    for batches in (plain, grouped):
        assert sorted(i for b in batches for i in b) == list(range(1000))
        assert len(batches) == 63 and all(len(b) <= 16 for b in batches)
    assert sum(lengths) / padded_tokens(grouped, lengths) > 0.9 > 0.6 > sum(lengths) / padded_tokens(plain, lengths)
    again = epoch_batches(lengths, 16, torch.Generator().manual_seed(3), group_by_length=True)
    assert grouped == again  # seeded
    assert grouped != epoch_batches(lengths, 16, torch.Generator().manual_seed(4), group_by_length=True)


def test_grouping_off_is_the_old_order_and_does_not_change_spec_hashes():
    lengths = list(range(50))
    order = torch.randperm(50, generator=torch.Generator().manual_seed(7)).tolist()
    assert epoch_batches(lengths, 8, torch.Generator().manual_seed(7)) == [order[s:s + 8] for s in range(0, 50, 8)]
    assert "group_by_length" not in canonical_json(TrainConfig(learning_rate=1e-4, epochs=1, batch_size=16))


@pytest.fixture(scope="module")
def examples(strong_spec):
    return train_examples(strong_spec, 40, [0.7])


def test_length_grouped_training_runs(small_models, examples):
    model = load_reward_model(small_models.strong, seed=0)
    cfg = dataclasses.replace(small_models.student_train, group_by_length=True, batch_size=8)
    log = train_reward_model(model, examples, cfg, Naive(), seed=1, desc="grouped")
    assert log["steps"] == 5 and all(0.0 < loss < 1.0 for loss in log["loss_curve"])


def test_foreach_adamw_trains_the_same_weights_bit_for_bit(small_models, examples, monkeypatch):
    """The loop's AdamW on the CPU is torch's foreach implementation: faster, and the same float
    operations as the per-tensor loop that torch uses by default there, so the same weights exactly."""
    weights = {}
    for foreach in (True, False):
        if not foreach:
            adamw = torch.optim.AdamW
            monkeypatch.setattr(torch.optim, "AdamW", lambda params, **kw: adamw(params, **{**kw, "foreach": False}))
        model = load_reward_model(small_models.strong, seed=0)
        cfg = dataclasses.replace(small_models.student_train, batch_size=8, learning_rate=1e-3, weight_decay=0.01)
        train_reward_model(model, examples, cfg, Naive(), seed=1, desc=f"foreach={foreach}")
        weights[foreach] = {name: p.detach().clone() for name, p in model.named_parameters()}
    assert weights[True].keys() == weights[False].keys()
    assert all(torch.equal(weights[True][name], weights[False][name]) for name in weights[True])
    start = {name: p.detach() for name, p in load_reward_model(small_models.strong, seed=0).named_parameters()}
    assert not all(torch.equal(weights[True][name], start[name]) for name in start)   # it trained


# --- ANCHOR's precomputed reference states -------------------------------------------------------
def paper_penalty(hidden, reference, mask, layers) -> float:
    """The penalty as first written: masked sums over the padded batch, over a frozen copy's states."""
    selected = mask.unsqueeze(-1).to(hidden[0].dtype)
    count = selected.sum() * hidden[0].shape[-1]
    return torch.stack([(((hidden[l] - reference[l]) ** 2) * selected).sum() / count for l in layers]).mean().item()


@pytest.mark.parametrize("which", ["last", "mid"])
def test_precomputed_reference_gives_the_frozen_copys_penalty(strong_spec, examples, which):
    model = load_reward_model(strong_spec, seed=0)
    layers = anchor_layers(model.config.num_hidden_layers, which)
    states = ReferenceStates.build(model, examples, layers, batch_size=32)[0]  # length-sorted batches, not the training ones
    copy = frozen_copy(model)
    drift = TrainConfig(learning_rate=1e-3, epochs=1, batch_size=16)
    train_reward_model(model, examples[:32], drift, Naive(), seed=0, desc="drift")
    rows = [5, 33, 17, 2, 39, 21, 11, 30]
    batch = collate([examples[i].a for i in rows] + [examples[i].b for i in rows], model.config.pad_token_id)
    batch["example_index"] = torch.tensor(rows + rows)
    device = next(model.parameters()).device  # training moved the student to the GPU where there is one
    batch = {k: v.to(device) for k, v in batch.items()}
    copy.to(device)
    with torch.no_grad():
        hidden = model(**model_inputs(batch), output_hidden_states=True).hidden_states
        frozen = copy(**model_inputs(batch), output_hidden_states=True).hidden_states
    keep = batch["response_mask"].bool()
    cached = response_mse([hidden[l][keep] for l in layers], states.lookup(batch)).item()
    live = paper_penalty(hidden, frozen, batch["response_mask"], layers)
    assert live > 1e-3  # the student has moved, so the comparison means something
    assert cached == pytest.approx(live, rel=1e-5)


def test_anchor_trains_alike_with_precomputed_or_live_reference(small_models, examples, monkeypatch):
    logs = {}
    for limit in ("4", "0"):  # 0 GB: no room for precomputed states, so the frozen copy runs on every batch
        monkeypatch.setenv("SHIFTBENCH_ANCHOR_CACHE_GB", limit)
        model = load_reward_model(small_models.strong, seed=0)
        cfg = dataclasses.replace(small_models.student_train, batch_size=8, learning_rate=1e-3)
        logs[limit] = train_student(model, examples, cfg, make_method("anchor", {"lam": 1.0}), seed=1, desc=limit)
    assert logs["4"]["anchor_reference"]["kind"] == "precomputed states"
    assert logs["0"]["anchor_reference"]["kind"] == "frozen model on every batch"
    assert logs["4"]["last_step_logs"]["anchor_mse"] > 0
    # measured after 5 steps at lr 1e-3: losses within 2e-5 relative, the last penalty within 1.2e-4 (the
    # states differ in their last bits, as padding differs, and training carries that along)
    assert logs["4"]["loss_curve"] == pytest.approx(logs["0"]["loss_curve"], rel=1e-4)
    last = {limit: log["last_step_logs"]["anchor_mse"] for limit, log in logs.items()}
    assert last["4"] == pytest.approx(last["0"], rel=1e-3)


def test_reference_lookup_refuses_rows_it_was_not_computed_for(strong_spec, examples):
    model = load_reward_model(strong_spec, seed=0)
    states = ReferenceStates.build(model, examples[:4], (6,), batch_size=8)[0]
    batch = collate([examples[0].a, examples[1].b], model.config.pad_token_id)  # rows of a and b, as a batch has
    batch["example_index"] = torch.tensor([1, 0])  # ...but labelled with the other examples
    with pytest.raises(RuntimeError, match="not the sequences"):
        states.lookup(batch)


# --- vLLM scoring -----------------------------------------------------------------------------------
def test_vllm_scores_match_hf(tmp_path):
    pytest.importorskip("vllm")
    if not torch.cuda.is_available():
        pytest.skip("vLLM scoring needs a CUDA GPU")
    from decoder_fixtures import PROMPT, save_tiny_decoder
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from bench.core.formatting import formatter_for
    from bench.core.specs import ModelSpec
    from bench.stages.batches import score
    from bench.stages.scorers.vllm import score_with_vllm

    save_tiny_decoder(tmp_path, "qwen")  # its tokenizer and template; then a model with vLLM-friendly head sizes
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    Qwen2ForCausalLM(Qwen2Config(vocab_size=len(tokenizer) + 8, hidden_size=128, intermediate_size=256,
                                 num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                                 max_position_embeddings=256, tie_word_embeddings=False)).save_pretrained(tmp_path)
    spec = ModelSpec(name="tiny-qwen-vllm", path=str(tmp_path), architecture="decoder")
    fmt = formatter_for(spec, tokenizer, 64)
    sequences = [fmt.encode(PROMPT, text) for text in ("Arborio rice.", "Plain white rice, stirred.", "Stir.")]
    model = load_reward_model(spec, seed=0)
    expected = score(model, sequences, batch_size=2)
    got = score_with_vllm(model, sequences, batch_size=2, spec=spec)
    assert got == pytest.approx(expected, abs=1e-3)


def test_shared_reference_states_are_the_computed_ones_and_keyed_by_the_sequences(strong_spec, examples, tmp_path):
    from bench.core.cache import Cache, SharedWork

    model = load_reward_model(strong_spec, seed=0)
    shared = SharedWork(Cache(tmp_path), {"strong": strong_spec})
    first, reused_first = ReferenceStates.build(model, examples[:6], (6,), batch_size=8, shared=shared)
    again, reused_again = ReferenceStates.build(model, examples[:6], (6,), batch_size=8, shared=shared)
    plain, _ = ReferenceStates.build(model, examples[:6], (6,), batch_size=8)
    assert (reused_first, reused_again) == (False, True)
    assert torch.equal(again.layer_states[0], plain.layer_states[0])
    assert torch.equal(first.layer_states[0], plain.layer_states[0])
    _, other = ReferenceStates.build(model, examples[1:7], (6,), batch_size=8, shared=shared)  # other sequences
    assert other is False
    _, other_layer = ReferenceStates.build(model, examples[:6], (3, 5), batch_size=8, shared=shared)
    assert other_layer is False
