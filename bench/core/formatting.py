"""The exact token layout a reward model reads: one (prompt, response) pair as ids and a response mask.

Encoders: ``[CLS] prompt [SEP] response [SEP]`` from the tokenizer's pair template; the reward is
read at the first token by default (``READOUTS`` has the others). Decoders: the model's chat
template with the response as the assistant turn; the reward is read at the last real token, which
is always a token the template closes the turn with (``<|im_end|>\\n``, ``<|eot_id|>``). The
response mask, which is what ANCHOR-style penalties see, holds the assistant turn: on encoders the
response's own tokens; on decoders those and the template's closing tokens of the turn, which end
the response as the model writes it and hold the decoder's readout token, so that the token the
head reads is anchored. Prompt, template headers, system text and padding are never in it.

Truncation is the same rule for both (``ProtocolSpec.truncation``): the prompt from the left (the
latest turn is kept) down to a quarter of the budget, then the response from the right. For
decoders the budget excludes the template's closing tokens, which are always kept (so every row
ends with the same kind of readout token), and a leading BOS token, which is kept too; the
template's header, system text and earlier turns are all "prompt" and are cut first.
"""
from __future__ import annotations

import copy
import datetime
import functools
import hashlib
import warnings
from array import array
from typing import Any

from bench.core.data import Message
from bench.core.errors import BenchError
from bench.core.specs import ModelSpec

TRUNCATION = ("prompt from the left (keeps the latest turn) down to a quarter of the budget, "
              "then the response from the right")
DECODER_TRUNCATION = (f"{TRUNCATION}; the budget is max_length minus the template's closing tokens (always kept, "
                      f"so the readout token is the same for every row) and a leading BOS (kept); the template's "
                      f"system text, headers and earlier turns count as prompt")
# Llama 3.x templates write today's date into every system header (strftime_now) unless the
# variable date_string is set: it is set by default, to those templates' own fallback date, so that
# inputs and scores do not depend on the day of the run. ModelSpec.chat_template_kwargs overrides it.
DEFAULT_TEMPLATE_KWARGS = {"date_string": "26 Jul 2024"}
# Stands in for the response while the template is rendered once per prompt, to find what the
# template puts before and after the assistant's content.
SENTINEL = "SHIFTBENCH_RESPONSE_SENTINEL"


class Encoded:
    """One (prompt, response) sequence: ``response_mask`` is 1 exactly on the assistant turn's tokens
    (the response's own, and on decoders the template's closing tokens: see the module docstring).

    Held as compact arrays (4 bytes per token id, 1 per flag) because a run holds every training and
    test sequence at once, and a Python list costs about 40 bytes per id (docs/performance.md §5).
    The fields read back as lists; ``len(encoded)`` is the sequence's length."""

    __slots__ = ("_ids", "_types", "_mask", "truncated")

    def __init__(self, input_ids, token_type_ids, response_mask, truncated: bool):
        self._ids = array("i", input_ids)
        self._types = array("b", token_type_ids)
        self._mask = array("b", response_mask)
        if not len(self._ids) == len(self._types) == len(self._mask):
            raise ValueError("Encoded: input_ids, token_type_ids and response_mask differ in length")
        self.truncated = bool(truncated)

    input_ids = property(lambda self: self._ids.tolist(), doc="token ids, as a list")
    token_type_ids = property(lambda self: self._types.tolist(), doc="segment ids (0 for decoders)")
    response_mask = property(lambda self: self._mask.tolist(), doc="1 on the assistant turn's tokens")

    def arrays(self) -> tuple[array, array, array]:
        """The stored (ids, token types, response mask) arrays, without copies; do not modify them."""
        return self._ids, self._types, self._mask

    def __len__(self) -> int:
        return len(self._ids)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Encoded):
            return NotImplemented
        return (self._ids, self._types, self._mask, self.truncated) == (other._ids, other._types, other._mask, other.truncated)

    __hash__ = None  # mutable, like the dataclass it replaces

    def __repr__(self) -> str:
        return (f"Encoded(input_ids={self.input_ids}, token_type_ids={self.token_type_ids}, "
                f"response_mask={self.response_mask}, truncated={self.truncated})")


