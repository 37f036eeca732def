"""The rules a submission is held to -- its file names, size limits, what a name or a text may be --
and the form in which validation reports breaking them (``Problem``, ``Validation``).

The limits are read through this module at check time (``limits.MAX_JSON_BYTES``), so a test can
lower one with ``monkeypatch.setattr(limits, ...)``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

SCHEMA_VERSION = 2   # 2: intervals and the misfit in the summary
KIND = "shiftbench-submission"
SUBMISSION_FILE = "submission.json"

# Limits, checked before reading: a submission of the real protocol is a few MB.
MAX_SUBMISSION_BYTES = 50 * 2**20      # all files of one submission on disk (or in an upload)
MAX_JSON_BYTES = 2 * 2**20             # one submission.json or result.json
MAX_SCORES_BYTES = 64 * 2**20          # one scores file, decompressed
MAX_FILES = 5000
MAX_TEXT_CHARS = 4000                  # one string field

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]{0,95}")     # protocol, model pair, method, slug
PARAM_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
UNSAFE_TEXT_RE = re.compile(r"[<>\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
CELL_FILE_RE = re.compile(r"cells/seed(\d+)/([A-Za-z0-9][A-Za-z0-9._+=-]*)/(result\.json|scores\.csv\.gz)")
REGENERATE = "regenerate the submission with `bench submit` from the run's results"


def cell_folder(seed: int, source: str) -> str:
    return f"cells/seed{seed}/{source.replace('/', '__')}"


# --- what validation reports ------------------------------------------------------------------------
@dataclass(frozen=True)
class Problem:
    file: str        # relative to the submission folder
    field: str       # e.g. "eval_sets.mini/travel.student_acc", or "" for the file as a whole
    message: str
    fix: str

    def __str__(self) -> str:
        where = f"{self.file}: {self.field}" if self.field else self.file
        return f"{where}: {self.message}. Fix: {self.fix}"


@dataclass
class Validation:
    """The outcome for one submission folder; ``submission`` and ``cells`` hold what could be read."""

    folder: Path
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    submission: dict | None = None
    cells: list = field(default_factory=list)   # the CellResults that could be read
    pairs: list = field(default_factory=list)   # per cell that recomputes, its per-pair correctness (bench.stats.Cell)
    name: str = ""   # how to call it: its path in the submissions root (unique there)

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def key(self) -> str:
        """``name``, else ``protocol/models/slug`` when readable, else the folder name."""
        s = self.submission
        return self.name or (f"{s['protocol']['name']}/{s['models']['name']}/{s['slug']}" if s else self.folder.name)

    def error(self, file: str, fld: str, message: str, fix: str) -> None:
        self.errors.append(Problem(file, fld, message, fix))

    def warn(self, file: str, fld: str, message: str, fix: str) -> None:
        self.warnings.append(Problem(file, fld, message, fix))


class _Stop(Exception):
    """Nothing further can be checked (the reason is already recorded)."""
