"""User-facing errors: each names the problem and the fix. The CLI prints these without a
traceback; anything else is a bug and keeps its traceback."""


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


class CellsFailedError(BenchError):
    """Some cells of a run failed on their own (their training diverged) while the others finished and
    were written. ``failures``: one line per failed cell; ``finished``: the other cells' results."""

    def __init__(self, failures: list[str], finished: list, out: object) -> None:
        self.failures, self.finished = failures, finished
        total = len(failures) + len(finished)
        super().__init__(
            f"{len(failures)} of {total} cells failed and wrote no result; the finished ones ({len(finished)}) are in {out} "
            f"(`bench report --out {out}` shows them). A rerun skips finished cells and retries only these:\n"
            + "\n".join(f"  {line}" for line in failures))
