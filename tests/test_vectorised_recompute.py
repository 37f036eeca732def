"""The columnar recompute (bench/core/columns.py): its numbers are the row-by-row ones to the bit, the column
entry points give what the rows give, and a malformed file raises the row-by-row reading's error, word for word."""
import json
import random
from pathlib import Path

import numpy as np
import pytest

from bench.core.cells import cell_from_scores
from bench.core.columns import CandidateColumns, ScoreColumns
from bench.core.metrics import accuracy, bon_accuracy, bon_credit, bon_credits
from bench.core.result_schema import read_result
from bench.core.results import (
    _candidates_match_pairs,
    accuracies_from_scores,
    bon_from_candidates,
    candidate_sets_from_rows,
    recompute,
)

ROOT = Path(__file__).resolve().parents[1]
OUT_OF_PLACE = ("is out of place: a set's rows are its candidates 0, 1, 2, ... in order, together, with one pair_id, "
                "and a set id appears once per eval set")


def score_rows():
    """Two eval sets' pairs, as csv.DictReader gives them (text)."""
    values = [("a", "p1", "1.0", "0.5", "0.25", "0.25"), ("a", "p2", "0.1", "0.2", "2", "1"),
              ("b", "q1", "0.3", "0.3", "-1", "0"), ("a", "p3", "5", "4", "3", "3.5")]
    names = ("eval_set", "pair_id", "teacher_chosen", "teacher_rejected", "student_chosen", "student_rejected")
    return [dict(zip(names, v)) for v in values]


def candidate_rows():
    """Sets of eval sets a and b, as csv.DictReader gives them: s1 from pair p1 (its scores as candidates 0, 1),
    s2 from no pair, t1 of b; b's rows come between a's sets, which is allowed."""
    values = [("a", "s1", "p1", "0", "1", "1.0", "0.25"), ("a", "s1", "p1", "1", "0", "0.5", "0.25"),
              ("a", "s1", "p1", "2", "0", "1.0", "0.1"),
              ("b", "t1", "", "0", "2", "0.7", "0.7"), ("b", "t1", "", "1", "1", "0.7", "0.7"),
              ("a", "s2", "", "0", "0", "3", "1"), ("a", "s2", "", "1", "1", "3", "2")]
    names = ("eval_set", "set_id", "pair_id", "candidate", "grade", "teacher", "student")
    return [dict(zip(names, v)) for v in values]


def test_accuracies_and_bon_of_rows_and_columns_agree_with_the_formulas():
    rows, cands = score_rows(), candidate_rows()
    got = accuracies_from_scores(rows)
    assert list(got) == ["a", "b"] and got == accuracies_from_scores(ScoreColumns.from_rows(rows))
    assert got["a"] == {"teacher": accuracy([1, 0.1, 5], [0.5, 0.2, 4]), "student": accuracy([0.25, 2, 3], [0.25, 1, 3.5]),
                        "n_pairs": 3}
    sets = candidate_sets_from_rows(cands)
    assert [(s.set_id, s.pair_id, s.grades, s.teacher) for s in sets["a"]] == \
        [("s1", "p1", [1.0, 0.0, 0.0], [1.0, 0.5, 1.0]), ("s2", "", [0.0, 1.0], [3.0, 3.0])]
    bon = bon_from_candidates(sets)
    assert bon == bon_from_candidates(CandidateColumns.from_rows(cands).sets())
    assert bon["a"] == {"teacher": 100.0 * (0.5 + 0.5) / 2, "student": 100.0 * (0.5 + 1.0) / 2, "n_sets": 2}
    assert bon["b"] == {"teacher": 50.0, "student": 50.0, "n_sets": 1}
    assert _candidates_match_pairs(sets, rows) == _candidates_match_pairs(CandidateColumns.from_rows(cands).sets(),
                                                                          ScoreColumns.from_rows(rows)) == []


def test_credits_and_bon_accuracy_are_bon_credits_to_the_bit():
    """Ragged sets with many ties, summed in set order as the per-set loop sums them."""
    rng = random.Random(3)
    for _ in range(50):
        sets = [(rng.choices([0.1, 0.2, 0.3, 1 / 3], k=n), rng.choices([0, 1, 2], k=n))
                for n in rng.choices([2, 3, 4, 7], k=rng.randint(1, 40))]
        one_by_one = [bon_credit(s, g) for s, g in sets]
        laid = bon_credits([x for s, _ in sets for x in s], [x for _, g in sets for x in g], [len(s) for s, _ in sets])
        assert laid.tolist() == one_by_one
        scores, grades = [s for s, _ in sets], [g for _, g in sets]
        assert bon_accuracy(scores, grades) == float(100.0 * sum(one_by_one) / len(sets))


