"""The validation record (bench.submissions.record): each submission's outcome stored by its files' checksums,
read back by the board and by `bench validate` only while the files, the validating code and the registries are
the same; a changed file is validated in full, --no-cache validates everything again; and the suite validates
the committed submissions once per session through it (conftest.py's ``committed_validations``)."""
import dataclasses
import hashlib
import json
import shutil
from pathlib import Path

import pytest
from small_runs import flip_one_student_pair, hostile_root

from bench.cli import main
from bench.submissions import record
from bench.submissions.facts import cell_facts

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "submissions" / "mini" / "tiny"
SLUGS = ("ceiling", "length")   # two small reference submissions: 1-2 CPU-s to validate both


def outcome(v):
    return ([str(p) for p in v.errors], [str(p) for p in v.warnings], v.submission, [c.model_dump() for c in v.cells],
            [(c.method, c.seed, c.source, [(e.name, e.role, e.pair_ids, e.teacher.tolist(), e.student.tolist())
                                           for e in c.eval_sets]) for c in v.pairs])


@pytest.fixture
def validated(monkeypatch):
    """The folders record.validate_submission validates in full, as they are validated."""
    calls, real = [], record.validate_submission
    monkeypatch.setattr(record, "validate_submission", lambda folder, *a, **k: calls.append(Path(folder)) or real(folder, *a, **k))
    return calls


def test_validation_is_cached_by_the_files_checksums(runs, tmp_path, validated):
    root = hostile_root(runs, tmp_path / "subs")
    store = tmp_path / "cache"
    first = record.validate_tree(root, runs.protocols, runs.model_pairs, store)
    validated.clear()
    again = record.validate_tree(root, runs.protocols, runs.model_pairs, store)
    assert validated == [] and [outcome(v) for v in again] == [outcome(v) for v in first]
    # one changed file: only its submission is validated again, and the change is seen
    naive = root / "mini-test" / "tiny-test" / "naive"
    eval_set = flip_one_student_pair(naive / "cells" / "seed0" / "mini__recipes")
    changed = {v.key: v for v in record.validate_tree(root, runs.protocols, runs.model_pairs, store)}
    assert validated == [naive]
    assert f"eval_sets.{eval_set}.student_acc" in " ".join(map(str, changed["mini-test/tiny-test/naive"].errors))
    # a damaged entry is ignored and written again
    entry = record.entry_path(store, root / "mini-test" / "tiny-test" / "ceiling")
    entry.write_text('{"format": 1, "key": "')
    validated.clear()
    rebuilt = {v.key: v for v in record.validate_tree(root, runs.protocols, runs.model_pairs, store)}
    assert validated == [root / "mini-test" / "tiny-test" / "ceiling"] and rebuilt["mini-test/tiny-test/ceiling"].ok
    assert json.loads(entry.read_text())["format"] == record.FORMAT
    # per-pair arrays that are not the summary's: the summary is used, the cells come from a full validation
    record.arrays_path(entry).write_bytes(b"not an npz")
    validated.clear()
    damaged = {v.key: v for v in record.validate_tree(root, runs.protocols, runs.model_pairs, store)}
    assert validated == []   # the summary alone: the arrays are read only when the cells are
    assert outcome(damaged["mini-test/tiny-test/ceiling"]) == outcome(rebuilt["mini-test/tiny-test/ceiling"])
    assert validated == [root / "mini-test" / "tiny-test" / "ceiling"]
    # results that are not the summary's: likewise, and the cells' facts (the board's rows) come from the summary
    assert not entry.exists()   # removed once the arrays were found damaged: the next reader writes it anew
    record.validate_tree(root, runs.protocols, runs.model_pairs, store)
    assert json.loads(entry.read_text())["format"] == record.FORMAT
    record.results_path(entry).write_bytes(b"[]")
    validated.clear()
    damaged = {v.key: v for v in record.validate_tree(root, runs.protocols, runs.model_pairs, store)}
    rows = cell_facts(damaged["mini-test/tiny-test/ceiling"].cells, "rows")
    assert validated == [] and json.dumps(rows) == json.dumps(cell_facts(rebuilt["mini-test/tiny-test/ceiling"].cells, "rows"))
    assert outcome(damaged["mini-test/tiny-test/ceiling"]) == outcome(rebuilt["mini-test/tiny-test/ceiling"])
    assert validated == [root / "mini-test" / "tiny-test" / "ceiling"]
    # another registered protocol spec is another key: everything is validated again
    other = {name: dataclasses.replace(spec, version="9") for name, spec in runs.protocols.items()}
    validated.clear()
    record.validate_tree(root, other, runs.model_pairs, store)
    assert len(validated) == 5
    # the entries of a folder that is gone are removed
    hostile = record.entry_path(store, root / "mini-test" / "tiny-test" / "hostile")
    assert record.arrays_path(hostile).is_file()
    shutil.rmtree(root / "mini-test" / "tiny-test" / "hostile")
    record.validate_tree(root, runs.protocols, runs.model_pairs, store)
    assert not hostile.exists() and not record.arrays_path(hostile).exists() and not record.results_path(hostile).exists()


