"""Results in two layers: a per-cell JSON of numbers and, beside it, every pair's scores.

A cell is one (method, params, model pair, protocol, seed, source): one student training, scored
on the source's test split and on every target's. ``CellResult`` is the schema of ``result.json``:
every field is declared here once, with what it holds; the pipeline writes it, and ``bench report``,
``bench verify``, ``bench submit``, ``bench validate`` and the leaderboard read it through it.

Any number in ``result.json`` can be recomputed from ``scores.csv.gz`` and, on a protocol with
best-of-N candidate sets, ``candidates.csv.gz`` (every candidate's scores, docs/best-of-n.md);
``recompute`` is the one function that does it (``bench verify`` and ``bench validate`` both call it).
A non-finite score is an error there, as it is in the pipeline. The score files are written first and
``result.json`` last (it records their sha256s), so a cell is complete exactly when its result.json
loads and the checksums match.
"""
from __future__ import annotations

import csv
import json
import math
import re
import zlib
from pathlib import Path
from typing import Callable, Iterable, NamedTuple

from pydantic import ValidationError

from bench.core.columns import SetScores, accuracies_from_scores, candidate_sets_from_rows  # noqa: F401 (re-exported)
from bench.core.io import atomic_write_bytes, atomic_write_json, csv_gz_bytes, read_csv_gz, sha256_file
from bench.core.metrics import bon_accuracy, bon_cell_metrics, cell_metrics
from bench.core.result_schema import (
    CANDIDATE_COLUMNS,
    CANDIDATES_FILE,
    METHOD_SOURCE_FILE,
    RESULT_FILE,
    SCHEMA_VERSION,
    SCORE_COLUMNS,
    SCORES_FILE,
    CellResult,
    ScoresFile,
    read_result,
)
from bench.core.specs import stable_hash

BASELINE = "naive"   # the method every other is compared against: W2S training on the teacher's labels, nothing more
CEILING = "ceiling"  # the reference above it: the same student on gold labels, ranked with no one


def params_slug(method: str, params: dict) -> str:
    """A readable folder name for a method and its params, e.g. ``anchor_lam=1.0_layers=last``."""
    slug = "_".join([method, *(f"{k}={v}" for k, v in sorted(params.items()))])
    slug = re.sub(r"[^A-Za-z0-9.=_+-]", "-", slug)
    return slug if len(slug) <= 96 else f"{slug[:80]}_{stable_hash(params, 12)}"


def replicate_slug(slug: str, replicate: int) -> str:
    """A run's name: the method's slug, with ``#r`` for replicate r > 0 (``naive#1``)."""
    return f"{slug}#{replicate}" if replicate else slug


def replicate_of(name: str) -> int:
    """The replicate r of a run's name that ``replicate_slug`` made (``naive#1`` -> 1), 0 for a method's own run."""
    base, mark, r = name.rpartition("#")
    return int(r) if mark and base and r.isdigit() else 0


def replicates_of(names: Iterable[str], slug: str) -> list[str]:
    """The names among ``names`` that ``replicate_slug`` gives ``slug``'s replicates r > 0, in order of r."""
    found = {n for n in names if n.startswith(f"{slug}#") and n[len(slug) + 1:].isdigit() and int(n[len(slug) + 1:])}
    return sorted(found, key=lambda n: int(n[len(slug) + 1:]))


def cell_dir(out: Path, protocol: str, models: str, slug: str, seed: int, source: str) -> Path:
    return Path(out) / protocol / models / slug / f"seed{seed}" / source.replace("/", "__")


def write_cell(folder: Path, result: CellResult, score_rows: list[tuple], method_source: bytes | None = None,
               candidate_rows: list[tuple] | None = None) -> CellResult:
    """The cell's files, result.json last (a cell is finished once it is there): the method's source
    when given (METHOD_SOURCE_FILE), the per-pair scores, the per-candidate scores when given
    (CANDIDATES_FILE), then the result with the score files' sha256s."""
    if method_source is not None:
        atomic_write_bytes(folder / METHOD_SOURCE_FILE, method_source)
    files = {"scores_file": (SCORES_FILE, SCORE_COLUMNS, score_rows)}
    if candidate_rows is not None:
        files["candidates_file"] = (CANDIDATES_FILE, CANDIDATE_COLUMNS, candidate_rows)
    written = {}
    for key, (name, columns, rows) in files.items():
        atomic_write_bytes(folder / name, csv_gz_bytes(columns, rows))
        written[key] = ScoresFile(name=name, sha256=sha256_file(folder / name), columns=list(columns))
    result = result.model_copy(update=written)
    atomic_write_json(folder / RESULT_FILE, result.to_json())
    return result