# Where a reward head can read: name -> (the architecture it applies to, what it reads). "first" and
# "last" are the transformers heads' own readouts; the response readouts pool the last layer's states
# over the response mask (the tokens ANCHOR anchors) and pass them through the model's own pooler, when
# it has one (BERT's dense + tanh), and head, so that only the token read changes (bench.stages.models).
READOUTS = {
    "first": ("encoder", "first token"),
    "last": ("decoder", "last real token (the template's last closing token)"),
    "response_mean": ("encoder", "mean of the last layer's states over the response's tokens, through the pooler"),
    "response_last": ("encoder", "last layer's state at the response's last token, through the pooler"),
}
DEFAULT_READOUTS = {"encoder": "first", "decoder": "last"}


def readout_of(spec: ModelSpec) -> str:
    """The spec's readout, checked against its architecture."""
    readout = spec.readout or DEFAULT_READOUTS[spec.architecture]
    if readout not in READOUTS or READOUTS[readout][0] != spec.architecture:
        known = ", ".join(name for name, (arch, _) in READOUTS.items() if arch == spec.architecture)
        raise BenchError(f"model {spec.name!r}: readout {readout!r} is not one for {spec.architecture}s; "
                         f"use one of: {known}")
    return readout


def prompt_text(prompt: tuple[Message, ...]) -> str:
    """Chat messages as plain text for an encoder: a lone user turn as is, otherwise 'role: content' lines."""
    if len(prompt) == 1 and prompt[0][0] == "user":
        return prompt[0][1]
    return "\n".join(f"{role}: {content}" for role, content in prompt)


