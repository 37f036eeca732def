"""Real run results and submissions on the shrunken protocol, made once per test session and shared
by the submission, leaderboard and browser tests (each run takes seconds), and the helpers those
tests use to damage a submission or pack it as an upload."""
from __future__ import annotations

import gzip
import json
import shutil
import zipfile
from dataclasses import dataclass
from pathlib import Path

HOSTILE = '<img src=x onerror="window.__xss=1">|**bold**'

# method, params: a ceiling, a plain W2S student, and a two-point lam sweep for the ablation view
RUNS = (("naive", {}), ("ceiling", {}), ("anchor", {"lam": "0.5"}), ("anchor", {"lam": "2.0"}))


@dataclass(frozen=True)
class SmallRuns:
    results: Path          # bench run output: results/<protocol>/<models>/<slug>/seed0/<source>/
    submissions: Path      # bench submit output of every run
    protocols: dict        # the unregistered test protocol and model pair, for validation
    model_pairs: dict

    def copy_submissions(self, dest: Path) -> Path:
        """A private copy to tamper with."""
        shutil.copytree(self.submissions, dest)
        return dest


_made: dict[str, SmallRuns] = {}


def small_runs(tmp_path_factory, protocol, models, runs=RUNS) -> SmallRuns:
    """``runs`` (method, params), or (method, params, seeds) for a method run on other seeds than the protocol's, or
    (method, params, seeds, replicate) for a replicate of it, of ``protocol`` x ``models`` and their submissions, made
    once per run of the suite: in the folder its worker processes share ($SHIFTBENCH_SUITE_DIR, tests/conftest.py),
    by the first worker to ask, under a lock that the others wait on (bench.core.locks.made_once).
    ``tmp_path_factory``: where they go outside a suite (a test module run on its own by other means)."""
    import hashlib
    import os

    from bench.core.locks import made_once
    from bench.core.settings import RunSettings, default_cache_dir
    from bench.stages import pipeline
    from bench.submissions.pack import submit

    key = f"{protocol.name}-" + hashlib.sha256(repr((protocol, models, runs)).encode()).hexdigest()[:16]
    if key in _made:
        return _made[key]
    folder = Path(os.environ.get("SHIFTBENCH_SUITE_DIR") or tmp_path_factory.getbasetemp()) / "small-runs" / key
    results, submissions, done = folder / "sub_results", folder / "submissions", folder / "done"

    def make(_scratch: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)   # what a worker killed part way left
        results.mkdir(parents=True)
        submissions.mkdir()
        cache = default_cache_dir()   # the suite's (tests/conftest.py): a teacher another test trained is reused
        for method, params, *seeds in runs:
            replicate = seeds[1] if len(seeds) > 1 else 0
            pipeline.run(RunSettings(protocol, models, method, params, list(protocol.datasets),
                                     list(seeds[0] if seeds else protocol.seeds), results, cache,
                                     command=f"bench run --method {method}" + (f" --replicate {replicate}" if
                                                                               replicate else ""),
                                     replicate=replicate))
        # as folders of files, which the tests that damage a cell's file edit (tests/test_store.py: the store)
        submit([results], submissions, submitter="test suite", command="bench submit results",
               protocols={protocol.name: protocol}, model_pairs={models.name: models}, folders=True)
        done.write_text("made\n")   # last: what made_once checks

    made_once(folder, lambda _: done.is_file(), make, f"the small runs of {protocol.name}")
    _made[key] = SmallRuns(results, submissions, {protocol.name: protocol}, {models.name: models})
    return _made[key]


def zip_folder(folder: Path, archive: Path, extra: dict | None = None) -> Path:
    """A submission folder as an upload: ``<folder name>/...`` entries, plus ``extra`` {name: data}."""
    with zipfile.ZipFile(archive, "w") as zf:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                zf.write(path, f"{folder.name}/{path.relative_to(folder).as_posix()}")
        for name, data in (extra or {}).items():
            zf.writestr(name, data)
    return archive


def hostile_root(runs: SmallRuns, dest: Path) -> Path:
    """The submissions plus ``hostile``, a copy of naive whose method name and submitter are markup
    (checksums updated, so only the text check refuses it): it must be shown as text everywhere."""
    from bench.core.io import sha256_file

    root = runs.copy_submissions(dest)
    folder = root / "mini-test" / "tiny-test" / "hostile"
    shutil.copytree(root / "mini-test" / "tiny-test" / "naive", folder)
    meta = json.loads((folder / "submission.json").read_text())
    meta["submitter"] = HOSTILE
    for ref in meta["cells"]:
        result_file = folder / "cells" / f"seed{ref['seed']}" / ref["source"].replace("/", "__") / "result.json"
        result = json.loads(result_file.read_text())
        result["method"]["name"] = HOSTILE
        result_file.write_text(json.dumps(result))
        ref["result_sha256"] = sha256_file(result_file)
    (folder / "submission.json").write_text(json.dumps(meta))
    return root


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def reseal(folder: Path) -> None:
    """Update every checksum after an edit, as a careful forger would: only the recomputation is left."""
    from bench.core.io import sha256_file
    from bench.submissions.limits import SUBMISSION_FILE, cell_folder

    meta = json.loads((folder / SUBMISSION_FILE).read_text())
    for ref in meta["cells"]:
        cell = folder / cell_folder(ref["seed"], ref["source"])
        ref["scores_sha256"] = sha256_file(cell / "scores.csv.gz")
        edit_json(cell / "result.json", lambda r: r["scores_file"].update(sha256=ref["scores_sha256"]))
        ref["result_sha256"] = sha256_file(cell / "result.json")
    (folder / SUBMISSION_FILE).write_text(json.dumps(meta))


