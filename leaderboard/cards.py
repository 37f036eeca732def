"""The board's text pages: the protocol card (``bench card``'s), the model-pair card, and About (what
the benchmark measures, how to submit and where, how to cite: from the repository's CITATION.cff).

Markdown for the app's Markdown components and, through ``markdown_html`` (raw HTML shown as text),
for the static page. A value a submission recorded is escaped (``md_escape``) before it is shown.
"""
from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path
from typing import Mapping

from bench.core.errors import BenchError
from bench.core.stats import N_BOOT
from leaderboard.board import Board
from leaderboard.columns import md_code, md_escape
from leaderboard.context import early_stopping_words, model_pair_words

CITATION = Path(__file__).resolve().parents[1] / "CITATION.cff"
REPOSITORY_ENV = "SHIFTBENCH_REPOSITORY"   # where pull requests go, when the host sets it
_URL = re.compile(r"https://[A-Za-z0-9.-]+(/[A-Za-z0-9._~%/+-]*)?")

DEFINITIONS = ("WRG = Acc_student(S) − Acc_teacher(S); AOG = Acc_student(T) − Acc_teacher(T); NTS = AOG − max(0, "
               "Acc_teacher(S) − Acc_student(S)), per source S → target T and seed, in accuracy points; methods are "
               "ranked by mean NTS. PGR ID = WRG / WRG(ceiling), PGR OOD = AOG / AOG(ceiling), in %, blank when the "
               "ceiling's own gain is not told apart from 0 (its t 95% interval over seeds or its bootstrap 95% "
               "interval includes 0). Misfit: the % of the student's own training pairs (a sample of half B) on "
               "which it prefers the other response than its teacher's label (Charikar et al. 2024: the W2S gain "
               "tracks it); blank for runs made before it was recorded. Where the protocol has best-of-N candidate "
               "sets: BoN gain ID, BoN gain OOD and BoN NTS are WRG, AOG and NTS with BoN accuracies (the % of test "
               "prompts whose top-scored candidate is gold-best) in place of pair accuracies (docs/best-of-n.md), "
               "and the board can be ranked by BoN NTS.")


def protocol_card(name: str, protocols: Mapping | None = None) -> str:
    """The protocol's card (``bench card``: the one card, generated from the registry) and what the
    board's numbers mean, as markdown."""
    from bench.core.card import GENERATED_NOTE
    from bench.core.card import protocol_card as card
    from bench.core.compare import decision_rule
    from bench.core.protocols import protocol_named

    spec = protocol_named(name, protocols)
    rule = f" On this protocol a difference from naive is {decision_rule(spec.seeding == 'per-source')}."
    return card(spec).replace(f"{GENERATED_NOTE}\n\n", "") + "\n## What the board's numbers mean\n\n" + DEFINITIONS + \
        rule + "\n"


def model_pair_card(name: str, model_pairs: Mapping | None = None, board: Board | None = None) -> str:
    """The model pair's card, as markdown: the registered spec, else what its submissions recorded
    (every value escaped: a recorded one is submission text). The pair's models are a list, one block
    per model, so that it reads on a phone as on a wide screen."""
    from bench.core.protocols import MODEL_PAIRS
    from bench.core.specs import to_plain

    spec = (model_pairs or {}).get(name) or (MODEL_PAIRS.get(name) if name in MODEL_PAIRS else None)
    recorded = next((v.submission["models"] for v in (board.entries if board else [])
                     if v.submission["models"]["name"] == name), None)
    plain = to_plain(spec) if spec is not None else recorded
    if plain is None:
        return f"# Model pair {md_code(name)}\n\nNot registered here and in no submission.\n"
    e = md_escape

    def model(who: str, model: Mapping) -> list[str]:
        lora = dict(model.get("lora") or ())
        return [f"- **{who}:** {e(model.get('path', ''))}",
                f"  - layers: {e(model.get('num_layers') or 'all')}; architecture: {e(model.get('architecture', ''))}; "
                f"dtype: {e(model.get('dtype', ''))}",
                f"  - training: {e(', '.join(f'{k} {v}' for k, v in lora.items()) or 'full fine-tuning')}"]

    def train(label: str, config: Mapping) -> str:
        return (f"- **{label}:** learning rate {e(config.get('learning_rate'))}, {e(config.get('epochs'))} epoch(s), "
                f"batch {e(config.get('batch_size'))} pairs, warmup {e(config.get('warmup_ratio'))}, weight decay "
                f"{e(config.get('weight_decay'))}, gradient norm ≤ {e(config.get('max_grad_norm'))}"
                + (", word embeddings frozen" if config.get("freeze_word_embeddings") else "")
                + (f", early-stopped: {e(stopped)}" if (stopped := early_stopping_words(config.get("early_stopping")))
                   else ""))

    lines = [f"# Model pair {md_code(plain['name'])}", "", f"**{e(model_pair_words(plain))}**", "",
             e(plain.get("description", "")), "", "## Models", "",
             *model("Weak teacher", plain.get("weak", {})), *model("Strong student", plain.get("strong", {})),
             "", "## Training", "",
             train("Teacher", plain.get("teacher_train", {})), train("Student", plain.get("student_train", {})),
             f"- **Scoring batch:** {e(plain.get('score_batch_size'))} pairs"]
    defaults = plain.get("method_defaults") or []
    if defaults:
        lines.append("- **Method defaults for this pair:** " + "; ".join(
            f"{e(method)}: " + ", ".join(f"{e(k)}={e(v)}" for k, v in params) for method, params in defaults))
    source = "the registry (bench/core/protocols.py)" if spec is not None else "its submissions (not registered here)"
    return "\n".join(lines) + f"\n\nFrom {source}; `bench list models` prints it.\n"


