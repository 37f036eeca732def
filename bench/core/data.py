"""Preference pairs, loading them through the registry, and the seeded splits of the W2S pipeline."""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.specs import DatasetSpec, ProtocolSpec

Message = tuple[str, str]  # (role, content)


@dataclass(slots=True)
class Pair:
    """One preference judgement: ``chosen`` is preferred over ``rejected`` as a reply to ``prompt``."""

    id: str
    prompt: tuple[Message, ...]
    chosen: str
    rejected: str
    meta: dict = field(default_factory=dict)
    group: str | None = None   # pairs that must share a half (e.g. one topic asked many ways); default: the prompt

    @property
    def prompt_key(self) -> str:
        return json.dumps(self.prompt)

    @property
    def group_key(self) -> str:
        return self.group if self.group is not None else self.prompt_key


@dataclass(slots=True)
class OrderedPair:
    """A pair shown to a student as (a, b) in a seeded random order; ``a_is_chosen`` is the gold label."""

    pair: Pair
    a_is_chosen: bool

    @property
    def a(self) -> str:
        return self.pair.chosen if self.a_is_chosen else self.pair.rejected

    @property
    def b(self) -> str:
        return self.pair.rejected if self.a_is_chosen else self.pair.chosen


@dataclass
class LoadedSplit:
    """The pairs of one split and where they came from (source, files or Hub commit, rows read/kept/dropped)."""

    pairs: list[Pair]
    provenance: dict


def load_pairs(spec: DatasetSpec, split: str, limit: int, data_dir: Path | None = None) -> LoadedSplit:
    """The first ``limit`` pairs of ``split`` through the spec's loader, ``loader(spec, split, limit, data_dir)``.

    ``data_dir`` is a local folder to read real datasets from instead of the Hub (layout:
    bench/datasets/loading.py); generated datasets ignore it.
    """
    from bench.core.registry import import_object

    loaded = import_object(spec.loader)(spec, split, limit, data_dir)
    if not isinstance(loaded, LoadedSplit):
        raise TypeError(f"loader {spec.loader!r} returned a {type(loaded).__name__}, not a LoadedSplit")
    if not loaded.pairs:
        raise BenchError(f"dataset {spec.name!r} split {split!r} has no usable pairs: check its files or its filters")
    return loaded


def sub_seed(seed: int, stage: str) -> int:
    """An independent, stable seed for one stage of a cell (split, teacher, order, student ...)."""
    return random.Random(f"{seed}/{stage}").getrandbits(31)


# The stages of a cell with a seed of their own (CellResult.derived_seeds): the teacher's (its split of the
# pool, half B's order, the teacher's init and batch order), and those that seed the student alone: a
# replicate (``stage_seed``) draws these anew and keeps the rest.
TEACHER_STAGES = ("split", "order", "teacher-init", "teacher-order")
STUDENT_STAGES = ("student-init", "student-order")


def cell_seed(protocol: ProtocolSpec, seed: int, source: str) -> int:
    """The seed a cell's stages derive from: the protocol's seed itself when its sources share their
    randomness (``ProtocolSpec.seeding`` "shared", v1), else one of the cell's own, so that no two cells
    of a seed share a split, a teacher init, a student init or a batch order."""
    return seed if protocol.seeding == "shared" else sub_seed(seed, f"cell/{source}")


def stage_seed(protocol: ProtocolSpec, seed: int, source: str, stage: str, replicate: int = 0) -> int:
    """The seed of one stage of a cell. Replicate r > 0 of a cell trains its student again with fresh
    randomness (``STUDENT_STAGES``) on the same split, teacher and labels: two replicates of one method
    differ by run-to-run noise alone (the A/A test, docs/statistics.md). Replicate 0 is the cell itself."""
    if replicate and stage in STUDENT_STAGES:
        stage = f"{stage}#{replicate}"
    return sub_seed(cell_seed(protocol, seed, source), stage)


def split_prompt_disjoint(pairs: list[Pair], seed: int) -> tuple[list[Pair], list[Pair]]:
    """Two halves with no prompt in common, balanced in pairs; the same seed gives the same halves.

    The unit is the pair's group: its prompt, or a coarser group when the dataset sets one (mini
    groups by topic, so that one topic asked in different words cannot sit in both halves).
    Groups are shuffled with the seed and each group's pairs go, whole, to the half that has fewer
    pairs so far.
    """
    half_a: list[Pair] = []
    half_b: list[Pair] = []
    for group in shuffled_groups(pairs, seed, "split"):
        (half_a if len(half_a) <= len(half_b) else half_b).extend(pairs[i] for i in group)
    return half_a, half_b


def shuffled_groups(pairs: list[Pair], seed: int, stage: str) -> list[list[int]]:
    """The pairs' groups (``Pair.group_key``) as lists of indices, each in the pairs' order, the groups in
    an order shuffled with ``sub_seed(seed, stage)``: the unit every prompt-disjoint split deals in."""
    groups: dict[str, list[int]] = {}
    for i, pair in enumerate(pairs):
        groups.setdefault(pair.group_key, []).append(i)
    keys = sorted(groups)
    random.Random(sub_seed(seed, stage)).shuffle(keys)
    return [groups[key] for key in keys]


def random_order(pairs: list[Pair], seed: int) -> list[OrderedPair]:
    """Each pair as (a, b) with a fair seeded coin deciding whether ``a`` is the chosen response,
    so that position carries no label for the student."""
    rng = random.Random(sub_seed(seed, "order"))
    return [OrderedPair(pair, rng.random() < 0.5) for pair in pairs]


def eval_sets(protocol: ProtocolSpec, source: str) -> dict[str, str]:
    """The eval sets of one source: ``{dataset: "id" | "ood"}``, the source first."""
    return {source: "id", **{target: "ood" for target in protocol.targets_of(source)}}
