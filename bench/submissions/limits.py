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
# The committed reference teachers every submission of their protocol x model pair is checked against
# (bench.submissions.reference).
REFERENCES = Path(__file__).with_name("references")

# Limits, checked before reading: a submission of the real protocol is a few MB.
MAX_SUBMISSION_BYTES = 50 * 2**20      # all files of one submission on disk (or in an upload)
MAX_JSON_BYTES = 2 * 2**20             # one submission.json or result.json
MAX_SCORES_BYTES = 64 * 2**20          # one scores file, decompressed
MAX_SCORES_LINE_BYTES = 4096           # one line of a scores file (a real one is under 200 bytes)
MAX_PAIRS_PER_EVAL_SET = 100_000       # n_pairs of one eval set; the protocol's test_size bounds it first (1,000 for the real one)
MAX_FILES = 5000
MAX_PATH_PART_BYTES = 200             # one folder or file name in an upload (file systems stop at 255 bytes)
MAX_ZIP_ENTRIES = 3 * MAX_FILES   # an upload's entries of any kind: its files, their folders, and what Finder adds
MAX_STORE_INFLATED_BYTES = 512 * 2**20   # a store's three tables decompressed, by their own metadata (a reference
                                         # submission's are under 60 MB), checked before they are read
MAX_SOURCE_BYTES = 2**20               # the method's source a submission of a method that is not built in carries
MAX_TEXT_CHARS = 4000                  # one string field
MAX_STAGE_SECONDS = 30 * 24 * 3600     # one stage's recorded time (timings_s): decision costs are computed from them
MAX_ERRORS_PER_KIND = 10               # bad lines of one kind reported per scores file, then "and N more lines like these"
MAX_ERRORS_PER_FILE = 50               # problems kept per file, then "and N more problems in this file"
UPLOAD_TIME_BUDGET_S = 120.0           # the leaderboard's upload check stops, between cells, after this long

# Memory: what validating one submission holds at most, whatever its files say. Validation streams and
# stops early, so this does not grow with a file's size:
# - a scores file is decompressed a line at a time (one line, at most MAX_SCORES_LINE_BYTES, plus
#   gzip's buffers) and read only up to the rows its result.json declares: the sum of n_pairs over the
#   cell's eval sets, which must be the protocol's (the source and its siblings), each n_pairs at most
#   min(protocol.test_size, MAX_PAIRS_PER_EVAL_SET). The rows kept take about 0.3 KB each (two strings
#   and four floats; a passing cell's are turned into per-pair arrays for the board's intervals), so a
#   cell of the real protocol (1,000 pairs x at most 4 eval sets) holds ~1-2 MB and any cell at most
#   eval sets x min(test_size, MAX_PAIRS_PER_EVAL_SET) x ~0.5 KB; cells are read one after another;
# - a candidates file (a protocol with best-of-N sets) the same way, read only up to N rows for each set its
#   result.json declares (n_sets, each at most min(protocol.test_size, MAX_PAIRS_PER_EVAL_SET); N the registered
#   protocol's): at N = 4, four times the rows of the scores file, each a little larger;
# - problems: at most MAX_ERRORS_PER_FILE per file (and MAX_ERRORS_PER_KIND per kind of bad scores
#   line), each a line of text: a few KB per file, however many lines are bad;
# - a JSON file is parsed whole, but only after its size is checked (MAX_JSON_BYTES; ~10x in objects).
# Before this bound, a 4 MB scores.csv.gz that inflates to 64 MB of rows made `bench validate` use
# 1.7 GB; tests/test_reliability_input.py checks that such a file now adds under 32 MB (tracemalloc).

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+=-]{0,95}")     # protocol, model pair, method, slug
PARAM_KEY_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
# Text that is shown on the board must read as what it is. Refused, in any string of a submission:
# '<' and '>' (markup; except in a tokenizer's own text, TOKENIZER_TEXT_FIELDS below), control characters (terminal escapes; tab and newline are allowed), bidi
# controls U+202A-U+202E and U+2066-U+2069 (they reorder what is shown, so a name can read as
# another), zero-width characters U+200B-U+200D, U+2060, U+FEFF (two names that look the same but
# differ), HTML character references ('&lt;', '&#60', '&#x3c;', and a bare '&lt', which HTML still decodes, even in
# '&ltb': markup once something unescapes it; a plain '&' as in 'R&D' or 'AT&T' is fine), and javascript:, data: and
# vbscript: links, case-insensitively and with the tabs and newlines a browser ignores inside them.
_LINK_SCHEMES = "|".join("[\t\n\r]*".join(scheme) for scheme in ("javascript", "vbscript", "data"))
UNSAFE_TEXT_RE = re.compile(
    r"(?P<markup>[<>])|(?P<control>[\x00-\x08\x0b\x0c\x0e-\x1f\x7f])"
    r"|(?P<bidi>[\u202a-\u202e\u2066-\u2069])|(?P<invisible>[\u200b-\u200d\u2060\ufeff])"
    r"|(?P<entity>&(?:#[xX]?[0-9A-Fa-f]*;?|[A-Za-z][A-Za-z0-9]*;|(?:lt|gt|amp|quot|apos)))"
    rf"|(?P<link>\b(?:{_LINK_SCHEMES})[\t\n\r]*:)", re.IGNORECASE)
