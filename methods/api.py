"""The method API: what a W2S student method may change, and nothing more.

The bottom layer of the project: everything a method file needs (``Method``, ``Step``, ``MethodParams``,
``Labels`` / ``LabelInputs`` for a label stage, ``soft_bt_loss``, the trainable-state helpers), with
no import from the stages that run methods (bench.stages.train, bench.stages.label_stage, bench.stages.pipeline), which import it.

A method is a subclass of ``Method`` in one short file. Its class docstring opens with a
front-matter block, which is where its name, idea and paper come from::

    class MyMethod(Method):
        '''
        name: my-method
        idea: soft-label BT plus something that keeps the student honest out of distribution
        paper: Someone et al. 2026, "A Title" (or: none)

        Free text: the exact loss, the schedule, what each parameter does.
        '''

Hooks, all optional except ``loss`` (``Naive`` implements it; most methods subclass ``Naive``):

- ``Params``: a pydantic model of the method's parameters (types, defaults, bounds); unknown or
  ill-typed ``--param`` values fail before any work with the valid ones listed.
- ``labels``: ``"teacher"`` (learn from the weak teacher's soft labels, every W2S method) or
  ``"gold"`` (the same pairs' gold labels: the ceiling).
- ``needs_hidden_states``: ask the training loop for every layer's hidden states in ``Step``.
- ``setup(student)``: once, with the freshly loaded pretrained student, before the first step.
- ``loss(step)``: the training loss of one batch, and numbers to log (floats, or detached 0-d
  tensors: the loop reads those on the host only at the end, so logging never waits for a GPU).
- ``finish(student)``: once, after the last step (e.g. interpolate weights, free references).
- ``fit(student, examples, cfg, train)``: the whole training; override only to change its shape
  (several phases, as LP-FT does) or to prepare from the training examples (ANCHOR's pretrained
  states). ``train(student, examples, cfg)`` runs the shared loop; ``train.shared`` is the run's
  cache for tensors that depend only on the pretrained student and the training sequences
  (``shared.tensors(kind, inputs, compute)``; None outside a pipeline run), so a sweep computes
  them once (``bench.stages.reference`` keeps ANCHOR's pretrained states there).
- ``rule_reward(prompt, response)``: for methods that train nothing (``trains = False``), the
  reward of one response; the pipeline then skips the student model altogether.
- ``relabel(inputs) -> Labels``: a label-side method's label stage (bench/stages/label_stage.py), between the
  teacher's soft labels and the student's training: from half B, the teacher's labels, more teachers
  and the pretrained strong model, the labels the student trains on (a target per pair, which pairs
  it keeps, optionally every teacher's label per pair for the loss: ``Step.teacher_labels``). Run
  once per cell and cached on disk; not overridden, the student learns from the teacher's labels.
"""
from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import BaseModel, ConfigDict, ValidationError
from torch import nn

from bench.core.anatomy import head_of, inner_model
from bench.core.errors import BadParamsError, BenchError

if TYPE_CHECKING:
    from bench.core.data import OrderedPair

FRONT_MATTER_KEYS = ("name", "idea", "paper", "aliases")


class MethodParams(BaseModel):
    """The base of every method's ``Params``: unknown keys are refused (a misspelt ``--param`` fails
    before any work) and a run's params cannot change once made."""

    model_config = ConfigDict(extra="forbid", frozen=True)


NoParams = MethodParams   # a method without parameters


@dataclass
class Step:
    """One training step: rewards of each side, the target P(a preferred), and what produced them."""

    r_a: torch.Tensor                  # (B,) reward of response a
    r_b: torch.Tensor                  # (B,) reward of response b
    target: torch.Tensor               # (B,) soft label q = P(a > b), or the gold 0/1
    batch: dict[str, torch.Tensor]     # a rows then b rows (bench.stages.batches.collate), or pair rows on decoders (bench.stages.pair_rows)
    hidden_states: tuple[torch.Tensor, ...] | None   # (embeddings, layer 1, ..., layer L) when the method asks
    model: nn.Module | None = None     # the student being trained
    index: int = 0                     # 0-based step number within this training
    total: int = 1                     # steps in this training
    host_batch: dict[str, torch.Tensor] | None = None  # ``batch`` before its copy to the device: read
                                                       # sizes here without waiting for the device
    teacher_labels: torch.Tensor | None = None   # (B, K): each of K teachers' P(a > b), when the method's
                                                 # label stage gives them (Labels.teacher_labels); else None

    @property
    def progress(self) -> float:
        """Fraction of training done before this step: 0 at the first step, (total-1)/total at the last."""
        return self.index / self.total


