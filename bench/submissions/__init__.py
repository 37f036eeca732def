"""Leaderboard submissions: ``bench submit`` packs run results, ``bench validate`` checks them.

A submission is one method x params x model pair x protocol, in a folder
``<protocol>/<models>/<slug>/`` of a submissions root::

    submission.json                          metadata, the list of cells with sha256s, the summary
    cells/seed<N>/<source>/result.json       each cell's result, as ``bench run`` (or ``bench evaluate``, for a
                                             student trained elsewhere) wrote it, its command public
    cells/seed<N>/<source>/scores.csv.gz     the per-pair scores behind it
    cells/seed<N>/<source>/candidates.csv.gz every best-of-N candidate's scores, on a protocol with candidate sets
    cells/replicate<R>/seed<N>/<source>/...  naive's submission only: its replicate R of the cell (bench run
                                             --replicate R), its A/A runs, no row of its own

(``<source>`` is the dataset name with ``/`` written ``__``.) Validation only reads JSON and
gzip'd CSV, with size limits checked before anything is read; it never imports or runs anything
from a submission. Every accuracy, metric, the summary and the intervals are recomputed from the
per-pair scores and any mismatch is refused; so is a submission whose test pairs, or whose teacher's
verdicts on them, are not its protocol x model pair's reference teacher's (``reference``). A submission of students trained outside the harness
(``bench evaluate``) is marked ``external`` in submission.json (``results.EXTERNAL_NOTE``: its scores
recompute, its training is not reproduced), and each of its cells must record the digest of the
labels its checkpoint was trained on equal to the cell's own (``cell_checks.check_provenance``). Text that could be markup, script or disguised text (``<`` or ``>``,
control, bidirectional and zero-width characters, HTML character references, ``javascript:``-style
links: ``limits.unsafe_text``) is refused in every field (``<`` and ``>`` aside in a tokenizer's own
text, ``limits.TOKENIZER_TEXT_FIELDS``, in formatters and a model spec's chat template), and names that could be paths are refused.
Validation streams and stops early, so its memory is bounded whatever the files hold (``limits``). Commands are recorded without
the submitter's local paths (``commands.public_command``), and one holding an absolute path is
refused.

One job per module:

- ``limits``: the rules (file names, size limits, name and text patterns) and what validation
  reports (``Problem``, ``Validation``);
- ``schema``: the pydantic models of submission.json, and its fields computed from the cells;
- ``commands``: commands as a submission records them, without local paths;
- ``check``: reading and checking one submission (``validate_submission``), with ``cell_checks`` (one
  cell: files, numbers, seeds, provenance, a method's source) and ``fields`` (one file's text, names,
  commands and JSON);
- ``scores``: reading one scores file in bounded memory (``read_scores``);
- ``reference``: the reference teacher of a protocol x model pair, its test pairs and the teacher's
  verdicts on them, that every submission's are checked against (committed in ``references/``);
- ``tree``: many submissions (``validate_tree``, ``find_submissions``, ``check_teachers``,
  ``teacher_conflicts``, ``label_conflicts``);
- ``record``: the validation record, each submission's outcome stored by its files' checksums, which
  ``bench validate`` and the board reuse for a submission that did not change (``record.validate_tree``);
- ``pack``: ``bench submit`` (``submit``);
- ``upload``: a .zip upload unpacked without trusting it (``extract_upload``).
"""
from bench.submissions.check import validate_submission
from bench.submissions.commands import absolute_paths, public_command
from bench.submissions.limits import (
    KIND,
    MAX_FILES,
    MAX_JSON_BYTES,
    MAX_SCORES_BYTES,
    MAX_SUBMISSION_BYTES,
    MAX_TEXT_CHARS,
    SCHEMA_VERSION,
    SUBMISSION_FILE,
    Problem,
    Validation,
    cell_folder,
)
from bench.submissions.pack import submit
from bench.submissions.schema import code_version, submission_summary
from bench.submissions.tree import (
    find_submissions,
    label_conflicts,
    teacher_conflicts,
    validate_tree,
)
from bench.submissions.upload import extract_upload


def is_external(validation: Validation) -> bool:
    """Whether a submission's students were trained outside the harness (bench evaluate): the board
    marks its row with ``validation.submission["external"]`` (bench.core.result_schema.EXTERNAL_NOTE)."""
    return bool(validation.submission and validation.submission.get("external"))


__all__ = ["KIND", "MAX_FILES", "MAX_JSON_BYTES", "MAX_SCORES_BYTES", "MAX_SUBMISSION_BYTES", "MAX_TEXT_CHARS",
           "SCHEMA_VERSION", "SUBMISSION_FILE", "Problem", "Validation", "absolute_paths", "cell_folder",
           "code_version", "extract_upload", "find_submissions", "is_external", "label_conflicts", "public_command",
           "submission_summary", "submit", "teacher_conflicts", "validate_submission", "validate_tree"]
