"""A content-addressed cache of folders, keyed by a hash of everything that determines them.

An entry is written in a temporary folder and renamed into place whole; its manifest records the
inputs and the sha256 of every file. An entry whose manifest or checksums do not match is
reported and rebuilt, never used.
"""
from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Callable

from bench.io import atomic_write_json, sha256_file
from bench.specs import stable_hash, to_plain

MANIFEST = "manifest.json"


class Cache:
    def __init__(self, root: str | Path):
        self.root = Path(root)

    def key(self, inputs: dict) -> str:
        return stable_hash(inputs, length=24)

    def path(self, kind: str, key: str) -> Path:
        return self.root / kind / key

    def load(self, kind: str, key: str) -> Path | None:
        """The entry's folder if it exists and every checksum matches; else None (a bad entry is removed)."""
        folder = self.path(kind, key)
        if not folder.exists():
            return None
        problem = self._check(folder, key)
        if problem is None:
            return folder
        print(f"[cache] {kind}/{key} is invalid ({problem}); rebuilding it", file=sys.stderr)
        shutil.rmtree(folder, ignore_errors=True)
        return None

    def store(self, kind: str, key: str, inputs: dict, write: Callable[[Path], None]) -> Path:
        final = self.path(kind, key)
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{key}."))
        try:
            write(staging)
            files = {str(p.relative_to(staging)): sha256_file(p) for p in sorted(staging.rglob("*")) if p.is_file()}
            atomic_write_json(staging / MANIFEST, {"key": key, "inputs": to_plain(inputs), "files": files})
            if final.exists():  # a concurrent writer got there first, or a stale invalid entry
                shutil.rmtree(final, ignore_errors=True)
            staging.rename(final)
        except BaseException:
            shutil.rmtree(staging, ignore_errors=True)
            raise
        return final

    @staticmethod
    def _check(folder: Path, key: str) -> str | None:
        try:
            manifest = json.loads((folder / MANIFEST).read_text())
        except (OSError, ValueError) as error:
            return f"unreadable manifest: {error}"
        if manifest.get("key") != key:
            return "manifest key does not match its folder"
        for name, digest in manifest.get("files", {}).items():
            path = folder / name
            if not path.is_file():
                return f"missing file {name}"
            if sha256_file(path) != digest:
                return f"checksum mismatch in {name}"
        return None


class SharedWork:
    """Tensors a method computes from the pretrained student and the training data alone, cached so
    that every run on the same student and sequences reuses them (ANCHOR's pretrained states: a
    lambda or layer sweep pays for them once). ``context`` is what the run fixes (the student's spec,
    revision and formatter); the method adds what else decides the tensors."""

    def __init__(self, cache: Cache, context: dict):
        self.cache, self.context = cache, context

    def tensors(self, kind: str, inputs: dict, compute: Callable[[], dict]) -> tuple[dict, bool]:
        """``compute()``'s dict of tensors, from the cache when an entry for these inputs exists;
        and whether it came from the cache."""
        from safetensors.torch import load_file, save_file

        from bench.distributed import on_main_process

        full = {**self.context, **inputs}
        key = self.cache.key({"kind": kind, **full})
        folder = self.cache.load(kind, key)
        if folder is not None:
            return load_file(folder / "tensors.safetensors"), True
        tensors = compute()
        on_main_process(lambda: self.cache.store(
            kind, key, full, lambda f: save_file({k: v.contiguous() for k, v in tensors.items()}, f / "tensors.safetensors")))
        return tensors, False