class CellFiles(NamedTuple):
    """A finished cell as read from its folder: the result and the rows of its score files."""

    result: CellResult
    rows: list[dict[str, str]]                    # SCORES_FILE's
    candidates: list[dict[str, str]] | None       # CANDIDATES_FILE's; None on a protocol without candidate sets


def _recorded(folder: Path, record: ScoresFile | None, name: str) -> list[dict[str, str]] | None:
    """The rows of a score file the result records, if it is there and its sha256 is the recorded one."""
    path = Path(folder) / name
    if record is None or not path.is_file() or sha256_file(path) != record.sha256:
        return None
    return read_csv_gz(path)


class _Stored(NamedTuple):
    """A cell of a store (bench.core.store), read as its folder's files would be."""

    result: bytes
    rows: list[dict]
    candidates: list[dict] | None
    sha256: tuple[str | None, str | None, str | None]   # the result's, scores' and candidates' files had


def _stored(folder: Path) -> _Stored | None:
    """The cell whose folder was ``folder``, from the store above it; None where ``folder`` is a cell folder on disk
    or no store holds it. A store that cannot be read raises StoreError (a ValueError), naming the fix."""
    from bench.core.store import stored_cell

    folder = Path(folder)
    cell = None if (folder / RESULT_FILE).exists() else stored_cell(folder)
    if cell is None:
        return None
    return _Stored(cell.result, [dict(zip(SCORE_COLUMNS, r)) for r in cell.scores],
                   None if cell.candidates is None else [dict(zip(CANDIDATE_COLUMNS, r)) for r in cell.candidates],
                   cell.sha256)


def read_cell_files(folder: Path, keep: Callable[[CellResult], bool] | None = None) -> CellFiles | None:
    """The cell's result and score rows if it is finished: its result.json loads, its score files are the
    ones it records, and every number recomputes from those scores (an edited result.json is not a
    finished cell). Else None. ``keep``: None too for a result it rejects, before any score file is read
    (a comparison of two runs need not read and recompute a whole folder's cells)."""
    stored = _stored(folder)
    try:
        data = json.loads(stored.result if stored else (Path(folder) / RESULT_FILE).read_text())
        if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
            return None
        result = read_result(data)
        if keep is not None and not keep(result):
            return None
        if stored:   # a store keeps the sha256s its files had: they must still be the ones result.json records
            if stored.sha256[1:] != tuple(r and r.sha256 for r in (result.scores_file, result.candidates_file)):
                return None
            rows, candidates = stored.rows, stored.candidates
        else:
            rows = _recorded(folder, result.scores_file, SCORES_FILE)
            candidates = _recorded(folder, result.candidates_file, CANDIDATES_FILE) if result.candidates_file else None
        if rows is None or (result.candidates_file is not None and candidates is None):
            return None
    except (OSError, EOFError, ValueError, ValidationError, zlib.error, csv.Error):
        return None
    return None if recompute(result, rows, candidates) else CellFiles(result, rows, candidates)


def read_cell(folder: Path) -> tuple[CellResult, list[dict[str, str]]] | None:
    """The cell's result and its per-pair score rows if it is finished (``read_cell_files``), else None."""
    found = read_cell_files(folder)
    return None if found is None else (found.result, found.rows)


def load_cell(folder: Path) -> CellResult | None:
    """The cell's result if it is finished (``read_cell``), else None."""
    found = read_cell_files(folder)
    return None if found is None else found.result


# --- the one recompute ---------------------------------------------------------------------------------
def bon_from_candidates(sets: dict[str, list[SetScores]]) -> dict[str, dict[str, float]]:
    """``{eval_set: {"teacher": bon, "student": bon, "n_sets": n}}``: BoN accuracies (bench.core.metrics.bon_accuracy),
    of an eval set's sets one by one (SetScores) or laid end to end (bench.core.columns.CandidateSets)."""
    from bench.core.columns import CandidateSets
    from bench.core.metrics import bon_accuracy_of_credits

    return {eval_set: {"teacher": bon_accuracy_of_credits(own.credits("teacher")),
                       "student": bon_accuracy_of_credits(own.credits("student")),
                       "n_sets": len(own)} if isinstance(own, CandidateSets) else
            {"teacher": bon_accuracy([s.teacher for s in own], [s.grades for s in own]),
             "student": bon_accuracy([s.student for s in own], [s.grades for s in own]),
             "n_sets": len(own)}
            for eval_set, own in sets.items()}


