"""Uploads: a submission .zip unpacked without trusting it (``extract_upload``), for the leaderboard's
submit tab to validate."""
from __future__ import annotations

import stat
from pathlib import Path

from bench.errors import BenchError
from bench.submissions import limits
from bench.submissions.limits import CELL_FILE_RE, SUBMISSION_FILE


def extract_upload(archive: Path, dest: Path) -> Path:
    """A submission .zip unpacked into ``dest`` without trusting it: size and file-count limits from
    the archive's directory and again while reading, only the submission layout, no links, nothing run.
    Returns the submission folder (the archive may hold it at its top or inside one folder)."""
    import zipfile

    size = Path(archive).stat().st_size
    if size > limits.MAX_SUBMISSION_BYTES:
        raise BenchError(f"the upload is {size} bytes, over the limit of {limits.MAX_SUBMISSION_BYTES}")
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as error:
        raise BenchError(f"the upload is not a zip archive ({error}); zip the submission folder "
                         "(python -m zipfile -c sub.zip FOLDER/)") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > limits.MAX_FILES or sum(i.file_size for i in infos) > limits.MAX_SUBMISSION_BYTES:
            raise BenchError(f"the upload unpacks to more than {limits.MAX_SUBMISSION_BYTES} bytes or "
                             f"{limits.MAX_FILES} files")
        names = [i.filename for i in infos]
        tops = {n.split("/", 1)[0] for n in names}
        prefix = f"{tops.pop()}/" if len(tops) == 1 and all("/" in n for n in names) else ""
        unpacked = 0
        for info in infos:
            rel = info.filename[len(prefix):]
            if stat.S_ISLNK(info.external_attr >> 16):
                raise BenchError(f"the upload holds a link, {info.filename!r}; a submission holds only files")
            if rel != SUBMISSION_FILE and not CELL_FILE_RE.fullmatch(rel):
                raise BenchError(f"the upload holds {info.filename[:100]!r}, which is not part of a submission "
                                 "(submission.json and cells/seed<N>/<source>/{result.json,scores.csv.gz} only)")
            target = Path(dest, rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(info) as source, open(target, "wb") as sink:
                data = source.read(limits.MAX_SUBMISSION_BYTES - unpacked + 1)
                unpacked += len(data)
                if unpacked > limits.MAX_SUBMISSION_BYTES:
                    raise BenchError("the upload unpacks to more than its directory says")
                sink.write(data)
    return Path(dest)