def test_bon_accuracy_still_refuses_each_bad_set_in_bon_credits_words():
    with pytest.raises(ValueError, match=r"two or more scores with one grade each, got \(1,\) scores"):
        bon_accuracy([[1.0, 0.0], [1.0]], [[1, 0], [1]])
    with pytest.raises(ValueError, match=r"got \(2,\) scores and \(3,\) grades"):
        bon_accuracy([[1.0, 0.0], [1.0, 2.0]], [[1, 0], [1, 0, 0]])
    with pytest.raises(ValueError, match="must be finite"):
        bon_accuracy([[1.0, 0.0], [np.inf, 2.0]], [[1, 0], [1, 0]])
    with pytest.raises(ValueError, match="two or more"):
        bon_credits([1.0, 0.0, 1.0], [1, 0, 1], [2, 1])


def _raises(call, *args) -> str:
    with pytest.raises(ValueError) as error:
        call(*args)
    return str(error.value)


@pytest.mark.parametrize("tamper, message", [
    (lambda r: r.__setitem__(1, {**r[1], "candidate": "2"}), f"a: set 's1' of candidates.csv.gz: row of candidate '2' "
     f"{OUT_OF_PLACE}"),
    (lambda r: r.__setitem__(1, {**r[1], "candidate": "01"}), f"a: set 's1' of candidates.csv.gz: row of candidate '01' "
     f"{OUT_OF_PLACE}"),
    (lambda r: r.__setitem__(2, {**r[2], "pair_id": "p9"}), f"a: set 's1' of candidates.csv.gz: row of candidate '2' "
     f"{OUT_OF_PLACE}"),
    (lambda r: r.extend([{**r[0]}, {**r[1]}]), f"a: set 's1' of candidates.csv.gz: row of candidate '0' {OUT_OF_PLACE}"),
    (lambda r: r.append({**r[0], "set_id": "s3"}), "a: set 's3' of candidates.csv.gz has one candidate; a set has two "
     "or more"),
    (lambda r: r.__setitem__(1, {**r[1], "grade": "NaN"}), "a: set 's1' of candidates.csv.gz: candidate 1 has grade = "
     "NaN, not a finite number; the model that produced it is broken (NaN or infinite weights): rerun the cell"),
    (lambda r: r[4].pop("teacher"), "b: set 't1' of candidates.csv.gz: candidate 1 has no number in column teacher; a "
     "candidates file has the columns eval_set, set_id, pair_id, candidate, grade, teacher, student"),
    (lambda r: r.__setitem__(3, {**r[3], "student": "x"}), "b: set 't1' of candidates.csv.gz: candidate 0 has no number "
     "in column student; a candidates file has the columns eval_set, set_id, pair_id, candidate, grade, teacher, student"),
])
def test_a_malformed_candidates_file_raises_the_row_by_row_words(tamper, message):
    rows = candidate_rows()
    tamper(rows)
    assert _raises(candidate_sets_from_rows, rows) == message
    if "column" in message or "finite" in message or "'01'" in message:   # columns hold numbers and indices only
        assert _raises(CandidateColumns.from_rows, rows) == message
    else:   # columns hold rows in any order: whether they are sets is for sets()
        assert _raises(CandidateColumns.from_rows(rows).sets) == message


def test_columns_given_directly_raise_as_their_rows_would():
    """Columns mean the rows ``as_rows`` gives: a NaN reads "nan", a candidate index its number as text."""
    columns = CandidateColumns.from_rows(candidate_rows())
    values = {name: getattr(columns, name).copy() for name in ("eval_set", "set_id", "pair_id", "candidate", "grade",
                                                               "teacher", "student")}
    values["teacher"][1] = np.nan
    assert _raises(CandidateColumns(**values).sets) == ("a: set 's1' of candidates.csv.gz: candidate 1 has teacher = nan, "
                                                        "not a finite number; the model that produced it is broken (NaN "
                                                        "or infinite weights): rerun the cell")
    values["teacher"][1], values["candidate"][2] = 0.5, 3
    assert _raises(CandidateColumns(**values).sets) == f"a: set 's1' of candidates.csv.gz: row of candidate '3' {OUT_OF_PLACE}"
    scores = ScoreColumns.from_rows(score_rows())
    chosen = scores.teacher_chosen.copy()
    chosen[2] = -np.inf
    broken = ScoreColumns(scores.eval_set, scores.pair_id.astype(str), chosen, scores.teacher_rejected,
                          scores.student_chosen, scores.student_rejected)
    assert _raises(accuracies_from_scores, broken) == ("b: pair 'q1' has teacher_chosen = -inf, not a finite score; the "
                                                       "model that produced it is broken (NaN or infinite weights): "
                                                       "rerun the cell")


