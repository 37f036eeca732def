"""``bench evaluate``: a reward model trained anywhere, scored on a cell as the harness scores its own students.

The checkpoint is an ``AutoModelForSequenceClassification`` with one label (a local folder or a hub id
at a revision), or a peft adapter (``--adapter``) on one: on ``--student``, or on the pair's strong
model when ``--student`` is not given. Per cell (source x seed) it is scored on the cell's ID and OOD
test splits with the protocol's formatter for the pair's architecture, built from the checkpoint's own
tokenizer, against the cell's cached teacher (trained first if it is not cached), and the result is a
normal cell result (``bench.core.result_schema.CellResult``: per-pair scores, WRG / AOG / NTS, the misfit to the
teacher's labels on half B; on a protocol with best-of-N candidate sets, every candidate's scores and the
BoN accuracies and metrics too) written to ``<out>/<protocol>/<models>/<name>[_params]/seed<N>/<source>/``,
where ``bench report``, ``bench compare``, ``bench verify`` and ``bench submit`` read it like any other.
What marks it as external: ``method.origin.kind`` is ``external`` and ``external`` records the
checkpoint (its weights' sha256 per file, or its hub commit and those), the adapter, and the digest of
the labels it was trained on (``--labels``, bench/stages/labels.py), which must be this cell's.

Before any scoring (and, for everything that can be read without the teacher, before any teacher is
trained), a checkpoint is refused with the problem and the fix when: it is not a folder or hub id of a
model; its weights are not safetensors (pickled weights would run code on load); its config has no
sequence-classification head or more than one label; its weights hold no trained head; its tokenizer is
missing, has ids its config's vocabulary has no embedding for, or (decoders) has no chat template; it
is not the pair's strong model (another model type, depth or width); or its labels are not the cell's.
"""
from __future__ import annotations

import functools
import re
import sys
import time
from pathlib import Path

from bench.core.errors import BenchError
from bench.stages.checkpoint import Student, check_student, expand, load_student, resolve

WEIGHTS = "*.safetensors"
# What a checkpoint from the Hub needs: config, tokenizer files, safetensors weights (never pickles).
HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "*.jinja", "*.tiktoken"]
PLACEHOLDERS = ("seed", "source", "cell")
NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")



# --- the cells ---------------------------------------------------------------------------------------------
def _labels_path(labels: Path, settings, seed: int, source: str) -> Path:
    from bench.stages.labels import JSONL, labels_folder

    if labels.is_file() or (labels / JSONL).is_file():
        return labels
    return labels_folder(labels, settings.protocol.name, settings.models.name, seed, source)


def _labels_mismatch(path: Path, claimed: str, digest: str, ctx, source: str, seed: int, teacher_key: str) -> str:
    from bench.stages.labels import read_provenance

    folder = path if path.is_dir() else path.parent
    made = read_provenance(folder) or {}
    cell = made.get("cell", {})
    said = f"{path} holds labels with digest {claimed[:12]}; this cell's ({source} seed {seed}) are {digest[:12]}"
    if cell and (cell.get("source"), cell.get("seed"), cell.get("models")) != (source, seed, ctx.models.name):
        return (f"{said}: they are the labels of {cell.get('source')} seed {cell.get('seed')} with pair "
                f"{cell.get('models')}. Fix: evaluate each checkpoint on the cell whose labels it was trained on")
    if made.get("teacher", {}).get("cache_key") not in (None, teacher_key):
        return (f"{said}: they were exported from teacher {made['teacher']['cache_key']}, and this cell's teacher is "
                f"now {teacher_key}: the code or platform changed since (then: {made.get('platform')}). Fix: export the "
                "labels again with bench labels, retrain on them and evaluate that checkpoint; or evaluate with the "
                "code and platform (thread count) the labels were exported with")
    return f"{said}. Fix: train on the labels bench labels writes for this cell, unchanged"


def cell_key(ctx, source: str, seed: int, name: str, params: dict, student: Student, trained_on: str) -> str:
    """Everything that decides an external cell's numbers (as RunContext.cell_key for the harness's)."""
    from bench.core.result_schema import SCHEMA_VERSION
    from bench.core.specs import stable_hash
    from bench.core.versions import CELL_CODE, code_version, platform_version

    return stable_hash({"kind": "external", "protocol_hash": ctx.protocol_hash, "models": ctx.models,
                        "revisions": ctx.revisions, "platform": platform_version(),
                        "code": code_version(CELL_CODE + ("bench.stages.evaluate", "bench.stages.checkpoint",
                                                          "bench.stages.labels") + ctx.loaders(source)),
                        "formatters": {"weak": ctx.formatter("weak").provenance(), "student": student.formatter.provenance()},
                        "data": ctx.data_fingerprint(source), "method": name, "params": params,
                        "checkpoint": student.checkpoint.record if student.checkpoint else None,
                        "adapter": student.adapter.record if student.adapter else None, "trained_on": trained_on,
                        "source": source, "seed": seed, "schema": SCHEMA_VERSION}, length=24)


