"""Checks of one cell of a submission: its files and sha256s, its result against the protocol and the
reference teacher, every number recomputed from its scores, its derived seeds, its labels'
provenance, and a method's source where the method is not built in."""
from __future__ import annotations

import functools
import math

import bench.submissions.limits as limits
import bench.submissions.reference as reference_teacher
from bench.core.cells import cell_from_scores
from bench.core.data import STUDENT_STAGES, TEACHER_STAGES, stage_seed
from bench.core.io import sha256_file
from bench.core.result_schema import (
    CANDIDATE_COLUMNS,
    CANDIDATES_FILE,
    EXTERNAL_NOTE,
    METHOD_SOURCE_FILE,
    RESULT_FILE,
    SCORE_COLUMNS,
    SCORES_FILE,
    CellResult,
)
from bench.core.results import recompute
from bench.core.specs import ProtocolSpec
from bench.submissions.commands import absolute_paths
from bench.submissions.fields import (
    check_commands,
    read_json,
)
from bench.submissions.limits import (
    REGENERATE,
    SUBMISSION_FILE,
    Validation,
    _Stop,
    cell_folder,
)
from bench.submissions.scores import as_rows, read_candidates, read_scores, stored_candidates, stored_scores


def close(a: float | None, b: float | None) -> bool:
    """Summary values: equal to 1e-9, or both missing (a spread over one seed is None)."""
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)) or (isinstance(b, float) and math.isnan(b)):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return math.isclose(a, b, abs_tol=1e-9)


