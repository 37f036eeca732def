"""bench submit and bench validate on real (small) runs: a submission validates as written, and each
kind of damage or hostile input is refused with the file, the field and the fix named."""
import dataclasses
import gzip
import hashlib
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
from small_runs import (
    RUNS,
    edit_json,
    first_cell,
    flip_one_student_pair,
    reseal,
    submission_copy,
    zip_folder,
)

from bench.core.errors import BenchError
from bench.core.result_schema import read_result
from bench.core.store import load_store
from bench.submissions import (
    SUBMISSION_FILE,
    Validation,
    cell_folder,
    extract_upload,
    limits,
    public_command,
    submit,
    teacher_conflicts,
    validate_submission,
    validate_tree,
)
from bench.submissions.fields import check_text
from bench.submissions.limits import _Stop


def check(runs, folder) -> Validation:
    return validate_submission(folder, runs.protocols, runs.model_pairs)


def errors(validation) -> str:
    return "\n".join(map(str, validation.errors))


# --- submit -------------------------------------------------------------------------------------------
def test_submit_writes_one_valid_submission_per_method_and_params(runs, small_protocol):
    found = validate_tree(runs.submissions, runs.protocols, runs.model_pairs)
    assert len(found) == len(RUNS)
    assert all(v.ok for v in found), [errors(v) for v in found]
    assert {v.key for v in found} == {"mini-test/tiny-test/naive", "mini-test/tiny-test/ceiling",
                                      "mini-test/tiny-test/anchor_lam=0.5_layers=last",
                                      "mini-test/tiny-test/anchor_lam=2.0_layers=last"}
    naive = next(v for v in found if v.key.endswith("/naive"))
    meta = naive.submission
    assert meta["protocol"] == {"name": "mini-test", "version": small_protocol.version,
                                "hash": naive.cells[0].protocol.hash}
    assert meta["models"]["strong"]["revision"]["weights_sha256"]
    assert meta["submitter"] == "test suite" and meta["command"] == "bench submit results"
    assert meta["run_commands"] == ["bench run --method naive"]
    assert [(c["seed"], c["source"]) for c in meta["cells"]] == [(0, "mini/recipes"), (0, "mini/travel")]
    # the summary is the plain mean of the cells' NTS (one seed), computed here independently
    nts = [m.nts for cell in naive.cells for m in cell.metrics.values()]
    assert meta["summary"]["nts"] == pytest.approx(sum(nts) / len(nts))
    assert meta["summary"]["nts_sd"] is None and meta["summary"]["seeds"] == 1


def test_submit_refuses_incomplete_results_and_writes_nothing(runs, tmp_path):
    results = tmp_path / "results"
    shutil.copytree(runs.results / "mini-test" / "tiny-test" / "naive", results / "naive")
    shutil.rmtree(results / "naive" / "seed0" / "mini__travel")
    with pytest.raises(BenchError, match=r"missing cells: seed 0 mini/travel; run them with bench run --method naive"):
        submit([results], tmp_path / "out", "me", protocols=runs.protocols, model_pairs=runs.model_pairs)
    assert not (tmp_path / "out").exists()


def test_the_advice_for_missing_cells_runs_a_method_file_from_its_file():
    """bench submit's and validate's advice for missing cells names the file of a method from one (--method alone
    finds no such method), by the file name its cells recorded."""
    from bench.submissions.commands import method_option

    assert method_option({"name": "naive", "origin": {"kind": "built-in"}}) == "--method naive"
    assert method_option({"name": "clipped", "origin": {"kind": "file", "file": "clipped.py"}}) == \
        "--method-file clipped.py --method clipped"


def test_submit_refuses_to_overwrite_without_force(runs, tmp_path):
    out = runs.copy_submissions(tmp_path / "subs")
    source = [runs.results / "mini-test" / "tiny-test" / "naive"]
    with pytest.raises(BenchError, match="exists; pass --force"):
        submit(source, out, "me", protocols=runs.protocols, model_pairs=runs.model_pairs)
    [written] = submit(source, out, "someone else", force=True, protocols=runs.protocols, model_pairs=runs.model_pairs)
    assert json.loads((written / SUBMISSION_FILE).read_text())["submitter"] == "someone else"
    assert check(runs, written).ok


