"""Where a method's row links: its paper (only addresses listed here, never one a submission's text
names) and, for a built-in method, its source file on this machine, saying whether that file runs the
code the submission ran."""
from __future__ import annotations

import hashlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

from bench.core.versions import DIGEST_SCHEME, code_digest

ANCHOR_PAPER = "When In-Distribution Gains Fail: Evaluating Weak-to-Strong Reward Models under Preference Shift"
# Papers the methods record, by their title, and where to read them (arXiv). A paper not listed here
# is shown as its recorded text, without a link.
PAPER_URLS = {
    ANCHOR_PAPER: "https://arxiv.org/abs/2605.25629",
    "Weak-to-Strong Generalization": "https://arxiv.org/abs/2312.09390",
    "Explicit Inductive Bias for Transfer Learning with Convolutional Networks": "https://arxiv.org/abs/1802.01483",
    "Fine-Tuning can Distort Pretrained Features and Underperform Out-of-Distribution": "https://arxiv.org/abs/2202.10054",
    "Robust fine-tuning of zero-shot models": "https://arxiv.org/abs/2109.01903",
    "RewardBench": "https://arxiv.org/abs/2403.13787",
    "Vision Superalignment: Weak-to-Strong Generalization for Vision Foundation Models": "https://arxiv.org/abs/2402.03749",
    "On the Robustness of Reward Models for Language Model Alignment": "https://arxiv.org/abs/2505.07271",
    "Generalized Cross Entropy Loss for Training Deep Neural Networks with Noisy Labels": "https://arxiv.org/abs/1805.07836",
    "Regularizing Hidden States Enables Learning Generalizable Reward Model for LLMs": "https://arxiv.org/abs/2406.10216",
    "Weak-to-Strong Generalization under Distribution Shifts": "https://arxiv.org/abs/2510.21332",
    "Improving Weak-to-Strong Generalization with Reliability-Aware Alignment": "https://arxiv.org/abs/2406.19032",
    "Provably Robust DPO: Aligning Language Models with Noisy Feedback": "https://arxiv.org/abs/2403.00409",
    "WARM: On the Benefits of Weight Averaged Reward Models": "https://arxiv.org/abs/2401.12187",
}
# Code bases the methods record in place of a paper, and where to read them. The recorded text is the
# submission's, so only these are linked, never an address it names.
REPOSITORY_URLS = {"EleutherAI w2s": "https://github.com/EleutherAI/w2s"}


def paper_url(paper: str) -> str:
    """The link of a recorded paper (``Burns et al. 2023, "Weak-to-Strong Generalization" (...)``), else of
    the code base it starts with when it has no title (``EleutherAI w2s (github.com/EleutherAI/w2s, ...)``),
    or "": only addresses listed here, whatever the text says."""
    title = re.search(r'"([^"]+)"', paper or "")
    if title:
        return PAPER_URLS.get(title.group(1), "")
    return next((url for name, url in REPOSITORY_URLS.items() if (paper or "").startswith(f"{name} (")), "")


@dataclass(frozen=True)
class MethodCode:
    """A built-in method's source file, served as text at ``url`` (relative to the page)."""
    module: str
    path: Path
    url: str
    changed: bool     # this checkout's file may not run the code the submission ran (the badge is marked)
    note: str         # why, in words, for the link's title
    badge: str        # "code"; "code changed": another code digest; "file changed": another sha256, recorded
                      # before code digests, so whether its code changed is not known


def method_code(module: str, recorded_sha256: str | None, recorded_digest: str | None = None,
                scheme: int | None = None) -> MethodCode | None:
    """The source of a built-in method module (``methods.anchor``) on this machine; None for anything
    else (a method file or a package is not ours to serve). Whether it runs the code the submission ran:
    the same file (``recorded_sha256``, of its bytes) does; else its ``recorded_digest`` (of its code, under
    digest ``scheme``) decides, where it was made under this checkout's scheme. A submission recorded before
    code digests has only the file's sha256, and a docstring edit changes that as much as a loss does, so
    its badge says the file changed, not its code."""
    if not re.fullmatch(r"methods\.[A-Za-z_][A-Za-z0-9_]*", module or ""):
        return None
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not Path(spec.origin).is_file():
        return None
    path = Path(spec.origin)
    raw = path.read_bytes()
    ran = (f"the submission ran a version with sha256 {str(recorded_sha256)[:12]}… (its git commit is in the "
           "submission's code_version)")
    if hashlib.sha256(raw).hexdigest() == recorded_sha256:
        changed, badge, note = False, "code", "the code this submission ran (same sha256)"
    elif recorded_digest is not None and scheme == DIGEST_SCHEME:
        changed = code_digest(raw) != recorded_digest
        badge = "code changed" if changed else "code"
        note = (f"this checkout's {path.name} has changed since the run, in code, not only in docstrings, comments "
                f"or formatting: {ran}" if changed else
                f"the code this submission ran: this checkout's {path.name} differs from its file only in docstrings, "
                "comments or formatting (same code digest)")
    else:
        changed, badge = True, "file changed"
        note = (f"this checkout's {path.name} has changed since the run: {ran}. The run recorded no code digest "
                "this checkout can compare (one recorded before code digests has the file's sha256 only), so a "
                "docstring, comment or formatting edit shows here as much as a change to its code")
    return MethodCode(module, path, f"code/{path.name}.txt", changed, note, badge)


def recorded_code(origin: object) -> MethodCode | None:
    """The source file a submission's recorded ``method.origin`` points at, when it is a built-in method."""
    if not isinstance(origin, dict) or origin.get("kind") != "built-in":
        return None
    return method_code(str(origin.get("module", "")), origin.get("sha256"), origin.get("code_digest"),
                       origin.get("digest_scheme"))