@pytest.mark.parametrize("stamps_move", [True, False], ids=["stamps-move", "stamps-stay"])
def test_a_submission_changed_while_it_is_validated_is_not_recorded(runs, tmp_path, monkeypatch, stamps_move):
    """Its outcome is of files it no longer holds. Found by the files' stamps, and where a file system would leave a
    stamp as it was (a write within its tick, here made by keeping the first stamps), by their content."""
    root = hostile_root(runs, tmp_path / "subs")
    folder = root / "mini-test" / "tiny-test" / "ceiling"
    real, stamps = record.validate_submission, record._stamps

    def changing(path, *args, **kwargs):
        found = real(path, *args, **kwargs)
        if Path(path) == folder:
            flip_one_student_pair(folder / "cells" / "seed0" / "mini__recipes")
        return found

    monkeypatch.setattr(record, "validate_submission", changing)
    if not stamps_move:   # a file system of ticks coarser than the whole test, whose stamps never move
        monkeypatch.setattr(record, "RACY_NS", 10**18)
        kept, files = {}, record._files

        def first_files(f):
            found = files(f)
            kept.setdefault(f, found[1])
            return found

        monkeypatch.setattr(record, "_files", first_files)
        monkeypatch.setattr(record, "_stamps", lambda f: kept.setdefault(f, stamps(f)))
    record.validate_tree(root, runs.protocols, runs.model_pairs, tmp_path / "cache")
    assert not record.entry_path(tmp_path / "cache", folder).exists()
    assert record.entry_path(tmp_path / "cache", root / "mini-test" / "tiny-test" / "naive").exists()


def test_results_too_deep_to_read_back_or_a_file_gone_while_hashed_cost_a_validation_never_an_error(runs, tmp_path,
                                                                                                   monkeypatch):
    root = hostile_root(runs, tmp_path / "subs")
    folder, store = root / "mini-test" / "tiny-test" / "ceiling", tmp_path / "cache"
    [first] = [v for v in record.validate_tree(root, runs.protocols, runs.model_pairs, store) if v.folder == folder]
    expected = [c.model_dump() for c in first.cells]
    entry = record.entry_path(store, folder)
    deep = b"[" + b"[" * 100_000 + b"]" * 100_000 + b"]"   # deeper than Python's parser follows
    record.results_path(entry).write_bytes(deep)
    summary = json.loads(entry.read_text())
    summary["results"] = hashlib.sha256(deep).hexdigest()
    entry.write_text(json.dumps(summary))
    [again] = [v for v in record.validate_tree(root, runs.protocols, runs.model_pairs, store) if v.folder == folder]
    assert [c.model_dump() for c in again.cells] == expected   # validated again, not a RecursionError
    real = record.sha256_file

    def gone(path):   # a file removed between the walk and its hashing
        if path.name == "submission.json" and path.parent == folder:
            raise FileNotFoundError(path)
        return real(path)

    monkeypatch.setattr(record, "sha256_file", gone)
    entry.unlink(missing_ok=True)
    found = {v.folder: v for v in record.validate_tree(root, runs.protocols, runs.model_pairs, store)}
    assert [c.model_dump() for c in found[folder].cells] == expected and not entry.exists()


