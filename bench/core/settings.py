"""The settings of a run, declared once: everything `bench run` and `bench sweep` are told.

Built once (from the command line by ``bench.commands.settings.run_settings``, or by a caller) and passed whole:
the pipeline, every cell of a sweep and every executor's worker read the same frozen object. A new
run option is a field here, an argument of the parser with the same name, and the code that uses it.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path

from bench.core.specs import ModelPairSpec, ProtocolSpec


def default_cache_dir() -> Path:
    """$SHIFTBENCH_CACHE, else the user's cache folder: ~/.cache/shiftbench (or $XDG_CACHE_HOME/shiftbench)."""
    if os.environ.get("SHIFTBENCH_CACHE"):
        return Path(os.environ["SHIFTBENCH_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "shiftbench"


@dataclass(frozen=True)
class RunSettings:
    protocol: ProtocolSpec                 # the protocol, already capped by --cap-train / --cap-test / --cap-length
    models: ModelPairSpec                  # the weak teacher and strong student, and how each trains
    method: str                            # a registered method's name (a --method-file registers its own); for
                                           # bench evaluate, the external student's name
    params: dict[str, str] = field(default_factory=dict)   # --param key=value, validated by the method
    sources: tuple[str, ...] = ()          # canonical dataset names; () is every dataset of the protocol
    seeds: tuple[int, ...] = ()            # () is the protocol's first seed
    out: Path = Path("results")            # the results folder
    cache_dir: Path = field(default_factory=default_cache_dir)   # the teacher and reference-state cache
    force: bool = False                    # recompute finished cells
    command: str = ""                      # the command line, recorded in every result
    data_dir: Path | None = None           # real datasets from local files instead of the Hub
    method_file: Path | None = None        # a file defining the method: worker processes load it too
    scorer: str = "hf"                     # how the student is scored (bench/scorers)
    replicate: int = 0                     # r > 0: train the students again with fresh randomness, same teachers
                                           # and labels (bench.core.data.stage_seed): rows named ``method#r``

    def __post_init__(self) -> None:  # tuples and paths whatever the caller passed, so settings pickle and compare
        for name, kind in (("sources", tuple), ("seeds", tuple), ("out", Path), ("cache_dir", Path)):
            object.__setattr__(self, name, kind(getattr(self, name)))
        object.__setattr__(self, "sources", self.sources or self.protocol.sources)
        object.__setattr__(self, "seeds", self.seeds or self.protocol.seeds[:1])

    @property
    def cells(self) -> list[tuple[int, str]]:
        """(seed, source) in run order; a seed or source given twice runs once."""
        return list(dict.fromkeys((seed, source) for seed in self.seeds for source in self.sources))

    def replace(self, **changes) -> "RunSettings":
        return dataclasses.replace(self, **changes)