_UNSAFE_KINDS = {"markup": "'<' or '>' (markup)", "control": "a control character",
                 "bidi": "a bidirectional control character", "invisible": "a zero-width character",
                 "entity": "an HTML character reference", "link": "a script or data link"}
# A decoder's result records its tokenizer's own text verbatim, for provenance: the chat template
# and special tokens ('<|im_start|>', '<s>'), markup by nature. Those fields (values of
# formatters.<role>.<field>, and models.{weak,strong}.chat_template, a template the model spec gives) may hold
# '<' and '>', and a chat template may run to MAX_TEMPLATE_CHARS (real ones take several thousand;
# tokens keep MAX_TEXT_CHARS); every other rule holds there too. No page or card shows them.
TOKENIZER_TEXT_FIELDS = frozenset({"chat_template", "bos_token", "eos_token", "tokenizer_pad_token", "special_tokens"})
MAX_TEMPLATE_CHARS = 64_000
UNSAFE_TEXT_HELP = ("plain text only: no '<', '>', control, bidirectional or zero-width characters, HTML character "
                    "references (&lt; &#60;) or javascript:/data:/vbscript: links")


def unsafe_text(text: str, markup_ok: bool = False) -> str | None:
    """What in ``text`` could be markup, script or disguised text where it is shown (e.g. "a zero-width
    character U+200B"), or None when it is plain text (``markup_ok``: '<' and '>' allowed too)."""
    found = next((f for f in UNSAFE_TEXT_RE.finditer(text) if not (markup_ok and f.lastgroup == "markup")), None)
    if found is None:
        return None
    kind, what = found.lastgroup, found.group()
    shown = f" {what!r}" if kind in ("entity", "link") else (f" U+{ord(what):04X}" if kind != "markup" else "")
    return _UNSAFE_KINDS[kind] + shown
CELL_FILE_RE = re.compile(r"cells/(?:replicate[1-9]\d*/)?seed(\d+)/([A-Za-z0-9][A-Za-z0-9._+=-]*)/"
                          r"(result\.json|scores\.csv\.gz|candidates\.csv\.gz)")
REGENERATE = "regenerate the submission with `bench submit` from the run's results"
# A string that is a folder of the machine a submission was made on: absolute (/..., C:\...) or ~-prefixed.
# A result records file names and hub ids, never such paths (commands are made public by bench submit).
LOCAL_PATH_RE = re.compile(r"(?:/[^\s/]|~[\w.-]*/|[A-Za-z]:[\\/])")


def cell_folder(seed: int, source: str, replicate: int = 0) -> str:
    """Where a submission holds a cell: ``cells/seed0/mini__travel``; naive's replicate r > 0 of it (an A/A run,
    SubmissionFile) under ``cells/replicate<r>/``."""
    return f"cells/{f'replicate{replicate}/' if replicate else ''}seed{seed}/{source.replace('/', '__')}"


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
    # the result.json bytes each of ``cells`` was read from, while the validation record has not yet stored them
    read: list = field(default_factory=list)
    pairs: list = field(default_factory=list)   # per cell that recomputes, its per-pair correctness (bench.core.cells.Cell)
    controls: list = field(default_factory=list)   # likewise of naive's replicates (CellRef.replicate): no row of theirs
    name: str = ""   # how to call it: its path in the submissions root (unique there)
    digest: str = ""   # its key in the validation record (its files and what validation depends on); "" if not recorded
    store: object = None   # the bench.core.store.Store its cells are read from; None for a folder of cell folders
    # its reproduction record (bench.submissions.reproduce), where the board found one of its content; None: none
    reproduction: dict | None = None

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def key(self) -> str:
        """``name``, else ``protocol/models/slug`` when readable, else the folder name."""
        s = self.submission
        return self.name or (f"{s['protocol']['name']}/{s['models']['name']}/{s['slug']}" if s else self.folder.name)

    more: dict = field(default_factory=dict)    # file -> problems beyond MAX_ERRORS_PER_FILE, counted not kept

    def error(self, file: str, fld: str, message: str, fix: str) -> None:
        # Kept up to a bound per file: a file of a million bad strings must not become a million messages.
        if sum(p.file == file for p in self.errors) >= MAX_ERRORS_PER_FILE:
            self.more[file] = self.more.get(file, 0) + 1
            return
        self.errors.append(Problem(file, fld, message, fix))

    def close(self) -> None:
        """Add one "and N more" line per file whose problems went past the bound."""
        for file, n in self.more.items():
            self.errors.append(Problem(file, "", f"and {n} more problems in this file (the first "
                                       f"{MAX_ERRORS_PER_FILE} are listed)", "fix those, then validate again"))
        self.more = {}

    def warn(self, file: str, fld: str, message: str, fix: str) -> None:
        self.warnings.append(Problem(file, fld, message, fix))


class _Stop(Exception):
    """Nothing further can be checked (the reason is already recorded)."""