def test_an_entry_reads_back_every_per_pair_value(committed_validations, tmp_path):
    """The per-pair arrays (correctness in halves, BoN credits as float64, ids through one table) give back every
    cell exactly, BoN sets and naive's replicates (controls) included; their number is known before they are read.
    The results read back as they were (from the JSON each was validated from), and the facts kept of them are what
    the results give."""
    from bench.core.report import cell_row_dicts
    from bench.submissions import validate_submission
    from bench.submissions.facts import label_keys, teacher_keys

    chosen = [v for v in committed_validations if v.controls] + [committed_validations[0]]
    assert any(c.bon for v in chosen for c in v.pairs) and any(v.controls for v in chosen)
    assert all(v.read == [] for v in committed_validations)   # an outcome does not carry its results' bytes
    for v in chosen:
        v = validate_submission(v.folder)   # fresh: it holds the bytes each result was read from
        summary, results, arrays = record._to_entry(v, "key", None)
        assert results == b"[" + b",".join(v.read) + b"]" and len(v.read) == len(v.cells)
        entry = tmp_path / "entry.json"
        record.arrays_path(entry).write_bytes(arrays)
        record.results_path(entry).write_bytes(results)
        again = record._from_entry(json.loads(json.dumps(summary)), v.folder, entry, lambda: pytest.fail("revalidated"))
        assert len(again.cells) == len(v.cells)
        assert json.dumps(cell_facts(again.cells, "rows")) == json.dumps([cell_row_dicts([c]) for c in v.cells])   # NaN too
        assert [[(tuple(k), value) for k, value in f] for f in cell_facts(again.cells, "teacher")] == \
            [teacher_keys(c) for c in v.cells]
        assert [[(tuple(k), value) for k, value in f] for f in cell_facts(again.cells, "labels")] == \
            [label_keys(c) for c in v.cells]
        assert [c.model_dump() for c in again.cells] == [c.model_dump() for c in v.cells]
        assert len(again.pairs) == len(v.pairs) and len(again.controls) == len(v.controls)
        for mine, theirs in ((again.pairs, v.pairs), (again.controls, v.controls)):
            assert [record._cell_meta(c) for c in mine] == [record._cell_meta(c) for c in theirs]
            for a, b in zip(mine, theirs):
                for x, y in zip((*a.eval_sets, *a.bon), (*b.eval_sets, *b.bon), strict=True):
                    assert x.pair_ids == y.pair_ids
                    assert x.teacher.tobytes() == y.teacher.tobytes() and x.student.tobytes() == y.student.tobytes()


def test_a_cell_too_broken_to_tabulate_has_no_rows_and_its_submission_stays_off_the_board(committed_validations):
    """A result whose metrics name a target it has no eval set for cannot give the board's rows: its facts say so
    (rows None) instead of failing the validation that records them, and the board leaves the submission off."""
    from bench.submissions.facts import facts_of
    from leaderboard.board import Board

    v = committed_validations[0]
    cell = v.cells[0]
    broken = cell.model_copy(update={"metrics": {**cell.metrics, "nowhere": next(iter(cell.metrics.values()))}})
    facts = facts_of(broken, None)
    assert facts["rows"] is None and facts["teacher"] == facts_of(cell, None)["teacher"]
    copy = dataclasses.replace(v, cells=[broken, *v.cells[1:]])
    board = Board(v.folder, [copy, v])
    assert len(board.entries) == 1 and board.entries[0] is v