def check_cell(v: Validation, meta: dict, protocol: ProtocolSpec, ref: dict, files: dict[str, int],
                reference: reference_teacher.Reference | None = None, read: list | None = None) -> CellResult | None:
    """One listed cell (``ref``, a CellRef) checked: what recomputes goes into ``v.pairs``, or ``v.controls`` for
    naive's replicate of it. Returns its result where it could be read (``read`` gets the bytes it was read from)."""
    base = cell_folder(ref["seed"], ref["source"], ref.get("replicate", 0))
    rel_result, rel_scores, rel_candidates = (f"{base}/{name}" for name in (RESULT_FILE, SCORES_FILE, CANDIDATES_FILE))
    listed_files = {rel_result: ref["result_sha256"], rel_scores: ref["scores_sha256"]}
    if protocol.candidates is not None:   # its cells score best-of-N sets: the submission carries their scores
        listed_files[rel_candidates] = ref.get("candidates_sha256")
    elif ref.get("candidates_sha256") is not None:
        v.error(SUBMISSION_FILE, "cells", f"seed {ref['seed']} {ref['source']} lists a {CANDIDATES_FILE}, but "
                f"{protocol.name} scores no candidate sets", REGENERATE)
    missing = [r for r in listed_files if r not in files]
    for rel in missing:
        v.error(rel, "", "is missing" + (f" (seed {ref['seed']} {ref['source']}: {protocol.name} scores best-of-N "
                "candidate sets, whose per-candidate scores every cell carries)" if rel == rel_candidates else ""),
                REGENERATE)
    if missing:
        return None
    stored = None if v.store is None else v.store.index(base)
    for rel, listed in listed_files.items():
        if _digest(v, stored, rel) != listed:
            v.error(rel, "", "its sha256 is not the one submission.json lists (the file was changed)", REGENERATE)
    try:
        result = read_json(v, v.folder, rel_result, CellResult,
                           content=None if stored is None else v.store.results[stored], read=read)
    except _Stop:
        return None
    check_commands(v, rel_result, [("command", result.command)])
    source = ref["source"]
    recorded = {"seed": result.seed, "source": result.source, "protocol": result.protocol.model_dump(exclude_none=True),
                "models": result.models, "category": result.category, "replicate": result.replicate}
    expected = {"seed": ref["seed"], "source": source, "protocol": meta["protocol"], "models": meta["models"],
                "category": protocol.category_of(source), "replicate": ref.get("replicate", 0)}
    for key, value in expected.items():
        if recorded[key] != value:
            v.error(rel_result, key, f"is {str(recorded[key])[:120]!r}, expected {str(value)[:120]!r} "
                    "(the submission's)", "a submission's cells all come from one run of one method; " + REGENERATE)
    for key in ("name", "params"):
        if getattr(result.method, key) != meta["method"][key]:
            v.error(rel_result, f"method.{key}", f"is {getattr(result.method, key)!r}, the submission's is "
                    f"{meta['method'][key]!r}", REGENERATE)
    check_provenance(v, rel_result, result, meta)
    check_seeds(v, rel_result, result, protocol)
    check_timings(v, rel_result, result)
    roles = {source: "id", **{t: "ood" for t in protocol.targets_of(source)}}
    if {k: e.role for k, e in result.eval_sets.items()} != roles:
        v.error(rel_result, "eval_sets", f"are {sorted(result.eval_sets)}, the protocol's for {source} are "
                f"{sorted(roles)} (the source as 'id', its siblings as 'ood')", REGENERATE)
    if set(result.metrics) != set(roles) - {source}:
        v.error(rel_result, "metrics", f"targets {sorted(result.metrics)}, expected "
                f"{sorted(set(roles) - {source})}", REGENERATE)
    if result.scores_file is None or result.scores_file.sha256 != ref["scores_sha256"]:
        v.error(rel_result, "scores_file.sha256", "does not match the scores file", REGENERATE)
    if protocol.candidates is not None and (result.candidates_file is None
                                            or result.candidates_file.sha256 != ref.get("candidates_sha256")):
        v.error(rel_result, "candidates_file.sha256", f"does not match the {CANDIDATES_FILE} file", REGENERATE)
    # The scores file is read only as far as the pairs result.json declares, so those must be bounded
    # first: the protocol's eval sets (checked above), each with at most its test split's pairs.
    most = min(protocol.test_size, limits.MAX_PAIRS_PER_EVAL_SET)
    oversize = {name: e.n_pairs for name, e in result.eval_sets.items() if not 0 <= e.n_pairs <= most}
    for name, n in oversize.items():
        v.error(rel_result, f"eval_sets.{name}.n_pairs", f"is {n}; {protocol.name} scores from 0 to {most} pairs per "
                "test split (its test_size), so the scores file is not read", REGENERATE)
    # likewise the candidates file: at most N rows for each set of each eval set, one set per test pair at most
    n_sets = {name: e.n_sets for name, e in result.eval_sets.items()} if protocol.candidates is not None else {}
    for name, n in n_sets.items():
        if not (isinstance(n, int) and 1 <= n <= most):
            v.error(rel_result, f"eval_sets.{name}.n_sets", f"is {n}; {protocol.name} scores 1 to {most} best-of-N sets "
                    f"per test split (one per test pair at most), so {CANDIDATES_FILE} is not read", REGENERATE)
            oversize[name] = n
    if oversize or set(result.eval_sets) != set(roles):
        return result
    n_pairs = {k: e.n_pairs for k, e in result.eval_sets.items()}
    rows = read_scores(v, rel_scores, v.folder / rel_scores, n_pairs) if stored is None else \
        stored_scores(v, rel_scores, v.store, stored, n_pairs)
    candidates = None
    if protocol.candidates is not None:
        candidates = read_candidates(v, rel_candidates, v.folder / rel_candidates, n_sets, protocol.candidates) \
            if stored is None else stored_candidates(v, rel_candidates, v.store, stored, n_sets, protocol.candidates, rows)
        if candidates is None:
            return result
    if rows is not None:  # the one recompute, as bench verify's
        rows, candidate_rows = _columns(rows, candidates)
        problems = recompute(result, rows, candidate_rows)
        for fld, problem in problems:   # a set's own rows are the candidates file's problem, a number is result.json's
            v.error(rel_candidates if fld.startswith("candidates") else rel_result, fld, problem,
                    "the numbers must be the ones the per-pair (and per-candidate) scores give; " + REGENERATE)
        if not problems:  # what the board's intervals are computed from (at most the declared pairs)
            into = v.controls if ref.get("replicate", 0) else v.pairs
            into.append(cell_from_scores(result, rows, rel_result, candidate_rows, {protocol.name: protocol}))
            if reference is not None:   # the protocol's test pairs and sets, judged by the protocol's teacher
                from bench.submissions.reference import check_cell

                check_cell(v, reference, into[-1], candidate_rows)
    return result


def _columns(rows, candidates) -> tuple:
    """The cell's scores (and candidates) as bench.core.columns reads them: a store's are columns already; a file's
    parsed rows (tuples of text ids and float numbers, every one checked finite) become columns too, so that
    recompute and the board's correctness read arrays, not a dict per row."""
    from bench.core.columns import CandidateColumns, ScoreColumns

    if isinstance(rows, list):
        rows = ScoreColumns(*(list(column) for column in zip(*rows))) if rows else \
            ScoreColumns(*([[]] * len(SCORE_COLUMNS)))
    if isinstance(candidates, list) and any(str(int(row[3])) != row[3] for row in candidates):
        # an index such as "01": the row-by-row reading words why it is out of place
        candidates = list(as_rows(candidates, CANDIDATE_COLUMNS))
    elif isinstance(candidates, list):
        parsed = [(*row[:3], int(row[3]), *row[4:]) for row in candidates]
        candidates = CandidateColumns(*(list(column) for column in zip(*parsed))) if parsed else \
            CandidateColumns(*([[]] * len(CANDIDATE_COLUMNS)))
    return rows, candidates


