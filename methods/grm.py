"""GRM: soft-label BT plus a language-modelling loss on the preferred response, through the model's own
(frozen) LM head, which keeps the student's hidden states those of a language model (decoders only).

The pieces: ``response_predictions`` finds, in a batch of either layout, every response token and the
position whose last-layer state predicts it in the token's own sequence; ``response_logprob_sums`` turns
those into each sequence's summed log-probability under the LM head (in chunks, recomputed in the
backward, so a 150k-token vocabulary never holds (tokens, vocab) logits for the whole batch at once).
"""
from __future__ import annotations

from typing import ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch.utils.checkpoint import checkpoint

from bench.core.anatomy import inner_model
from bench.core.errors import BenchError
from bench.stages.batches import uses_pair_rows
from bench.stages.models import pretrained_lm_head
from methods.api import MethodParams, Step
from methods.naive import Naive

# Logits computed at once in the LM term: 2**26 float32 logits (256 MB) per chunk of tokens, e.g. 441
# tokens of Qwen2.5's 152k vocabulary, 1,365 of SmolLM2's 49k.
CHUNK_LOGITS = 2 ** 26


def response_predictions(batch: dict[str, torch.Tensor]) -> tuple[torch.Tensor, ...]:
    """Every prediction of a response token from the state before it in its own sequence, as flat
    (rows, source positions, target ids, sequence index) over the batch's response tokens.

    Sequences (``bench.stages.batches.collate``: the a rows then the b rows): token t is predicted from t - 1;
    the sequence index is the row. Shared-prompt pair rows (``bench.stages.pair_rows``): a's tokens (segment 1,
    with the prefix) likewise; b's tokens (segment 2) from the token before them in b's own sequence:
    the previous token of segment 2, or for the first token of b's rest, the last token of the shared
    prefix (row index = its position id - 1, since the prefix sits at the row's start with positions 0,
    1, ...), never a's last token. The sequence index of a's tokens is the row, of b's the row + n (the
    order of the two-sequence path: every a, then every b). A response token at a sequence's first
    position (none in a templated sequence) has no prediction."""
    ids, response = batch["input_ids"], batch["response_mask"].bool()
    n, width = ids.shape
    rows = torch.arange(n, device=ids.device)[:, None].expand(n, width)
    source = torch.arange(width, device=ids.device)[None, :].expand(n, width) - 1
    sequence = rows
    if "segment" in batch:
        segment = batch["segment"]
        is_b = segment == 2
        before = F.pad(segment[:, :-1], (1, 0))
        source = torch.where(is_b & (before != 2), batch["position_ids"] - 1, source)
        sequence = rows + n * is_b
    keep = response & (source >= 0)
    return rows[keep], source[keep], ids[keep], sequence[keep]


