"""Frozen specs: the protocol is data, not code paths.

A ``DatasetSpec`` says where pairs come from, a ``ProtocolSpec`` which datasets are sources and
targets and how much of each is used, a ``ModelPairSpec`` which weak teacher and strong student
are trained and how. Everything that decides a number is in one of these, and each has a stable
hash that goes into every result.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal


def frozen_map(mapping: dict[str, Any] | None = None, **kwargs: Any) -> tuple[tuple[str, Any], ...]:
    """A dict as a sorted tuple of items, so that it can live in a frozen, hashable spec."""
    items = {**(mapping or {}), **kwargs}
    return tuple(sorted((k, frozen_map(v) if isinstance(v, dict) else v) for k, v in items.items()))


def to_plain(obj: Any, omit_defaults: bool = False) -> Any:
    """Dataclasses, tuples and mappings, however nested, as plain JSON types.

    ``omit_defaults`` leaves out dataclass fields that equal their declared default: hashes use it,
    so adding a new optional field to a spec later does not change the hash of any existing spec."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_plain(getattr(obj, f.name), omit_defaults) for f in dataclasses.fields(obj)
                if not (omit_defaults and _is_default(f, getattr(obj, f.name)))}
    if isinstance(obj, dict):
        return {str(k): to_plain(v, omit_defaults) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v, omit_defaults) for v in obj]
    if obj is None or isinstance(obj, (str, int, float, bool)):
        return obj
    raise TypeError(f"cannot hash a {type(obj).__name__} as part of a spec: {obj!r}")


def _is_default(f: dataclasses.Field, value: Any) -> bool:
    if f.default is not dataclasses.MISSING:
        return value == f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return value == f.default_factory()  # type: ignore[misc]
    return False


def canonical_json(obj: Any) -> str:
    return json.dumps(to_plain(obj, omit_defaults=True), sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False)


def stable_hash(obj: Any, length: int = 16) -> str:
    """sha256 of the canonical JSON of ``obj``: the same on every machine and Python version."""
    return hashlib.sha256(canonical_json(obj).encode()).hexdigest()[:length]


@dataclass(frozen=True)
class DatasetSpec:
    """One preference dataset, turned into (prompt messages, chosen, rejected) pairs."""

    name: str
    category: str                      # e.g. "helpful" or "harmless"; siblings share it
    loader: str                        # "module:function" -> function(spec, split, limit, data_dir) -> LoadedSplit
    train_split: str
    test_split: str
    license: str
    normalizer: str                    # how a raw row becomes a pair, in words
    description: str
    options: tuple[tuple[str, Any], ...] = ()   # keyword arguments for the loader

    @property
    def kwargs(self) -> dict[str, Any]:
        return dict(self.options)


MIN_CAP_PAIRS = 2     # a capped train pool or test split: each half of a split needs a pair
MIN_CAP_LENGTH = 32   # a capped sequence length: fewer tokens leave no room for a response after a chat template