def check_name(name: str, params: dict[str, str], paper: str = "") -> None:
    """The student's name, its --param settings and --paper text as a submission will hold them."""
    from bench.submissions.limits import (
        MAX_TEXT_CHARS,
        PARAM_KEY_RE,
        UNSAFE_TEXT_HELP,
        unsafe_text,
    )
    from bench.submissions.limits import NAME_RE as PARAM_VALUE_RE
    from methods import METHODS, load_plugins

    if not NAME_RE.fullmatch(name):
        raise BenchError(f"--name {name!r}: a name is letters, digits and . _ + - (at most 64, starting with a letter "
                         "or digit), e.g. --name trl-soft-bt")
    load_plugins()
    if name in METHODS:
        raise BenchError(f"--name {name!r} is a registered method; an external student needs its own name, so that the "
                         f"board never takes it for the harness's {name} (e.g. --name trl-{name})")
    for key, value in params.items():
        if not PARAM_KEY_RE.fullmatch(key) or not PARAM_VALUE_RE.fullmatch(value or "x"):
            raise BenchError(f"--param {key}={value}: parameter names are letters, digits and _, values plain text "
                             "(letters, digits and . _ + = -)")
    if unsafe_text(paper) or len(paper) > MAX_TEXT_CHARS:
        raise BenchError(f"--paper {paper[:80]!r}: {unsafe_text(paper) or 'too long'}; give {UNSAFE_TEXT_HELP}, at most "
                         f"{MAX_TEXT_CHARS} characters")