def _token_logprobs(hidden: torch.Tensor, targets: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    logits = F.linear(hidden, weight).float()   # the matmul in the model's dtype, as its LM head; softmax in fp32
    return logits.gather(-1, targets[:, None])[:, 0] - logits.logsumexp(-1)


def token_logprobs(hidden: torch.Tensor, targets: torch.Tensor, weight: torch.Tensor,
                   chunk_logits: int | None = None) -> torch.Tensor:
    """log p(target | state) under the LM head ``weight`` (vocab, hidden), per token; chunks of tokens
    whose logits are recomputed in the backward instead of kept (torch.utils.checkpoint)."""
    chunk = max(1, (chunk_logits or CHUNK_LOGITS) // weight.shape[0])
    recompute = torch.is_grad_enabled() and hidden.requires_grad and len(targets) > chunk
    pieces = [hidden.new_zeros(0, dtype=torch.float32)]
    for s in range(0, len(targets), chunk):
        args = (hidden[s:s + chunk], targets[s:s + chunk], weight)
        pieces.append(checkpoint(_token_logprobs, *args, use_reentrant=False) if recompute else _token_logprobs(*args))
    return torch.cat(pieces)


def response_logprob_sums(last: torch.Tensor, batch: dict[str, torch.Tensor], weight: torch.Tensor
                          ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per sequence of the batch (every a, then every b), log pi(response | prompt) = the sum over its
    response tokens of log p(token | the tokens before it in its sequence), from the last layer's states
    ``last`` (n, T, hidden); with the per-token log-probs and the per-sequence token counts."""
    rows, source, targets, sequence = response_predictions(batch)
    n = last.shape[0]
    sequences = 2 * n if "segment" in batch else n
    logp = token_logprobs(last[rows, source], targets, weight.to(last.device, last.dtype))
    sums = logp.new_zeros(sequences).index_add(0, sequence, logp)
    counts = torch.bincount(sequence, minlength=sequences)
    return sums, logp, counts


class GRM(Naive):
    """
    name: grm
    idea: (1-alpha) * BT + alpha * SFT loss on the preferred response through the pretrained LM head (decoders)
    paper: Yang et al. 2024, "Regularizing Hidden States Enables Learning Generalizable Reward Model for LLMs" (NeurIPS)

    GRM keeps the reward model's last-layer states usable by the model's own language-modelling head
    while the reward head trains on them: loss = (1 - alpha) * BT(q) + alpha * SFT, with, per pair,

      SFT = q * l(a) + (1 - q) * l(b),   l(y) = -log sigmoid(beta * log pi(y | x))   (batch mean over pairs)

    where log pi(y | x) is the SUM over y's response tokens of log p(token | x, the tokens of y before it),
    from the last layer's states (hidden_states[-1], which transformers gives after the final norm, i.e.
    what the causal LM's head reads) through the LM head. Response tokens are the response mask's: the
    assistant turn's tokens and the template's closing tokens (bench/core/formatting.py), the first predicted
    from the prompt's last token -- GRM's labels, which mask exactly the prompt rendered with the
    generation prompt. On pair rows each response is predicted within its own sequence: b's first token
    from the shared prompt's last token, never from a's last (``response_predictions``); the test checks
    the sums against the causal LM on each sequence alone.

    From the code (YangRui2015/Generalizable-Reward-Model, read in the fork brchristian/Generalizable-
    Reward-Model: reward_models/grm_reward_trainer.py, run_grm_reward_train.py, load_datasets.py,
    scripts/train_grm_lora.sh): ``loss = weight_ratio * sft + (1 - weight_ratio) * reward_loss`` with
    weight_ratio 0.01 (here ``alpha``); the default regulariser (sft_only=True, reference_free=True,
    no_logsigmoid_sft=False) is ``-logsigmoid(beta * logps_chosen).mean()`` with beta 0.1 and logps
    summed over the labelled tokens; ``sft=nll`` is its no_logsigmoid_sft variant, -log pi(y | x).
    Their LoRA default trains adapters and the value head only, so the LM head is frozen (their full
    fine-tuning trains it too); here it is frozen always: tied, the input embeddings detached (an input embedding still trains as an input,
    when the pair lets it); untied, ``lm_head.weight`` read once from the checkpoint
    (bench.stages.models.pretrained_lm_head). Their value head is a 1024-unit MLP; the head here is the
    model pair's (a linear score head), so that only the loss differs from ``naive``.

    Soft labels: GRM regularises the chosen response. With q = P(a preferred), SFT above is GRM's
    term in expectation over which response is chosen (a with probability q), just as soft BT is the
    hard BT loss in expectation; gold or hard labels (q in {0, 1}) give GRM's term exactly. Weighting
    by q rather than regularising the response the teacher prefers keeps the term smooth in q: a pair
    the teacher barely separates puts half its weight on each response instead of all on a coin flip.
    On a truncated response the template's closing tokens follow the cut, as the formatter keeps them.
    Decoders only: an encoder has no LM head to regularise through.
    """
    needs_hidden_states = True

    class Params(MethodParams):
        alpha: float = Field(0.01, ge=0.0, le=1.0, allow_inf_nan=False)
        beta: float = Field(0.1, gt=0.0, allow_inf_nan=False)
        sft: Literal["logsigmoid", "nll"] = "logsigmoid"

    architectures: ClassVar[tuple[str, ...]] = ("decoder",)   # the students it can train

    @staticmethod
    def encoder_error(student: str) -> BenchError:
        return BenchError(f"method 'grm' regularises the student through its language-modelling head, which only a "
                          f"decoder has, and the student {student} is an encoder. Use a decoder model pair: --models "
                          f"smol (offline), qwen or llama, or --models weak=...,strong=...,arch=decoder")

    @classmethod
    def check_student(cls, spec) -> None:
        """Before any work: the student's ModelSpec must be a decoder's."""
        if spec.architecture not in cls.architectures:
            raise cls.encoder_error(repr(spec.name))

    def setup(self, student):
        if not uses_pair_rows(student):   # set on every reward model the harness loads from its spec: decoders
            raise self.encoder_error(f"({type(inner_model(student)).__name__})")
        self.lm_head, self.lm_head_source = pretrained_lm_head(student)

    def fit(self, student, examples, cfg, train):
        self.setup(student)
        log = {**train(student, examples, cfg), "grm_lm_head": self.lm_head_source}
        self.finish(student)
        return log

    def loss(self, step: Step):
        bt, logs = super().loss(step)
        sums, logp, _ = response_logprob_sums(step.hidden_states[-1], step.batch, self.lm_head)
        n = len(step.target)
        weights = torch.cat([step.target, 1.0 - step.target])
        per_sequence = -F.logsigmoid(self.params.beta * sums) if self.params.sft == "logsigmoid" else -sums
        sft = (weights * per_sequence).sum() / n
        alpha = self.params.alpha
        return (1.0 - alpha) * bt + alpha * sft, {**logs, "grm_sft": sft.detach(), "lm_nll": -logp.detach().mean()}

    def finish(self, student):
        del self.lm_head   # untied, a (vocab, hidden) copy: 1 GB for a 7B model's bf16 LM head
