"""``bench reproduce SUBMISSION``: some of a submission's cells run again on this machine, and compared with it.

Validation recomputes every number from a submission's per-pair scores, and the reference teacher checks its
teacher; its student's scores are taken on trust: half of a student's wrong verdicts flipped, every number
resealed, validate. Only a rerun tells (issue 59). A host reruns ``k`` cells drawn by a seed the host chooses
(``draw``), each with the submission's method and parameters at its seed and source: a built-in method at the
code the cell recorded (refused where this checkout's method code differs: ``check_code``), a method from a file
from the source the submission carries. Each rerun is compared with the submitted cell, pair by pair
(``compare_cell``):

    RULE: a cell is reproduced when, on every eval set, the rerun student's verdicts (r(chosen) > r(rejected), a
    tie, or below) differ from the submitted ones on at most max(1, 1% of the pairs) test pairs, and, on a protocol
    with candidate sets, its credit in at most max(1, 1% of the sets) sets.

Why that much room: a rerun on the same kind of machine gives the same scores to the bit; one on other CPU kernels
moved student scores by up to 1e-2 and flipped 1 verdict of 4,800, at most 1 of an eval set's 200 pairs
(docs/reliability.md, "A rerun on another machine"), which this rule passes. A forged student is far outside it
(half its wrong verdicts flipped: about 1 pair in 8). The teacher's verdicts are reported beside, not ruled on: the
reference teacher checks them already.

The outcome goes to a reproduction record (``reproductions/<protocol>/<models>/<slug>.json`` beside the submissions
root; ``Record``): the submission's content hash (the sha256 of its submission.json, which lists every file's), the
draw, each cell's counts, the machine (CPU, torch, threads, fp32 matmul peak) and the outcome. Cells accumulate over
reproductions of the same content; a record of other content is replaced. The board reads it (leaderboard.board).
"""
from __future__ import annotations

import hashlib
import json
import random
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from bench.core.location import REPRODUCTIONS

FORMAT = "shiftbench-reproduction/v1"
SHARE, AT_LEAST = 0.01, 1   # the rule's room: max(AT_LEAST, SHARE of the pairs or sets) per eval set
RULE = (f"a cell is reproduced when, on every eval set, the rerun scores the same test pairs (and best-of-N sets) and "
        f"its student's verdicts differ from the submitted ones on at most max({AT_LEAST}, {SHARE:.0%} of the pairs) "
        f"pairs, and its best-of-N credits in at most max({AT_LEAST}, {SHARE:.0%} of the sets) sets; a cell of a "
        f"label-side method outside that whose rerun trained its teacher to other soft labels is inconclusive")
RECORDS = REPRODUCTIONS   # beside the submissions root (bench.core.location: a Hub dataset's are fetched with it)


def allowed(n: int) -> int:
    return max(AT_LEAST, int(SHARE * n))


def draw(cells: list[tuple[int, str]], k: int, seed: int, key: str = "") -> list[tuple[int, str]]:
    """``k`` of a submission's (seed, source) cells, in order, drawn by ``seed`` (the host's) and the submission's
    ``key``: one seed draws other cells of each submission, and the same ones again whenever it is given."""
    ordered = sorted(cells)
    chosen = sorted(random.Random(f"{seed}/{key}").sample(range(len(ordered)), min(k, len(ordered))))
    return [ordered[i] for i in chosen]


def _verdicts(rows, who: str) -> dict[str, dict[str, float]]:
    """eval set -> pair id -> the verdict of ``who`` (bench.core.cells.correctness: 1, 1/2, 0) from score rows."""
    from bench.core.cells import correctness

    out: dict[str, dict[str, float]] = {}
    for row in rows:
        [verdict] = correctness([float(row[f"{who}_chosen"])], [float(row[f"{who}_rejected"])]).tolist()
        out.setdefault(row["eval_set"], {})[row["pair_id"]] = verdict
    return out