def test_a_submission_written_meanwhile_is_kept_and_the_second_submit_fails(runs, tmp_path, monkeypatch):
    """Two bench submit runs into one --out without --force: both saw no folder, and the second one's swap used to
    replace the first's silently. The folder is claimed atomically: the one written first is kept."""
    import bench.submissions.pack as pack

    out, write = tmp_path / "subs", pack._write
    destination = out / "mini-test" / "tiny-test" / "naive"

    def meanwhile(*args, **kwargs):
        write(*args, **kwargs)
        destination.mkdir(parents=True)
        (destination / "first.txt").write_text("the other run's")

    monkeypatch.setattr(pack, "_write", meanwhile)
    with pytest.raises(BenchError, match="was written while this was being prepared .* pass --force to replace it"):
        submit([runs.results / "mini-test" / "tiny-test" / "naive"], out, "me", protocols=runs.protocols,
               model_pairs=runs.model_pairs)
    assert [p.name for p in destination.iterdir()] == ["first.txt"]
    assert [p.name for p in destination.parent.iterdir()] == ["naive"]   # no staging folder left


def test_submit_refuses_markup_in_the_submitter(runs, tmp_path):
    with pytest.raises(BenchError, match="--submitter"):
        submit([runs.results], tmp_path, "<b>me</b>", protocols=runs.protocols, model_pairs=runs.model_pairs)


@pytest.mark.parametrize("command, public", [
    ("bench run --method naive --seeds 0 --out /home/me/runs/results",
     "bench run --method naive --seeds 0 --out results"),
    ("bench submit /home/me/runs/results/mini/tiny/naive --out submissions --submitter 'A B'",
     "bench submit naive --out submissions --submitter 'A B'"),
    ("bench run --out=~/runs/results --cache-dir runs/cache --method-file ../methods/mine.py",
     "bench run --out=results --cache-dir cache --method-file mine.py"),
    ("bench run --data-dir 'C:\\Users\\me\\data' --param lam=0.1 --grid lam=0.1,1,10",
     "bench run --data-dir data --param lam=0.1 --grid lam=0.1,1,10"),
    ("bench run --method naive --out results", "bench run --method naive --out results"),
])
def test_public_command_replaces_local_paths_by_their_last_component(command, public):
    assert public_command(command) == public
    assert public_command(public) == public


def test_submit_stores_commands_without_local_paths(runs, tmp_path):
    results = tmp_path / "private" / "results"
    shutil.copytree(runs.results / "mini-test" / "tiny-test" / "naive", results / "naive")
    for result in results.rglob("result.json"):
        edit_json(result, lambda r: r.update(command=f"bench run --method naive --out {results}"))
    out = tmp_path / "subs"
    [written] = submit([results], out, "me", command=f"bench submit {results / 'naive'} --out {out}",
                       protocols=runs.protocols, model_pairs=runs.model_pairs)
    meta = json.loads((written / SUBMISSION_FILE).read_text())
    assert meta["command"] == "bench submit naive --out subs"
    assert meta["run_commands"] == ["bench run --method naive --out results"]
    store = load_store(written)   # bench submit keeps the cells in the compact store (tests/test_store.py)
    for ref in meta["cells"]:
        packed = store.cell(store.index(cell_folder(ref["seed"], ref["source"]))).result
        assert json.loads(packed)["command"] == "bench run --method naive --out results"
        assert hashlib.sha256(packed).hexdigest() == ref["result_sha256"]  # the packed copy's, which validation checks
    assert str(tmp_path) not in (written / SUBMISSION_FILE).read_text()
    assert not [i for i in range(len(store.paths)) if str(tmp_path).encode() in store.cell(i).result]
    assert check(runs, written).ok, errors(check(runs, written))


def test_an_absolute_path_in_a_command_is_refused(runs, naive):
    edit_json(naive / SUBMISSION_FILE, lambda m: m.update(command="bench submit /home/someone/results --out subs"))
    found = errors(check(runs, naive))
    assert "submission.json: command: holds the local path '/home/someone/results'" in found
    assert "Fix: re-pack with bench submit" in found
    leaky = "bench run --method naive --out /home/someone/results"
    edit_json(first_cell(naive) / "result.json", lambda r: r.update(command=leaky))
    reseal(naive)  # checksums updated: the path alone is refused
    found = errors(check(runs, naive))
    assert "cells/seed0/mini__recipes/result.json: command: holds the local path '/home/someone/results'" in found


