"""Atomic writes, checksums and deterministic compressed CSV: nothing half-written is ever read back."""
from __future__ import annotations

import contextlib
import csv
import gzip
import hashlib
import io
import json
import os
import shutil
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
    submissions are then as shared as the user's other files. Staging folders (bench/cache.py's,
    bench/submissions/pack.py's) call it on the folder before renaming it into place."""
    mode = (0o777 if Path(path).is_dir() else 0o666) & ~current_umask()
    os.chmod(path, mode)


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write to a temporary file in the same folder, fsync, then rename over ``path``; the file gets
    the mode the umask gives a new file (mkstemp's own is 0600)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        apply_umask(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def staged_folder(dest: str | os.PathLike) -> Iterator[Path]:
    """A folder to fill, made beside ``dest`` (same file system) with the umask's mode; when the block
    ends without an error it replaces ``dest`` by a rename, so a reader never sees half a folder; on
    an error it is removed and ``dest`` is left as it was."""
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    apply_umask(staging)   # mkdtemp's folder is 0700
    try:
        yield staging
        if dest.exists():
            shutil.rmtree(dest)
        staging.rename(dest)
    finally:
        if staging.exists():
            shutil.rmtree(staging)


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
