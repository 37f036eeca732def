"""Where a method's row links: its paper (only addresses listed here, never one a submission's text
names) and, for a built-in method, its source file on this machine, saying whether that file is the
code the submission ran."""
from __future__ import annotations

import hashlib
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

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
    changed: bool     # this checkout's file is not the one the submission ran (another sha256)
    note: str         # the same in words, for the link's title


def method_code(module: str, recorded_sha256: str | None) -> MethodCode | None:
    """The source of a built-in method module (``methods.anchor``) on this machine; None for anything
    else (a method file or a package is not ours to serve)."""
    if not re.fullmatch(r"methods\.[A-Za-z_][A-Za-z0-9_]*", module or ""):
        return None
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.origin or not Path(spec.origin).is_file():
        return None
    path = Path(spec.origin)
    changed = hashlib.sha256(path.read_bytes()).hexdigest() != recorded_sha256
    note = (f"this checkout's {path.name} has changed since the run: the submission ran a version with sha256 "
            f"{str(recorded_sha256)[:12]}… (its git commit is in the submission's code_version)" if changed
            else "the code this submission ran (same sha256)")
    return MethodCode(module, path, f"code/{path.name}.txt", changed, note)


def recorded_code(origin: object) -> MethodCode | None:
    """The source file a submission's recorded ``method.origin`` points at, when it is a built-in method."""
    if not isinstance(origin, dict) or origin.get("kind") != "built-in":
        return None
    return method_code(str(origin.get("module", "")), origin.get("sha256"))