def _credits(candidates) -> dict[str, dict[str, float]]:
    """eval set -> set id -> the student's BoN credit, from candidate rows."""
    from bench.core.columns import CandidateColumns

    sets = CandidateColumns.from_rows(candidates).sets()
    return {name: dict(zip(own.set_ids, own.credits("student").tolist())) for name, own in sets.items()}


def compare_cell(submitted, rerun) -> dict:
    """The rule's counts for one cell (bench.core.results.CellFiles of the submitted and the rerun cell): per eval set
    the pairs (and sets) whose student verdict (credit) differs, of how many, the teacher's likewise, the largest
    change of a student score, and whether the cell is reproduced."""
    found: dict = {"eval_sets": {}, "reproduced": True}
    largest = 0.0
    student = (_verdicts(submitted.rows, "student"), _verdicts(rerun.rows, "student"))
    teacher = (_verdicts(submitted.rows, "teacher"), _verdicts(rerun.rows, "teacher"))
    scores = {(r["eval_set"], r["pair_id"]): (float(r["student_chosen"]), float(r["student_rejected"]))
              for r in rerun.rows}
    for row in submitted.rows:
        again = scores.get((row["eval_set"], row["pair_id"]))
        if again is not None:
            largest = max(largest, abs(again[0] - float(row["student_chosen"])),
                          abs(again[1] - float(row["student_rejected"])))
    bon = (_credits(submitted.candidates) if submitted.candidates else {},
           _credits(rerun.candidates) if rerun.candidates else {})
    for name, mine in student[0].items():
        theirs = student[1].get(name, {})
        differ = sum(theirs.get(pid) != v for pid, v in mine.items())
        teacher_differ = sum(teacher[1].get(name, {}).get(pid) != v for pid, v in teacher[0][name].items())
        entry = {"pairs": len(mine), "student_differ": differ, "teacher_differ": teacher_differ}
        why = []
        if set(theirs) != set(mine):
            why.append(f"the rerun scores other test pairs of {name}")
        elif differ > allowed(len(mine)):
            why.append(f"the student's verdicts differ on {differ} of {len(mine)} pairs of {name}")
        if name in bon[0]:
            sets, again = bon[0][name], bon[1].get(name, {})
            bon_differ = sum(again.get(sid) != v for sid, v in sets.items())
            entry.update(sets=len(sets), student_bon_differ=bon_differ)
            if set(again) != set(sets):
                why.append(f"the rerun scores other best-of-N sets of {name}")
            elif bon_differ > allowed(len(sets)):
                why.append(f"the student's best-of-N credits differ in {bon_differ} of {len(sets)} sets of {name}")
        entry["why"] = "; ".join(why)
        found["eval_sets"][name] = entry
        found["reproduced"] = found["reproduced"] and not why
    found["largest_student_score_change"] = largest
    labels = [getattr(c.result.labels, "digest", None) for c in (submitted, rerun)]
    found["labels_same"] = labels[0] == labels[1]
    # A label-side method keeps or drops pairs by its teacher's soft labels (bench/stages/label_stage.py): trained
    # again on another platform, the teacher's labels move in their last digits, other pairs are kept, and the
    # student differs for that reason alone. Such a cell, outside the rule with other labels, is not judged.
    found["inconclusive"] = bool(not found["reproduced"] and not found["labels_same"]
                                 and submitted.result.label_stage is not None)
    return found


def why_not(cell: dict) -> str:
    """Why a cell of a record was not reproduced, in words ("" when it was)."""
    return "; ".join(e["why"] for e in cell.get("eval_sets", {}).values() if e.get("why"))