def _digest(v: Validation, stored: int | None, rel: str) -> str | None:
    """The sha256 of a cell's file: of the file itself, or, in a store, of its result.json's bytes (kept whole) and
    the sha256s its score files had when they were stored (their numbers are what recompute checks)."""
    if stored is None:
        return sha256_file(v.folder / rel)
    if rel.endswith(RESULT_FILE):
        import hashlib

        return hashlib.sha256(v.store.results[stored]).hexdigest()
    return v.store.sha256["scores" if rel.endswith(SCORES_FILE) else "candidates"][stored]


def check_timings(v: Validation, rel: str, result: CellResult) -> None:
    """Each stage's seconds (timings_s) a finite time from 0 to limits.MAX_STAGE_SECONDS: what a decision cost is
    computed from (benchmarks/decision_cost.py, the board's CPU-hours), so 1e308 or a negative time is refused."""
    for stage, seconds in result.timings_s.items():
        if not (math.isfinite(seconds) and 0 <= seconds <= limits.MAX_STAGE_SECONDS):
            v.error(rel, f"timings_s.{stage}", f"is {seconds}: a stage's time is 0 to {limits.MAX_STAGE_SECONDS:,} "
                    "seconds (30 days)", REGENERATE)


_stage_seed = functools.lru_cache(maxsize=1 << 14)(stage_seed)


def _derived(protocol: ProtocolSpec, seed: int, source: str, stage: str, replicate: int) -> int:
    """``stage_seed``, a function of its arguments, kept for those asked before: a tree of submissions of one protocol
    asks for the same few thousand seeds again and again (a spec that cannot be hashed is derived each time)."""
    try:
        return _stage_seed(protocol, seed, source, stage, replicate)
    except TypeError:
        return stage_seed(protocol, seed, source, stage, replicate)


def check_seeds(v: Validation, rel: str, result: CellResult, protocol: ProtocolSpec) -> None:
    """Every derived seed is the one the code derives from the cell's seed (bench.core.data.stage_seed): a
    seed is never chosen, so an edited one is a cell no rerun reproduces. A harness-trained cell records
    the teacher's and the student's stages, a student trained elsewhere (bench evaluate) the teacher's."""
    stages = TEACHER_STAGES if result.external is not None else TEACHER_STAGES + STUDENT_STAGES
    if set(result.derived_seeds) != set(stages):
        v.error(rel, "derived_seeds", f"names the stages {sorted(result.derived_seeds)}; a cell's are {sorted(stages)}",
                REGENERATE)
    for stage in stages:
        derived = _derived(protocol, result.seed, result.source, stage, result.replicate)
        if stage in result.derived_seeds and result.derived_seeds[stage] != derived:
            v.error(rel, f"derived_seeds.{stage}", f"is {result.derived_seeds[stage]}, but seed {result.seed} of "
                    f"{result.source}{f' (replicate {result.replicate})' if result.replicate else ''} derives "
                    f"{derived} (bench.core.data.stage_seed): seeds are derived, never chosen", REGENERATE)


def check_gold(v: Validation, rel: str, result: CellResult) -> None:
    """Gold labels are the ceiling's, and only the built-in ceiling's: it is the board's reference row above every
    method, never ranked. A weak-to-strong method learns from the teacher's labels; one that learns from gold would
    be ranked as a W2S method with the ceiling's advantage (a method file's ``labels = "gold"``, or a cell of
    another method edited to say so). The ceiling itself says gold, and comes from this harness's code."""
    from bench.core.results import CEILING

    method, kind = result.method, result.method.origin.get("kind")
    if method.labels == "gold" and (method.name != CEILING or kind != "built-in"):
        v.error(rel, "method.labels", f"is 'gold' for {method.name!r} ({kind or 'no'} origin): only the built-in "
                f"{CEILING!r} trains on gold labels, as the board's reference row; a weak-to-strong method learns from "
                "the teacher's labels", "train it on the teacher's labels (labels = \"teacher\", the default), then "
                + REGENERATE)
    elif method.name == CEILING and (method.labels != "gold" or kind != "built-in"):
        v.error(rel, "method.labels" if method.labels != "gold" else "method.origin.kind",
                f"is {method.labels if method.labels != 'gold' else kind!r}: {CEILING!r} is the built-in reference "
                "that trains on gold labels", "run the built-in ceiling (bench run --method ceiling), then " + REGENERATE)