# --- validate: numbers ----------------------------------------------------------------------------------
def test_one_changed_score_is_refused_naming_file_and_field(runs, naive):
    eval_set = flip_one_student_pair(first_cell(naive))
    found = errors(check(runs, naive))
    assert "cells/seed0/mini__recipes/scores.csv.gz: its sha256 is not the one submission.json lists" in found
    reseal(naive)  # even with every checksum updated, the numbers do not recompute
    found = errors(check(runs, naive))
    assert "sha256" not in found
    assert f"cells/seed0/mini__recipes/result.json: eval_sets.{eval_set}.student_acc: is " in found
    assert "but the per-pair scores give" in found and "Fix: " in found


def test_a_changed_number_in_result_json_is_refused(runs, naive):
    edit_json(first_cell(naive) / "result.json", lambda r: r["metrics"]["mini/travel"].update(nts=99.0))
    reseal(naive)
    found = errors(check(runs, naive))
    assert "result.json: metrics.mini/travel.nts: is 99.0 but the per-pair scores give" in found


def test_a_changed_summary_is_refused(runs, naive):
    edit_json(naive / SUBMISSION_FILE, lambda m: m["summary"].update(nts=50.0))
    assert "submission.json: summary.nts: is 50.0 but the cells give" in errors(check(runs, naive))