def test_the_cache_key_holds_every_module_validation_runs():
    """VALIDATION_CODE lists the modules whose source decides a validation outcome; a module they import
    from bench that is not listed would change outcomes without changing the key."""
    import ast

    listed = set(record.VALIDATION_CODE)
    assert "bench.submissions.record" in listed   # how an outcome is stored and read back
    for module in listed - {"bench.core.protocols", "bench.submissions.record"}:   # the protocols are keyed by their hashes
        tree = ast.parse((ROOT / Path(*module.split("."))).with_suffix(".py").read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bench"):
                names = [f"{node.module}.{a.name}" for a in node.names]
                found = [n for n in names if (ROOT / Path(*n.split("."))).with_suffix(".py").is_file()] or [node.module]
                assert set(found) <= listed | {"bench.submissions"}, (module, found)


def test_the_cached_tree_checks_what_bench_validate_checks(runs, tmp_path):
    """record.validate_tree runs tree.validate_tree's checks across submissions on recorded outcomes;
    both must find the same problems (a duplicate, a misplaced folder, the hostile text)."""
    from bench.submissions.tree import validate_tree

    root = hostile_root(runs, tmp_path / "subs")
    shutil.copytree(root / "mini-test" / "tiny-test" / "naive", root / "mini-test" / "tiny-test" / "naive-again")
    for _ in range(2):   # from an empty record, then from the record
        cached = record.validate_tree(root, runs.protocols, runs.model_pairs, tmp_path / "cache")
        plain = validate_tree(root, runs.protocols, runs.model_pairs)
        assert [(v.key, [str(p) for p in v.errors], [str(p) for p in v.warnings]) for v in cached] == \
            [(v.key, [str(p) for p in v.errors], [str(p) for p in v.warnings]) for v in plain]
    assert any("duplicates" in str(p) for v in cached for p in v.errors)


# --- bench validate ---------------------------------------------------------------------------------------------
def change_one_byte(folder: Path) -> str:
    """The first digit of the summary's student_id in ``folder``'s submission.json changed (a number the cells
    must give); returns the line of the error it makes."""
    path = folder / "submission.json"
    data = bytearray(path.read_bytes())
    at = data.index(b'"student_id": ') + len(b'"student_id": ')
    data[at] = ord("1") if data[at] != ord("1") else ord("2")
    path.write_bytes(bytes(data))
    return "     error: submission.json: summary.student_id: is "


def validate(capsys, *args) -> tuple[int, list[str], str]:
    """bench validate ARGS: its exit code, its lines per submission, and its last line (the count)."""
    code = main(["validate", *map(str, args)])
    *lines, count = capsys.readouterr().out.splitlines()
    return code, lines, count


def test_bench_validate_reads_unchanged_submissions_from_the_record(tmp_path, monkeypatch, capsys, validated):
    """The second bench validate reads both submissions from the record and prints what the first did; a changed
    byte gets its submission validated in full (its error found), the other still read; --no-cache validates both."""
    if not all((COMMITTED / slug).is_dir() for slug in SLUGS):
        pytest.skip("no reference submissions")
    monkeypatch.setenv("SHIFTBENCH_CACHE", str(tmp_path / "cache"))   # this test's own record: it counts what is read
    root = tmp_path / "subs"
    for slug in SLUGS:
        shutil.copytree(COMMITTED / slug, root / "mini" / "tiny" / slug)
    folders = [root / "mini" / "tiny" / slug for slug in SLUGS]

    code, first, count = validate(capsys, root)
    assert code == 0 and validated == folders
    assert count.startswith("2 of 2 submissions pass: complete, on the registered protocol, and every number ")
    assert count.endswith("(0 from the validation record, unchanged since validated)")
    assert list((tmp_path / "cache" / "leaderboard").glob("*.json")) != []

    validated.clear()
    code, again, count = validate(capsys, root)
    assert code == 0 and validated == [] and again == first
    assert count.endswith("(2 from the validation record, unchanged since validated; --no-cache validates them again)")

    ceiling = folders[0]
    error = change_one_byte(ceiling)
    code, changed, count = validate(capsys, root)
    assert code == 1 and validated == [ceiling]
    assert f"FAIL {ceiling}" in changed and any(line.startswith(error) and "but the cells give" in line for line in changed)
    assert count.startswith("1 of 2 submissions pass") and "(1 from the validation record" in count

    validated.clear()
    code, fresh, count = validate(capsys, "--no-cache", root)
    assert code == 1 and validated == folders and fresh == changed
    assert count.startswith("1 of 2 submissions pass") and count.endswith("(all validated in full: --no-cache)")


def test_the_committed_submissions_are_validated_once_per_session(committed_validations, capsys, validated):
    """conftest.py's committed_validations fills the session's record ($SHIFTBENCH_CACHE/leaderboard, under the
    session's own cache folder), so bench validate on submissions/ reads every one from it: none is validated again."""
    from bench.core.settings import default_cache_dir

    assert default_cache_dir() != Path.home() / ".cache" / "shiftbench"   # the suite never writes the user's cache
    code, lines, count = validate(capsys, ROOT / "submissions")
    n = len(committed_validations)
    assert code == 0 and validated == [] and sum(line.startswith("ok ") for line in lines) == n
    assert count.startswith(f"{n} of {n} submissions pass") and f"({n} from the validation record" in count


# --- the board's decisions, kept beside the record (leaderboard.decided) -------------------------------------------
def test_an_unchanged_groups_decisions_are_read_back_exactly_and_a_change_recomputes_them(runs, tmp_path, monkeypatch):
    """The second board reads its group's decisions from the record (nothing bootstrapped), value for value with
    their types (the same repr); a changed submission changes the key, so they are computed again."""
    import leaderboard.board as board_module
    from leaderboard import core

    root = runs.copy_submissions(tmp_path / "subs")
    cache = tmp_path / "cache"
    first = core.load_board(root, runs.protocols, runs.model_pairs, cache)
    group = first.groups[0]
    computed = first.decisions(*group)
    assert computed and any("deciding" in row for row in computed.values())
    assert len(list((cache / "decisions").glob("*.json"))) == 1

    calls, real = [], board_module._decided
    monkeypatch.setattr(board_module, "_decided", lambda *a, **k: calls.append(1) or real(*a, **k))
    again = core.load_board(root, runs.protocols, runs.model_pairs, cache)
    assert repr(again.decisions(*group)) == repr(computed) and calls == []
    assert core.ranking(again, protocol=group[0], models=group[1]).to_csv() == \
        core.ranking(first, protocol=group[0], models=group[1]).to_csv()
    import bench.core.runs  # the rule's setting a benchmark may change is in the key: no decision of another rule
    monkeypatch.setattr(bench.core.runs, "CONTROL_FROM", 3)
    core.load_board(root, runs.protocols, runs.model_pairs, cache).decisions(*group)
    assert calls == [1]
    monkeypatch.setattr(bench.core.runs, "CONTROL_FROM", None)
    calls.clear()

    flip_one_student_pair(root / "mini-test" / "tiny-test" / "naive" / "cells" / "seed0" / "mini__recipes")
    changed = core.load_board(root, runs.protocols, runs.model_pairs, cache)
    changed.decisions(*group)
    assert calls   # naive no longer validates: another group, computed afresh


def test_the_decisions_record_keeps_every_type():
    import numpy as np

    from bench.core.compare import Decision
    from leaderboard import decided

    value = {"a": (np.float64(1.5), np.int64(3), np.bool_(True), float("nan"), None, "x", [1, 2.0]),
             "deciding": {"nts": Decision(-1.0, 2.0, False, 0.5, 3, runs=18, controls=2, from_seed=3)}}
    back = decided.decode(json.loads(json.dumps(decided.encode(value))))
    assert repr(back) == repr(value)
    with pytest.raises(TypeError):
        decided.encode({"a": object()})
