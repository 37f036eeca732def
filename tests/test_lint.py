"""The code base lints clean with the project's ruff settings (pyproject.toml [tool.ruff]): pyflakes,
pycodestyle and import order. Part of the test command, so CI runs it with every change."""
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="ruff is in the test extras: pip install -e '.[test]'")
    # the ruff of this environment, the version the test extras pin
    from ruff.__main__ import find_ruff_bin

    done = subprocess.run([find_ruff_bin(), "check", "--no-cache", "--output-format", "concise", str(ROOT)],
                          cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, f"ruff check found problems (fix them, or `ruff check --fix`):\n{done.stdout}{done.stderr}"
