"""The schema of a cell's ``result.json``: every key declared once, with what it holds (``CellResult``
and the records it is made of), and the names and columns of the files beside it. bench.core.results
writes, reads and recomputes them."""
from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1
RESULT_FILE = "result.json"
SCORES_FILE = "scores.csv.gz"
# Beside the cell's files when its method is not built in (a method file, a package's): the method's
# source, which bench submit puts into the submission for a reviewer to read (methods.method_source).
METHOD_SOURCE_FILE = "method_source.py"
SCORE_COLUMNS = ("eval_set", "pair_id", "teacher_chosen", "teacher_rejected", "student_chosen", "student_rejected")
# A protocol with candidate sets (ProtocolSpec.candidates): every candidate's teacher and student score, one row
# per candidate, a set's rows in candidate order. ``pair_id``: the eval pair a set is built from, whose chosen
# and rejected are its candidates 0 and 1 (their scores are the pair's in SCORES_FILE); empty for a set without one.
CANDIDATES_FILE = "candidates.csv.gz"
CANDIDATE_COLUMNS = ("eval_set", "set_id", "pair_id", "candidate", "grade", "teacher", "student")

Number = Annotated[float, Field(allow_inf_nan=False)]   # a JSON number: NaN and infinities are refused
ParamValue = str | int | float | bool | None


class _Schema(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)


class ProtocolRef(_Schema):
    name: str                          # e.g. "mini", or "w2s-shift-v1+cap-train200-test100" when capped
    version: str                       # the protocol's version string
    hash: str                          # bench.core.protocols.protocol_hash: the protocol and all its dataset specs
    seeding: Literal["per-source"] | None = None   # ProtocolSpec.seeding when each cell has seeds of its own (its
                                                    # runs are independent); None: a seed's sources share theirs (v1)
    looks: list[int] | None = None     # ProtocolSpec.looks, [first, last]: the seeds a paired comparison may be
                                       # decided at (bench.core.sequential); None: one fixed look
    candidates: int | None = None      # ProtocolSpec.candidates: N of the best-of-N sets every cell scores; None: none


class MethodRecord(_Schema):
    name: str                          # the registered name, e.g. "anchor"
    params: dict[str, ParamValue]      # every parameter with the value used (defaults filled in)
    labels: Literal["teacher", "gold"]  # what the student learned from
    trains: bool                       # False for rule-based methods (no student model)
    paper: str                         # the method's source, from its docstring's front matter
    origin: dict[str, Any]             # where its code came from: built-in, a package, a file; with its sha256


class EvalSetResult(_Schema):
    role: Literal["id", "ood"]         # the source's own test split, or a target's
    n_pairs: int                       # pairs scored
    teacher_acc: Number                # accuracy in points (a tie counts half)
    student_acc: Number
    # On a protocol with candidate sets (else None): the sets scored (one per test pair) and the BoN accuracy
    # in points, bench.core.metrics.bon_accuracy: the share of sets whose top-scored candidate is gold-best
    n_sets: int | None = None
    teacher_bon: Number | None = None
    student_bon: Number | None = None


class CellMetrics(_Schema):
    wrg: Number                        # Acc_student(S) - Acc_teacher(S), bench/core/metrics.py
    aog: Number                        # Acc_student(T) - Acc_teacher(T)
    nts: Number                        # AOG - max(0, Acc_teacher(S) - Acc_student(S))
    # WRG, AOG and NTS of BoN accuracies (bench.core.metrics.bon_cell_metrics), on a protocol with candidate sets
    bon_gain_id: Number | None = None  # BoN_student(S) - BoN_teacher(S)
    bon_gain_ood: Number | None = None  # BoN_student(T) - BoN_teacher(T)
    bon_nts: Number | None = None      # BoN gain OOD - max(0, BoN_teacher(S) - BoN_student(S))


class ScoresFile(_Schema):
    name: str                          # SCORES_FILE (or CANDIDATES_FILE), beside result.json
    sha256: str                        # of the file's bytes: a changed scores file makes the cell incomplete
    columns: list[str]                 # SCORE_COLUMNS (CANDIDATE_COLUMNS)