@dataclass(frozen=True)
class ProtocolSpec:
    """A zero-shot preference-shift protocol: every dataset is a source; its category siblings are its targets."""

    name: str
    version: str
    description: str
    categories: tuple[tuple[str, tuple[str, ...]], ...]   # category -> dataset names
    train_pool_size: int               # pairs taken from each source's train split (split in halves A and B)
    test_size: int                     # pairs taken from each test split (ID and OOD)
    seeds: tuple[int, ...]             # the seeds a complete evaluation runs
    max_length: int                    # tokens per (prompt, response) sequence
    truncation: str = "prompt from the left (keeps the latest turn) down to a quarter of the budget, then the response from the right"
    # How a cell's randomness derives from its seed (bench.core.data.cell_seed). "shared": every source of a
    # seed draws the same stage seeds (v1: its six runs share the student's init and batch order, so they
    # are not independent). "per-source": each (seed, source) cell draws its own, so every training run is
    # an independent unit of analysis. The default is left out of the hash: v1 protocols keep theirs.
    seeding: Literal["shared", "per-source"] = "shared"
    # When a paired comparison may be looked at, for protocols whose runs are independent: after every
    # whole seed from the first to the last, as bench.core.sequential.SequentialPlan; None: one look, at the
    # seeds there are (v1's fixed-sample t-interval over seeds).
    looks: tuple[int, int] | None = None
    # Best-of-N (docs/best-of-n.md): N, the candidates of each test prompt's set (bench.core.candidates), which every
    # cell scores beside the pairs and reports BoN accuracies and metrics for. None, the default, scores no
    # sets; a default is left out of the hash, so protocols without sets keep theirs.
    candidates: int | None = None
    # The model pair of the protocol's reference board: what --models means when not given. None: "tiny", as
    # before the field existed (a default is left out of the hash, so protocols without one keep theirs).
    models: str | None = None
    # Which datasets are sources and what each is scored on, for a protocol where not every dataset is a source
    # scored on its category siblings: per source, (source, near targets, far targets). The near targets are the
    # OOD eval sets of AOG and NTS; the far ones (a shift across categories) are scored by the same teacher and
    # student and reported apart, as the cell's "far" score, never in NTS (``far_targets_of``; readers tell them
    # apart by bench.core.protocols.far_targets). None: every dataset a source, its siblings its near targets,
    # no far ones, as before the field existed (a default is left out of the hash, so protocols keep theirs).
    shifts: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] | None = None

    def __post_init__(self) -> None:
        from bench.core.errors import BenchError

        n = self.candidates
        if n is not None and not (isinstance(n, int) and not isinstance(n, bool) and n >= 2):
            raise BenchError(f"protocol {self.name!r}: candidates={n!r} is not a candidate-set size; give a whole "
                             "number >= 2 (the pair's two responses and more, e.g. 4 for best-of-4), or None")
        if self.shifts is not None:
            self._check_shifts()

    def _check_shifts(self) -> None:
        from bench.core.errors import BenchError

        problems = []
        sources = [source for source, _, _ in self.shifts]
        if not sources or len(set(sources)) != len(sources):
            problems.append(f"sources {sources} are not one or more distinct datasets")
        for source, near, far in self.shifts:
            unknown = [d for d in (source, *near, *far) if d not in self.datasets]
            if unknown:
                problems.append(f"{source}: {unknown} are not among its datasets {list(self.datasets)}")
            if not near:
                problems.append(f"{source}: no near target, so no NTS")
            if source in (*near, *far) or set(near) & set(far) or len(set(near)) != len(near) or len(set(far)) != len(far):
                problems.append(f"{source}: near {list(near)} and far {list(far)} must be distinct datasets other "
                                "than the source")
        if problems:
            raise BenchError(f"protocol {self.name!r}: shifts are not (source, near targets, far targets) per source: "
                             + "; ".join(problems))

    @property
    def datasets(self) -> tuple[str, ...]:
        """Every dataset the protocol reads: its sources and every target."""
        return tuple(name for _, names in self.categories for name in names)

    @property
    def sources(self) -> tuple[str, ...]:
        """The datasets a student trains on, one cell each per seed: every dataset, unless ``shifts`` names them."""
        return tuple(source for source, _, _ in self.shifts) if self.shifts else self.datasets

    @property
    def seed_order(self) -> tuple[int, ...]:
        """Every seed a submission may hold, in the order a paired comparison adds them: the protocol's seeds,
        then on a protocol with a sequential plan (``looks``) the next integers, up to the plan's last look."""
        more = max(0, self.looks[1] - len(self.seeds)) if self.looks else 0
        return self.seeds + tuple(range(max(self.seeds) + 1, max(self.seeds) + 1 + more))

    @property
    def seeds_text(self) -> str:
        """The seeds a submission holds, in words, for messages."""
        order = self.seed_order
        more = f", then seeds up to {order[-1]} in order (its sequential plan)" if len(order) > len(self.seeds) else ""
        return f"seeds {list(self.seeds)}{more}"

    def submission_seeds(self, held: Iterable[int]) -> tuple[int, ...]:
        """The seeds a submission whose cells hold the seeds ``held`` must hold whole (every source): the
        protocol's, and every seed of ``seed_order`` up to the last one it holds. A gap is never allowed: a
        comparison looks at whole seeds from the first, so a gap would let a submitter choose which seeds count."""
        order = self.seed_order
        return order[:max([len(self.seeds), *(order.index(s) + 1 for s in held if s in order)])]

    def category_of(self, dataset: str) -> str:
        for category, names in self.categories:
            if dataset in names:
                return category
        raise KeyError(dataset)

    def targets_of(self, source: str) -> tuple[str, ...]:
        """Every eval set of ``source`` besides its own test split: its near targets, then its far ones."""
        if self.shifts:
            near, far = dict((s, (n, f)) for s, n, f in self.shifts)[source]
            return near + far
        category = self.category_of(source)
        return tuple(name for name in dict(self.categories)[category] if name != source)

    def far_targets_of(self, source: str) -> tuple[str, ...]:
        """The targets of ``source`` scored apart from NTS, across categories (``shifts``); none by default."""
        return next((far for s, _, far in self.shifts if s == source), ()) if self.shifts else ()

    def capped(self, train: int | None = None, test: int | None = None, length: int | None = None) -> "ProtocolSpec":
        """This protocol with smaller train pools and test splits, or shorter sequences (``length`` tokens
        at most), for a machine that cannot run it whole. It is a different protocol: its name says so
        and its hash differs, so its results are never mistaken for (or submitted as) the full protocol's."""
        from bench.core.errors import BenchError

        for flag, value, least, unit in (("--cap-train", train, MIN_CAP_PAIRS, "pairs (each half needs one)"),
                                         ("--cap-test", test, MIN_CAP_PAIRS, "pairs"),
                                         ("--cap-length", length, MIN_CAP_LENGTH, "tokens (a chat template alone "
                                                                                  "takes dozens)")):
            if value is not None and value < least:
                raise BenchError(f"{flag} {value}: give at least {least} {unit}")
        train_size = min(self.train_pool_size, train) if train else self.train_pool_size
        test_size = min(self.test_size, test) if test else self.test_size
        max_length = min(self.max_length, length) if length else self.max_length
        if (train_size, test_size, max_length) == (self.train_pool_size, self.test_size, self.max_length):
            return self
        cut = f"-len{max_length}" if max_length != self.max_length else ""   # names without it stay as they were
        return dataclasses.replace(
            self, name=f"{self.name}+cap-train{train_size}-test{test_size}{cut}",
            train_pool_size=train_size, test_size=test_size, max_length=max_length,
            description=f"{self.description} [capped: train pool {train_size}, test {test_size}"
                        + (f", {max_length} tokens per sequence" if cut else "") + "]")


