"""The compact results store (bench.core.store): what bench submit and bench migrate write, read back byte for byte,
validated as the folders it replaces are, and refused when damaged."""
from __future__ import annotations

import gzip
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from bench.core.result_schema import CANDIDATES_FILE, RESULT_FILE, SCORES_FILE
from bench.core.store import (
    CANDIDATES,
    CELLS,
    PAIRS,
    STORE_FILES,
    StoreError,
    cell_folders,
    index_cells,
    load_store,
    migrate_folder,
    unpack,
)
from bench.submissions import validate_submission


def outcome(v) -> dict:
    """What the board and bench validate read of a validation: errors, warnings, cells, per-pair correctness."""
    def cells(found):
        return [(c.method, c.seed, c.source, [(e.name, e.pair_ids, e.teacher.tolist(), e.student.tolist())
                                              for e in (*c.eval_sets, *c.bon)]) for c in found]

    return {"errors": [str(p) for p in v.errors], "warnings": [str(p) for p in v.warnings],
            "submission": v.submission, "results": [c.model_dump() for c in v.cells], "pairs": cells(v.pairs),
            "controls": cells(v.controls)}


@pytest.fixture(scope="module")
def folders(fresh_runs, tmp_path_factory) -> Path:
    """naive's submission on the fresh-seed protocol (its replicate and best-of-4 candidate sets): per-cell folders."""
    return fresh_runs.submissions / "mini-fresh" / "tiny-test" / "naive"


@pytest.fixture
def stored(folders, tmp_path) -> Path:
    """A private copy of ``folders``, migrated into a store."""
    copy = shutil.copytree(folders, tmp_path / "naive")
    migrate_folder(copy)
    return copy


def test_migrate_keeps_every_number_and_removes_the_folders(fresh_runs, folders, stored):
    assert sorted(p.name for p in stored.iterdir()) == sorted([*STORE_FILES, "submission.json"])
    assert (stored / "submission.json").read_bytes() == (folders / "submission.json").read_bytes()
    before = validate_submission(folders, fresh_runs.protocols, fresh_runs.model_pairs)
    after = validate_submission(stored, fresh_runs.protocols, fresh_runs.model_pairs)
    assert before.ok and after.ok and before.controls   # naive's replicate is read too
    assert outcome(after) == outcome(before)


def test_a_store_unpacks_into_the_files_it_was_made_from(folders, stored, tmp_path):
    assert unpack(stored, tmp_path / "back") == len(load_store(stored).paths)
    originals = sorted(p.parent.relative_to(folders) for p in folders.rglob(RESULT_FILE))
    assert sorted(p.parent.relative_to(tmp_path / "back") for p in (tmp_path / "back").rglob(RESULT_FILE)) == originals
    for rel in originals:
        assert (tmp_path / "back" / rel / RESULT_FILE).read_bytes() == (folders / rel / RESULT_FILE).read_bytes()
        for name in (SCORES_FILE, CANDIDATES_FILE):
            assert gzip.decompress((tmp_path / "back" / rel / name).read_bytes()) == \
                gzip.decompress((folders / rel / name).read_bytes())


def test_bench_submit_writes_a_store_that_validates_as_its_folders_do(fresh_runs, folders, tmp_path):
    from bench.submissions.pack import submit

    [written] = submit([fresh_runs.results / "mini-fresh" / "tiny-test" / "naive",
                        fresh_runs.results / "mini-fresh" / "tiny-test" / "naive#1"], tmp_path / "subs", "test suite",
                       command="bench submit results", protocols=fresh_runs.protocols,
                       model_pairs=fresh_runs.model_pairs)
    assert sorted(p.name for p in written.iterdir()) == sorted([*STORE_FILES, "submission.json"])
    store = validate_submission(written, fresh_runs.protocols, fresh_runs.model_pairs)
    packed = validate_submission(folders, fresh_runs.protocols, fresh_runs.model_pairs)
    assert store.ok
    assert outcome(store)["pairs"] == outcome(packed)["pairs"]
    assert outcome(store)["controls"] == outcome(packed)["controls"]
    # a store is smaller than the folders it replaces
    assert sum(p.stat().st_size for p in written.iterdir()) < sum(p.stat().st_size for p in folders.rglob("*")
                                                                 if p.is_file())


def _rewrite(path: Path, change) -> None:
    table = pq.read_table(path)
    pq.write_table(change(table), path)


