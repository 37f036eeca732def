import random

import pytest
import torch

from bench.stages.batches import collate, model_inputs, score
from bench.stages.models import formatter_for, load_reward_model, load_tokenizer
from methods import make_method
from methods.anchor import anchor_layers, masked_hidden_mse
from methods.api import Step

PROMPT = (("user", "any tips for a good risotto?"),)
RESPONSE = "Arborio rice with warm stock, added one ladle at a time."


@pytest.fixture(scope="module")
def tokenizer(strong_spec):
    return load_tokenizer(strong_spec)


@pytest.fixture(scope="module")
def student(strong_spec):
    return load_reward_model(strong_spec, seed=0)


def test_response_mask_covers_exactly_the_response(strong_spec, tokenizer):
    enc = formatter_for(strong_spec, tokenizer, 64).encode(PROMPT, RESPONSE)
    response_ids = [i for i, m in zip(enc.input_ids, enc.response_mask) if m]
    assert tokenizer.decode(response_ids) == RESPONSE.lower()
    assert enc.input_ids[0] == tokenizer.cls_token_id and enc.response_mask[0] == 0  # the [CLS] readout token
    assert enc.response_mask[-1] == 0  # the closing [SEP]
    assert not enc.truncated


def test_truncation_keeps_the_latest_prompt_and_the_response_start(strong_spec, tokenizer):
    long_prompt = (("user", "word " * 100 + "final question?"),)
    enc = formatter_for(strong_spec, tokenizer, 32).encode(long_prompt, RESPONSE)
    assert enc.truncated and len(enc.input_ids) == 32
    prompt_ids = [i for i, m, t in zip(enc.input_ids, enc.response_mask, enc.token_type_ids) if t == 0 and not m][1:-1]
    assert tokenizer.decode(prompt_ids).endswith("final question?")
    response = tokenizer.decode([i for i, m in zip(enc.input_ids, enc.response_mask) if m])
    assert response == RESPONSE.lower()  # the response fits after the prompt is cut back
    enc = formatter_for(strong_spec, tokenizer, 16).encode(PROMPT, RESPONSE * 3)
    assert len(enc.input_ids) == 16 and tokenizer.decode(
        [i for i, m in zip(enc.input_ids, enc.response_mask) if m]).startswith("arborio rice")


def test_scores_do_not_depend_on_batch_size(strong_spec, tokenizer, student):
    fmt = formatter_for(strong_spec, tokenizer, 64)
    rng = random.Random(0)
    words = "rice stock ladle butter onion wine cheese pan heat stir slowly season".split()
    sequences = [fmt.encode(PROMPT, " ".join(rng.choices(words, k=rng.randint(2, 30)))) for _ in range(40)]
    one = score(student, sequences, batch_size=1)
    sixteen = score(student, sequences, batch_size=16)
    assert max(abs(a - b) for a, b in zip(one, sixteen)) < 1e-5
    assert len(set(one)) > 30  # a real model that tells inputs apart


def test_anchor_penalty_by_hand():
    # 1 layer after the embeddings, batch 2, 3 tokens, hidden size 2
    zeros = torch.zeros(2, 3, 2)
    hidden = (zeros, torch.tensor([[[1.0, 1.0], [2.0, 0.0], [9.0, 9.0]], [[0.0, 3.0], [5.0, 5.0], [7.0, 7.0]]]))
    reference = (zeros, torch.zeros(2, 3, 2))
    mask = torch.tensor([[1, 1, 0], [0, 1, 0]])
    # selected tokens: (1,1), (2,0), (5,5): squared sums 2 + 4 + 50 = 56 over 3 tokens x 2 dims
    assert masked_hidden_mse(hidden, reference, mask, (1,)).item() == pytest.approx(56 / 6)


def test_anchor_layers():
    assert anchor_layers(6, "last") == (6,)
    assert anchor_layers(6, "mid") == (3, 5)
    assert anchor_layers(32, "mid") == (16, 24)


def _step(method, model, strong_spec, tokenizer, prompt=PROMPT):
    fmt = formatter_for(strong_spec, tokenizer, 64)
    seqs = [fmt.encode(prompt, RESPONSE), fmt.encode(prompt, "Plain white rice."),
            fmt.encode(prompt, "Any rice will do, honestly."), fmt.encode(prompt, "Stir.")]
    batch = collate(seqs, model.config.pad_token_id)
    out = model(**model_inputs(batch), output_hidden_states=True)
    r = out.logits[:, 0]
    return Step(r_a=r[:2], r_b=r[2:], target=torch.tensor([0.7, 0.2]), batch=batch, hidden_states=out.hidden_states)