@dataclass(frozen=True)
class ModelSpec:
    """A backbone to load with transformers, plus a scalar reward head."""

    name: str
    path: str                          # hub id or local folder
    path_resolver: str | None = None   # "module:function" returning a local folder (offline packages)
    revision: str | None = None        # hub revision to pin; the resolved commit is recorded either way
    architecture: Literal["encoder", "decoder"] = "encoder"
    num_layers: int | None = None      # keep only the first k transformer layers (None: all)
    dtype: str = "float32"             # float32 | bfloat16 | float16 | auto (bf16 on a CUDA device that has it, else fp32)
    gradient_checkpointing: bool = False
    lora: tuple[tuple[str, Any], ...] | None = None   # frozen_map(r=, alpha=, dropout=, target_modules=) or None
    chat_template: str | None = None   # decoders: a Jinja chat template to use instead of the tokenizer's
    chat_template_kwargs: tuple[tuple[str, Any], ...] = ()   # decoders: fixed template variables (e.g. date_string)
    # Where the reward head reads (bench.stages.models.READOUTS): None is the architecture's own, the first
    # token ([CLS]) for encoders and the last real token for decoders; encoders may also read the
    # mean of the response's tokens (response_mean) or its last token (response_last).
    readout: str | None = None


@dataclass(frozen=True)
class EarlyStopping:
    """Checkpoint selection on held-out training pairs, as EleutherAI's w2s harness does (its students
    keep the best checkpoint on a validation split labelled by the weak teacher, ``load_best_model_at_end``).

    Each run of the training loop holds out ``holdout`` of its examples (a seeded split; they are not
    trained on), scores them every ``every`` steps and after the last, and ends with the checkpoint whose
    ``metric`` on them was best: ``loss``, the soft-label BT loss against their labels, or ``agreement``,
    the share of them on which the student prefers the side their label prefers. The labels are those the
    loop trains on (the teacher's for W2S methods), never the eval sets'. bench.stages.train does the rest."""

    holdout: float = 0.1
    every: int = 10
    metric: Literal["loss", "agreement"] = "loss"

    def __post_init__(self) -> None:
        from bench.core.errors import BenchError

        if not (isinstance(self.holdout, float) and 0.0 < self.holdout < 1.0):
            raise BenchError(f"early stopping: holdout {self.holdout!r} is not a share of the training pairs; "
                             "give a number strictly between 0 and 1 (e.g. 0.1)")
        if not (isinstance(self.every, int) and not isinstance(self.every, bool) and self.every >= 1):
            raise BenchError(f"early stopping: every {self.every!r} is not a number of steps; give a whole number >= 1")
        if self.metric not in ("loss", "agreement"):
            raise BenchError(f"early stopping: metric {self.metric!r} is not one of loss, agreement")

    def label(self) -> str:
        """The mark of a model pair trained with it (``ModelPairSpec.early_stopped``): ``early-stop``, with the
        settings that differ from the defaults (``early-stop-holdout0.2-every5-agreement``)."""
        changed = [value if isinstance(value, str) else f"{f.name}{value}" for f in dataclasses.fields(self)
                   if (value := getattr(self, f.name)) != f.default]
        return "-".join(["early-stop", *changed])


