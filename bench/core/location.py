"""Where results are read from: a local folder, or a dataset on the Hugging Face Hub.

``bench validate``, ``report``, ``compare`` and ``leaderboard`` take either. A Hub dataset is named
``hf://datasets/OWNER/NAME``, optionally with ``@REVISION`` (a branch, tag or commit) and a folder inside it:
``hf://datasets/OWNER/NAME@main/submissions``. It is fetched once with huggingface_hub's
``snapshot_download``, as plain files (never the cache's symbolic links, which validation refuses), into
``$SHIFTBENCH_CACHE/hub/OWNER--NAME/REVISION``, and then read as any folder is. With ``HF_HUB_OFFLINE=1`` that
folder is read as it is, if a previous fetch filled it.

Nothing of a dataset is imported or run. Its submissions are validated as uploads are (bench.submissions), so a
host can point the board at a dataset that anyone may write to.
"""
from __future__ import annotations

import re
from pathlib import Path

from bench.core.errors import BenchError

HUB = "hf://datasets/"
REPRODUCTIONS = "reproductions"   # beside a submissions folder: the host's reruns of some cells (bench reproduce)
PLANS = "plans"                   # beside it too: the plans its comparisons were grown under (bench.core.plans)
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_HUB_RE = re.compile(rf"hf://datasets/(?P<repo>{_NAME}/{_NAME})(?:@(?P<revision>[A-Za-z0-9._/-]+?))?"
                     rf"(?:/(?P<folder>{_NAME}(?:/{_NAME})*))?/?")


def is_hub(text: str | Path) -> bool:
    return str(text).startswith(HUB)


def hub_parts(text: str) -> tuple[str, str, str]:
    """(repo id, revision, folder inside it) of an ``hf://datasets/...`` name; a BenchError naming the form."""
    found = _HUB_RE.fullmatch(text)
    if found is None or ".." in text:
        raise BenchError(f"{text!r} is not a Hub dataset name: write hf://datasets/OWNER/NAME, optionally with "
                         "@REVISION and a folder inside it (hf://datasets/OWNER/NAME@main/submissions)")
    return found["repo"], found["revision"] or "main", found["folder"] or ""


def local_dir(repo: str, revision: str) -> Path:
    """Where a Hub dataset's files are kept: beside the teacher cache."""
    from bench.core.settings import default_cache_dir

    return default_cache_dir() / "hub" / repo.replace("/", "--") / revision.replace("/", "--")


def results_folder(text: str | Path) -> Path:
    """The local folder of ``text``: itself, or a Hub dataset's files fetched (or, offline, found) in
    ``local_dir``."""
    if not is_hub(text):
        return Path(text)
    repo, revision, folder = hub_parts(str(text))
    from huggingface_hub import snapshot_download

    target = local_dir(repo, revision)
    try:
        # a folder's dataset files, and the records the board reads beside it
        beside = f"{folder.rpartition('/')[0]}/" if "/" in folder else ""
        fetched = Path(snapshot_download(repo, repo_type="dataset", revision=revision, local_dir=target,
                                         allow_patterns=[f"{folder}/**", *(f"{beside}{name}/**" for name in
                                                                          (REPRODUCTIONS, PLANS))] if folder else None))
    except Exception as error:   # huggingface_hub's many kinds: offline, not found, gated, network
        raise BenchError(f"{text}: could not be fetched ({type(error).__name__}: {str(error)[:300]}). Check the "
                         "dataset's name and revision and the network; with HF_HUB_OFFLINE=1 only a dataset fetched "
                         f"before is read (from {target})") from None
    found = fetched / folder
    if not found.is_dir():
        raise BenchError(f"{text}: the dataset holds no folder {folder!r}")
    return found
