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