def first_cell(folder: Path) -> Path:
    return folder / "cells" / "seed0" / "mini__recipes"


def flip_one_student_pair(cell: Path) -> str:
    """Swap one pair's student scores so that pair's verdict changes; returns its eval set."""
    lines = gzip.decompress((cell / "scores.csv.gz").read_bytes()).decode().splitlines()
    for i, line in enumerate(lines[1:], start=1):
        fields = line.split(",")
        if float(fields[4]) != float(fields[5]):
            fields[4], fields[5] = fields[5], fields[4]
            lines[i] = ",".join(fields)
            (cell / "scores.csv.gz").write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
            return fields[0]
    raise AssertionError("no pair with distinct student scores")


def submission_copy(runs: "SmallRuns", folder: Path, slug: str = "naive") -> Path:
    """A private copy of one of the runs' submissions, for a test to damage."""
    shutil.copytree(runs.submissions / "mini-test" / "tiny-test" / slug, folder)
    return folder


def merged(tmp_path_factory, name: str, *sets) -> tuple:
    """One submissions root holding the submissions of every run set, with their protocols and model pairs:
    what ``leaderboard.core.load_board`` takes for a board of several groups."""
    root = tmp_path_factory.mktemp(name) / "submissions"
    for runs in sets:
        shutil.copytree(runs.submissions, root, dirs_exist_ok=True)
    return (root, {k: v for r in sets for k, v in r.protocols.items()},
            {k: v for r in sets for k, v in r.model_pairs.items()})


def as_folders(root: Path) -> Path:
    """Every submission under ``root`` kept in the compact store (bench.core.store) rewritten in place as cell
    folders, the layout whose files the tests that damage a cell edit (tests/test_store.py damages a store)."""
    from bench.core.store import CELLS, unpack

    for cells in sorted(Path(root).rglob(CELLS)):
        unpack(cells.parent, cells.parent)   # in place: the tables removed once every cell is written
    return root


def write_candidates(cell: Path, result: dict, ref: dict, rows: list[dict]) -> None:
    """A cell's candidate rows (dicts of text) written as its candidates file, with the BoN numbers they give put in
    its ``result`` (a dict, not yet written) and the file's sha256 in ``result`` and its submission ``ref``."""
    from bench.core.io import csv_gz_bytes, sha256_file
    from bench.core.metrics import bon_cell_metrics
    from bench.core.result_schema import CANDIDATE_COLUMNS, CANDIDATES_FILE
    from bench.core.results import bon_from_candidates, candidate_sets_from_rows

    (cell / CANDIDATES_FILE).write_bytes(csv_gz_bytes(CANDIDATE_COLUMNS, [[r[c] for c in CANDIDATE_COLUMNS]
                                                                        for r in rows]))
    bon = bon_from_candidates(candidate_sets_from_rows(rows))
    for name, e in result["eval_sets"].items():
        e.update(teacher_bon=bon[name]["teacher"], student_bon=bon[name]["student"])
    for target, values in bon_cell_metrics(bon, result["source"]).items():
        result["metrics"][target].update(values)
    result["candidates_file"]["sha256"] = ref["candidates_sha256"] = sha256_file(cell / CANDIDATES_FILE)


def forge_candidates(folder: Path, edit) -> None:
    """``edit(rows)`` on every cell's candidate rows (dicts of text, as the file has them), then the cell's BoN
    numbers, the submission's summary and its intervals recomputed, and every checksum resealed."""
    from bench.core.cells import load_cells
    from bench.core.io import read_csv_gz, sha256_file
    from bench.core.result_schema import CANDIDATES_FILE, RESULT_FILE, read_result
    from bench.submissions.limits import SUBMISSION_FILE, cell_folder
    from bench.submissions.schema import submission_intervals, submission_summary

    meta = json.loads((folder / SUBMISSION_FILE).read_text())
    results, cells = [], []
    for ref in meta["cells"]:
        cell = folder / cell_folder(ref["seed"], ref["source"])
        result = json.loads((cell / RESULT_FILE).read_text())
        write_candidates(cell, result, ref, edit(read_csv_gz(cell / CANDIDATES_FILE)))
        (cell / RESULT_FILE).write_text(json.dumps(result))
        ref["result_sha256"] = sha256_file(cell / RESULT_FILE)
        results.append(read_result(result))
        cells.append(cell)
    meta["summary"], meta["intervals"] = submission_summary(results), submission_intervals(load_cells(cells))
    (folder / SUBMISSION_FILE).write_text(json.dumps(meta))


def raise_wrong_candidates(rows: list[dict]) -> list[dict]:
    """A candidate edit: the teacher's score of every candidate that is not a pair's (2, 3, ...) and not gold-best
    raised to 50, so that the teacher picks a wrong one in every set (round four's forged best-of-N)."""
    for row in rows:
        if row["candidate"] not in ("0", "1") and float(row["grade"]) < 1:
            row["teacher"] = "50.0"
    return rows


def regrade_one_set(rows: list[dict]) -> list[dict]:
    """A candidate edit: in the first set the student gets wrong, its pick made gold-best (grade 1, the others 0)."""
    by_set: dict = {}
    for row in rows:
        by_set.setdefault((row["eval_set"], row["set_id"]), []).append(row)
    for own in by_set.values():
        pick = max(own, key=lambda row: float(row["student"]))
        if float(pick["grade"]) < 1:
            for row in own:
                row["grade"] = "1.0" if row is pick else "0.0"
            break
    return rows
