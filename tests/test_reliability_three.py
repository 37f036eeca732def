"""Nothing trusted, round three (issue 31): each test breaks what a hostile or unlucky user broke by hand
and checks the harness's answer (docs/reliability.md, "Round three")."""
from __future__ import annotations

from bench.submissions import validate_submission
from small_runs import edit_json, first_cell, reseal


def check(runs, folder):
    return validate_submission(folder, runs.protocols, runs.model_pairs)


def errors(validation) -> str:
    return "\n".join(map(str, validation.errors))


# --- 12. derived seeds --------------------------------------------------------------------------------------
def test_an_edited_derived_seed_is_refused(runs, naive):
    edit_json(first_cell(naive) / "result.json", lambda r: r["derived_seeds"].update(split=12345))
    reseal(naive)
    found = errors(check(runs, naive))
    assert "derived_seeds.split: is 12345, but seed 0 of mini/recipes derives" in found
    assert "seeds are derived, never chosen" in found


def test_a_missing_or_foreign_stage_seed_is_refused(runs, naive):
    def change(result):
        result["derived_seeds"].pop("student-order")
        result["derived_seeds"]["lucky"] = 7
    edit_json(first_cell(naive) / "result.json", change)
    reseal(naive)
    assert "derived_seeds: names the stages ['lucky', 'order'" in errors(check(runs, naive))
