"""Nothing trusted, round four (issue 59): what a careful forger changed in a best-of-N submission, every number
recomputed with the harness's own functions and every checksum resealed, and the committed reference teacher
refusing it (bench.submissions.reference: the candidate sets, their gold grades and the teacher's credits)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from small_runs import as_folders, forge_candidates, raise_wrong_candidates, regrade_one_set

from bench.submissions import SUBMISSION_FILE, cell_folder, validate_submission

REPOSITORY = Path(__file__).resolve().parents[1]
GCE = REPOSITORY / "submissions" / "mini-v2" / "tiny-lr3e-4" / "gce_exponent=0.7"


def gce_copy(tmp_path: Path) -> Path:
    if not GCE.is_dir():
        pytest.skip("no reference submissions")
    return as_folders(Path(shutil.copytree(GCE, tmp_path / "mini-v2" / "tiny-lr3e-4" / GCE.name)))


def errors(validation) -> str:
    return "\n".join(map(str, validation.errors))


def test_a_forged_teacher_candidate_is_refused(tmp_path):
    """Round four's first failure: the teacher's score of every candidate that is not a pair's (candidates 2 and 3)
    and not gold-best set to 50, so that the teacher picks a wrong one in every set. Every number recomputes and
    the summary moves (teacher BoN in distribution to 0); before, it validated. The reference's credits refuse it."""
    forged = gce_copy(tmp_path)
    before = json.loads((forged / SUBMISSION_FILE).read_text())["summary"]
    forge_candidates(forged, raise_wrong_candidates)
    after = json.loads((forged / SUBMISSION_FILE).read_text())["summary"]
    assert after["teacher_bon_id"] == 0.0 < before["teacher_bon_id"] and after["bon_nts"] > before["bon_nts"] + 10
    found = errors(validate_submission(forged))
    assert (f"{cell_folder(0, 'mini/chat')}/result.json: eval_sets.mini/chat: the teacher's best-of-N picks differ "
            "from those of the reference teacher (submission mini-v2/tiny-lr3e-4/naive) in ") in found, found
    assert "credit 0 here, 1 there" in found


def test_a_forged_grade_is_refused(tmp_path):
    """Grades decide which candidate is gold-best: one set's student pick made gold-best (its grade 1, the old
    best's 0) in every cell recomputes and resealed, and validated before. The protocol's grades refuse it."""
    forged = gce_copy(tmp_path)
    forge_candidates(forged, regrade_one_set)
    found = errors(validate_submission(forged))
    assert "candidates.csv.gz: candidates.mini/" in found and "1 of its 200 best-of-N candidate sets differ from " \
        "the protocol's in its gold grades" in found, found


def test_an_honest_best_of_n_submission_keeps_every_credit_and_grade(tmp_path):
    """The same checks pass every honest cell: gce's cells as folders, unchanged, validate."""
    v = validate_submission(gce_copy(tmp_path))
    assert v.ok, errors(v)


def test_generated_candidate_sets_are_the_protocols(tmp_path):
    """Without a committed reference, a generated protocol's candidate sets and grades are generated again
    (bench.submissions.reference.generated): they equal the ones the committed mini-v2 reference holds."""
    from bench.core.protocols import PROTOCOLS
    from bench.submissions.reference import committed, generated

    protocol = PROTOCOLS.get("mini-v2")
    stored = committed(protocol, "tiny-lr3e-4")
    assert stored is not None and stored.candidate_sets and stored.credits
    assert generated(protocol).candidate_sets == stored.candidate_sets


def test_the_round_four_table_names_tests_that_exist():
    """docs/reliability.md's round-four table points at tests by file and name: each exists."""
    import re

    doc = (REPOSITORY / "docs" / "reliability.md").read_text()
    table = doc[doc.index("## Round four"):doc.index("## Determinism")]
    named = re.findall(r"`(tests/\w+\.py)(?:::(test_\w+))?`", table)
    assert len(named) >= 8
    for file, test in named:
        text = (REPOSITORY / file).read_text()
        assert not test or re.search(rf"^def {test}\(", text, flags=re.M), f"{file}::{test}"


def test_a_chosen_reference_submission_that_drops_its_fresh_from_is_refused(tmp_path):
    """Round four, item 7: adaptconf was chosen as one of the zoo's best three on mini-v2's seeds 0-2, and its
    submission says so (fresh_from 3). With the mark removed it validated, and bench compare then counted the seeds
    that chose it. The committed reference records which reference submissions were chosen, and refuses it."""
    folder = REPOSITORY / "submissions" / "mini-v2" / "tiny-lr3e-4" / "adaptconf_temperature=0.5"
    if not folder.is_dir():
        pytest.skip("no reference submissions")
    copy = Path(shutil.copytree(folder, tmp_path / "mini-v2" / "tiny-lr3e-4" / folder.name))
    meta = json.loads((copy / SUBMISSION_FILE).read_text())
    assert meta.pop("fresh_from") == 3
    (copy / SUBMISSION_FILE).write_text(json.dumps(meta))
    found = errors(validate_submission(copy))
    assert ("submission.json: fresh_from: is None, but adaptconf_temperature=0.5 was chosen as the best of several on "
            "mini-v2's seeds before 3") in found and "bench submit again with --fresh-from 3" in found, found
    assert validate_submission(folder).ok   # the committed one keeps its mark


def test_json_nested_past_the_parser_is_refused_in_words(runs, tmp_path):
    """Round four, item 7: a submission.json nested 100,000 levels deep was reported as Python's "maximum recursion
    depth exceeded"; it now says what is wrong with the file."""
    from small_runs import submission_copy

    folder = submission_copy(runs, tmp_path / "naive")
    (folder / SUBMISSION_FILE).write_text("[" * 100_000 + "]" * 100_000)
    found = errors(validate_submission(folder, runs.protocols, runs.model_pairs))
    assert "submission.json: not valid JSON here: its values are nested deeper than the parser follows" in found, found
    assert "recursion" not in found
