"""A run's context: its settings, what is built from them once (the method, the cache, the loaded
splits, formatters, revisions, environment), and the key that decides whether a finished cell is reused.

Every stage reads the run through it (bench.stages.teacher, bench.stages.label_stage, bench.stages.pipeline, bench.stages.evaluate,
bench.stages.labels); it imports none of them.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from functools import cached_property, lru_cache

from bench.core.cache import Cache
from bench.core.candidates import CandidateSet, candidate_modules, load_candidate_sets
from bench.core.data import LoadedSplit, Pair, eval_sets, load_pairs
from bench.core.env import environment
from bench.core.errors import BenchError
from bench.core.protocols import DATASETS, protocol_hash
from bench.core.result_schema import SCHEMA_VERSION
from bench.core.settings import RunSettings
from bench.core.specs import ModelPairSpec, ModelSpec, ProtocolSpec, stable_hash
from bench.core.versions import CELL_CODE, LABEL_CODE, code_version, platform_version
from bench.stages.models import (
    formatter_for,
    load_tokenizer,
    max_positions,
    model_provenance,
    weights_revision,
)
from methods import method_code
from methods.api import Method, has_label_stage


@dataclass
class RunContext:
    """A run's settings with what is built from them once: the method, the cache, and (on first use)
    the loaded splits, formatters, revisions and environment."""

    settings: RunSettings
    method: Method | None   # None for the stages that run no method: bench labels, bench evaluate
    cache: Cache

    @property
    def protocol(self) -> ProtocolSpec:
        return self.settings.protocol

    @property
    def models(self) -> ModelPairSpec:
        return self.settings.models

    @cached_property
    def protocol_hash(self) -> str:
        return protocol_hash(self.protocol)

    @cached_property
    def revisions(self) -> dict[str, dict]:
        """What exactly was loaded (weights digest or hub commit) and how (the dtype ``auto`` resolved to)."""
        return {which: {**weights_revision(spec), **model_provenance(spec)}
                for which, spec in (("weak", self.models.weak), ("strong", self.models.strong))}

    @cached_property
    def environment(self) -> dict:
        return environment()

    @lru_cache(maxsize=None)
    def loaded(self, dataset: str, split: str) -> LoadedSplit:
        """``split`` is "train" (the source's train pool) or "test"; the spec names the real splits."""
        spec = DATASETS.get(dataset)
        if split == "train":
            return load_pairs(spec, spec.train_split, self.protocol.train_pool_size, self.settings.data_dir)
        return load_pairs(spec, spec.test_split, self.protocol.test_size, self.settings.data_dir)

    def pairs(self, dataset: str, split: str) -> list[Pair]:
        return self.loaded(dataset, split).pairs

    @lru_cache(maxsize=None)
    def candidate_sets(self, dataset: str) -> list[CandidateSet]:
        """The best-of-N sets of ``dataset``'s test pairs, one per pair, ``protocol.candidates`` candidates each
        (bench.core.candidates); a BenchError when the protocol has none or the dataset cannot give them."""
        if self.protocol.candidates is None:
            raise BenchError(f"protocol {self.protocol.name} scores no candidate sets (its candidates is None)")
        return load_candidate_sets(DATASETS.get(dataset), self.pairs(dataset, "test"), self.protocol.candidates)

    @lru_cache(maxsize=None)
    def formatter(self, which: str):
        """The model's token layout at the protocol's max length, or the model's own limit when that is
        shorter (an encoder with 512 positions on a 1024-token protocol); the formatter's provenance,
        recorded in every result, holds the length actually used."""
        spec: ModelSpec = getattr(self.models, which)
        limit = max_positions(spec)
        if limit is not None and limit < self.protocol.max_length:
            print(f"[bench] {which} model {spec.name} reads at most {limit} tokens: sequences are cut to {limit}, "
                  f"not the protocol's {self.protocol.max_length}", file=sys.stderr)
        length = min(self.protocol.max_length, limit or self.protocol.max_length)
        return formatter_for(spec, load_tokenizer(spec), length)

    def data_fingerprint(self, source: str) -> dict:
        """What the data of a cell was read from (Hub commits, file digests); empty for generated data,
        whose every input is in the protocol hash."""
        sets = {("train", source): self.loaded(source, "train"),
                **{("test", name): self.loaded(name, "test") for name in eval_sets(self.protocol, source)}}
        return {f"{split}:{name}": fingerprint for (split, name), loaded in sets.items()
                if (fingerprint := data_fingerprint(loaded.provenance))}

    def loaders(self, source: str) -> tuple[str, ...]:
        """The modules that load a cell's datasets: their code decides its pairs (generated data has no
        other fingerprint), so it is part of the code version of the teacher and of the cell; with the modules
        that build and score its candidate sets when the protocol has them. A loader module that reads its rows
        through others names them in ``KEY_MODULES`` (bench.datasets.pinned): they follow the loaders, so the keys
        of a protocol whose loaders name none (mini, mini-v2, w2s-shift-v1) stay as they were."""
        import importlib

        names = (source, *eval_sets(self.protocol, source))
        modules = {DATASETS.get(name).loader.split(":")[0] for name in names}
        used = {name for module in modules for name in getattr(importlib.import_module(module), "KEY_MODULES", ())}
        loaders = tuple(sorted(modules)) + tuple(sorted(used - modules))
        if self.protocol.candidates is None:
            return loaders
        # the test splits' candidate sets are data of the cell too (only where the protocol scores them: keys stay)
        return loaders + candidate_modules([DATASETS.get(name) for name in eval_sets(self.protocol, source)])

    def code(self, source: str) -> str:
        """The version of the code that decides a cell's numbers (bench.core.versions.CELL_CODE, the loaders)."""
        return code_version(CELL_CODE + self.loaders(source))

    def cell_key(self, source: str, seed: int) -> str:
        """Everything that decides a cell's numbers; a finished cell is reused only when this matches
        (a cell finished by other code or on another platform is run again)."""
        return stable_hash({"protocol_hash": self.protocol_hash, "models": self.models, "revisions": self.revisions,
                            "code": self.code(source), "platform": platform_version(),
                            "formatters": {w: self.formatter(w).provenance() for w in ("weak", "strong")},
                            "data": self.data_fingerprint(source),
                            "method": self.method.name, "params": self.method.params.model_dump(),
                            "method_code": method_code(type(self.method)),
                            "source": source, "seed": seed, "schema": SCHEMA_VERSION,
                            # a replicate retrains the student with fresh randomness (bench.core.data.stage_seed);
                            # replicate 0 has no such field, so cells run before replicates keep their keys
                            **({"replicate": self.settings.replicate} if self.settings.replicate else {}),
                            **({"scorer": self.settings.scorer} if self.settings.scorer != "hf" else {}),
                            # a label-side method's cell also depends on the label stage's code; other cells
                            # do not, so changing that code recomputes only theirs
                            **({"label_code": code_version(LABEL_CODE)} if has_label_stage(self.method) else {})},
                           length=24)

    def __hash__(self) -> int:  # lru_cache on methods keys on self
        return id(self)


def data_fingerprint(provenance: dict) -> dict:
    """The parts of a split's provenance that decide its pairs (not local paths or counts)."""
    if provenance.get("source") == "generated":
        return {}
    return {"source": provenance.get("source"), "hub_id": provenance.get("hub_id"), "config": provenance.get("config"),
            "data_dir": provenance.get("data_dir"), "commit": provenance.get("resolved_commit"),
            "files": sorted(f["sha256"] for f in provenance.get("files", []))}
