"""Uploads: a submission .zip unpacked without trusting it (``extract_upload``), for the leaderboard's
submit tab to validate.

Every way an archive can be malformed ends as a ``BenchError`` that names the entry at fault and what
to do, never as an exception from ``zipfile`` (a damaged entry fails its CRC check only once it is
read, so reading is guarded too). What macOS Finder adds to a zip (``__MACOSX/``, ``.DS_Store``,
``._*`` resource forks) is skipped without being read: it is metadata of the submitter's machine, not
part of the submission.
"""
from __future__ import annotations

import posixpath
import stat
import zlib
from collections import Counter
from pathlib import Path

import bench.submissions.limits as limits
from bench.core.errors import BenchError
from bench.core.report import fmt
from bench.core.result_schema import METHOD_SOURCE_FILE
from bench.core.store import STORE_FILES
from bench.submissions.limits import CELL_FILE_RE, SUBMISSION_FILE

REZIP = "zip the submission folder again (python -m zipfile -c sub.zip FOLDER/)"
LAYOUT = (f"submission.json, its cells ({', '.join(STORE_FILES)}, as bench submit writes them, or "
          "cells/seed<N>/<source>/{result.json,scores.csv.gz}, with candidates.csv.gz on a protocol with candidate sets "
          f"and naive's replicates under cells/replicate<R>/) and, for a method that is not built in, {METHOD_SOURCE_FILE} "
          "only")


def size_text(n: int) -> str:
    """A size as a person reads it: MB from 0.1 MB up, else bytes (a test may lower a limit to 1000)."""
    return f"{fmt(n / 2**20)} MB" if n >= 2**20 // 10 else f"{n} bytes"


def is_os_metadata(name: str) -> bool:
    """Finder's ``__MACOSX/`` folder, ``.DS_Store`` files and ``._name`` resource forks."""
    parts = name.split("/")
    return parts[0] == "__MACOSX" or parts[-1] == ".DS_Store" or parts[-1].startswith("._")


def _submission_prefix(names: list[str]) -> str:
    """The folder inside the archive that holds submission.json ("" when it is at the top): the
    archive may hold the submission at its top or inside folders (``naive/...``)."""
    found = [n for n in names if posixpath.basename(n) == SUBMISSION_FILE]
    twice = sorted(n for n, k in Counter(found).items() if k > 1)
    if twice:   # one entry written twice, not two submissions
        raise BenchError(f"the upload holds {twice[0][:100]!r} twice; {REZIP}")
    if not found:
        shown = ", ".join(repr(n[:100]) for n in names[:3]) + (", ..." if len(names) > 3 else "")
        raise BenchError(f"the upload holds no {SUBMISSION_FILE} (it holds {shown or 'no files'}); {REZIP}")
    if len(found) > 1:
        raise BenchError(f"the upload holds {len(found)} submissions ({', '.join(repr(n[:100]) for n in found[:3])}); "
                         "upload one submission folder at a time")
    folder = posixpath.dirname(found[0])
    return f"{folder}/" if folder else ""


def extract_upload(archive: Path, dest: Path) -> Path:
    """A submission .zip unpacked into ``dest`` without trusting it: size and file-count limits from
    the archive's directory and again while reading, only the submission layout, no links, nothing run.
    Returns the submission folder."""
    import zipfile

    size = Path(archive).stat().st_size
    if size > limits.MAX_SUBMISSION_BYTES:
        raise BenchError(f"the upload is {size_text(size)}, over the limit of {size_text(limits.MAX_SUBMISSION_BYTES)}; "
                         "a submission of the real protocol is a few MB: upload only the submission folder")
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError) as error:
        raise BenchError(f"the upload is not a zip archive that can be read ({error}); {REZIP}") from None
    with zf:
        entries = zf.infolist()
        if len(entries) > limits.MAX_ZIP_ENTRIES:   # Finder's entries are skipped, not free: they are counted here
            raise BenchError(f"the upload holds {len(entries):,} entries (files, folders and what macOS adds, such as "
                             f"__MACOSX/), more than {limits.MAX_ZIP_ENTRIES:,}; a submission holds {LAYOUT}")
        infos = [i for i in entries if not i.is_dir() and not is_os_metadata(i.filename)]
        unpacked_size = sum(i.file_size for i in infos)
        if len(infos) > limits.MAX_FILES or unpacked_size > limits.MAX_SUBMISSION_BYTES:
            raise BenchError(f"the upload unpacks to {len(infos)} files and {size_text(unpacked_size)}, more than "
                             f"{limits.MAX_FILES} files or {size_text(limits.MAX_SUBMISSION_BYTES)}; a submission "
                             f"holds {LAYOUT}")
        names = [i.filename for i in infos]
        prefix = _submission_prefix(names)
        seen: set[str] = set()
        for info in infos:   # every entry is checked before any is read
            name = info.filename
            longest = max(name.split("/"), key=len)
            if len(longest.encode()) > limits.MAX_PATH_PART_BYTES:   # no file system takes it (ENAMETOOLONG)
                raise BenchError(f"the upload holds a name of {len(longest):,} characters ({longest[:60]!r}…); a "
                                 f"submission's names are short ({LAYOUT}); {REZIP}")
            if stat.S_ISLNK(info.external_attr >> 16):
                raise BenchError(f"the upload holds a link, {name[:100]!r}; a submission holds only files")
            rel = name[len(prefix):] if name.startswith(prefix) else None
            if rel is None or (rel not in (SUBMISSION_FILE, METHOD_SOURCE_FILE, *STORE_FILES)
                               and not CELL_FILE_RE.fullmatch(rel)):
                raise BenchError(f"the upload holds {name[:100]!r}, which is not part of a submission ({LAYOUT}, "
                                 f"here under {prefix or 'the top of the archive'!r}); remove it and {REZIP}")
            if rel in seen:
                raise BenchError(f"the upload holds {name[:100]!r} twice; {REZIP}")
            seen.add(rel)
        unpacked = 0
        for info in infos:
            target = Path(dest, info.filename[len(prefix):])
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                with zf.open(info) as source, open(target, "wb") as sink:
                    data = source.read(limits.MAX_SUBMISSION_BYTES - unpacked + 1)
                    unpacked += len(data)
                    if unpacked > limits.MAX_SUBMISSION_BYTES:
                        raise BenchError(f"the upload unpacks to more than its directory says (past "
                                         f"{size_text(limits.MAX_SUBMISSION_BYTES)} at {info.filename[:100]!r}); {REZIP}")
                    sink.write(data)
            except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError) as error:
                raise BenchError(f"the upload's {info.filename[:100]!r} cannot be read: {_why_unreadable(error, info)}; "
                                 f"{REZIP}") from None
    return Path(dest)


def _why_unreadable(error: Exception, info) -> str:
    """What an entry that zipfile could not read has, in words (zipfile's own messages quote its internals:
    a zlib error code, an object's repr)."""
    if isinstance(error, EOFError):
        return "it is cut short (the archive was truncated)"
    if info.flag_bits & 0x1:   # encrypted, whatever zipfile raises for it (an AES entry reads as method 99)
        return "it is encrypted (a password-protected archive)"
    if isinstance(error, NotImplementedError):
        return f"it is compressed with method {info.compress_type}, which is not read here (use deflate, zip's default)"
    return "its data is damaged (it does not decompress, or fails its CRC check)"