def evaluate(settings, student: str | None, revision: str | None = None, adapter: str | None = None,
             labels: Path | None = None, params: dict[str, str] | None = None, paper: str = "") -> list:
    """Score the checkpoint(s) on every cell of ``settings`` (its ``method`` is the student's name) and
    write each cell's result; returns the CellResults. ``student``/``adapter`` may hold {seed}, {source}
    and {cell}; ``labels`` is the folder bench labels wrote (its root or one cell's) or a train.jsonl."""
    from bench.core.cache import LOCKS, Cache
    from bench.core.label_digest import label_digest, labels_record
    from bench.core.locks import file_lock, lock_path
    from bench.core.result_schema import EXTERNAL_NOTE, ExternalStudent
    from bench.core.results import cell_dir, load_cell, params_slug, write_cell
    from bench.stages.context import RunContext
    from bench.stages.labels import read_rows
    from bench.stages.pipeline import (
        TEACHER_STAGES,
        cell_data,
        cell_files,
        cell_result,
        check_cells,
        student_misfit,
    )
    from bench.stages.preflight import check_files, check_folders, preflight
    from bench.stages.scorers import (
        CHECKPOINT_FIX,
        check_finite,
        score_candidate_sets,
        score_eval_sets,
        score_with_model,
    )
    from bench.stages.teacher import candidate_checks
    from bench.stages.train import TrainExample

    params = dict(params or {})
    name = settings.method
    check_name(name, params, paper)
    if student is None and adapter is None:
        raise BenchError("say what to evaluate: --student PATH_OR_HUB_ID (a reward model), or --adapter PATH (a peft "
                         "adapter on the pair's strong model, or on --student)")
    if labels is None:
        raise BenchError("say which labels the student was trained on: --labels DIR, the folder bench labels wrote "
                         "(its --out, or one cell's folder)")
    cells = settings.cells
    single = [t for t in (student, adapter) if t and not any("{" + p + "}" in t for p in PLACEHOLDERS)]
    if len(cells) > 1 and single:
        raise BenchError(f"{len(cells)} cells but one checkpoint ({single[0]}): each cell's student is trained on that "
                         "cell's labels. Fix: put {cell} (or {seed} and {source}) in --student/--adapter, e.g. "
                         "--student 'students/{cell}', or evaluate one cell (--source S --seeds N)")
    labels = Path(labels)
    if len(cells) > 1 and (labels.is_file() or (labels / "train.jsonl").is_file()):
        raise BenchError(f"--labels {labels} is one cell's labels, for {len(cells)} cells. Fix: pass the folder given "
                         "to bench labels --out, which holds every cell's")
    ctx = RunContext(settings, None, Cache(settings.cache_dir))
    slug = params_slug(name, params)
    folders = {cell: cell_dir(settings.out, settings.protocol.name, settings.models.name, slug, *cell) for cell in cells}

    # what can be checked without a teacher, for every cell before any work
    plans = {}
    for seed, source in cells:
        where = {k: expand(t, settings.protocol.name, settings.models.name, seed, source) if t else None
                 for k, t in (("student", student), ("adapter", adapter))}
        label = f"adapter {where['adapter']}" if where["adapter"] else f"checkpoint {where['student']}"
        checkpoint = resolve(where["student"], revision, "--student") if where["student"] else None
        peft = resolve(where["adapter"], None, "--adapter") if where["adapter"] else None
        checked = check_student(ctx, checkpoint, peft, label)
        path = _labels_path(labels, settings, seed, source)
        claimed = label_digest(read_rows(path))
        plans[seed, source] = (checked, path, claimed)

    def finished(seed: int, source: str):
        done = None if settings.force else load_cell(folders[seed, source])
        checked, _, claimed = plans[seed, source]
        key = cell_key(ctx, source, seed, name, params, checked, claimed)
        return (done if done is not None and done.cell_key == key else None), key

    todo = [cell for cell in cells if finished(*cell)[0] is None]
    if todo:
        preflight({"results folder (--out)": settings.out, "teacher cache (--cache-dir)": ctx.cache.root})
        check_folders({f"the cell folder of {source} seed {seed}": folders[seed, source] for seed, source in todo})
        check_files(cell_files(folders, todo))
        check_cells(ctx, todo)
    results = []
    for seed, source in cells:
        lock = lock_path(settings.out / LOCKS, folders[seed, source].relative_to(settings.out).as_posix())
        with file_lock(lock, f"cell {source} seed {seed} ({name})", collective=True):
            done, key = finished(seed, source)
            if done is not None:
                print(f"[skip] {source} seed {seed}: finished result in {folders[seed, source]}", file=sys.stderr)
                results.append(done)
                continue
            checked, path, claimed = plans[seed, source]
            started, timings = time.perf_counter(), {}
            data = cell_data(ctx, source, seed, timings)
            teacher = data.teacher
            labels_of_cell = labels_record("teacher", teacher.ordered, teacher.soft_labels)
            if claimed != labels_of_cell.digest:
                raise BenchError(_labels_mismatch(path, claimed, labels_of_cell.digest, ctx, source, seed, teacher.key))
            t = time.perf_counter()
            model, dtype = load_student(checked)
            timings["student_load"] = time.perf_counter() - t
            t = time.perf_counter()
            fmt = checked.formatter
            scorer = functools.partial(score_with_model, spec=checked.spec)
            scores = score_eval_sets(model, fmt, data.evals, ctx.models.score_batch_size, "student", scorer)
            examples = [TrainExample(fmt.encode(o.pair.prompt, o.a), fmt.encode(o.pair.prompt, o.b), q)
                        for o, q in zip(teacher.ordered, teacher.soft_labels)]
            misfit = student_misfit(model, examples, teacher.soft_labels, ctx.models.score_batch_size, scorer)
            timings["student_score"] = time.perf_counter() - t
            candidates = None
            if data.sets is not None:   # a protocol with best-of-N sets: every candidate, as bench run scores them
                t = time.perf_counter()
                candidates = score_candidate_sets(model, fmt, data.sets, data.evals, scores,
                                                  ctx.models.score_batch_size, "student", scorer)
                timings["student_candidates"] = time.perf_counter() - t
            del model
            check_finite({**scores, **candidate_checks(candidates)}, checked.label, f"{source} seed {seed}",
                         CHECKPOINT_FIX)
            external = ExternalStudent(note=EXTERNAL_NOTE,
                                       checkpoint=checked.checkpoint.record if checked.checkpoint else
                                       {"pair_strong_model": ctx.models.strong.name, **ctx.revisions["strong"]},
                                       adapter=checked.adapter.record if checked.adapter else None, trained_on=claimed)
            result, rows, candidate_rows = cell_result(
                ctx, source, seed, data, cell_key=key,
                method={"name": name, "params": params, "labels": "teacher", "trains": True,
                        "paper": paper or "not given (external training)", "origin": {"kind": "external"}},
                student_scores=scores, student={"train": {"trained": "externally, not reproduced"}, "scorer": "hf",
                                                "dtype": dtype},
                misfit=misfit, labels=labels_of_cell,
                truncated=sum(e.a.truncated + e.b.truncated for e in examples),
                formatters={"weak": ctx.formatter("weak").provenance(), "strong": fmt.provenance()},
                timings=timings, started=started, stages=TEACHER_STAGES, external=external, student_candidates=candidates)
            results.append(write_cell(folders[seed, source], result, rows, candidate_rows=candidate_rows))
    return results
