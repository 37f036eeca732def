"""Atomic writes, checksums and deterministic compressed CSV: nothing half-written is ever read back."""
from __future__ import annotations

import contextlib
import csv
import glob
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence


def sha256_file(path: str | os.PathLike) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def current_umask() -> int:
    """The process's umask, read without changing it where the system allows: Linux (4.7+) shows it
    in /proc/self/status. Elsewhere it can only be read by setting it (os.umask) and setting it back,
    which is racy against other threads creating files in between, so that is the fallback only."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: str | os.PathLike) -> None:
    """Give a file 0o666 and a folder 0o777 less the umask: the mode ``open`` or ``mkdir`` would have
    given it. For what tempfile created (mkstemp files are 0600, mkdtemp folders 0700, owner-only
    whatever the user asked for) before it is moved into place: results, cache entries and
    submissions are then as shared as the user's other files. Staging folders (bench/core/cache.py's,
    bench/submissions/pack.py's) call it on the folder before renaming it into place."""
    mode = (0o777 if Path(path).is_dir() else 0o666) & ~current_umask()
    os.chmod(path, mode)


# How an OS error reads inside another library's error type: Rust's io::Error ("... (os error 28)", as
# safetensors raises it), or Python's ("[Errno 28] ...") when a library wraps one in its own exception.
_OS_ERROR_TEXT = re.compile(r"\(os error (\d+)\)|\[Errno (\d+)\]")


def as_os_error(error: BaseException, path: str | os.PathLike) -> OSError | None:
    """The OSError that ``error``, a library's own exception type, wraps, with ``path`` as its file name
    (safetensors raises SafetensorError("Error while serializing: I/O error: No space left on device (os
    error 28)") where Python code would raise OSError(ENOSPC)): so that a full or read-only disk is told
    apart whichever library wrote. None for an OSError itself, or an error that names no OS error."""
    if isinstance(error, OSError):
        return None
    found = _OS_ERROR_TEXT.search(str(error))
    if found is None:
        return None
    code = int(found.group(1) or found.group(2))
    return OSError(code, os.strerror(code), str(path))


def atomic_write_bytes(path: str | os.PathLike, data: bytes, durable: bool = True) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``; the file gets
    the mode the umask gives a new file (mkstemp's own is 0600). ``durable=False``: no fsync, for a cache
    whose reader checks every file it reads (a file a crash left empty is then rebuilt, not believed): a
    reader still never sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        apply_umask(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def staged_folder(dest: str | os.PathLike, what: str = "the folder", replace: bool = True) -> Iterator[Path]:
    """A folder to fill, made beside ``dest`` (same file system) with the umask's mode; when the block
    ends without an error it replaces ``dest``: the old ``dest`` is moved aside, the new one renamed in,
    then the old one deleted, so a reader never sees half a folder and a kill at any point loses neither
    (``sweep_staging`` puts an old folder a killed swap left aside back, and removes what killed runs
    staged). On an error the staging folder is removed and ``dest`` is left as it was. A destination
    that cannot be written, or a disk that fills or turns read-only while writing, is a BenchError
    naming ``what`` (e.g. "submissions folder (--out)") and ``dest``. ``replace=False``: ``dest`` must not exist
    when the block ends; one that another process wrote meanwhile is kept, and this is a BenchError (the rename
    that puts the new folder in place fails on an existing one, so of two such writers exactly one wins)."""
    from bench.core.errors import BenchError

    dest = Path(dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        sweep_staging(dest)
        staging = Path(tempfile.mkdtemp(prefix=staging_prefix(dest, "new"), dir=dest.parent))
        apply_umask(staging)   # mkdtemp's folder is 0700
    except OSError as error:
        raise BenchError(f"{what} {dest.parent} cannot be written ({error.strerror or error}); pass a folder you "
                         "can write to") from None
    try:
        yield staging
        old = None
        if not replace:
            try:   # claimed atomically: of two writers, the second finds it; the rename below takes its place
                os.mkdir(dest)
            except FileExistsError:
                raise BenchError(f"{dest} was written while this was being prepared (another run at once?): it is "
                                 "kept as it is and nothing was written; pass --force to replace it") from None
            try:
                staging.rename(dest)   # onto the empty folder just made: POSIX replaces it in one step
            except OSError:
                os.rmdir(dest)
                raise
            return
        if dest.exists() or dest.is_symlink():
            old = dest.parent / f"{staging_prefix(dest, 'old')}{os.urandom(4).hex()}"
            dest.rename(old)
        try:
            staging.rename(dest)
        except OSError:
            if old is not None:
                old.rename(dest)
            raise
        if old is not None:
            _remove(old)
    except OSError as error:
        here = os.path.abspath(dest.parent)
        if error.filename is None or not os.path.abspath(error.filename).startswith(here):
            raise   # not the destination's: reading what is being written, say
        raise BenchError(f"{what} {dest} could not be written: {error.strerror or error} ({error.filename}). Nothing was "
                         f"replaced: {dest} is as it was. Free space there, make it writable, or pass another "
                         "folder") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging)


STAGING_KINDS = ("new", "old")   # a folder being filled, and the folder it replaces moved aside


def staging_prefix(dest: Path, kind: str) -> str:
    """``.<name>.<kind>.<pid>@<host>.``: a hidden folder beside ``dest`` that names the process that made
    it, so that what a killed process left can be told from what a running one is writing
    (``sweep_staging``; staged_folder's, and the cache's staged entries)."""
    return f".{dest.name}.{kind}.{os.getpid()}@{socket.gethostname()}."


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:   # another user's process: alive
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def sweep_staging(dest: str | os.PathLike) -> list[Path]:
    """What ``staged_folder`` runs of ``dest`` that were killed left beside it: an old folder moved aside
    before the new one was renamed in is put back when ``dest`` is missing (the kill came between the two
    renames), and removed otherwise; a staging folder is removed. Only those of processes of this
    machine that are gone: a running process's are its work, and another machine's cannot be told.
    Returns what was removed or put back."""
    dest, host, swept = Path(dest), socket.gethostname(), []
    prefix = f".{dest.name}."
    for path in sorted(dest.parent.glob(f"{glob.escape(prefix)}*")):
        kind, _, rest = path.name[len(prefix):].partition(".")
        pid, _, owner = rest.rpartition(".")[0].partition("@")
        if kind not in STAGING_KINDS or not pid.isdigit() or owner != host or _alive(int(pid)):
            continue
        if kind == "old" and not dest.exists() and not dest.is_symlink():
            path.rename(dest)
        else:
            _remove(path)
        swept.append(path)
    return swept


def atomic_write_json(path: str | os.PathLike, obj: Any) -> None:
    atomic_write_bytes(path, (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode())


def csv_gz_bytes(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    """gzip'd CSV with mtime 0, so the same rows always give the same bytes (and checksum)."""
    text = io.StringIO()
    writer = csv.writer(text, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return gzip.compress(text.getvalue().encode(), compresslevel=6, mtime=0)


def read_csv_gz(path: str | os.PathLike) -> list[dict[str, str]]:
    with gzip.open(path, "rt", newline="") as handle:
        return list(csv.DictReader(handle))
