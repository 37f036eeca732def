"""Many submissions at once (``validate_tree``): finding them under a root, and what only shows
across them -- duplicates, folders not at ``<protocol>/<models>/<slug>``, a teacher that is not the
reference submission's (``check_teachers``), and submissions that disagree on the teacher of a cell or
on the labels one teacher gave."""
from __future__ import annotations

import os
from collections import defaultdict
from pathlib import Path
from typing import Callable, Mapping

# BASELINE: the reference submission whose teacher is every other's, where none is committed
from bench.core.results import BASELINE
from bench.core.specs import ModelPairSpec, ProtocolSpec, canonical_json
from bench.submissions.check import validate_submission
from bench.submissions.facts import cell_facts
from bench.submissions.limits import REFERENCES, SUBMISSION_FILE, Validation


def find_submissions(root: Path) -> list[Path]:
    """Submission folders under ``root`` (or ``root`` itself), without following links."""
    root = Path(root)
    if (root / SUBMISSION_FILE).is_file():
        return [root]
    found = []
    for folder, dirs, names in os.walk(root, followlinks=False):
        if SUBMISSION_FILE in names:
            found.append(Path(folder))
            dirs[:] = []
        else:
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
    return sorted(found)


def _disagreements(validations: list[Validation], facts: str) -> list[tuple[tuple, dict[str, set[str]]]]:
    """(key, value -> submission keys) for every key on which submissions record more than one value; a cell's
    (key, value) pairs are its ``facts`` ("teacher": ``teacher_keys``, "labels": ``label_keys``), which the
    validation record keeps (bench.submissions.facts)."""
    seen: dict[tuple, dict] = defaultdict(lambda: defaultdict(set))
    for v in validations:
        for pairs in cell_facts(v.cells, facts):
            for key, value in pairs:
                seen[tuple(key)][value].add(v.key)
    return [(key, by_value) for key, by_value in seen.items() if len(by_value) > 1]


def teacher_conflicts(validations: list[Validation]) -> list[tuple[str, set[str]]]:
    """Cells where submissions of one protocol x model pair disagree on the teacher (it is trained
    before any method runs, so it must be the same for all of them): (what differs, which submissions)."""
    return [(f"{models} seed {seed} {source} -> {name}: teacher accuracy "
             + "; ".join(f"{value} in {', '.join(sorted(keys))}" for value, keys in by_value.items()),
             set().union(*by_value.values()))
            for (_, models, seed, source, name), by_value in _disagreements(validations, "teacher")]


def label_conflicts(validations: list[Validation]) -> list[tuple[str, set[str]]]:
    """Cells of one teacher (protocol x model pair x teacher cache key) whose recorded label digests
    differ: the same teacher entry gives the same labels, so the labels an external student declares
    can be checked against the harness's students of that teacher. (What differs, which submissions.)
    A warning, as teacher conflicts are: another CPU can give another float with the same key. Cells
    whose labels a label-side method made are compared with the cells of the same label stage only."""
    return [(f"{models} seed {seed} {source}, teacher {teacher}: label digests "
             + "; ".join(f"{digest[:12]} in {', '.join(sorted(keys))}" for digest, keys in by_digest.items()),
             set().union(*by_digest.values()))
            for (_, models, seed, source, teacher, _), by_digest in _disagreements(validations, "labels")]


def check_teachers(validations: list[Validation], beside: list[Validation] = (),
                   references: Path | None = REFERENCES) -> None:
    """The teacher of each of ``validations`` against its protocol x model pair's reference teacher
    (bench.submissions.reference): a committed one is checked by validate_submission already; else the
    valid naive submission among ``beside`` (the board's) and ``validations`` is the reference of the
    others, refused where their test pairs or teacher's verdicts differ from it. Without either, a
    warning says the teacher is not checked."""
    import bench.submissions.reference as reference_teacher

    naive: dict[tuple[str, str], Validation] = {}
    references_made: dict[tuple[str, str], reference_teacher.Reference] = {}
    for v in (*beside, *validations):
        s = v.submission
        if v.ok and s and s["slug"] == BASELINE and v.pairs and len(v.pairs) == len(v.cells):
            naive.setdefault((s["protocol"]["name"], s["models"]["name"]), v)
    for v in validations:
        s = v.submission
        if s is None or not v.pairs:
            continue
        key = (s["protocol"]["name"], s["models"]["name"])
        if reference_teacher.reference_file(*key, references) is not None:
            continue
        base = naive.get(key)
        if base is None or base is v:
            v.warn(".", "teacher", f"no reference teacher for {'/'.join(key)}: this submission's teacher is not checked "
                   "against one (a naive submission of the protocol and model pair, or a committed reference)",
                   "validate it beside the reference submission of naive (bench validate on their common folder)")
            continue
        if key not in references_made:   # its teacher's credits in the candidate sets too, where there are sets
            references_made[key] = reference_teacher.from_cells(
                base.pairs, base.submission["protocol"], key[1], f"the submission {base.key}",
                reference_teacher.sets_of_store(base.folder) if base.pairs[0].bon else None)
        reference = references_made[key]
        for cell in (*v.pairs, *v.controls):
            reference_teacher.check_cell(v, reference, cell)


def validate_tree(path: Path, protocols: Mapping[str, ProtocolSpec] | None = None,
                  model_pairs: Mapping[str, ModelPairSpec] | None = None,
                  validate: Callable[..., Validation] = validate_submission) -> list[Validation]:
    """Validate every submission under ``path`` (each with ``validate``, which the validation record
    replaces: bench.submissions.record); also refuse duplicates and misplaced folders, and warn where
    submissions disagree on the teacher."""
    path = Path(path)
    validations = [validate(folder, protocols, model_pairs) for folder in find_submissions(path)]
    for v in validations:
        v.name = v.folder.relative_to(path).as_posix() if v.folder != path else path.name
    readable = [v for v in validations if v.submission is not None]
    for v in readable:
        s, parts = v.submission, v.folder.relative_to(path).parts
        expected = (s["protocol"]["name"], s["models"]["name"], s["slug"])
        if len(parts) == 3 and parts != expected:
            v.error(".", "", f"is at {'/'.join(parts)} but holds {'/'.join(expected)}",
                    f"move it to {path / '/'.join(expected)}")
    first: dict[str, Validation] = {}
    for v in sorted(readable, key=lambda v: not v.ok):  # a valid one keeps its place; later copies are refused
        s = v.submission
        identity = canonical_json([s["protocol"], s["models"]["name"], s["method"]["name"], s["method"]["params"]])
        if identity in first:
            v.error(SUBMISSION_FILE, "", f"duplicates {first[identity].folder}: the same method, params, model pair "
                    "and protocol", "keep one of them")
        else:
            first[identity] = v
    check_teachers(validations)
    conflicts, disagreeing = teacher_conflicts(validations), label_conflicts(validations)
    for v in validations:
        for conflict, keys in conflicts:
            if v.key in keys:
                v.warn(".", "teacher", f"submissions disagree on the teacher: {conflict}",
                       "rerun every method of this protocol and model pair with the same code and settings")
        for conflict, keys in disagreeing:
            if v.key in keys:
                v.warn(".", "labels", f"cells of the same teacher record different labels: {conflict}",
                       "export the labels (bench labels) and run or evaluate every student on the same machine "
                       "and code")
    return validations