def _candidates_match_pairs(sets: dict[str, list[SetScores]], rows: list[dict[str, str]]) -> list[tuple[str, str]]:
    """A set built from an eval pair scores its candidates 0 and 1 as the pair's chosen and rejected
    (bench.core.candidates): their four scores in CANDIDATES_FILE must be the pair's in SCORES_FILE, float for float.
    Checked on whole columns (bench.core.columns.sets_match_pairs) when the sets are laid end to end and the rows
    read as columns; where that finds a problem, or for sets one by one (SetScores), the loop below goes set by
    set and words each problem, quoting a score as SCORES_FILE writes it."""
    from bench.core.columns import CandidateSets, ScoreColumns, sets_match_pairs

    if isinstance(rows, ScoreColumns):
        read = rows
    else:
        rows = list(rows)
        read = ScoreColumns.read(rows)
    if read is not None:
        if all(isinstance(own, CandidateSets) for own in sets.values()) and sets_match_pairs(sets, read):
            return []
        rows = read.as_rows()
    sets = {eval_set: [SetScores(*one) for one in own.one_by_one()] if isinstance(own, CandidateSets) else own
            for eval_set, own in sets.items()}
    pairs = {(row["eval_set"], row["pair_id"]): row for row in rows}
    problems = []
    for eval_set, own in sets.items():
        for one in own:
            if not one.pair_id:
                continue
            pair = pairs.get((eval_set, one.pair_id))
            field = f"candidates.{eval_set}.{one.set_id}"
            if pair is None:
                problems.append((field, f"set {one.set_id!r} of {eval_set} in {CANDIDATES_FILE} names pair "
                                        f"{one.pair_id!r}, which {SCORES_FILE} does not score"))
                continue
            for who in ("teacher", "student"):
                for k, side in enumerate(("chosen", "rejected")):
                    if getattr(one, who)[k] != float(pair[f"{who}_{side}"]):
                        problems.append((field, f"set {one.set_id!r} of {eval_set}: candidate {k}'s {who} score in "
                                                f"{CANDIDATES_FILE} is {getattr(one, who)[k]}, but it is pair "
                                                f"{one.pair_id!r}'s {side} response, which {SCORES_FILE} scores "
                                                f"{pair[f'{who}_{side}']}"))
    return problems


def recompute_bon(result: CellResult, rows: list[dict[str, str]], candidates: Iterable[dict[str, str]] | None
                  ) -> list[tuple[str, str]]:
    """The BoN numbers of a cell against its per-candidate score rows (None: the cell has none), as ``recompute``."""
    declared = result.candidates_file is not None or any(e.n_sets is not None for e in result.eval_sets.values())
    if candidates is None:
        return [("candidates_file", f"the cell records best-of-N numbers but its per-candidate scores "
                                    f"({CANDIDATES_FILE}) are not given")] if declared else []
    if not declared:
        return [("candidates_file", f"per-candidate scores ({CANDIDATES_FILE}) are given but the cell records no "
                                    "best-of-N numbers")]
    from bench.core.columns import CandidateColumns, matched_by_construction, well_formed_sets

    if isinstance(candidates, CandidateColumns):
        read = candidates
    else:
        candidates = list(candidates)
        read = CandidateColumns.read(candidates)
    sets = None if read is None else well_formed_sets(read)   # laid end to end, when the rows are well-formed
    if sets is None:
        try:
            sets = candidate_sets_from_rows(candidates)   # reads row by row, and says what is wrong
        except ValueError as error:
            return [("candidates", str(error))]
    # a store's candidates 0 and 1 of a pair's set are that pair's scores, where it keeps them so (implied)
    built = read is not None and sets is well_formed_sets(read) and matched_by_construction(read, rows)
    problems = [] if built else _candidates_match_pairs(sets, rows)
    got = bon_from_candidates(sets)
    for name, stored in result.eval_sets.items():
        if name not in got:
            problems.append((f"eval_sets.{name}", f"has no candidate sets in {CANDIDATES_FILE}"))
            continue
        for who in ("teacher", "student"):
            value = getattr(stored, f"{who}_bon")
            if value is None or not math.isclose(value, got[name][who], abs_tol=1e-9):
                problems.append((f"eval_sets.{name}.{who}_bon", f"is {value} but the candidate scores in "
                                                                f"{CANDIDATES_FILE} give {got[name][who]} ({who} BoN accuracy)"))
        if stored.n_sets != got[name]["n_sets"]:
            problems.append((f"eval_sets.{name}.n_sets", f"is {stored.n_sets} but {CANDIDATES_FILE} holds "
                                                         f"{got[name]['n_sets']} sets"))
    for name in sorted(set(got) - set(result.eval_sets)):
        problems.append((f"eval_sets.{name}", f"has candidate sets in {CANDIDATES_FILE} but is not one of the cell's "
                                              "eval sets"))
    if result.source in got:
        problems += _metric_problems(result, bon_cell_metrics(got, result.source),
                                     f"the candidate scores in {CANDIDATES_FILE}")
    return problems