def test_anchor_is_zero_before_training_and_ignores_prompt_and_padding(strong_spec, tokenizer, student):
    anchor = make_method("anchor", {"lam": 1.0})
    anchor.setup(student)
    step = _step(anchor, student, strong_spec, tokenizer)
    loss, logs = anchor.loss(step)
    assert logs["anchor_mse"] == 0.0
    assert loss.item() == pytest.approx(logs["bt"])
    # move every hidden state off the reference except on response tokens: the penalty stays zero
    keep = step.batch["response_mask"].unsqueeze(-1).bool()
    moved = tuple(torch.where(keep, h, h + 5.0) for h in step.hidden_states)
    assert anchor.loss(Step(step.r_a, step.r_b, step.target, step.batch, moved))[1]["anchor_mse"] == 0.0
    # and a change on a response token is seen
    shifted = tuple(torch.where(keep, h + 1.0, h) for h in step.hidden_states)
    assert anchor.loss(Step(step.r_a, step.r_b, step.target, step.batch, shifted))[1]["anchor_mse"] == pytest.approx(1.0)


def test_bad_params_fail_with_the_valid_ones():
    with pytest.raises(ValueError, match=r"lam: float = 0.0001, layers: last\|mid"):
        make_method("anchor", {"lamb": "1"})
    with pytest.raises(ValueError, match="layers"):
        make_method("anchor", {"layers": "first"})
    assert make_method("anchor", {"lam": "1e-3"}).params.lam == 1e-3
    assert make_method("anchor", {}, {"lam": 0.5}).params.lam == 0.5
    with pytest.raises(ValueError, match=r"the model pair sets lam=0.5"):
        make_method("anchor", {"lam": "x"}, {"lam": 0.5})


# --- readouts: where the reward head reads ----------------------------------------------------------
@pytest.mark.parametrize("readout", ["response_mean", "response_last"])
def test_response_readouts_read_the_response_through_pooler_and_head(readout, strong_spec, tokenizer):
    import dataclasses

    from bench.stages.batches import reward_forward

    spec = dataclasses.replace(strong_spec, readout=readout)
    model = load_reward_model(spec, seed=0)
    fmt = formatter_for(spec, tokenizer, 64)
    assert fmt.provenance()["readout"].startswith("mean" if readout == "response_mean" else "last layer")
    seqs = [fmt.encode(PROMPT, RESPONSE), fmt.encode(PROMPT, "Stir.")]
    batch = collate(seqs, model.config.pad_token_id)
    rewards, hidden = reward_forward(model, batch, output_hidden_states=True)
    # by hand: the last layer's states at the masked tokens, pooled, then BERT's pooler (dense + tanh) and the head
    for row, sequence in enumerate(seqs):
        states = hidden[-1][row, :len(sequence)][torch.tensor(sequence.response_mask, dtype=torch.bool)]
        vector = states.mean(0) if readout == "response_mean" else states[-1]
        expected = model.classifier(torch.tanh(model.bert.pooler.dense(vector)))[0]
        assert rewards[row].item() == pytest.approx(expected.item(), abs=1e-5)
    # not the [CLS] readout, and padding does not move it: each row alone gives the same reward
    assert not torch.allclose(rewards, model(**model_inputs(batch)).logits[:, 0])
    alone = [reward_forward(model, collate([s], model.config.pad_token_id))[0].item() for s in seqs]
    assert alone == pytest.approx(rewards.tolist(), abs=1e-5)
    assert score(model, seqs, batch_size=1) == pytest.approx(rewards.tolist(), abs=1e-5)


def test_readout_must_fit_the_architecture(strong_spec):
    import dataclasses

    from bench.core.errors import BenchError
    from bench.stages.models import readout_of

    assert readout_of(strong_spec) == "first"
    with pytest.raises(BenchError, match="readout 'last' is not one for encoders; use one of: first, response_mean"):
        readout_of(dataclasses.replace(strong_spec, readout="last"))
    with pytest.raises(BenchError, match="readout 'mean' is not one for encoders"):
        load_reward_model(dataclasses.replace(strong_spec, readout="mean"), seed=0)
