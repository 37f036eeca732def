"""Checks a run makes before any work: every folder it will write can be created and written (no
file sits where one belongs, and no folder where a file does), and its disk has room. A read-only or full results folder then fails
in the first second, not at the first write after minutes of training.

Free space is checked against a floor, not a forecast: one teacher cache entry of the offline `tiny`
pair is 53 MB and one cell's results 20 kB (measured with `du` after a run of the shrunken test
protocol), so the floor covers a few cells of `tiny`. A disk that fills later in a long run stops the
run with a clear error at that write (``bench.stages.pipeline.run``); finished cells are kept.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from bench.core.errors import BenchError

MIN_FREE_BYTES = 256 * 2**20


def check_writable(folder: Path, what: str) -> None:
    """Create ``folder`` if needed and write, flush and delete a probe file in it."""
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise BenchError(f"{what} {folder} cannot be created ({error.strerror or error}); "
                         f"pass a folder you can write to") from None
    try:
        fd, probe = tempfile.mkstemp(dir=folder, prefix=".shiftbench-write-check-")
        try:
            os.write(fd, b"ok")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as error:
        raise BenchError(f"{what} {folder} is not writable ({error.strerror or error}); "
                         f"fix its permissions or pass another folder") from None


def check_free_space(folder: Path, what: str, minimum: int = MIN_FREE_BYTES) -> None:
    free = shutil.disk_usage(folder).free
    if free < minimum:
        raise BenchError(f"{what} {folder} has {free / 2**20:.0f} MB free; a run needs at least "
                         f"{minimum / 2**20:.0f} MB there (a teacher cache entry of the tiny pair is 53 MB). "
                         f"Free some space or pass a folder on another disk")


def preflight(folders: dict[str, Path]) -> None:
    """``folders``: what each is (named with its option, e.g. "results folder (--out)") -> path."""
    for what, folder in folders.items():
        check_writable(folder, what)
        check_free_space(folder, what)


def check_folders(folders: dict[str, Path]) -> None:
    """Each of ``folders`` (what it is -> path) is a folder or can be made one: no file sits at its
    path or at any folder above it. A file there fails the run now, not at the write after training."""
    for what, folder in folders.items():
        path = Path(folder)
        for at in (path, *path.parents):
            if at.is_dir():
                break
            if at.exists() or at.is_symlink():
                raise BenchError(f"{what} {path} cannot be used: {at} is a file where a folder belongs. "
                                 f"Move or delete {at} and rerun")


def check_files(files: dict[str, Path]) -> None:
    """Each of ``files`` (what it is -> path) is a file or not there yet: a folder (or a FIFO, a device)
    where a file belongs fails the run now, not at the write after the cell's training, which every rerun
    would repeat."""
    for what, path in files.items():
        path = Path(path)
        if (path.exists() or path.is_symlink()) and not path.is_file():
            kind = "a folder" if path.is_dir() else "not a regular file"
            raise BenchError(f"{what} {path} cannot be written: it is {kind} where a file belongs. Move or delete "
                             f"{path} and rerun")