def kept_lengths(n_prompt: int, n_response: int, budget: int) -> tuple[int, int] | None:
    """How many prompt and response tokens the shared rule keeps; None when both fit. The prompt is
    cut (from the left) down to a quarter of the budget, then the response (from the right)."""
    excess = n_prompt + n_response - budget
    if excess <= 0:
        return None
    keep_prompt = max(n_prompt - excess, min(n_prompt, budget // 4))
    return keep_prompt, budget - keep_prompt


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def dedicated_pad_id(tokenizer) -> int:
    """The pad id of decoder reward models: one past the largest id the tokenizer can produce.

    The decoder reward model reads the last token that is not the pad id, so the pad id must never
    occur in a real sequence. Tokenizers' own pad tokens do not guarantee it (Llama 3 has none and
    the usual fallback, eos, ends every templated sequence; Qwen2.5's <|endoftext|> is an ordinary
    special token that a response text can contain). An id the tokenizer cannot produce can never
    be mistaken for a real token. The model's embedding matrix is grown to hold it when needed
    (``load_reward_model``); that row is never attended to, since padding is on the right and
    masked out, so its value does not matter.
    """
    return max(tokenizer.get_vocab().values()) + 1


class EncoderFormatter:
    """[CLS] prompt [SEP] response [SEP] (or the tokenizer's own pair template), built from token ids.

    The prompt and the response are tokenized separately and joined by the tokenizer's post-processor,
    so the response mask is exact: it comes from the post-processor's sequence ids, not from
    re-tokenizing a concatenated string.
    """

    def __init__(self, tokenizer, max_length: int, readout: str = "first"):
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is None:
            raise TypeError("encoder reward models need a fast (tokenizers-backed) tokenizer")
        self.tokenizer = tokenizer
        self.backend = copy.deepcopy(backend)
        self.backend.no_truncation()
        self.backend.no_padding()
        self.max_length = max_length
        self.readout = readout
        self.budget = max_length - self.backend.num_special_tokens_to_add(True)
        if self.budget < 8:
            raise BenchError(f"max_length {max_length} leaves no room for a prompt and a response")

    def encode(self, prompt: tuple[Message, ...], response: str) -> Encoded:
        p = self.backend.encode(prompt_text(prompt), add_special_tokens=False)
        r = self.backend.encode(response, add_special_tokens=False)
        kept = kept_lengths(len(p.ids), len(r.ids), self.budget)
        if kept:
            p.truncate(kept[0], direction="left")
            r.truncate(kept[1], direction="right")
        full = self.backend.post_process(p, r, add_special_tokens=True)
        return Encoded(input_ids=list(full.ids), token_type_ids=list(full.type_ids),
                       response_mask=[int(s == 1) for s in full.sequence_ids], truncated=kept is not None)

    def provenance(self) -> dict[str, Any]:
        tok = self.tokenizer
        return {"kind": "encoder pair template", "tokenizer_class": type(tok).__name__,
                "tokenizer_sha256": _sha256(self.backend.to_str()),
                "special_tokens": {k: str(v) for k, v in tok.special_tokens_map.items()},
                "pad_token_id": tok.pad_token_id, "padding_side": "right", "readout": READOUTS[self.readout][1],
                "max_length": self.max_length, "truncation": TRUNCATION}


class DecoderFormatter:
    """The chat template with the response as the assistant turn, and an exact response mask.

    Once per prompt the template is rendered with a sentinel as the response: the text before the
    sentinel (the prompt turns and the assistant header) and after it (the closing tokens) are
    tokenized once. For each response the full conversation is rendered, the response's own
    rendering is cut out between those two texts (templates may trim it), and the ids are the
    three parts' ids -- checked to equal the tokenization of the whole rendered text, so the
    sequence is exactly what the template produces and the mask is exact. The prompt rendered with
    ``add_generation_prompt=True`` must be a token prefix of the full conversation.
    Tokenized without the tokenizer's own special tokens: the template writes BOS itself.
    """

    def __init__(self, tokenizer, max_length: int, name: str = "decoder", chat_template: str | None = None,
                 template_kwargs: dict[str, Any] | None = None):
        if not getattr(tokenizer, "is_fast", False):
            raise BenchError(f"model {name!r}: decoder reward models need a fast (tokenizers-backed) tokenizer")
        self.tokenizer = tokenizer
        self.name = name
        self.max_length = max_length
        self.template_source = "model spec" if chat_template else "tokenizer"
        try:
            self.chat_template = tokenizer.get_chat_template(chat_template)
        except ValueError:
            raise BenchError(f"model {name!r}: its tokenizer has no chat template. Use an instruct/chat variant, "
                             f"or set ModelSpec.chat_template to a Jinja chat template") from None
        self.template_kwargs = {**DEFAULT_TEMPLATE_KWARGS, **(template_kwargs or {})}
        self.pad_id = dedicated_pad_id(tokenizer)
        self.bos_id = tokenizer.bos_token_id
        self._frame = functools.lru_cache(maxsize=8192)(self._frame_uncached)
        self.shows_today = self._shows_today()
        if self.shows_today:
            warnings.warn(f"model {name!r}: its chat template writes today's date into the input, so scores depend "
                          f"on the day of the run; pin it with ModelSpec.chat_template_kwargs if the template takes "
                          f"a date variable, or give a template without it (ModelSpec.chat_template)", stacklevel=2)

    def _shows_today(self) -> bool:
        """Whether a rendered conversation contains today's date in a common format (strftime_now)."""
        rendered = self._render((("user", "hi"), ("assistant", "hello")), generation_prompt=False)
        today = datetime.date.today()
        return any(today.strftime(f) in rendered for f in ("%d %b %Y", "%Y-%m-%d", "%d %B %Y", "%B %d, %Y"))

    def _render(self, messages: tuple[Message, ...], generation_prompt: bool) -> str:
        from jinja2 import TemplateError

        try:
            return self.tokenizer.apply_chat_template(
                [{"role": role, "content": content} for role, content in messages], chat_template=self.chat_template,
                tokenize=False, add_generation_prompt=generation_prompt, **self.template_kwargs)
        except (TemplateError, ValueError, TypeError) as error:
            roles = ", ".join(role for role, _ in messages) or "no messages"
            raise self._error(f"the template fails on a conversation of {roles}: {error}") from None

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _error(self, problem: str) -> BenchError:
        return BenchError(f"model {self.name!r}: {problem}. Chat template ({self.template_source}, sha256 "
                          f"{_sha256(self.chat_template)[:12]}): {self.chat_template[:300]!r}... Give the model a "
                          f"template that renders the assistant turn as the generation prompt plus the content "
                          f"(ModelSpec.chat_template)")

    def _frame_uncached(self, prompt: tuple[Message, ...]) -> tuple[str, str, list[int], list[int]]:
        """What the template puts before and after the response for this prompt, as text and ids."""
        rendered = self._render(prompt + (("assistant", SENTINEL),), generation_prompt=False)
        if rendered.count(SENTINEL) != 1:
            raise self._error("the template does not render the assistant's content exactly once")
        before, after = rendered.split(SENTINEL)
        before_ids = self._ids(before)
        head = self._ids(self._render(prompt, generation_prompt=True))
        if before_ids[:len(head)] != head:
            raise self._error("the prompt with the generation prompt is not a token prefix of the prompt plus the "
                              "response (the prefix property fails)")
        return before, after, before_ids, self._ids(after)

    def encode(self, prompt: tuple[Message, ...], response: str) -> Encoded:
        before, after, before_ids, after_ids = self._frame(tuple(prompt))
        full = self._render(tuple(prompt) + (("assistant", response),), generation_prompt=False)
        if not (full.startswith(before) and full.endswith(after) and len(full) >= len(before) + len(after)):
            raise self._error("the template renders the text around the assistant turn differently for different "
                              "responses")
        response_ids = self._ids(full[len(before):len(full) - len(after)])
        if before_ids + response_ids + after_ids != self._ids(full):
            raise self._error("tokens merge across the response's boundary (the template's text before or after the "
                              "content joins the response's first or last token)")
        lead = 1 if before_ids[:1] == [self.bos_id] else 0
        budget = self.max_length - lead - len(after_ids)
        if budget < 8:
            raise BenchError(f"max_length {self.max_length} leaves no room for a prompt and a response after model "
                             f"{self.name!r}'s template tokens")
        prompt_ids = before_ids[lead:]
        kept = kept_lengths(len(prompt_ids), len(response_ids), budget)
        if kept:
            prompt_ids, response_ids = prompt_ids[len(prompt_ids) - kept[0]:], response_ids[:kept[1]]
        ids = before_ids[:lead] + prompt_ids + response_ids + after_ids
        mask = [0] * (lead + len(prompt_ids)) + [1] * (len(response_ids) + len(after_ids))
        return Encoded(input_ids=ids, token_type_ids=[0] * len(ids), response_mask=mask, truncated=kept is not None)

    def provenance(self) -> dict[str, Any]:
        tok = self.tokenizer
        return {"kind": "decoder chat template", "tokenizer_class": type(tok).__name__,
                "tokenizer_sha256": _sha256(tok.backend_tokenizer.to_str()),
                "chat_template_source": self.template_source, "chat_template_sha256": _sha256(self.chat_template),
                "chat_template_chars": len(self.chat_template), "chat_template": self.chat_template,
                "template_kwargs": self.template_kwargs, "template_shows_today": self.shows_today,
                "add_special_tokens": False,
                "bos_token": tok.bos_token, "eos_token": tok.eos_token, "tokenizer_pad_token": tok.pad_token,
                "pad_token_id": self.pad_id, "pad_token": "dedicated id one past the tokenizer's largest id",
                "padding_side": "right", "readout": READOUTS["last"][1],
                "response_mask": "the response's tokens and the template's closing tokens of the assistant turn",
                "max_length": self.max_length, "truncation": DECODER_TRUNCATION}


def formatter_for(spec: ModelSpec, tokenizer, max_length: int) -> EncoderFormatter | DecoderFormatter:
    readout = readout_of(spec)
    if spec.architecture == "encoder":
        return EncoderFormatter(tokenizer, max_length, readout)
    return DecoderFormatter(tokenizer, max_length, name=spec.name, chat_template=spec.chat_template,
                            template_kwargs=dict(spec.chat_template_kwargs))