def parse_front_matter(doc: str | None) -> dict[str, str]:
    """``key: value`` lines at the top of a docstring, up to the first blank line."""
    found: dict[str, str] = {}
    for line in (doc or "").strip().splitlines():
        key, sep, value = line.strip().partition(":")
        if not line.strip() or not sep or key.strip() not in FRONT_MATTER_KEYS:
            break
        found[key.strip()] = value.strip()
    return found


class Method:
    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()            # other names it answers to (front matter ``aliases:``)
    summary: ClassVar[str] = ""
    paper: ClassVar[str] = ""
    labels: ClassVar[Literal["teacher", "gold"]] = "teacher"
    needs_hidden_states: ClassVar[bool] = False
    trains: ClassVar[bool] = True
    architectures: ClassVar[tuple[str, ...]] = ("encoder", "decoder")   # the students it can train
    Params: ClassVar[type[BaseModel]] = NoParams

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        meta = parse_front_matter(cls.__dict__.get("__doc__"))
        cls.name = meta.get("name", cls.__dict__.get("name", ""))
        cls.summary = meta.get("idea", cls.__dict__.get("summary", ""))
        cls.paper = meta.get("paper", cls.__dict__.get("paper", ""))
        cls.aliases = tuple(a.strip() for a in meta["aliases"].split(",")) if "aliases" in meta else \
            cls.__dict__.get("aliases", ())

    def __init__(self, params: BaseModel | None = None):
        self.params = params if params is not None else self.Params()

    # --- hooks ------------------------------------------------------------------------------------
    def setup(self, student: nn.Module) -> None:
        """Called once with the freshly loaded student, before the first step."""

    def loss(self, step: Step) -> tuple[torch.Tensor, dict[str, float]]:
        raise NotImplementedError(f"method {self.name!r} must define loss(step)")

    def finish(self, student: nn.Module) -> None:
        """Called once after the last step."""

    def fit(self, student: nn.Module, examples: list, cfg, train: Callable[..., dict]) -> dict:
        """The whole training of the student; returns the training log. ``train`` is a
        bench.stages.train.TrainingLoop: ``train(student, examples, cfg)`` runs the loop, ``train.shared`` the cache."""
        self.setup(student)
        log = train(student, examples, cfg)
        self.finish(student)
        return log

    def rule_reward(self, prompt: tuple[tuple[str, str], ...], response: str) -> float:
        raise NotImplementedError(f"method {self.name!r} trains a student; it has no rule reward")

    @classmethod
    def check_student(cls, spec) -> None:
        """Before any work (bench.stages.pipeline.run): a clear error when the student's architecture (its
        ModelSpec's) is one this method cannot train."""
        if spec.architecture not in cls.architectures:
            raise BenchError(f"method {cls.name!r} trains {' or '.join(cls.architectures)} students, and the student "
                             f"{spec.name!r} is an {spec.architecture}: use a model pair whose student is a "
                             f"{cls.architectures[0]} (bench list models)")

    def relabel(self, inputs: LabelInputs) -> Labels:
        """The label stage: the labels the student trains on (bench/stages/label_stage.py). Only a label-side
        method defines it; the pipeline runs it once per cell and caches it."""
        raise NotImplementedError(f"method {self.name!r} has no label stage; it learns from the teacher's labels")

    def relabelled(self, info: dict) -> None:
        """Called with the label stage's record (``Labels.info`` and what the stage computed) before the
        student trains, whether ``relabel`` ran now or its labels came from the cache: a loss that needs
        a number its relabel found (``unbiased``'s flip rate) takes it from here."""


def has_label_stage(method: Method) -> bool:
    """Whether ``method`` has a label stage: it overrides ``Method.relabel``."""
    return type(method).relabel is not Method.relabel


def check_method_class(cls: object, where: str) -> type[Method]:
    """A clear error for anything registered as a method that cannot be one."""
    if not (isinstance(cls, type) and issubclass(cls, Method)):
        raise BenchError(f"{where}: {cls!r} is not a subclass of methods.api.Method")
    if not cls.name or not cls.summary:
        raise BenchError(f"{where}: method class {cls.__name__} needs a docstring front-matter with "
                         f"'name:' and 'idea:' lines (see methods/api.py)")
    if cls.trains and cls.loss is Method.loss:
        raise BenchError(f"{where}: method {cls.name!r} trains a student but defines no loss(step); "
                         f"subclass methods.naive.Naive or define loss")
    if cls.relabel is not Method.relabel and (not cls.trains or cls.labels != "teacher"):
        raise BenchError(f"{where}: method {cls.name!r} defines relabel (a label stage) but "
                         f"{'trains nothing' if not cls.trains else 'learns from gold labels'}: a label stage "
                         f"changes the teacher's labels for a student to train on. Drop relabel, or set "
                         f"trains = True and labels = \"teacher\"")
    return cls


