"""Locks between runs that share a results folder or a cache: one lock file per cache entry and per
cell, held with ``fcntl.flock``.

Two runs on the same ``--out`` and ``--cache-dir`` would otherwise both train the same teacher and
student, and race each other's writes (a reader saw a folder vanish under it, a writer renamed onto
a folder that had just appeared). With the lock, the second run waits for the first and then finds
its work done. ``flock`` is released by the kernel when the process that holds it dies (SIGKILL
included), so a killed run never leaves a lock held; the lock files themselves stay (deleting one
while another process waits on it would let a third lock a new file of the same name).

Re-entrant within a thread (the teacher stage holds its entry's lock around ``Cache.load`` and
``Cache.store``, which take it too). Under ``accelerate launch`` only the main process locks, and
the others wait for it at a barrier: they train together with it, so they must not start before it
holds the lock, nor lock themselves (they would wait on their own main process forever).
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import sys
import threading
from pathlib import Path
from typing import Iterator

_held = threading.local()   # lock path -> (fd, depth) held by this thread


def _table() -> dict[str, list]:
    if not hasattr(_held, "locks"):
        _held.locks = {}
    return _held.locks


def lock_path(folder: Path, name: str) -> Path:
    """The lock file for ``name`` in ``folder``: a digest, so any name (a key, a cell's path) is a short file name."""
    return Path(folder) / f"{hashlib.sha256(name.encode()).hexdigest()[:24]}.lock"


@contextlib.contextmanager
def file_lock(path: Path, what: str, collective: bool = False) -> Iterator[None]:
    """Hold the exclusive lock on ``path`` (created if needed); ``what`` names the work it guards in
    the message shown while another process holds it. ``collective``: every process of a launched
    run makes this call at the same point (a stage or a cell), so they can meet at a barrier."""
    from bench.core.distributed import is_main_process, launched, wait_for_everyone

    if launched() and not is_main_process():
        if collective:
            wait_for_everyone()   # the main process holds the lock for all of us
        yield
        return
    table = _table()
    key = os.path.abspath(path)
    if key in table:   # this thread holds it already
        table[key][1] += 1
        try:
            if collective:
                wait_for_everyone()
            yield
        finally:
            table[key][1] -= 1
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"[lock] another run is working on {what}; waiting for it to finish, then using its result",
                  file=sys.stderr, flush=True)
            fcntl.flock(fd, fcntl.LOCK_EX)
        table[key] = [fd, 1]
        try:
            if collective:
                wait_for_everyone()
            yield
        finally:
            del table[key]
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def made_once(folder: Path, complete, make, what: str) -> Path:
    """``folder``, made by ``make(scratch)`` unless ``complete(folder)`` says it is there already: the one-time
    step of a model this project assembles into the cache (bench.smollm2, bench.mpnet). Under the folder's lock,
    so that two runs starting at once make it once; ``scratch`` is a temporary folder beside it (the same file
    system, for the downloads), removed afterwards; ``what`` names the work while another run holds the lock."""
    import tempfile

    if complete(folder):
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(lock_path(folder.parent, folder.name), what):
        if not complete(folder):
            with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".fetch-") as scratch:
                make(Path(scratch))
    return folder