class Misfit(_Schema):
    pairs: int                         # half-B pairs measured (the first of its seeded order)
    squared: Number                    # mean (P_student(a > b) - q)^2, q the teacher's soft label
    disagreement: Number               # % of those pairs where student and teacher prefer different responses


# What the board shows beside a student trained outside the harness (bench evaluate): its per-pair
# scores recompute like any cell's, but nothing can rerun its training.
EXTERNAL_NOTE = "external training: scores recompute, training not reproduced"


class LabelsRecord(_Schema):
    kind: Literal["teacher", "gold"]   # the teacher's soft labels on half B, or its gold labels (the ceiling)
    pairs: int                         # half-B pairs the student learns from
    format: str                        # the digest's definition: bench.core.label_digest.LABEL_FORMAT
    digest: str                        # bench.core.label_digest.label_digest of those pairs, ordered by the label, with it
    stage: str | None = None           # the label stage's cache key when a label-side method made the labels
                                       # (bench/stages/label_stage.py; its pairs may be a subset of half B); None: the
                                       # teacher's (or gold) labels of every half-B pair


class ExternalStudent(_Schema):
    note: str                          # EXTERNAL_NOTE
    checkpoint: dict[str, Any]         # the reward model scored: local folder (weights' sha256 per file) or hub id and commit
    trained_on: str                    # the label digest of the data it was trained on, as its submitter declares it
                                       # (bench evaluate --labels); must equal labels.digest, the cell's own
    adapter: dict[str, Any] | None = None   # a peft adapter on it, recorded the same way; None without one


class CellResult(_Schema):
    schema_version: int                # SCHEMA_VERSION; a cell of another schema is not read
    cell_key: str                      # hash of everything that decides the numbers; a rerun skips a matching cell
    protocol: ProtocolRef
    method: MethodRecord
    models: dict[str, Any]             # the ModelPairSpec as plain JSON, each model with its resolved "revision"
    source: str                        # the dataset the student trained on (its train pool's half B)
    category: str                      # the source's category; its siblings are the targets
    seed: int                          # the cell's seed
    replicate: int = 0                 # r > 0: the student trained again with fresh randomness, same teacher and
                                       # labels (bench.core.data.stage_seed; the A/A test); its row is ``slug#r``
    derived_seeds: dict[str, int]      # the seed of each stage, bench.core.data.stage_seed(protocol, seed, source, stage)
    eval_sets: dict[str, EvalSetResult]   # the source's test split (id) and each target's (ood)
    metrics: dict[str, CellMetrics]    # per target
    datasets: dict[str, dict[str, Any]]   # per split read: where its rows came from, read, kept, dropped by reason
    formatters: dict[str, dict[str, Any]]  # weak and strong: tokenizer and template with sha256s, max length
    sizes: dict[str, int]              # train pool, halves, their prompts, truncated student sequences
    teacher: dict[str, Any]            # teacher cache key, whether reused, its training log and label stats
    student: dict[str, Any]            # the student's training log and its scorer
    misfit: Misfit | None = None       # the trained student against its teacher's labels; None when nothing trains
    labels: LabelsRecord | None = None  # what the student learns from, by digest; None in results written before it
    label_stage: dict[str, Any] | None = None   # a label-side method's label stage: cache key, reused, pairs kept, and
                                                # what the method recorded (bench/stages/label_stage.py); None without one
    external: ExternalStudent | None = None   # set by bench evaluate: a student trained outside the harness
    timings_s: dict[str, float]        # seconds per stage
    environment: dict[str, Any]        # bench.core.env.environment(): versions, git commit, device, threads, cpu
    command: str                       # the command that ran the cell (paths made local by bench submit)
    created_utc: str                   # ISO time the cell finished
    scores_file: ScoresFile | None = None   # set by write_cell, once the scores file is on disk
    candidates_file: ScoresFile | None = None   # set by write_cell on a protocol with candidate sets: CANDIDATES_FILE

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", exclude_none=True)


def read_result(data: dict[str, Any]) -> CellResult:
    """A result.json's content as a CellResult; ``ValidationError`` names every bad field."""
    return CellResult.model_validate(data)