# --- shared pieces --------------------------------------------------------------------------------
def soft_bt_loss(r_a: torch.Tensor, r_b: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Soft-label Bradley-Terry cross-entropy -[q log s(d) + (1-q) log s(-d)], d = r_a - r_b, batch mean."""
    return F.binary_cross_entropy_with_logits(r_a - r_b, target)


def head_parameter_names(model: nn.Module) -> set[str]:
    """The reward head's parameters: those of the ``score`` (decoders) or ``classifier`` (encoders)
    module, matched by identity so that a LoRA (peft) wrapper, which renames everything, changes nothing."""
    _, head = head_of(inner_model(model))
    ids = {id(p) for p in head.parameters()}
    return {name for name, p in model.named_parameters() if id(p) in ids}


def backbone_parameters(model: nn.Module) -> dict[str, nn.Parameter]:
    """Everything but the head: the pretrained weights and, with LoRA, the adapters (whose pretrained
    value is "no change", so pulling or interpolating them towards their start is the same idea)."""
    head = head_parameter_names(model)
    return {name: p for name, p in model.named_parameters() if name not in head}


def describe_annotation(annotation: object) -> str:
    """A parameter's type as the user types it: ``last|mid`` for a Literal, ``median|float`` for a choice
    or a number (a Union, whose Annotated bounds are left to the error message), else the type's name."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Literal:
        return "|".join(map(str, args))
    if origin in (typing.Union, types.UnionType):
        return "|".join(describe_annotation(arg) for arg in args)
    if origin is typing.Annotated:
        return describe_annotation(args[0])
    return getattr(annotation, "__name__", str(annotation))


def describe_params(cls: type[Method]) -> str:
    fields = cls.Params.model_fields
    if not fields:
        return "(none)"
    return ", ".join(f"{name}: {describe_annotation(info.annotation)} = {info.default!r}"
                     for name, info in fields.items())


def parse_params(cls: type[Method], values: dict[str, object]) -> BaseModel:
    """Validate ``values`` (strings from the command line are coerced) against the method's params."""
    problems = [problem for name, value in values.items() if (problem := number_problem(cls, name, value))]
    if problems:   # said before pydantic, whose bounds would call a NaN "not <= 1" and take 1e-400 as 0.0
        raise BadParamsError(f"bad params for method {cls.name!r}: {'; '.join(problems)}. "
                             f"Valid params: {describe_params(cls)}")
    try:
        return cls.Params(**values)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'params'}: {e['msg']}" for e in error.errors())
        raise BadParamsError(f"bad params for method {cls.name!r}: {problems}. "
                             f"Valid params: {describe_params(cls)}") from None


