"""User-facing errors: each names the problem and the fix. The CLI prints these without a
traceback; anything else is a bug and keeps its traceback, except in a run's failed cells, which
name it with where it was raised (``described``) and let the other cells go on."""
from __future__ import annotations

import sys
import traceback


class BenchError(Exception):
    """Bad input or settings, explained in the message."""


class UnknownNameError(BenchError, KeyError):
    """A name that is not registered; the message lists the valid names and the closest match."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class BadParamsError(BenchError, ValueError):
    """Method parameters that do not validate; the message lists the valid ones."""


class TrainingDivergedError(BenchError, RuntimeError):
    """The loss became NaN or infinite; the message says which settings to change."""


class NonFiniteScoresError(TrainingDivergedError):
    """A model gave a NaN or infinite score: its weights are broken even if the loss stayed finite
    (e.g. a method's ``finish()`` wrote NaN into them). The message names the model, eval set and fix."""


class MethodError(BenchError):
    """A method's code gave the training loop what it cannot train with (a loss that is not one number,
    or one without a gradient); its cell fails, and the message says what the method must return."""


def described(error: BaseException) -> str:
    """An error as one line of a run's list of failed cells: a harness error's own message; any other (a
    bug in a method's code or in the harness) its type, message and where it was raised: the innermost
    frame outside the Python installation (a method file's line rather than torch's)."""
    if isinstance(error, BenchError):
        return str(error)
    frames = traceback.extract_tb(error.__traceback__)
    installed = (sys.prefix, sys.base_prefix, sys.exec_prefix)
    own = [f for f in frames if not f.filename.startswith(installed)] or frames
    where = f" (raised at {own[-1].filename}:{own[-1].lineno}, in {own[-1].name})" if own else ""
    return f"{type(error).__name__}: {error}{where}"


class CellsFailedError(BenchError):
    """Some cells of a run failed on their own (their training diverged, or their method's code raised)
    while the others finished and were written. ``failures``: one line per failed cell; ``finished``: the other cells' results."""

    def __init__(self, failures: list[str], finished: list, out: object) -> None:
        self.failures, self.finished = failures, finished
        total = len(failures) + len(finished)
        super().__init__(
            f"{len(failures)} of {total} cells failed and wrote no result; the finished ones ({len(finished)}) are in {out} "
            f"(`bench report --out {out}` shows them). A rerun skips finished cells and retries only these:\n"
            + "\n".join(f"  {line}" for line in failures))