@dataclass(frozen=True)
class TrainConfig:
    """How one reward model is trained. Batch size counts pairs (each pair is two sequences)."""

    learning_rate: float
    epochs: int
    batch_size: int
    warmup_ratio: float = 0.1
    weight_decay: float = 0.0
    max_grad_norm: float = 1.0
    freeze_word_embeddings: bool = False
    # Length-grouped batches (as HF/TRL's group_by_length): less padding, same pairs per epoch.
    # Off by default, so that existing pairs keep their batches and results (docs/performance.md).
    group_by_length: bool = False
    # Checkpoint selection on held-out training pairs (EarlyStopping). None, the default, trains on every
    # pair and keeps the last step; a default is left out of spec hashes, so results without it keep their keys.
    early_stopping: EarlyStopping | None = None


@dataclass(frozen=True)
class ModelPairSpec:
    """A weak teacher and a strong student, with how each is trained and per-pair method defaults."""

    name: str
    description: str
    weak: ModelSpec
    strong: ModelSpec
    teacher_train: TrainConfig
    student_train: TrainConfig
    score_batch_size: int = 64
    method_defaults: tuple[tuple[str, Any], ...] = field(default=())   # method -> frozen_map of params

    def defaults_for(self, method: str) -> dict[str, Any]:
        return dict(dict(self.method_defaults).get(method, ()))

    def early_stopped(self, stopping: EarlyStopping) -> "ModelPairSpec":
        """This pair with its students trained under ``stopping``. It is a different pair: its name says so
        (``tiny+early-stop``) and its hash differs, so its results have their own folder and board rows
        and are never mistaken for the pair's own (as ``ProtocolSpec.capped`` does for protocols)."""
        return dataclasses.replace(self, name=f"{self.name}+{stopping.label()}",
                                   student_train=dataclasses.replace(self.student_train, early_stopping=stopping),
                                   description=f"{self.description} [students early-stopped: {stopping.label()}]")