# --- About: what it measures, how to submit, how to cite ---------------------------------------------------------
@cache
def citation() -> dict:
    """CITATION.cff, the one home of how to cite (the software and the ANCHOR paper)."""
    import yaml

    return yaml.safe_load(CITATION.read_text(encoding="utf-8")) if CITATION.is_file() else {}


def repository() -> str:
    """Where pull requests go: $SHIFTBENCH_REPOSITORY, else CITATION.cff's ``repository-code``; "" when
    neither names one. Only a plain https address: it is shown as a link."""
    url = os.environ.get(REPOSITORY_ENV) or str(citation().get("repository-code") or "")
    if url and not _URL.fullmatch(url):
        raise BenchError(f"{REPOSITORY_ENV}={url!r} is not a plain https address; set it to the repository's page, "
                         "e.g. https://github.com/OWNER/NAME")
    return url


def _bibtex_authors(authors: list) -> str:
    return " and ".join(f"{a['family-names']}, {a['given-names']}" if "family-names" in a else "{" + a["name"] + "}"
                        for a in authors)


def bibtex(release: str) -> str:
    """The BibTeX entries of CITATION.cff: the ANCHOR paper (its preferred citation), then the software."""
    cff = citation()
    paper = cff.get("preferred-citation") or {}
    arxiv = next((str(i["value"]).removeprefix("arXiv:") for i in paper.get("identifiers", [])
                  if str(i.get("value", "")).startswith("arXiv:")), "")
    entries = []
    if paper:
        key = f"{paper['authors'][0]['family-names'].lower()}{paper['year']}anchor"
        entries.append("\n".join([f"@article{{{key},", f"  title   = {{{paper['title']}}},",
                                  f"  author  = {{{_bibtex_authors(paper['authors'])}}},",
                                  f"  journal = {{arXiv preprint arXiv:{arxiv}}}," if arxiv else "",
                                  f"  eprint  = {{{arxiv}}}, archivePrefix = {{arXiv}}," if arxiv else "",
                                  f"  year    = {{{paper['year']}}},", f"  url     = {{{paper['url']}}}", "}"]))
    url = repository()
    subtitle = cff.get("title", "ShiftBench").split(": ", 1)[-1]
    entries.append("\n".join([
        "@software{shiftbench,", f"  title   = {{{{ShiftBench}}: {subtitle}}},",
        f"  author  = {{{_bibtex_authors(cff.get('authors', [{'name': 'ShiftBench maintainers'}]))}}},",
        f"  version = {{{release}}},", f"  license = {{{cff.get('license', '')}}}" + ("," if url else ""),
        *([f"  url     = {{{url}}}"] if url else []), "}"]))
    return "\n\n".join("\n".join(line for line in entry.splitlines() if line) for entry in entries)


def about_markdown() -> str:
    """The About tab and section: what the benchmark measures, how to submit, how to cite."""
    from importlib.metadata import PackageNotFoundError, version

    from leaderboard.render import environment

    try:
        release = version("shiftbench")
    except PackageNotFoundError:
        release = "unreleased"
    paper = citation().get("preferred-citation") or {}
    return environment(markdown=True).get_template("about.md.j2").render(
        n_boot=f"{N_BOOT:,}", repository=repository(), repository_env=REPOSITORY_ENV, bibtex=bibtex(release),
        paper_title=paper.get("title", ""), paper_url=paper.get("url", ""))


def markdown_html(text: str) -> str:
    """Markdown as HTML with raw HTML shown as text (never run): the static page's cards and about."""
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark", {"html": False}).enable("table").render(text)


def protocol_html(name: str, protocols: Mapping | None = None) -> str:
    """The card as HTML for the static page; raw HTML in the markdown is shown as text, never run."""
    return markdown_html(protocol_card(name, protocols))