def test_a_changed_score_in_a_store_is_refused(fresh_runs, stored):
    def bump(table):
        student = table.column("student_chosen").to_numpy().copy()
        student[0] = -student[0] - 50.0      # the first pair flips to wrong for the student
        return table.set_column(table.schema.get_field_index("student_chosen"), "student_chosen",
                                pa.array(student, type=pa.float32()))

    _rewrite(stored / PAIRS, bump)
    v = validate_submission(stored, fresh_runs.protocols, fresh_runs.model_pairs)
    assert not v.ok and any("is not the one cells.parquet was written with" in p.message for p in v.errors)
    # even with the tables' sha256s made to agree, the numbers do not recompute
    _reseal(stored)
    v = validate_submission(stored, fresh_runs.protocols, fresh_runs.model_pairs)
    assert not v.ok and any("per-pair scores give" in p.message for p in v.errors), v.errors


def test_a_candidate_kept_apart_from_its_pair_is_compared_with_it(fresh_runs, stored):
    # a store keeps candidates 0 and 1 of a pair's set as the pair's scores (null: implied); one kept with scores of
    # its own is checked against the pair's, as a candidates file's is, and refused where they differ
    def apart(table):
        teacher, student = (table.column(who).to_pylist() for who in ("teacher", "student"))
        row = next(k for k, (c, t) in enumerate(zip(table.column("candidate").to_pylist(), teacher)) if c == 1 and t is None)
        teacher[row], student[row] = 123.5, 0.25
        for who, values in (("teacher", teacher), ("student", student)):
            table = table.set_column(table.schema.get_field_index(who), who, pa.array(values, type=pa.float32()))
        return table

    _rewrite(stored / CANDIDATES, apart)
    _reseal(stored)
    v = validate_submission(stored, fresh_runs.protocols, fresh_runs.model_pairs)
    assert not v.ok and any("candidate 1's teacher score" in p.message and "123.5" in p.message for p in v.errors), \
        v.errors


def _reseal(folder: Path) -> None:
    """cells.parquet's record of the other tables' sha256s made to match them, as a forger would."""
    import hashlib
    import json

    table = pq.read_table(folder / CELLS)
    meta = json.loads(table.schema.metadata[b"shiftbench-store"])
    for name in (PAIRS, CANDIDATES):
        meta[name] = hashlib.sha256((folder / name).read_bytes()).hexdigest()
    pq.write_table(table.replace_schema_metadata({b"shiftbench-store": json.dumps(meta).encode()}), folder / CELLS)


def test_a_changed_result_in_a_store_is_refused(fresh_runs, stored):
    def edit(table):
        results = table.column("result_json").to_pylist()
        results[0] = results[0].replace(b'"student_acc": ', b'"student_acc": 1', 1)
        return table.set_column(table.schema.get_field_index("result_json"), "result_json",
                                pa.array(results, type=pa.binary()))

    _rewrite(stored / CELLS, edit)
    _reseal(stored)
    v = validate_submission(stored, fresh_runs.protocols, fresh_runs.model_pairs)
    assert any(p.file.endswith(RESULT_FILE) and "sha256 is not the one submission.json lists" in p.message
               for p in v.errors), v.errors


@pytest.mark.parametrize("damage, expected", [
    (lambda f: (f / CANDIDATES).unlink(), "but not candidates.parquet"),
    (lambda f: (f / PAIRS).write_bytes(b"not parquet"), "not readable Parquet"),
    (lambda f: _rewrite(f / PAIRS, lambda t: t.append_column("eval_set", t.column("eval_set"))) or _reseal(f),
     "names a column twice"),
    (lambda f: (f / "cells" / "seed0" / "mini__x").mkdir(parents=True) or
     (f / "cells" / "seed0" / "mini__x" / RESULT_FILE).write_text("{}"), "holds both a store and cell folders"),
])
def test_a_damaged_store_is_refused_with_the_fix(fresh_runs, stored, damage, expected):
    damage(stored)
    v = validate_submission(stored, fresh_runs.protocols, fresh_runs.model_pairs)
    assert any(expected in p.message for p in v.errors), v.errors
    assert all(p.fix for p in v.errors)


def test_a_store_over_the_decompressed_limit_is_not_read(fresh_runs, stored, monkeypatch):
    import bench.submissions.limits as limits

    monkeypatch.setattr(limits, "MAX_STORE_INFLATED_BYTES", 1000)
    v = validate_submission(stored, fresh_runs.protocols, fresh_runs.model_pairs)
    assert any("decompress to" in p.message and "over the limit" in p.message for p in v.errors)
    assert not v.cells


