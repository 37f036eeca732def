"""The protocol cards in docs/protocols/ are the generated ones, and a card says what the protocol uses."""
import pytest

from bench.core.card import DOCS_DIR, protocol_card
from bench.core.protocols import PROTOCOLS, protocol_hash


@pytest.mark.parametrize("name", ["mini", "mini-v2", "w2s-shift-v1", "w2s-real-v1"])
def test_committed_card_equals_the_generated_one(name):
    committed = (DOCS_DIR / f"{name}.md").read_text(encoding="utf-8")
    assert committed == protocol_card(PROTOCOLS.get(name)), \
        f"docs/protocols/{name}.md is stale: regenerate it with `python -m bench.core.card`"


def test_card_of_the_real_protocol_names_what_decides_its_numbers():
    protocol = PROTOCOLS.get("w2s-shift-v1")
    card = protocol_card(protocol)
    assert f"`{protocol_hash(protocol)}`" in card and "version 1.0" in card
    for needle in ("`nvidia/HelpSteer3`, config `preference`", "test split `validation` (the dataset has no test split",
                   "`Anthropic/hh-rlhf`, data_dir `harmless-base`", "safer_response_id, not better_response_id",
                   "a uniform random sample of 8,000 usable pairs", "a uniform random sample of 1,000 usable pairs", "0, 1, 2", "1024 tokens",
                   "| harmless | `w2s/rail-hh-10k` | `w2s/hh-harmless`, `w2s/pku-saferlhf` |",
                   "Groups are shuffled with the seed", "fair seeded coin", "CC-BY-NC-4.0"):
        assert needle in card, needle


def test_an_archived_protocol_names_a_registered_successor_and_keeps_its_hash():
    """ARCHIVED marks a protocol whose board is kept but no longer the default; the mark is no spec field, so the
    archived protocol's hash, recorded in its submissions, is the one they were run with."""
    from bench.core.protocols import ARCHIVED, protocol_named, replaced_by

    for old, new in ARCHIVED.items():
        assert PROTOCOLS.get(new) and replaced_by(new) is None   # a successor that is itself current
        assert f"- **Archived:** `{new}` replaces it" in protocol_card(PROTOCOLS.get(old))
    assert protocol_hash(PROTOCOLS.get("mini")).startswith("527dcbde0926")   # v1.0's, as its 26 submissions record
    assert replaced_by("mini+cap-train800-test200") == "mini-v2" and replaced_by("mini-v2") is None
    assert "Archived" not in protocol_card(protocol_named("mini-v2"))


def test_a_submission_of_an_archived_protocol_passes_with_a_warning_that_names_its_successor(committed_validations):
    """bench validate and the board's Submit tab tell whoever submits to mini that mini-v2 is the current board;
    the submission stays valid."""
    found = {v.key: v for v in committed_validations}
    old, current = found["mini/tiny/length"], found["mini-v2/tiny-lr3e-4/length"]
    assert old.ok and current.ok
    assert [(p.field, p.fix) for p in old.warnings] == [
        ("protocol.name", "for the current board, run on mini-v2 (bench run --protocol mini-v2) and submit that")]
    assert "'mini' is archived: 'mini-v2' replaces it" in old.warnings[0].message and not current.warnings