def test_non_finite_and_malformed_scores_are_refused(runs, naive):
    cell = first_cell(naive)
    lines = gzip.decompress((cell / "scores.csv.gz").read_bytes()).decode().splitlines()
    fields = lines[1].split(",")
    fields[4] = "nan"
    lines[1] = ",".join(fields)
    lines.append(lines[2])  # one pair twice
    (cell / "scores.csv.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    reseal(naive)
    found = errors(check(runs, naive))
    assert "line 2: scores must be finite numbers" in found and "twice" in found


# --- validate: completeness, protocol, schema ---------------------------------------------------------------
def test_a_missing_cell_is_refused_with_the_command_to_run_it(runs, naive):
    shutil.rmtree(naive / "cells" / "seed0" / "mini__travel")
    edit_json(naive / SUBMISSION_FILE, lambda m: m.update(cells=m["cells"][:1]))
    found = errors(check(runs, naive))
    assert "submission.json: cells: 1 of the 2 cells of seeds 0 are missing: seed 0 mini/travel" in found
    assert "bench run --method naive --protocol mini-test --seeds 0" in found


def test_a_foreign_protocol_hash_is_refused(runs, naive):
    edit_json(naive / SUBMISSION_FILE, lambda m: m["protocol"].update(hash="0123456789abcdef"))
    found = errors(check(runs, naive))
    assert "submission.json: protocol.hash: foreign protocol hash '0123456789abcdef'" in found


def test_an_unregistered_protocol_is_refused(runs, naive):
    found = errors(validate_submission(naive))  # no test protocol passed: only the registry's
    assert "protocol 'mini-test' is not registered" in found


def test_a_changed_model_pair_is_refused(runs, naive):
    edit_json(naive / SUBMISSION_FILE, lambda m: m["models"]["student_train"].update(epochs=7))
    assert "model pair 'tiny-test' differs from the registered one in: student_train" in errors(check(runs, naive))


def test_a_spec_field_added_after_the_run_does_not_invalidate_it(runs, naive):
    """A run made before a new optional spec field existed records no value for it: that is its default."""
    def drop(models):
        del models["strong"]["gradient_checkpointing"], models["student_train"]["warmup_ratio"]

    edit_json(naive / SUBMISSION_FILE, lambda m: drop(m["models"]))
    for result in naive.rglob("result.json"):
        edit_json(result, lambda r: drop(r["models"]))
    reseal(naive)
    assert check(runs, naive).ok, errors(check(runs, naive))


@pytest.mark.parametrize("change, expected", [
    (lambda m: m.update(schema_version=99), "submission.json: schema_version: is 99; this bench reads 2"),
    (lambda m: m.pop("summary"), "submission.json: summary: Field required"),
    (lambda m: m.update(cells="all"), "submission.json: cells: Input should be a valid list"),
    (lambda m: m.update(extra_field=1), "submission.json: extra_field: Extra inputs are not permitted"),
    (lambda m: m["cells"].append(m["cells"][0]), "cells.2: seed 0, source mini/recipes is listed twice"),
    (lambda m: m["cells"].append({**m["cells"][0], "seed": 5}), "seed 5, source 'mini/recipes' is not a cell of mini-test"),
])
def test_schema_problems_are_refused(runs, naive, change, expected):
    edit_json(naive / SUBMISSION_FILE, change)
    assert expected in errors(check(runs, naive))


def test_json_that_is_not_json_is_refused(runs, naive):
    (naive / SUBMISSION_FILE).write_text('{"schema_version": NaN}')
    assert "submission.json: not valid JSON (NaN is not a JSON number)" in errors(check(runs, naive))
    (naive / SUBMISSION_FILE).write_text("[" * 100_000)
    assert "not valid JSON" in errors(check(runs, naive))


# --- validate: hostile input ---------------------------------------------------------------------------------
@pytest.mark.parametrize("field, value", [
    ("submitter", '<img src=x onerror="alert(1)">'),
    ("command", "bench submit </script><script>alert(1)</script>"),
    ("created_utc", "2026\x1b[31m"),
])
def test_markup_and_control_characters_are_refused_in_any_text(runs, naive, field, value):
    edit_json(naive / SUBMISSION_FILE, lambda m: m.update({field: value}))
    found = errors(check(runs, naive))
    assert f"submission.json: {field}: text " in found and "could be markup, script or disguised text" in found


def test_markup_inside_a_cell_result_is_refused(runs, naive):
    edit_json(first_cell(naive) / "result.json", lambda r: r["environment"].update(platform="<svg onload=alert(1)>"))
    reseal(naive)
    assert "result.json: environment.platform: text '<svg" in errors(check(runs, naive))


def test_a_decoders_chat_template_and_special_tokens_are_not_taken_for_markup(runs, naive):
    """A decoder's result records its tokenizer's own text ('<|im_start|>'); before this, no decoder
    submission (smol, qwen, llama) could pass. Everywhere else, and in those fields' keys, '<' is refused."""
    template = "{{ '<|im_start|>' + message['role'] }}" + " " * limits.MAX_TEXT_CHARS   # longer than other text may be
    edit_json(first_cell(naive) / "result.json", lambda r: r["formatters"]["strong"].update(
        chat_template=template, bos_token="<|im_start|>", special_tokens={"eos_token": "</s>"}))
    reseal(naive)
    assert errors(check(runs, naive)) == ""

    edit_json(first_cell(naive) / "result.json", lambda r: r["formatters"]["strong"].update(
        kind="<b>decoder</b>", special_tokens={"<i>": "</s>"}, eos_token="<|im_end|>\u202e",
        chat_template="x" * (limits.MAX_TEMPLATE_CHARS + 1), bos_token="<s>" * limits.MAX_TEXT_CHARS))
    reseal(naive)
    found = errors(check(runs, naive))
    assert f"formatters.strong.bos_token: text of {3 * limits.MAX_TEXT_CHARS} characters (limit {limits.MAX_TEXT_CHARS})" in found
    assert "result.json: formatters.strong.kind: text '<b>decoder</b>' contains '<' or '>'" in found
    assert "result.json: formatters.strong.special_tokens.<i>: text '<i>' contains '<' or '>'" in found
    assert "formatters.strong.eos_token: text '<|im_end|>\\u202e' contains a bidirectional control character" in found
    assert f"formatters.strong.chat_template: text of {limits.MAX_TEMPLATE_CHARS + 1} characters" in found


def test_text_found_plain_is_judged_again_under_a_lower_limit(monkeypatch):
    """check_text's process-wide record of plain strings is kept per length limit: a string that passed stays
    refused once a limit (the text's, or a template's below it) is lowered."""
    def problems(obj):
        v = Validation(folder=Path("."))
        check_text(v, "x.json", obj)
        return [p.message.split(" (")[0] for p in v.errors]

    assert problems({"models": {"weak": {"description": "x" * 100}}}) == []
    monkeypatch.setattr(limits, "MAX_TEXT_CHARS", 50)
    assert problems({"models": {"weak": {"description": "x" * 100}}}) == ["text of 100 characters"]
    monkeypatch.setattr(limits, "MAX_TEMPLATE_CHARS", 10)
    assert problems({"models": {"strong": {"chat_template": "y" * 20}}}) == ["text of 20 characters"]


def test_a_member_every_cell_repeats_is_judged_again_where_it_differs():
    """check_text takes a member every cell repeats (models, protocol, ...) as plain where it equals one found plain
    before: one that differs anywhere is walked, and the object's keys are judged whatever its members."""
    def problems(obj):
        v = Validation(folder=Path("."))
        check_text(v, "result.json", json.loads(json.dumps(obj)))
        return [f"{p.field}: {p.message.split(' contains')[0]}" for p in v.errors]

    models = {"name": "tiny", "weak": {"id": "a-model", "revision": {"sha": "0" * 8}}}
    assert problems({"models": models, "seed": 0}) == []
    assert problems({"models": models, "seed": 1}) == []   # taken as plain: equal to the one before
    changed = {**models, "weak": {"id": "a-model<script>", "revision": {"sha": "0" * 8}}}
    assert problems({"models": changed, "seed": 2}) == ["models.weak.id: text 'a-model<script>'"]
    assert problems({"models": models, "<b>": 3}) == ["<b>: text '<b>'"]


def test_gold_labels_are_the_built_in_ceilings_alone(runs, naive, tmp_path):
    """A cell that trained on gold labels is the ceiling's, the board's reference row: naive's cells edited to say
    gold (with labels.kind to match, every checksum resealed), a method file's gold, and a ceiling that says teacher
    or comes from a file are refused; the built-in ceiling passes."""
    def gold(r):
        r["method"]["labels"] = "gold"
        if r.get("labels"):
            r["labels"]["kind"] = "gold"

    for result in naive.rglob("result.json"):
        edit_json(result, gold)
    reseal(naive)
    assert "method.labels: is 'gold' for 'naive' (built-in origin): only the built-in 'ceiling' trains on gold" \
        in errors(check(runs, naive))
    for result in naive.rglob("result.json"):
        edit_json(result, lambda r: r["method"]["origin"].update(kind="file"))
    reseal(naive)
    assert "is 'gold' for 'naive' (file origin)" in errors(check(runs, naive))

    ceiling = submission_copy(runs, tmp_path / "ceiling", "ceiling")
    assert check(runs, ceiling).ok
    for result in ceiling.rglob("result.json"):
        edit_json(result, lambda r: r["method"]["origin"].update(kind="file"))
    reseal(ceiling)
    assert "method.labels: is 'gold' for 'ceiling' (file origin)" in errors(check(runs, ceiling))

    def teacher(r):
        r["method"].update(labels="teacher", origin={**r["method"]["origin"], "kind": "built-in"})
        if r.get("labels"):
            r["labels"]["kind"] = "teacher"

    for result in ceiling.rglob("result.json"):
        edit_json(result, teacher)
    reseal(ceiling)
    assert "method.labels: is 'teacher': 'ceiling' is the built-in reference" in errors(check(runs, ceiling))


def test_a_stages_time_out_of_range_is_refused(runs, naive):
    """timings_s feed every decision cost: 1e308 or a negative time no longer validates."""
    edit_json(first_cell(naive) / "result.json", lambda r: r["timings_s"].update(student=1e308, teacher=-5.0))
    reseal(naive)
    found = errors(check(runs, naive))
    assert "result.json: timings_s.student: is 1e+308: a stage's time is 0 to 2,592,000 seconds" in found
    assert "result.json: timings_s.teacher: is -5.0" in found


def test_a_model_specs_own_chat_template_is_not_taken_for_markup():
    """ModelSpec.chat_template (a template given instead of the tokenizer's) is written into submission.json
    and every result.json under models.<role>; the registered pairs set none today, so this checks the rule."""
    template = "{{ '<|im_start|>' + message['role'] }}" + " " * limits.MAX_TEXT_CHARS
    models = {"name": "pair", "strong": {"chat_template": template, "path": "a<b"}, "weak": {"chat_template": None}}
    for file in ("submission.json", "cells/seed0/mini__recipes/result.json"):
        v = Validation(folder=Path("."))
        check_text(v, file, {"models": models, "notes": {"chat_template": "<b>"}})
        assert [f"{p.field}: {p.message.split(' contains')[0]}" for p in v.errors] == [
            "models.strong.path: text 'a<b'",            # other fields of a model spec: plain text
            "notes.chat_template: text '<b>'"]           # only where a model spec or a formatter has it
    v = Validation(folder=Path("."))
    check_text(v, "submission.json", {"models": {"strong": {"chat_template": "x" * (limits.MAX_TEMPLATE_CHARS + 1)},
                                                 "weak": {"chat_template": "<|im_end|>\u200b"}}})
    assert [(p.field, p.message.split(", which")[0]) for p in v.errors] == [     # every other rule holds there
        ("models.strong.chat_template",
         f"text of {limits.MAX_TEMPLATE_CHARS + 1} characters (limit {limits.MAX_TEMPLATE_CHARS})"),
        ("models.weak.chat_template", "text '<|im_end|>\\u200b' contains a zero-width character U+200B")]


def test_text_escaped_in_json_or_allowed_only_where_it_is_is_judged_as_the_walk_judges_it(tmp_path):
    """check_text passes a JSON file whose strings are all plain in one pass over its text: a character written as
    a JSON escape is still found, and a string that only its place allows (a path as a key or in a command, markup
    in a chat template) is judged where it is."""
    from bench.submissions.fields import read_json
    from bench.submissions.schema import SubmissionFile

    def problems(text: str) -> list[str]:
        (tmp_path / "x.json").write_text(text)
        v = Validation(folder=tmp_path)
        with pytest.raises(_Stop):   # every one of these stops at the schema version
            read_json(v, tmp_path, "x.json", SubmissionFile)
        return [f"{p.field}: {p.message.split(' contains')[0].split(': a submission')[0]}" for p in v.errors
                if p.field != "schema_version"]

    assert problems('{"notes": "\\u003cscript\\u003e", "n": "\\u200b"}') == [
        "notes: text '<script>'", "n: text '\\u200b'"]
    assert problems('{"/home/me": 1, "command": "/usr/bin/bench run", "o": {"command": "~/x"}}') == []
    assert problems('{"models": {"strong": {"chat_template": "<|im_start|>"}}, "path": "/home/me/x"}') == [
        "path: holds the local path '/home/me/x'"]


@pytest.mark.parametrize("field, value", [("slug", "../../etc"), ("method.name", "a/b"), ("slug", "..")])
def test_names_that_could_be_paths_are_refused(runs, naive, field, value):
    def change(meta):
        parent, _, key = field.rpartition(".")
        (meta[parent] if parent else meta)[key] = value
    edit_json(naive / SUBMISSION_FILE, change)
    assert f"submission.json: {field}: {value!r} is not a plain name" in errors(check(runs, naive))


def test_foreign_files_are_refused_and_never_run(runs, naive, tmp_path):
    marker = tmp_path / "ran"
    (naive / "cells" / "seed0" / "mini__recipes" / "__init__.py").write_text(f"open({str(marker)!r}, 'w')\n")
    (naive / "setup.py").write_text(f"open({str(marker)!r}, 'w')\n")
    found = errors(check(runs, naive))
    assert "setup.py: is not part of a submission (it is never read or run)" in found
    assert "cells/seed0/mini__recipes/__init__.py: is not part of a submission" in found
    assert not marker.exists()


def test_links_and_special_files_are_refused(runs, naive, tmp_path):
    (tmp_path / "outside.txt").write_text("secret")
    (naive / "cells" / "seed0" / "link.json").symlink_to(tmp_path / "outside.txt")
    assert "cells/seed0/link.json: is a symbolic link" in errors(check(runs, naive))
    os.mkfifo(naive / "cells" / "seed0" / "pipe")  # reading it would block: it must not be opened
    assert "cells/seed0/pipe: is not a regular file" in errors(check(runs, naive))


def test_size_limits_are_checked_before_reading(runs, naive, monkeypatch):
    monkeypatch.setattr(limits, "MAX_SUBMISSION_BYTES", 1000)
    found = check(runs, naive)
    assert found.submission is None and "more than 1000 bytes" in errors(found)
    monkeypatch.undo()
    monkeypatch.setattr(limits, "MAX_SCORES_BYTES", 100)  # a small gzip that inflates past the limit
    assert "decompresses to more than 100 bytes" in errors(check(runs, naive))
    monkeypatch.setattr(limits, "MAX_JSON_BYTES", 100)
    assert "submission.json: " in errors(check(runs, naive)) and "over the limit of 100" in errors(check(runs, naive))


# --- many submissions ------------------------------------------------------------------------------------------
def test_duplicates_and_misplaced_folders_are_refused(runs, tmp_path):
    root = runs.copy_submissions(tmp_path / "subs")
    shutil.copytree(root / "mini-test" / "tiny-test" / "naive", root / "mini-test" / "tiny-test" / "naive-again")
    by_key = {v.key: v for v in validate_tree(root, runs.protocols, runs.model_pairs)}
    again = errors(by_key["mini-test/tiny-test/naive-again"])
    assert "is at mini-test/tiny-test/naive-again but holds mini-test/tiny-test/naive" in again
    assert "duplicates" in again and "keep one of them" in again
    assert by_key["mini-test/tiny-test/naive"].ok


def test_teacher_disagreement_is_flagged(runs):
    [naive] = [v for v in validate_tree(runs.submissions, runs.protocols, runs.model_pairs) if v.key.endswith("/naive")]
    other = Validation(naive.folder, submission=naive.submission, name="other")
    first = naive.cells[0].to_json()
    first["eval_sets"]["mini/recipes"]["teacher_acc"] += 5
    other.cells = [read_result(first), *naive.cells[1:]]
    [(message, keys)] = teacher_conflicts([naive, other])
    assert keys == {naive.key, "other"} and "seed 0 mini/recipes -> mini/recipes: teacher accuracy" in message
    assert teacher_conflicts([naive, naive]) == []


# --- uploads -----------------------------------------------------------------------------------------------------
def test_an_uploaded_zip_unpacks_and_validates(runs, naive, tmp_path):
    folder = extract_upload(zip_folder(naive, tmp_path / "sub.zip"), tmp_path / "unpacked")
    assert check(runs, folder).ok


@pytest.mark.parametrize("name", ["naive/../../evil.json", "/etc/passwd", "naive/cells/seed0/x/run.py"])
def test_uploads_with_paths_outside_the_layout_are_refused(runs, naive, tmp_path, name):
    archive = zip_folder(naive, tmp_path / "sub.zip", extra={name: "x"})
    with pytest.raises(BenchError, match="not part of a submission"):
        extract_upload(archive, tmp_path / "unpacked")
    assert not (tmp_path / "evil.json").exists()


def test_oversize_and_non_zip_uploads_are_refused(runs, naive, tmp_path, monkeypatch):
    archive = zip_folder(naive, tmp_path / "sub.zip")
    monkeypatch.setattr(limits, "MAX_SUBMISSION_BYTES", 1000)
    with pytest.raises(BenchError, match="over the limit of 1000|more than 1000 bytes"):
        extract_upload(archive, tmp_path / "unpacked")
    monkeypatch.undo()
    (tmp_path / "not.zip").write_text("hello")
    with pytest.raises(BenchError, match="not a zip archive"):
        extract_upload(tmp_path / "not.zip", tmp_path / "unpacked2")


# --- the command line ---------------------------------------------------------------------------------------------
@pytest.fixture
def registered(runs, monkeypatch):
    """The test protocol and model pair in the registries, as bench validate/submit look them up."""
    from bench.core.protocols import MODEL_PAIRS, PROTOCOLS

    for registry, specs in ((PROTOCOLS, runs.protocols), (MODEL_PAIRS, runs.model_pairs)):
        for name, spec in specs.items():
            monkeypatch.setitem(registry._entries, name, spec)


def test_bench_validate_passes_then_rejects_a_tampered_submission(runs, registered, naive, capsys):
    from bench.cli import main

    assert main(["validate", str(runs.submissions)]) == 0
    assert f"{len(RUNS)} of {len(RUNS)} submissions pass" in capsys.readouterr().out
    flip_one_student_pair(first_cell(naive))
    reseal(naive)
    assert main(["validate", str(naive)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "student_acc: is" in out and "but the per-pair scores give" in out
    assert "0 of 1 submissions pass" in out


def test_bench_submit_from_the_command_line(runs, registered, tmp_path, capsys, monkeypatch):
    from bench.cli import main

    source = runs.results / "mini-test" / "tiny-test" / "ceiling"
    args = ["submit", str(source), "--out", str(tmp_path), "--submitter", "cli"]
    monkeypatch.setattr(sys, "argv", ["bench", *args])   # the command as a shell runs it: what it records
    assert main(args) == 0
    assert "submitted:" in capsys.readouterr().out
    meta = json.loads((tmp_path / "mini-test" / "tiny-test" / "ceiling" / SUBMISSION_FILE).read_text())
    # recorded without the folders its paths are in: a submission holds no path of the machine that made it
    assert meta["command"] == f"bench submit ceiling --out {tmp_path.name} --submitter cli" and meta["submitter"] == "cli"
    assert main(["submit", str(source), "--out", str(tmp_path)]) == 2
    assert "exists; pass --force" in capsys.readouterr().err


def test_the_reference_submissions_validate(committed_validations):
    """submissions/ in the repository: every one passes, and the leaderboard ranks them (its board reads the
    outcomes from the session's validation record, which ``committed_validations`` filled)."""
    from pathlib import Path

    from leaderboard import core

    root = Path(__file__).resolve().parents[1] / "submissions"
    assert [str(p) for v in committed_validations for p in v.errors] == []
    board = core.load_board(root)
    assert len(core.ranking(board)) >= len(committed_validations)


def test_a_changed_interval_is_refused(runs, naive):
    meta = json.loads((naive / SUBMISSION_FILE).read_text())
    low, high = meta["intervals"]["metrics"]["nts"]
    edit_json(naive / SUBMISSION_FILE, lambda m: m["intervals"]["metrics"].update(nts=[low - 1.0, high]))
    found = errors(check(runs, naive))
    assert "submission.json: intervals.metrics.nts: is" in found and "but the per-pair scores give" in found


def test_a_capped_protocol_submits_as_its_own(registered_small, tmp_path, capsys):
    """A capped run (--cap-train/--cap-test) is its own protocol by name: it submits and validates as that
    one, --protocol takes the name, and caps that do not make that name are refused."""
    from bench.cli import main
    from bench.core.errors import UnknownNameError
    from bench.core.protocols import PROTOCOLS, protocol_hash, protocol_named
    from leaderboard import core

    protocol, models = registered_small
    capped = f"{protocol.name}+cap-train40-test20"
    run = ["run", "--method", "length", "--models", models.name, "--out", str(tmp_path / "results"),
           "--cache-dir", str(tmp_path / "cache")]
    assert main([*run, "--protocol", protocol.name, "--cap-train", "40", "--cap-test", "20"]) == 0
    assert main(["submit", str(tmp_path / "results"), "--out", str(tmp_path / "subs"), "--submitter", "cli"]) == 0
    folder = tmp_path / "subs" / capped / models.name / "length"
    assert json.loads((folder / SUBMISSION_FILE).read_text())["protocol"]["name"] == capped
    assert validate_submission(folder).ok   # the registries alone resolve the capped name
    assert set(core.ranking(core.load_board(tmp_path / "subs"))["protocol"]) == {capped}
    assert "[capped: train pool 40, test 20]" in core.protocol_card(capped)
    assert main([*run, "--protocol", capped, "--source", "recipes"]) == 0   # the same cell, found done
    capsys.readouterr()
    assert main([*run, "--protocol", capped, "--cap-train", "30"]) == 2
    assert "is capped already: give the caps on the protocol it caps (mini-cli)" in capsys.readouterr().err
    full = PROTOCOLS.get("mini")
    assert protocol_hash(protocol_named("mini+cap-train800-test200")) == protocol_hash(full.capped(800, 200))
    assert protocol_named("mini+cap-train800-test200-len32").max_length == 32
    for name, said in ((f"mini+cap-train{10**6}-test200", "name it 'mini+cap-train1600-test200'"),
                       ("mini+cap-train08-test200", "name it 'mini+cap-train8-test200'"),
                       ("mini+cap-train1-test200", "capped too far: --cap-train 1: give at least 2 pairs"),
                       ("mini+cap-train800-test200-len8", "--cap-length 8: give at least 32 tokens"),
                       ("mnii+cap-train800-test200", "caps an unknown protocol 'mnii'. Did you mean 'mini'?"),
                       (f"mini+cap-train{'9' * 5000}-test2", "unknown protocol")):
        with pytest.raises(UnknownNameError, match=re.escape(said)):
            protocol_named(name)
    other = dataclasses.replace(protocol, name="mini-other")   # a protocol given beside the registry's (tests)
    assert protocol_named("mini-other+cap-train40-test20", {"mini-other": other}).test_size == 20
    edit_json(folder / SUBMISSION_FILE, lambda m: m["protocol"].update(name=f"{protocol.name}+cap-train41-test20"))
    assert "protocol.hash: foreign protocol hash" in errors(validate_submission(folder))
    edit_json(folder / SUBMISSION_FILE, lambda m: m["protocol"].update(name=f"{protocol.name}+cap-train040-test20"))
    assert f"caps on '{protocol.name}' name it '{capped}'" in errors(validate_submission(folder))
