"""The Submit tab's work, without web code: an uploaded .zip is unpacked without trusting it
(``bench.submissions.upload.extract_upload``), validated as ``bench validate`` does, reported with its
problems grouped by kind, and previewed in its group as the board would be with it. Nothing of an
upload is kept: it is unpacked into a temporary folder inside the server's own upload folder, and the
uploaded file is deleted once checked; that folder is removed when the server exits, by a signal too.
"""
from __future__ import annotations

import atexit
import os
import re
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from typing import Mapping

from bench.core.errors import BenchError
from bench.submissions.check import validate_submission
from bench.submissions.limits import UPLOAD_TIME_BUDGET_S, Problem, Validation
from bench.submissions.tree import check_teachers
from bench.submissions.upload import REZIP, extract_upload
from leaderboard.board import UPLOAD_PREFIX, Board, group_label, location
from leaderboard.columns import View, shown
from leaderboard.ranking import ranking

SHOWN_KINDS = 8       # kinds of problem listed, the submission's own first
SHOWN_PER_KIND = 3    # examples of each
_CELL = re.compile(r"cells/(?:replicate\d+/)?seed\d+/[^/:]+/")
_VARYING = re.compile(r"'[^']*'|\d+(?:\.\d+)?")


def problem_kinds(problems: list[Problem]) -> list[list[Problem]]:
    """Problems grouped by kind (the same file of any cell, field and message, numbers and quoted names
    aside), the submission's own (its layout, submission.json: why nothing else can hold) first, then
    the kinds with the most problems."""
    kinds: dict[tuple[str, str, str], list[Problem]] = {}
    for p in problems:
        key = (_CELL.sub("cells/…/", p.file), _VARYING.sub("#", p.field), _VARYING.sub("#", p.message))
        kinds.setdefault(key, []).append(p)
    return sorted(kinds.values(), key=lambda ps: (ps[0].file.startswith("cells/"), -len(ps)))


def _listed(label: str, problems: list[Problem]) -> list[str]:
    kinds = problem_kinds(problems)
    lines = []
    for kind in kinds[:SHOWN_KINDS]:
        lines += [f"  {label}: {p}" for p in kind[:SHOWN_PER_KIND]]
        if len(kind) > SHOWN_PER_KIND:
            lines.append(f"    … and {len(kind) - SHOWN_PER_KIND:,} more like it")
    if len(kinds) > SHOWN_KINDS:
        rest = sum(len(k) for k in kinds[SHOWN_KINDS:])
        lines.append(f"  … and {rest:,} more {label}s of {len(kinds) - SHOWN_KINDS} other kinds "
                     "(bench validate lists all)")
    return lines


def upload_report(validation: Validation, upload_name: str, repository: str = "") -> str:
    kinds = len(problem_kinds(validation.errors))
    lines = [f"{upload_name}: " + ("VALID — passes bench validate" if validation.ok else
                                   f"REJECTED — {len(validation.errors):,} problem(s)"
                                   + (f" of {kinds} kinds, the submission's own first" if kinds > 1 else ""))]
    lines += _listed("error", validation.errors) + _listed("warning", validation.warnings)
    if validation.ok:
        where = f" at {repository}" if repository else ""
        lines.append(f"To publish it, open a pull request{where} adding the folder under submissions/.")
    return "\n".join(lines)


