"""Tiny decoder models built offline for the decoder tests: a trained byte-level BPE tokenizer with a
real family's special tokens and chat template (Qwen2, Llama 3), and a 2-layer model of that family
with random weights. ``save_tiny_decoder`` writes one to a folder; conftest.py's ``decoder_specs``,
``decoder_tokenizers`` and ``decoder_models`` fixtures build both families once per test module."""
from __future__ import annotations

import torch

QWEN_TEMPLATE = (
    "{%- if messages[0]['role'] != 'system' %}{{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- for m in messages %}{{- '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>' + '\\n' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}")
LLAMA_TEMPLATE = (
    "{{- bos_token }}{%- if not date_string is defined %}{%- if strftime_now is defined %}"
    "{%- set date_string = strftime_now('%d %b %Y') %}{%- else %}{%- set date_string = '26 Jul 2024' %}{%- endif %}"
    "{%- endif %}"
    "{{- '<|start_header_id|>system<|end_header_id|>\\n\\nToday Date: ' + date_string + '<|eot_id|>' }}"
    "{%- for m in messages %}{{- '<|start_header_id|>' + m['role'] + '<|end_header_id|>\\n\\n' + m['content'] | trim"
    " + '<|eot_id|>' }}{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{%- endif %}")
FAMILIES = {
    "qwen": dict(specials=["<|endoftext|>", "<|im_start|>", "<|im_end|>"], template=QWEN_TEMPLATE,
                 tokens=dict(eos_token="<|im_end|>", pad_token="<|endoftext|>"), closing="<|im_end|>\n", spare_rows=8),
    "llama": dict(specials=["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
                  template=LLAMA_TEMPLATE, tokens=dict(bos_token="<|begin_of_text|>", eos_token="<|eot_id|>"),
                  closing="<|eot_id|>", spare_rows=0),
}
CORPUS = ["any tips for a good risotto? Arborio rice with warm stock, added one ladle at a time.",
          "What is the capital of France? Paris is the capital, and the Eiffel Tower stands there.",
          "How do I reset my router? Hold the reset button for ten seconds, then wait for the lights.",
          "Plain white rice. Any rice will do, honestly. Stir slowly and season with butter and cheese."]
PROMPT = (("user", "any tips for a good risotto?"),)
RESPONSE = "Arborio rice with warm stock, added one ladle at a time."


def save_tiny_decoder(folder, family: str) -> None:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        LlamaConfig,
        LlamaForCausalLM,
        PreTrainedTokenizerFast,
        Qwen2Config,
        Qwen2ForCausalLM,
    )

    f = FAMILIES[family]
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(CORPUS * 5, trainers.BpeTrainer(
        vocab_size=420, special_tokens=f["specials"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, **f["tokens"])
    tokenizer.chat_template = f["template"]
    tokenizer.save_pretrained(folder)
    config_cls, model_cls = (Qwen2Config, Qwen2ForCausalLM) if family == "qwen" else (LlamaConfig, LlamaForCausalLM)
    torch.manual_seed(0)
    config = config_cls(vocab_size=len(tokenizer) + f["spare_rows"], hidden_size=32, intermediate_size=64,
                        num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                        max_position_embeddings=256, tie_word_embeddings=False)
    model_cls(config).save_pretrained(folder)