def test_results_refer_to_the_cells_a_submission_holds(fresh_runs, tmp_path):
    """extra-seeds' layout: a results folder whose cells a submission also holds keeps them once, by reference;
    bench verify and compare read them through it, and a reference that leads nowhere is an error that says so."""
    from bench.cli import main

    root = tmp_path / "tree"
    shutil.copytree(fresh_runs.submissions, root / "submissions")
    shutil.copytree(fresh_runs.results, root / "extra")
    migrate_folder(root / "submissions" / "mini-fresh" / "tiny-test" / "naive")
    index = index_cells(root / "submissions")
    kept, referred = migrate_folder(root / "extra" / "mini-fresh" / "tiny-test" / "naive", index=index)
    assert kept == 0 and referred > 0   # every cell of naive's run is in its submission
    extra = root / "extra" / "mini-fresh" / "tiny-test" / "naive"
    assert sum(p.stat().st_size for p in extra.iterdir()) < 30_000
    original = sorted(p.parent for p in (fresh_runs.results / "mini-fresh" / "tiny-test" / "naive").rglob(RESULT_FILE))
    assert [f.relative_to(extra) for f in cell_folders(extra)] == [f.relative_to(original[0].parents[1])
                                                                     for f in original]
    assert main(["verify", "--out", str(root / "extra")]) == 0
    shutil.rmtree(root / "submissions")
    with pytest.raises(StoreError, match="does not hold that cell"):
        load_store(extra).cell(0)


def test_compare_reads_a_store_as_it_reads_folders(fresh_runs, tmp_path, capsys):
    from bench.cli import main

    args = ["compare", "anchor", "naive", "--out"]
    assert main([*args, str(fresh_runs.results)]) == 0
    folders_out = capsys.readouterr().out
    copy = shutil.copytree(fresh_runs.results, tmp_path / "results")
    assert main(["migrate", str(copy)]) == 0
    assert not list(copy.rglob(RESULT_FILE))
    capsys.readouterr()
    assert main([*args, str(copy)]) == 0
    assert capsys.readouterr().out == folders_out


def test_float32_scores_are_stored_as_float32(stored):
    table = pq.read_table(stored / PAIRS)
    assert table.schema.field("student_chosen").type == pa.float32()
    store = load_store(stored)
    assert np.isfinite(store.pairs["teacher_chosen"]).all()


def _edit_rows(path: Path, change) -> None:
    """A store table rewritten with ``change(columns)`` applied to its columns as lists (ids dictionary-encoded again,
    as the store writes them)."""
    table = pq.read_table(path)
    columns = {name: table.column(name).to_pylist() for name in table.column_names}
    change(columns)
    pq.write_table(pa.table([pa.array(columns[f.name], type=pa.string()).dictionary_encode()
                             if pa.types.is_dictionary(f.type) else pa.array(columns[f.name], type=f.type)
                             for f in table.schema], names=table.column_names), path)


def _plain_text_ids(path: Path) -> None:
    """pair_id kept as plain strings, not a dictionary: the same ids, with no codes to compare."""
    table = pq.read_table(path)
    plain = table.column("pair_id").cast(pa.string())
    pq.write_table(table.set_column(table.schema.get_field_index("pair_id"), "pair_id", plain), path,
                   use_dictionary=False)


def _swap(columns: dict, a: int, b: int) -> None:
    for name, values in columns.items():
        if name != "cell":
            values[a], values[b] = values[b], values[a]


def _first_of(columns: dict, candidate: int) -> int:
    return columns["candidate"].index(candidate)