def check_provenance(v: Validation, rel: str, result: CellResult, meta: dict) -> None:
    """What a cell says it learned from (``labels``) and, for a student trained outside the harness
    (``external``, written by bench evaluate), that it is marked as such everywhere and that the labels
    its checkpoint was trained on are the cell's. The training itself cannot be checked: that is what
    the mark says."""
    fix = "evaluate the checkpoint again with bench evaluate, then " + REGENERATE
    labels = result.labels
    if labels is not None:
        half_b = result.sizes.get("half_b")
        if labels.stage is None and labels.pairs != half_b:
            v.error(rel, "labels.pairs", f"is {labels.pairs}, but the student's half B holds {half_b} pairs", REGENERATE)
        if labels.stage is not None and not (half_b is not None and 1 <= labels.pairs <= half_b):  # a label stage may drop pairs
            v.error(rel, "labels.pairs", f"is {labels.pairs}, but a label stage trains on 1 to {half_b} pairs (half B)",
                    REGENERATE)
        if labels.kind != result.method.labels:
            v.error(rel, "labels.kind", f"is {labels.kind!r}, but method.labels is {result.method.labels!r}", REGENERATE)
    check_gold(v, rel, result)
    if result.external is None and result.method.trains and result.student.get("trained_on", {}).get("loop_runs") == 0:
        v.warn(rel, "student.trained_on", "the method never ran the harness's training loop, so what its student "
               "trained on (half B, by the loop's check) is not known", "train through train(...), as methods/api.py says")
    external, marked = result.external, meta.get("external")
    if (external is not None) != (marked is not None):
        v.error(rel, "external", "the cell's student was trained outside the harness but the submission is not marked "
                "so" if external is not None else "the submission is marked external but this cell's student was "
                "trained by the harness", "a submission holds students of one kind; " + REGENERATE)
    if (result.method.origin.get("kind") == "external") != (external is not None):
        v.error(rel, "method.origin.kind", f"is {result.method.origin.get('kind')!r}, but the cell "
                f"{'records' if external is not None else 'does not record'} an external checkpoint", fix)
    if external is None:
        return
    if external.note != EXTERNAL_NOTE:
        v.error(rel, "external.note", f"is {external.note[:80]!r}, not {EXTERNAL_NOTE!r}", fix)
    for name, record in (("checkpoint", external.checkpoint), ("adapter", external.adapter)):
        paths = absolute_paths(str((record or {}).get("path", "")))
        if paths:
            v.error(rel, f"external.{name}.path", f"holds the local path {paths[0][:100]!r}",
                    "evaluate with a relative path or a hub id; " + REGENERATE)
    if labels is None:
        v.error(rel, "labels", "is missing: which labels the checkpoint was trained on cannot be checked against the "
                "cell's", fix)
    elif external.trained_on != labels.digest:
        v.error(rel, "external.trained_on", f"the checkpoint was trained on labels with digest {external.trained_on[:16]}, "
                f"but this cell's labels have digest {labels.digest[:16]}: it learned from another cell's data (or "
                "another teacher's)", "train on this cell's bench labels output and evaluate that checkpoint")


def check_method_source(v: Validation, files: dict[str, int]) -> None:
    """A submission of a method that is not built in (a method file, an installed package's) carries its
    source (METHOD_SOURCE_FILE), the file every cell records the sha256 of, so that a reviewer can read what
    trained its students (the harness cannot stop a method's code from reading a test split; the training
    loop checks what it trains on: ``student.trained_on``). It is hashed, never imported or run."""
    kinds = {cell.method.origin.get("kind") for cell in v.cells}
    needed, carried = bool(kinds - {"built-in", "external"}), METHOD_SOURCE_FILE in files
    if needed and not carried:
        v.error(METHOD_SOURCE_FILE, "", f"is missing: the method is not built in (its origin: {', '.join(sorted(map(str, kinds)))}), "
                "and a submission of such a method carries its source for a reviewer to read",
                "rerun the cells with this version of shiftbench, which keeps the source beside the results, then "
                + REGENERATE)
    elif carried and not needed:
        v.error(METHOD_SOURCE_FILE, "", "is not part of a submission of a built-in method", "remove it")
    elif carried and files[METHOD_SOURCE_FILE] > limits.MAX_SOURCE_BYTES:
        v.error(METHOD_SOURCE_FILE, "", f"{files[METHOD_SOURCE_FILE]} bytes, over the limit of {limits.MAX_SOURCE_BYTES}",
                "a method is one short file: " + REGENERATE)
    elif carried:
        digest = sha256_file(v.folder / METHOD_SOURCE_FILE)
        for cell in v.cells:
            if cell.method.origin.get("sha256") != digest:
                v.error(f"{cell_folder(cell.seed, cell.source)}/{RESULT_FILE}", "method.origin.sha256",
                        f"is not the sha256 of the submission's {METHOD_SOURCE_FILE}: the cell ran other code than the "
                        "source the submission carries", REGENERATE)