def test_a_malformed_scores_file_raises_the_row_by_row_words():
    rows = score_rows()
    rows[1]["student_chosen"] = "NaN"
    message = ("a: pair 'p2' has student_chosen = NaN, not a finite score; the model that produced it is broken (NaN "
               "or infinite weights): rerun the cell")
    assert _raises(accuracies_from_scores, rows) == _raises(ScoreColumns.from_rows, rows) == message
    rows = score_rows()
    del rows[2]["teacher_rejected"]
    assert _raises(accuracies_from_scores, rows) == ("b: pair 'q1' has no number in column teacher_rejected; a scores "
                                                     "file has the columns eval_set, pair_id, teacher_chosen, "
                                                     "teacher_rejected, student_chosen, student_rejected")
    rows = score_rows()   # no pair ids: the accuracies need none, the columns do
    for row in rows:
        del row["pair_id"]
    assert accuracies_from_scores(rows) == accuracies_from_scores(score_rows())
    with pytest.raises(KeyError):
        ScoreColumns.from_rows(rows)


def test_a_candidate_that_is_not_its_pairs_score_is_named_quoting_the_scores_file():
    rows, cands = score_rows(), candidate_rows()
    rows[0]["teacher_chosen"] = "1.00"   # the same number, written otherwise: no problem
    assert _candidates_match_pairs(CandidateColumns.from_rows(cands).sets(), ScoreColumns.from_rows(rows)) == []
    rows[0]["student_rejected"] = "0.250"
    cands[1]["student"] = "0.5"
    cands[5]["pair_id"] = cands[6]["pair_id"] = "p7"
    expected = [("candidates.a.s1", "set 's1' of a: candidate 1's student score in candidates.csv.gz is 0.5, but it is "
                                     "pair 'p1''s rejected response, which scores.csv.gz scores 0.250"),
                ("candidates.a.s2", "set 's2' of a in candidates.csv.gz names pair 'p7', which scores.csv.gz does not "
                                    "score")]
    assert _candidates_match_pairs(CandidateColumns.from_rows(cands).sets(), ScoreColumns.from_rows(rows)) == expected
    assert _candidates_match_pairs(candidate_sets_from_rows(cands), rows) == expected


def test_cell_from_scores_of_rows_and_columns():
    result = {"method": {"name": "m", "params": {}}, "seed": 0, "source": "a", "category": "c",
              "protocol": {"name": "p", "version": "1"}, "eval_sets": {"b": {"role": "ood"}, "a": {"role": "id"}}}
    rows, cands = score_rows(), candidate_rows()
    cells = [cell_from_scores(result, rows, "w", cands),
             cell_from_scores(result, ScoreColumns.from_rows(rows), "w", CandidateColumns.from_rows(cands))]
    for cell in cells:
        assert [e.name for e in cell.eval_sets] == [e.name for e in cell.bon] == ["a", "b"]
        assert cell.eval_sets[0].pair_ids == ("p1", "p2", "p3") and cell.eval_sets[0].teacher.tolist() == [1, 0, 1]
        assert cell.bon[0].pair_ids == ("s1", "s2") and cell.bon[0].teacher.tolist() == [0.5, 0.5]
        assert cell.bon[1].student.tolist() == [0.5]
    rows[2]["student_chosen"] = "inf"
    assert _raises(cell_from_scores, result, rows, "w") == "w: non-finite score in eval set b (pair q1)"
    rows[2]["eval_set"] = "c"   # a pair of another eval set is not read
    assert _raises(cell_from_scores, result, rows, "w") == "w: no scores for eval set b"
    assert _raises(cell_from_scores, result, score_rows(), "w", cands[:3] + cands[5:]) == \
        "w: no candidate sets for eval set b"


def test_a_real_cell_recomputes_from_rows_columns_and_float_rows():
    found = sorted(ROOT.glob("submissions/mini-v2/*/naive/cells/seed0/*/candidates.csv.gz"))
    if not found:
        pytest.skip("no mini-v2 cell with candidate sets in this checkout")
    from bench.core.io import read_csv_gz

    folder = found[0].parent
    result = read_result(json.loads((folder / "result.json").read_text()))
    rows, cands = read_csv_gz(folder / "scores.csv.gz"), read_csv_gz(folder / "candidates.csv.gz")
    floats = [{k: v if k in ("eval_set", "pair_id", "set_id", "candidate") else float(v) for k, v in r.items()}
              for r in cands]
    assert recompute(result, rows, cands) == recompute(result, ScoreColumns.from_rows(rows),
                                                       CandidateColumns.from_rows(cands)) == []
    assert recompute(result, iter(rows), iter(floats)) == []
    cands[5]["candidate"] = "7"
    problems = recompute(result, rows, cands)
    assert len(problems) == 1 and problems[0][0] == "candidates" and OUT_OF_PLACE in problems[0][1]