# --- in-memory checkpoints (early stopping in bench.stages.train, warm and s2s) and the BT probability ------------
def trainable_state(model: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of every parameter that requires grad: all that training can change (frozen weights, and
    with LoRA the whole base model, stay as loaded). Kept on the CPU, so a checkpoint costs no device memory."""
    return {name: p.detach().to("cpu", copy=True) for name, p in model.named_parameters() if p.requires_grad}


@torch.no_grad()
def load_trainable_state(model: nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Write ``state`` (``trainable_state``'s, or an average of such) into the model's parameters, each
    in its own dtype and on its own device."""
    params = dict(model.named_parameters())
    unknown = sorted(set(state) - set(params))
    if unknown:
        raise KeyError(f"a checkpoint of another model: it holds {unknown[:3]}, which this model has no parameter for")
    for name, value in state.items():
        params[name].copy_(value)


def preference_probability(r_a: float, r_b: float) -> float:
    """P(a > b) = sigmoid(r_a - r_b), the Bradley-Terry probability: the teacher's soft labels
    (bench.stages.teacher), a student's own (s2s, the misfit). One formula everywhere, so the same rewards give
    the same label to the last bit; a gap past what ``math.exp`` can take gives its limit, 0."""
    d = r_a - r_b
    return 0.0 if d < -700 else 1.0 / (1.0 + math.exp(-d))


# --- a label stage: what relabel reads and returns (bench/stages/label_stage.py runs it) -------------------
@dataclass
class Labels:
    """What a label-side method's ``relabel`` returns: what the student trains on."""

    targets: list[float]                          # P(a > b) per training pair, in half B's order
    kept: list[int] | None = None                 # the half-B indices (increasing) of the training pairs; None: all
    teacher_labels: list[list[float]] | None = None   # per training pair, each teacher's P(a > b) (Step.teacher_labels)
    info: dict = field(default_factory=dict)      # what the cell's result records about the labels (JSON values)


@dataclass
class LabelInputs:
    """What ``relabel`` reads. The teachers and the strong model are computed only when asked for
    (``teachers``, ``strong_model``, ``strong_features``); ``record`` collects what was computed (each
    teacher's cache key, whether the features were cached) for the cell's result."""

    ordered: list[OrderedPair]                        # half B, each pair in its seeded (a, b) order
    soft_labels: list[float]                          # the cell's teacher's P(a > b), one per pair
    member_labels: Callable[[int], list[float]]       # teacher m >= 1 -> its P(a > b) per pair
    load_strong: Callable[[], nn.Module]              # the pretrained strong model, as the student starts
    pair_features: Callable[[], torch.Tensor]         # (pairs, width): f(a) - f(b), f what the reward head reads
    record: dict = field(default_factory=dict)
    held_out_error: Callable[[], float] | None = None   # the teacher's error rate on gold pairs it never saw

    def teachers(self, k: int) -> list[list[float]]:
        """The soft labels of ``k`` teachers on half B: the cell's own (member 0) and k - 1 more, each
        trained on half A with seeds of its own; per teacher, one P(a > b) per pair."""
        if k < 1:
            raise BenchError(f"teachers(k) needs k >= 1 (the cell's own teacher is the first), got {k}")
        return [list(self.soft_labels)] + [self.member_labels(member) for member in range(1, k)]

    def teacher_error(self) -> float:
        """The teacher's error rate (0 to 1, a tie counting half) on gold-labelled pairs it was not trained
        on: a teacher of the same configuration and seeds trained on half A less about 20% of it
        (HOLDOUT_SHARE; whole prompt groups, seeded: bench.stages.teacher.split_half_a), scored on that part (its
        own teacher-stage entry). The cell's teacher trained on all of half A, so it has no held-out pairs
        of its own; this one is its stand-in, on about 80% of the data."""
        if self.held_out_error is None:
            raise BenchError("teacher_error() needs a pipeline run (bench run): these LabelInputs have no "
                             "held_out_error to call")
        return self.held_out_error()

    def strong_model(self) -> nn.Module:
        """The pretrained strong model with its freshly initialised reward head, exactly as the student
        starts (the same seed); in eval mode, on the run's device."""
        return self.load_strong()

    def strong_features(self) -> torch.Tensor:
        """Per pair, f(a) - f(b) (float32, on the CPU), where f(x) is the vector the pretrained strong
        model's reward head reads for (prompt, x): the head is linear, so its reward difference
        r(a) - r(b) is the head's weight times this. Computed once per strong model and half B, and cached."""
        return self.pair_features()


def drop_share(unreliability: list[float], share: float) -> list[int]:
    """The indices kept when the ``floor(share * n)`` pairs with the highest ``unreliability`` are
    dropped (as EleutherAI w2s's ``Probe.filter``: ``int(contamination * n)``); among equal scores the
    earlier pair goes first. The kept indices come back in increasing order."""
    n_drop = math.floor(share * len(unreliability))
    ranked = sorted(range(len(unreliability)), key=lambda i: (-unreliability[i], i))
    return sorted(ranked[n_drop:])


def takes_float(annotation: object) -> bool:
    """Whether a parameter's type takes a float (``float``, ``Annotated[float, ...]``, a union with float)."""
    if annotation is float:
        return True
    return any(takes_float(arg) for arg in typing.get_args(annotation)
               if typing.get_origin(annotation) in (typing.Annotated, typing.Union, types.UnionType))


def number_problem(cls: type[Method], name: str, value: object) -> str | None:
    """What is wrong with a float parameter given as text that a float cannot hold: NaN or an infinity
    (no loss weight or rate is), or a number too small for a float, which would become 0.0 and silently
    turn the method into another (lam=1e-400 is naive). None when there is nothing wrong, or it is not a
    float parameter given as text (pydantic checks those)."""
    field = cls.Params.model_fields.get(name)
    if field is None or not isinstance(value, str) or not takes_float(field.annotation):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    if not math.isfinite(number):
        written = "nan" in value.lower() or "inf" in value.lower()
        return (f"{name}: must be a finite number, got {value!r}" if written else
                f"{name}: {value} is too large for a float (it would be infinite); give a finite number")
    if number == 0.0 and any(c in "123456789" for c in value.lower().partition("e")[0]):
        return (f"{name}: {value} is too small for a float: it would be 0.0, which turns the method into another. "
                "Give 0, or a number of at least 5e-324")
    return None