def check_upload(path: str | None, board: Board, protocols: Mapping | None = None,
                 model_pairs: Mapping | None = None, repository: str = "") -> tuple[str, View | None]:
    """Validate an uploaded .zip exactly as bench validate does; the report, and the ranking of its
    group as it would be with the upload (in place of the submission in its folder), or None when
    nothing of it could be read."""
    if not path:
        return "no file", None
    name = Path(path).name
    if not Path(path).is_file():   # the same bytes uploaded twice at once share one file, deleted after the first check
        return f"{name}: not found on the server any more; upload it again", None
    if Path(path).stat().st_size == 0:
        return f"{name}: REJECTED — the file is empty (0 bytes); {REZIP} and upload that", None
    # Unpacked beside the upload, in the server's own folder (outside a server: the system's temp folder).
    beside = upload_root() if Path(upload_root()).is_dir() else None
    with tempfile.TemporaryDirectory(prefix="unpacked-", dir=beside) as tmp:
        try:
            folder = extract_upload(Path(path), Path(tmp) / "submission")
        except BenchError as error:
            return f"{name}: REJECTED — {error}", None
        validation = validate_submission(folder, protocols, model_pairs, time_budget_s=UPLOAD_TIME_BUDGET_S)
    check_teachers([validation], beside=board.validations)   # the board's naive, where no reference is committed
    report = upload_report(validation, name, repository)
    if validation.submission is None or not validation.cells:
        return report, None
    s = validation.submission
    group = (s["protocol"]["name"], s["models"]["name"])
    replaced = location(validation) in board.by_key
    report += (f"\nThe board below is group {group_label(*group)} as it would be with it"
               + (f", in the place of {location(validation)} (the same method, params, model pair and protocol)."
                  if replaced else (", the group's first submission." if group not in board.groups else ".")))
    validation.name = f"{UPLOAD_PREFIX}{name}"
    preview = board.with_entry(validation)
    return report, shown(ranking(preview, *group), board=preview)


def uploaded_file(payload, uploaded: set) -> str | None:
    """The server path of the file an upload event names. The event skips Gradio's preprocessing
    (``preprocess=False``): for a file path, gr.File's leaves an empty temporary file in the upload
    folder on every upload (gradio/components/file.py, ``_process_single_file``), so something of
    every upload would stay. The raw payload comes from the browser, so its path is used only when
    Gradio's upload route wrote that file (``Blocks.upload_file_set``)."""
    path = payload.get("path") if isinstance(payload, dict) else None
    return path if isinstance(path, str) and path in uploaded else None


def forget_upload(path: str | None, uploaded: set) -> None:
    """Delete an uploaded file, and its folder when that is left empty, from the upload folder once it
    is checked: nothing of an upload is kept. Only inside that folder: a path from elsewhere is not ours
    to delete."""
    if not path:
        return
    uploaded.discard(path)
    root, file = Path(upload_root()).resolve(), Path(path).resolve()
    if root not in file.parents:
        return
    file.unlink(missing_ok=True)
    folder = file.parent
    while folder != root and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


# --- the server's own upload folder ---------------------------------------------------------------------------
def upload_root() -> str:
    """Gradio's upload folder, read as Gradio reads it: $GRADIO_TEMP_DIR, else a folder of the system's
    temp folder (shared and never emptied; ``private_upload_folder`` replaces it)."""
    return os.environ.get("GRADIO_TEMP_DIR") or str(Path(tempfile.gettempdir()) / "gradio")


def _remover(folder: Path):
    def remove(*_):
        shutil.rmtree(folder, ignore_errors=True)
    return remove


def private_upload_folder() -> Path:
    """Unless the caller chose one ($GRADIO_TEMP_DIR), the server gets its own upload and temp folder,
    set before Gradio is imported (Gradio reads it then, and writes its own files there too), removed
    when the process exits: at exit, and on SIGTERM and SIGINT, which would otherwise end the process
    without the exit handlers. Nothing uploaded outlives the server, even if a check is interrupted."""
    if os.environ.get("GRADIO_TEMP_DIR"):
        return Path(os.environ["GRADIO_TEMP_DIR"])
    folder = Path(tempfile.mkdtemp(prefix="shiftbench-board-"))
    os.environ["GRADIO_TEMP_DIR"] = str(folder)
    remove = _remover(folder)
    atexit.register(remove)
    if threading.current_thread() is threading.main_thread():   # signal handlers can only be set there
        for number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(number, _then(remove, signal.getsignal(number), number))
    return folder


def _then(remove, previous, number: int):
    """A signal handler that removes the folder, then does what the signal did before: the previous
    handler (SIGINT's KeyboardInterrupt lets the server shut down), or the default (SIGTERM ends)."""
    def handler(signum, frame):
        remove()
        if callable(previous):
            return previous(signum, frame)
        signal.signal(number, signal.SIG_DFL)
        os.kill(os.getpid(), number)
    return handler
