"""A content-addressed cache of folders, keyed by a hash of everything that determines them.

An entry is written in a temporary folder and renamed into place whole; its manifest records the
inputs and the sha256 of every file. An entry is used only when every file it holds is listed in its
manifest with a matching sha256 and every file its stage needs (``required``) is there: the stage,
not the manifest, decides what is checked, so a manifest that lists nothing verifies nothing and
its entry is rebuilt. A bad entry is reported and rebuilt, never used.

Runs that share a cache take a lock per entry (bench.core.locks): ``load`` and ``store`` hold it, and a
stage holds it around its whole load-compute-store, so a second run waits for the first and reuses
its entry instead of computing it again or racing its writes.
"""
from __future__ import annotations

import fnmatch
import json
import shutil
import sys
import tempfile
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Callable, Iterable

from bench.core.io import (
    apply_umask,
    as_os_error,
    atomic_write_json,
    sha256_file,
    staging_prefix,
    sweep_staging,
)
from bench.core.locks import file_lock, lock_path
from bench.core.specs import stable_hash, to_plain

MANIFEST = "manifest.json"
LOCKS = ".locks"   # the entries' lock files, under the cache root


class Cache:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    def key(self, inputs: dict) -> str:
        return stable_hash(inputs, length=24)

    def path(self, kind: str, key: str) -> Path:
        return self.root / kind / key

    def lock(self, kind: str, key: str, collective: bool = False) -> AbstractContextManager:
        """The entry's lock: hold it around a load, the work that builds the entry and its store, so that
        another run on this cache waits and then finds the entry instead of building it too."""
        return file_lock(lock_path(self.root / LOCKS, f"{kind}/{key}"), f"cache entry {kind}/{key}", collective)

    def load(self, kind: str, key: str, required: Iterable[str] = ()) -> Path | None:
        """The entry's folder if it exists, every file in it is listed in its manifest with a matching
        checksum, and every pattern of ``required`` (fnmatch patterns of paths in the entry, e.g.
        ``model/*.safetensors``) matches a listed file; else None (a bad entry is removed)."""
        with self.lock(kind, key):
            folder = self.path(kind, key)
            if not folder.exists() and not folder.is_symlink():
                return None
            problem = self._check(folder, key, tuple(required))
            if problem is None:
                return folder
            self._remove(kind, key, problem)
            return None

    def discard(self, kind: str, key: str, problem: str) -> None:
        """Remove an entry its stage found unusable (``problem`` says why), so that ``store`` writes the rebuilt one."""
        with self.lock(kind, key):
            self._remove(kind, key, problem)

    def _remove(self, kind: str, key: str, problem: str) -> None:
        folder = self.path(kind, key)
        print(f"[cache] {kind}/{key} is invalid ({problem}); rebuilding it", file=sys.stderr)
        if folder.is_dir() and not folder.is_symlink():
            shutil.rmtree(folder)
        elif folder.exists() or folder.is_symlink():   # a file (or link) where the entry's folder belongs
            folder.unlink()

    def store(self, kind: str, key: str, inputs: dict, write: Callable[[Path], None],
              required: Iterable[str] = ()) -> Path:
        """Write the entry with ``write(folder)`` in a staging folder and move it into place. A valid
        entry already there (another run stored it first) is kept and this one dropped: a reader may be
        using it, and it holds the same numbers."""
        final = self.path(kind, key)
        final.parent.mkdir(parents=True, exist_ok=True)
        sweep_staging(final)   # what a killed run left staging this entry
        staging = Path(tempfile.mkdtemp(dir=final.parent, prefix=staging_prefix(final, "new")))
        apply_umask(staging)   # mkdtemp makes it owner-only: a shared cache follows the user's umask
        try:
            write(staging)
            files = {p.relative_to(staging).as_posix(): sha256_file(p) for p in sorted(staging.rglob("*")) if p.is_file()}
            missing = [pattern for pattern in required if not fnmatch.filter(files, pattern)]
            if missing:   # a stage that does not write what it needs is a bug: fail here, not at the next load
                raise RuntimeError(f"cache entry {kind}/{key} was written without {', '.join(missing)}")
            atomic_write_json(staging / MANIFEST, {"key": key, "inputs": to_plain(inputs), "files": files})
            with self.lock(kind, key):
                if final.exists() or final.is_symlink():
                    problem = self._check(final, key, tuple(required))
                    if problem is None:
                        shutil.rmtree(staging)
                        return final
                    self._remove(kind, key, problem)
                staging.rename(final)
        except BaseException as error:
            shutil.rmtree(staging, ignore_errors=True)
            wrapped = as_os_error(error, staging)   # a full disk under safetensors' own error type
            if wrapped is not None:
                raise wrapped from error
            raise
        return final

    @staticmethod
    def _check(folder: Path, key: str, required: tuple[str, ...] = ()) -> str | None:
        if folder.is_symlink() or not folder.is_dir():
            return "not a folder"
        try:
            manifest = json.loads((folder / MANIFEST).read_text())
        except (OSError, ValueError) as error:
            return f"unreadable manifest: {error}"
        if not isinstance(manifest, dict) or manifest.get("key") != key:
            return "manifest key does not match its folder"
        listed = manifest.get("files")
        if not isinstance(listed, dict):
            return "manifest lists no files"
        for pattern in required:
            if not fnmatch.filter(listed, pattern):
                return f"manifest does not list {pattern}"
        on_disk = {p.relative_to(folder).as_posix() for p in folder.rglob("*") if not p.is_dir()} - {MANIFEST}
        for name, digest in listed.items():
            path = folder / name
            if not path.is_file():
                return f"missing file {name}"
            if sha256_file(path) != digest:
                return f"checksum mismatch in {name}"
        unlisted = sorted(on_disk - set(listed))
        if unlisted:   # a file the manifest does not vouch for: the manifest was cut, or the folder altered
            return f"file {unlisted[0]} is not in the manifest"
        return None


class SharedWork:
    """Tensors a method computes from the pretrained student and the training data alone, cached so
    that every run on the same student and sequences reuses them (ANCHOR's pretrained states: a
    lambda or layer sweep pays for them once). ``context`` is what the run fixes (the student's spec,
    revision and formatter); the method adds what else decides the tensors. The version of the code
    that computes them and the platform (bench.core.versions) are in every key, so states from other code
    or another torch build are computed again, never reused."""

    FILE = "tensors.safetensors"

    def __init__(self, cache: Cache, context: dict):
        self.cache, self.context = cache, context

    def tensors(self, kind: str, inputs: dict, compute: Callable[[], dict]) -> tuple[dict, bool]:
        """``compute()``'s dict of tensors, from the cache when an entry for these inputs exists;
        and whether it came from the cache."""
        from safetensors.torch import load_file, save_file

        from bench.core.distributed import on_main_process
        from bench.core.versions import REFERENCE_CODE, code_version, platform_version

        full = {"code": code_version(REFERENCE_CODE), "platform": platform_version(), **self.context, **inputs}
        key = self.cache.key({"kind": kind, **full})
        with self.cache.lock(kind, key, collective=True):   # another run computing them: wait, then read its entry
            folder = self.cache.load(kind, key, required=(self.FILE,))
            if folder is not None:
                return load_file(folder / self.FILE), True
            tensors = compute()
            on_main_process(lambda: self.cache.store(
                kind, key, full, lambda f: save_file({k: v.contiguous() for k, v in tensors.items()}, f / self.FILE),
                required=(self.FILE,)))
        return tensors, False