def check_code(result) -> None:
    """Refuse to rerun a built-in method whose code here is not the code the cell recorded (its code digest):
    the rerun would test this checkout's method, not the submitted one."""
    from bench.core.errors import BenchError
    from methods import get_method_class, method_origin

    recorded = result.method.origin or {}
    if recorded.get("kind") == "entry point":   # its code is the package installed here, which nothing pins
        raise BenchError(f"{result.method.name} comes from an installed package: a rerun would run whatever version "
                         "is installed here, not the submitted source; reproduce it from its source as a method file")
    if recorded.get("kind", "built-in") != "built-in":
        return
    here = method_origin(get_method_class(result.method.name))
    if recorded.get("digest_scheme") == here.get("digest_scheme") and recorded.get("code_digest") not in (
            None, here.get("code_digest")):
        raise BenchError(f"{result.method.name}'s code here is not the code its cells ran (code digest "
                         f"{str(recorded.get('code_digest'))[:12]} there, {str(here.get('code_digest'))[:12]} here): "
                         "reproduce it from a checkout whose method code digests as the cells record")


def matmul_peak() -> float:
    """This machine's fp32 matmul peak on one thread, GFLOP/s (benchmarks/matmul_peak.py's measure, shorter)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        a, b = torch.randn(1024, 1024), torch.randn(1024, 1024)
        best = float("inf")
        for _ in range(5):
            t = time.perf_counter()
            a @ b
            best = min(best, time.perf_counter() - t)
    finally:
        torch.set_num_threads(before)
    return round(2 * 1024 ** 3 / best / 1e9, 1)


def machine() -> dict:
    """The machine a reproduction ran on, as a result records its own (bench.core.env.cpu), the commit it ran and its
    speed."""
    import torch

    from bench.core.env import cpu, git_commit

    return {"cpu": cpu(), "torch": torch.__version__, "git": git_commit(), "matmul_peak_gflops_1_thread": matmul_peak()}


def submissions_root(folder: Path) -> Path:
    """The submissions root above a submission folder (ROOT/<protocol>/<models>/<slug>)."""
    return Path(folder).resolve().parents[2]


def record_path(root: Path, meta: dict) -> Path:
    return Path(root) / meta["protocol"]["name"] / meta["models"]["name"] / f"{meta['slug']}.json"


def content_of(folder: Path) -> str:
    """A submission's content hash: the sha256 of its submission.json, which lists every other file's."""
    from bench.submissions.limits import SUBMISSION_FILE

    return hashlib.sha256((Path(folder) / SUBMISSION_FILE).read_bytes()).hexdigest()


def read_record(root: Path, meta: dict, folder: Path) -> dict | None:
    """The reproduction record under ``root`` of the submission ``meta`` in ``folder``, if there is one of its
    content (a record of an earlier version of the submission says nothing of this one); None otherwise, or when
    the record cannot be read."""
    path = record_path(root, meta)
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("format") != FORMAT or record.get("content") != content_of(folder):
        return None
    cells = record.get("cells")
    if not (isinstance(cells, list) and cells and all(isinstance(c, dict) and isinstance(c.get("reproduced"), bool)
                                                      and isinstance(c.get("eval_sets"), dict) for c in cells)
            and record.get("outcome") in ("reproduced", "failed", "inconclusive")):
        return None   # not a record this harness wrote: the board says nothing of it
    return record


def failed_cells(record: dict) -> list[dict]:
    """The cells of a record that were not reproduced and are judged (not ``inconclusive``)."""
    return [c for c in record.get("cells", []) if not c.get("reproduced") and not c.get("inconclusive")]


def outcome(cells: list[dict]) -> str:
    """A record's outcome: "failed" if a judged cell was not reproduced, else "inconclusive" if one could not be
    judged, else "reproduced"."""
    if failed_cells({"cells": cells}):
        return "failed"
    return "inconclusive" if any(c.get("inconclusive") for c in cells) else "reproduced"


def reproduce(folder: Path, k: int, seed: int, cache_dir: Path | None, root: Path, work: Path | None = None,
              log=print) -> dict:
    """Rerun ``k`` cells of the submission in ``folder`` drawn by ``seed`` (``draw``), compare each with it
    (``compare_cell``), and write the reproduction record under ``root`` (``record_path``). Returns the record."""
    import torch

    from bench.core.errors import BenchError
    from bench.core.io import atomic_write_bytes
    from bench.core.result_schema import METHOD_SOURCE_FILE
    from bench.core.results import cell_dir, read_cell_files
    from bench.stages import pipeline
    from bench.stages.decide import cpu_seconds, settings_of
    from bench.submissions import validate_submission
    from bench.submissions.limits import cell_folder

    if k < 1:
        raise BenchError(f"--cells {k}: rerun one cell or more")
    v = validate_submission(folder)
    if not v.ok:
        raise BenchError(f"{folder} does not validate ({len(v.errors)} problems, the first: {v.errors[0]}): a "
                         "submission is reproduced once it validates (bench validate says what is wrong)")
    meta = v.submission
    cells = [(ref["seed"], ref["source"]) for ref in meta["cells"] if not ref.get("replicate", 0)]
    drawn = draw(cells, k, seed, f"{meta['protocol']['name']}/{meta['models']['name']}/{meta['slug']}")
    path = record_path(root, meta)
    content = content_of(folder)
    record = read_record(root, meta, folder)   # one of this content, else a new one (an older one is replaced)
    if record is None:
        record = {"format": FORMAT, "submission": f"{meta['protocol']['name']}/{meta['models']['name']}/{meta['slug']}",
                  "content": content, "rule": RULE, "runs": [], "cells": []}
    with tempfile.TemporaryDirectory(prefix="shiftbench-reproduce-") as tmp:
        tmp = Path(work or tmp)
        method_file = None
        if (Path(folder) / METHOD_SOURCE_FILE).is_file():   # a method not built in: the source it carries runs
            first = read_cell_files(Path(folder) / cell_folder(*drawn[0]))
            # the name the cells recorded, as a bare file name: the record is the submitter's text, not a path
            name = Path(str(first.result.method.origin.get("file") or "method.py")).name
            method_file = tmp / (name if name.endswith(".py") else "method.py")
            method_file.write_bytes((Path(folder) / METHOD_SOURCE_FILE).read_bytes())
        started = cpu_seconds()
        for seed_, source in drawn:
            submitted = read_cell_files(Path(folder) / cell_folder(seed_, source))
            check_code(submitted.result)
            settings = settings_of(submitted.result, tmp / "out", cache_dir, method_file).replace(
                scorer=(submitted.result.student or {}).get("scorer") or "hf")   # as the cell was scored
            log(f"[reproduce] {record['submission']}: seed {seed_} {source}")
            threads = (submitted.result.environment or {}).get("torch_threads")
            before = torch.get_num_threads()
            torch.set_num_threads(threads or before)   # as the cell ran: float sums depend on it, and so does its key
            try:
                pipeline.run(settings.replace(sources=(source,), seeds=(seed_,), command="bench reproduce"))
            finally:
                torch.set_num_threads(before)
            rerun = read_cell_files(cell_dir(tmp / "out", meta["protocol"]["name"], meta["models"]["name"],
                                             meta["slug"], seed_, source))
            if rerun is None:
                raise BenchError(f"the rerun of seed {seed_} {source} left no finished cell (the run's output above "
                                 "says why)")
            found = {"seed": seed_, "source": source, **compare_cell(submitted, rerun),
                     "key_same": rerun.result.cell_key == submitted.result.cell_key}
            record["cells"] = [c for c in record["cells"] if (c["seed"], c["source"]) != (seed_, source)] + [found]
    record["runs"].append({"draw_seed": seed, "cells": [list(c) for c in drawn], "of": len(cells),
                           "cpu_s": round(cpu_seconds() - started, 1), "machine": machine(),
                           "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds")})
    record["cells"].sort(key=lambda c: (c["seed"], c["source"]))
    record["outcome"] = outcome(record["cells"])
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, (json.dumps(record, indent=1) + "\n").encode())
    return record