def _metric_problems(result: CellResult, recomputed: dict[str, dict[str, float]], given_by: str
                     ) -> list[tuple[str, str]]:
    """``(field, problem)`` for each per-target metric of ``result`` that is not the ``recomputed`` one (to 1e-9)."""
    problems = []
    for target, values in recomputed.items():
        stored_metrics = result.metrics.get(target)
        for metric, value in values.items():
            stored = None if stored_metrics is None else getattr(stored_metrics, metric)
            if stored is None or not math.isclose(stored, value, abs_tol=1e-9):
                problems.append((f"metrics.{target}.{metric}", f"is {stored} but {given_by} give {value}"))
    return problems


def recompute(result: CellResult, rows: Iterable[dict[str, str]],
              candidates: Iterable[dict[str, str]] | None = None) -> list[tuple[str, str]]:
    """Every accuracy and metric of a cell against its per-pair score rows and, on a protocol with
    candidate sets, its per-candidate score rows (``recompute_bon``): ``(field, problem)`` for each
    mismatch, empty when every number recomputes (to 1e-9). ``rows`` and ``candidates`` may be given as columns
    (bench.core.columns.ScoreColumns, CandidateColumns); well-formed rows are read as columns here, once."""
    from bench.core.columns import ScoreColumns

    if not isinstance(rows, ScoreColumns):
        rows = list(rows)   # read twice: here, and against the candidates' first two scores
        read = ScoreColumns.read(rows)
        if read is not None:   # else each step reads the rows one by one, and says what is wrong
            rows = read
    try:
        got = accuracies_from_scores(rows)
    except ValueError as error:
        return [("scores", str(error))]
    problems = []
    for name, stored in result.eval_sets.items():
        if name not in got:
            problems.append((f"eval_sets.{name}", "has no per-pair scores"))
            continue
        for who in ("teacher", "student"):
            value = getattr(stored, f"{who}_acc")
            if not math.isclose(value, got[name][who], abs_tol=1e-9):
                problems.append((f"eval_sets.{name}.{who}_acc",
                                 f"is {value} but the per-pair scores give {got[name][who]} ({who} accuracy)"))
        if stored.n_pairs != got[name]["n_pairs"]:
            problems.append((f"eval_sets.{name}.n_pairs", f"is {stored.n_pairs} but {got[name]['n_pairs']} pairs are scored"))
    for name in sorted(set(got) - set(result.eval_sets)):
        problems.append((f"eval_sets.{name}", "has per-pair scores but is not one of the cell's eval sets"))
    if result.source in got:
        problems += _metric_problems(result, cell_metrics(got, result.source), "the per-pair scores")
    return problems + recompute_bon(result, rows, candidates)


def recompute_folder(folder: Path) -> list[str]:
    """``recompute`` for a results folder's cell, as lines to print; a scores file changed since the
    run is reported and still recomputed, so the lines say what changed."""
    folder = Path(folder)
    try:
        stored = _stored(folder)
        if stored:
            result, rows, candidates = read_result(json.loads(stored.result)), stored.rows, stored.candidates
            if result.candidates_file is None:
                candidates = None
        else:
            result = read_result(json.loads((folder / RESULT_FILE).read_text()))
            rows = read_csv_gz(folder / SCORES_FILE)
            candidates = read_csv_gz(folder / CANDIDATES_FILE) if result.candidates_file is not None else None
    except (OSError, EOFError, ValueError, ValidationError, zlib.error, csv.Error):
        return ["incomplete: result.json missing, unreadable or of another schema, or its score files missing or "
                "unreadable; a rerun recomputes this cell"]

    def digest(name: str) -> str | None:
        return stored.sha256[1 if name == SCORES_FILE else 2] if stored else sha256_file(folder / name)

    problems = [f"{name}: changed since the run (its sha256 is not the one result.json records)"
                for name, record in ((SCORES_FILE, result.scores_file), (CANDIDATES_FILE, result.candidates_file))
                if (name == SCORES_FILE or record is not None)
                and (record is None or digest(name) != record.sha256)]
    return problems + [f"{field}: {problem}" for field, problem in recompute(result, rows, candidates)]


def find_cells(root: Path) -> list[CellResult]:
    """Every finished cell result under ``root`` (``read_cell``)."""
    from bench.core.store import cell_folders

    found = []
    for folder in cell_folders(root):
        result = load_cell(folder)
        if result is not None:
            found.append(result)
    return found