# Each damages one cell of a store the way a forger or a broken writer could; whatever it does, validation that checks
# every cell at once (bench.submissions.scores.clean_cells) must end exactly as validation cell by cell.
_DAMAGES = {
    "a pair given twice": (PAIRS, lambda c: [v.insert(1, v[1]) for v in c.values()]),
    "a score not finite": (PAIRS, lambda c: c["student_chosen"].__setitem__(2, float("nan"))),
    "a pair id not plain text": (PAIRS, lambda c: c["pair_id"].__setitem__(3, "bad\x00id")),
    "an eval set not the cell's": (PAIRS, lambda c: c["eval_set"].__setitem__(0, "elsewhere")),
    "a candidate index out of order": (CANDIDATES, lambda c: c["candidate"].__setitem__(_first_of(c, 1), 3)),
    "two candidates swapped": (CANDIDATES, lambda c: _swap(c, _first_of(c, 0), _first_of(c, 0) + 1)),
    "a candidate dropped": (CANDIDATES, lambda c: [v.pop(_first_of(c, 1)) for v in c.values()]),
    "a set id given twice": (CANDIDATES, lambda c: c["set_id"].__setitem__(
        slice(_first_of(c, 2) + 2, _first_of(c, 2) + 6), [c["set_id"][0]] * 4)),
    "a set naming two pairs": (CANDIDATES, lambda c: c["pair_id"].__setitem__(_first_of(c, 1), c["pair_id"][-1])),
    "an implied score of candidate 2": (CANDIDATES, lambda c: [c[who].__setitem__(_first_of(c, 2), None)
                                                               for who in ("teacher", "student")]),
    "an implied score of a pair not scored": (CANDIDATES, lambda c: c["pair_id"].__setitem__(
        slice(0, _first_of(c, 2) + 1), ["no-such-pair"] * (_first_of(c, 2) + 1))),
    "an eval set's rows apart": (CANDIDATES, lambda c: _swap(c, 0, next(k for k, e in enumerate(c["eval_set"])
                                                                        if e != c["eval_set"][0]))),
    "a grade not finite": (CANDIDATES, lambda c: c["grade"].__setitem__(5, float("inf"))),
    "a set id missing": (CANDIDATES, lambda c: c["set_id"].__setitem__(4, None)),
}


@pytest.mark.parametrize("damage", [*_DAMAGES, "pair ids kept as plain text"])
def test_every_cell_checked_at_once_ends_as_checked_cell_by_cell(fresh_runs, stored, damage, monkeypatch):
    import bench.submissions.scores as scores

    intact = scores.clean_cells(load_store(stored))
    assert intact is not None and intact.scores.all() and intact.candidates.all()   # a clean store: every cell at once
    if damage in _DAMAGES:
        table, change = _DAMAGES[damage]
        _edit_rows(stored / table, change)
    else:
        _plain_text_ids(stored / PAIRS)
    _reseal(stored)
    at_once = validate_submission(stored, fresh_runs.protocols, fresh_runs.model_pairs)
    monkeypatch.setattr(scores, "clean_cells", lambda store: None)
    one_by_one = validate_submission(stored, fresh_runs.protocols, fresh_runs.model_pairs)
    assert outcome(at_once) == outcome(one_by_one)
    # every damage is refused; ids kept as plain text are the same store, read cell by cell
    assert one_by_one.ok == (damage not in _DAMAGES)


def test_a_dictionary_naming_a_word_twice_is_read_cell_by_cell(stored):
    # pyarrow writes each dictionary afresh, but another writer may not: a word under two codes would be two ids to
    # a check on codes (a pair given twice not seen), so such a store is checked cell by cell, on the words
    import dataclasses

    from bench.submissions.scores import clean_cells

    store = load_store(stored)
    codes, words = store.codes["pairs.pair_id"]
    twice = dataclasses.replace(store, codes={**store.codes, "pairs.pair_id": (codes, np.append(words[:-1], [words[0], None]))})
    assert clean_cells(store) is not None and clean_cells(twice) is None


def test_a_store_too_large_for_its_keys_is_read_cell_by_cell(stored, monkeypatch):
    # cells x eval sets x ids past an int64 would wrap the keys, and a candidate could find another cell's pair
    import dataclasses

    import bench.submissions.scores as scores

    store = load_store(stored)
    most = max(len(store.codes[f"{table}.eval_set"][1]) * len(store.codes[f"{table}.{ids}"][1])
               for table, ids in (("pairs", "pair_id"), ("candidates", "set_id"))) * len(store.paths)
    monkeypatch.setattr(scores, "_KEYS", most)
    assert scores.clean_cells(dataclasses.replace(store)) is None
    monkeypatch.setattr(scores, "_KEYS", most + 1)
    assert scores.clean_cells(dataclasses.replace(store)) is not None


def test_a_dictionary_is_decoded_once_per_distinct_dictionary():
    """Stores of one protocol hold the same dictionaries of ids: each distinct one (its length, offset and buffers) is
    decoded once, read-only, and another never takes its words."""
    import pyarrow as pa

    from bench.core.store import _words

    first = _words(pa.array(["x", "y", "x"]).dictionary_encode().dictionary)
    assert list(first) == ["x", "y", None] and not first.flags.writeable
    assert _words(pa.array(["x", "y"]).dictionary_encode().dictionary) is first
    assert list(_words(pa.array(["x", "z"]).dictionary_encode().dictionary)) == ["x", "z", None]
    assert list(_words(pa.array(["q", "x", "y"])[1:])) == ["x", "y", None]   # an offset into other buffers
    assert list(_words(pa.array(["x", None]))) == ["x", None, None]
