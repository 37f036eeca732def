"""``bench export SUBMISSION DIR``: a validated submission as a Hub dataset folder.

The folder holds three parquet tables and a dataset card whose header tells ``datasets`` which is
which, so ``datasets.load_dataset(DIR)`` (or the Hub id it is pushed to) reads them:

    data/scores.parquet     config ``scores`` (the default): every pair's teacher and student scores,
                            one row per seed x source x eval set x pair
    data/cells.parquet      config ``cells``: one row per seed x source -> target, with the accuracies,
                            WRG / AOG / NTS and misfit the submission's result.json files record, and the
                            target's ``role``: ``ood``, or ``far`` for a far target (ProtocolSpec.shifts),
                            which the summary reports apart from NTS
    data/summary.parquet    config ``summary``: the submission's summary and 95% intervals, one row
    data/candidates.parquet config ``candidates``, only on a protocol with best-of-N candidate sets
                            (docs/best-of-n.md): every candidate's gold grade and teacher and student
                            scores, one row per seed x source x eval set x set x candidate
    submission.json         the submission's own metadata, as validated
    README.md               the card: what the numbers are, the protocol card, the model pair, the
                            datasets' licences, and code that recomputes the summary from the scores

The submission is validated first (``bench validate``'s checks, every number recomputed); one that
does not validate is not exported. The card's code recomputes the summary's WRG, AOG and NTS from
``scores`` and, where there are candidate sets, its BoN gain ID, BoN gain OOD and BoN NTS from
``candidates``, and on a protocol with far targets its far AOG and far NTS from the ``far`` rows (a result.json
lists a far target as "ood", as the pipeline writes every target: the export gives it its role, "far", by
bench.core.protocols.far_targets, as every reader of results does). The folder is written beside ``DIR`` and
moved into place whole.
Pushing it: ``hf upload ORG/NAME DIR --repo-type dataset`` (``huggingface-cli upload`` with the same
arguments on huggingface_hub before 1.0).
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Mapping

from bench.core.errors import BenchError
from bench.core.io import atomic_write_bytes, staged_folder

CONFIGS = (("scores", "data/scores.parquet", True), ("cells", "data/cells.parquet", False),
           ("summary", "data/summary.parquet", False))
CANDIDATES = ("candidates", "data/candidates.parquet", False)   # only where the protocol has candidate sets

RECOMPUTE = '''import os

from datasets import load_dataset

DATA = os.getcwd()  # this folder (run the code in it), or the Hub id it was pushed to
scores = load_dataset(DATA, "scores", split="train").to_pandas()
# a pair is correct when r(chosen) > r(rejected); a tie counts 1/2; accuracies in points
for who in ("teacher", "student"):
    chosen, rejected = scores[f"{who}_chosen"], scores[f"{who}_rejected"]
    scores[who] = 100 * ((chosen > rejected) + 0.5 * (chosen == rejected))
acc = scores.groupby(["seed", "source", "eval_set", "role"], as_index=False)[["teacher", "student"]].mean()
own = acc[acc.role == "id"][["seed", "source", "teacher", "student"]]
cells = acc[acc.role == "ood"].merge(own, on=["seed", "source"], suffixes=("", "_id"))
cells["wrg"] = cells.student_id - cells.teacher_id                 # weak-to-strong gain, in distribution
cells["aog"] = cells.student - cells.teacher                       # gain out of distribution
cells["nts"] = cells.aog - (cells.teacher_id - cells.student_id).clip(lower=0)   # net transfer score
per_seed = cells.groupby("seed")[["wrg", "aog", "nts"]].mean()     # each seed's mean over source -> target cells
recomputed = {m: per_seed[m].mean() for m in ("wrg", "aog", "nts")}
summary = load_dataset(DATA, "summary", split="train")[0]
for metric, value in recomputed.items():
    assert abs(value - summary[metric]) < 1e-9, (metric, value, summary[metric])
print({m: round(v, 2) for m, v in recomputed.items()})
'''

# Appended to RECOMPUTE where the protocol has far targets (ProtocolSpec.shifts): their AOG and NTS, reported apart
RECOMPUTE_FAR = '''
# a far target (role "far") is scored by the same teacher and student and reported apart, never in NTS
far = acc[acc.role == "far"].merge(own, on=["seed", "source"], suffixes=("", "_id"))
far["far_aog"] = far.student - far.teacher
far["far_nts"] = far.far_aog - (far.teacher_id - far.student_id).clip(lower=0)
per_seed = far.groupby("seed")[["far_aog", "far_nts"]].mean()
recomputed = {m: per_seed[m].mean() for m in ("far_aog", "far_nts")}
for metric, value in recomputed.items():
    assert abs(value - summary[metric]) < 1e-9, (metric, value, summary[metric])
print({m: round(v, 2) for m, v in recomputed.items()})
'''

# Appended to RECOMPUTE where the protocol has candidate sets: the BoN numbers from the candidates table
RECOMPUTE_BON = '''
candidates = load_dataset(DATA, "candidates", split="train").to_pandas()
# a set earns |T & B| / |T|: T its candidates tied at the top score, B its gold-best ones (the top grade)
keys = ["seed", "source", "eval_set", "role", "set_id"]
sets = candidates.groupby(keys)
candidates["best"] = candidates.grade == sets.grade.transform("max")
for who in ("teacher", "student"):
    candidates[f"{who}_top"] = candidates[who] == sets[who].transform("max")
    candidates[f"{who}_hit"] = candidates[f"{who}_top"] & candidates.best
credit = candidates.groupby(keys, as_index=False)[["teacher_top", "teacher_hit", "student_top", "student_hit"]].sum()
for who in ("teacher", "student"):
    credit[who] = 100 * credit[f"{who}_hit"] / credit[f"{who}_top"]
bon = credit.groupby(["seed", "source", "eval_set", "role"], as_index=False)[["teacher", "student"]].mean()
own = bon[bon.role == "id"][["seed", "source", "teacher", "student"]]
cells = bon[bon.role == "ood"].merge(own, on=["seed", "source"], suffixes=("", "_id"))
cells["bon_gain_id"] = cells.student_id - cells.teacher_id
cells["bon_gain_ood"] = cells.student - cells.teacher
cells["bon_nts"] = cells.bon_gain_ood - (cells.teacher_id - cells.student_id).clip(lower=0)
bon_metrics = ("bon_gain_id", "bon_gain_ood", "bon_nts")
per_seed = cells.groupby("seed")[list(bon_metrics)].mean()
recomputed = {m: per_seed[m].mean() for m in bon_metrics}
for metric, value in recomputed.items():
    assert abs(value - summary[metric]) < 1e-9, (metric, value, summary[metric])
print({m: round(v, 2) for m, v in recomputed.items()})
'''


def configs(protocol) -> tuple[tuple[str, str, bool], ...]:
    """The export's tables: the candidates' too where ``protocol`` scores candidate sets."""
    return CONFIGS + ((CANDIDATES,) if protocol.candidates else ())


def _tables(v, protocols: Mapping | None = None) -> tuple[list[dict], list[dict], dict, list[dict]]:
    """The submission's per-pair scores, per-cell numbers, summary and (where its protocol has candidate sets)
    per-candidate scores as rows; an eval set's role is "id", "ood", or "far" for a far target of its source
    (``protocols`` add specs to the registry's, as in validation)."""
    from bench.core.protocols import far_targets
    from bench.core.results import read_cell_files
    from bench.submissions.limits import cell_folder

    meta = v.submission
    scores, cells, candidates = [], [], []
    for result in sorted(v.cells, key=lambda r: (r.seed, meta["protocol"]["name"], r.source)):
        far = far_targets(meta["protocol"]["name"], result.source, protocols)
        roles = {name: "far" if name in far else e.role for name, e in result.eval_sets.items()}
        files = read_cell_files(v.folder / cell_folder(result.seed, result.source))   # a folder's, or the store's
        for row in files.rows:
            scores.append({"seed": result.seed, "source": result.source, "category": result.category,
                           "eval_set": row["eval_set"], "role": roles[row["eval_set"]], "pair_id": row["pair_id"],
                           **{k: float(row[k]) for k in ("teacher_chosen", "teacher_rejected", "student_chosen",
                                                         "student_rejected")}})
        if result.candidates_file is not None:   # validated: the rows result.json's BoN numbers recompute from
            for row in files.candidates:
                candidates.append({"seed": result.seed, "source": result.source, "category": result.category,
                                   "eval_set": row["eval_set"], "role": roles[row["eval_set"]], "set_id": row["set_id"],
                                   "pair_id": row["pair_id"], "candidate": int(row["candidate"]),
                                   **{k: float(row[k]) for k in ("grade", "teacher", "student")}})
        own = result.eval_sets[result.source]
        checkpoint = result.external.checkpoint if result.external else None
        for target, metrics in result.metrics.items():
            cells.append({"seed": result.seed, "source": result.source, "category": result.category, "target": target,
                          "role": roles[target], "teacher_id": own.teacher_acc, "student_id": own.student_acc,
                          "teacher_ood": result.eval_sets[target].teacher_acc,
                          "student_ood": result.eval_sets[target].student_acc,
                          **metrics.model_dump(exclude_none=True),   # BoN metrics only where the protocol has them
                          **({"teacher_bon_id": own.teacher_bon, "student_bon_id": own.student_bon,
                              "teacher_bon_ood": result.eval_sets[target].teacher_bon,
                              "student_bon_ood": result.eval_sets[target].student_bon}
                             if own.teacher_bon is not None else {}),
                          "misfit": result.misfit.disagreement if result.misfit else None,
                          "labels_digest": result.labels.digest if result.labels else None,
                          "teacher_cache_key": result.teacher.get("cache_key"),
                          "checkpoint": None if checkpoint is None else
                          checkpoint.get("commit") or checkpoint.get("weights_sha256")})
    summary = {"protocol": meta["protocol"]["name"], "protocol_version": meta["protocol"]["version"],
               "protocol_hash": meta["protocol"]["hash"], "models": meta["models"]["name"],
               "method": meta["method"]["name"], "params": json.dumps(meta["method"]["params"], sort_keys=True),
               "slug": meta["slug"], "external": meta.get("external"), "submitter": meta["submitter"],
               **meta["summary"],
               **{f"{k}_ci_{end}": bounds[i] for k, bounds in meta["intervals"]["metrics"].items()
                  for i, end in enumerate(("low", "high"))}}
    return scores, cells, summary, candidates


def _card(v, protocol, license: str) -> str:
    from bench.core.card import GENERATED_NOTE, protocol_card
    from bench.core.compare import interval_text
    from bench.core.hubcard import front_matter
    from bench.core.protocols import DATASETS
    from bench.core.report import fmt, params_text

    meta = v.submission
    s, ci = meta["summary"], meta["intervals"]["metrics"]
    params = params_text(meta["method"]["params"]) or "no params"
    title = f"ShiftBench results: {meta['method']['name']} ({params}) on {meta['protocol']['name']} with {meta['models']['name']}"
    header = front_matter(license, title, ["shiftbench", "reward-modeling", "weak-to-strong", "benchmark-results"],
                          list(configs(protocol)))
    models = meta["models"]
    mark = (f"\n**{meta['external']}.** The students were trained outside ShiftBench and evaluated with "
            "`bench evaluate`: each cell records its checkpoint (the weights' sha256, or the Hub commit) and the "
            "digest of the labels it was trained on (the cell's own, checked); the scores below recompute, the "
            "training cannot be rerun from here.\n" if meta.get("external") else "")
    gain = ("wrg", "aog", "nts", "bon_gain_id", "bon_gain_ood", "bon_nts")
    shown = [("NTS", "nts"), ("AOG", "aog"), ("WRG", "wrg"), ("ID accuracy", "student_id"),
             ("OOD accuracy", "student_ood"), ("teacher ID accuracy", "teacher_id"),
             ("teacher OOD accuracy", "teacher_ood")]
    bon = protocol.candidates is not None
    if bon:   # submission.json records no BoN intervals: bench compare --metric bon-nts computes them
        shown += [("BoN NTS", "bon_nts"), ("BoN gain OOD", "bon_gain_ood"), ("BoN gain ID", "bon_gain_id")]
    rows = "\n".join(f"| {name} | {fmt(s[k], s.get(f'{k}_sd'), signed=k in gain)} | " +
                     (f"{interval_text(*ci[k], signed=k in gain)} |" if k in ci else " |")
                     for name, k in shown)
    bon_text = (f"\nBoN (best-of-{protocol.candidates}) numbers are WRG, AOG and NTS of best-of-N accuracies: "
                "the share "
                "of a test prompt's candidate set whose top-scored candidate is gold-best (a tie at the top shares the "
                "credit); their intervals are not recorded in `submission.json` (`bench compare --metric bon-nts` "
                "computes them).\n" if bon else "")
    bon_table = ("\n- `candidates`: one row per seed x source x eval set x candidate set x candidate: its `grade` (the "
                 "gold grade; the top grade is gold-best), and `teacher` and `student`, the two models' scores; "
                 "`pair_id` is the test pair whose chosen and rejected are candidates 0 and 1." if bon else "")
    far = any(protocol.far_targets_of(source) for source in protocol.sources)
    far_text = (", or `far` for a far target, a shift reported apart: its AOG and NTS are the summary's far AOG "
                "and far NTS, never in its NTS" if far else "")
    licences = "\n".join(f"| `{name}` | {DATASETS.get(name).license} |" for name in protocol.datasets)
    weak, strong = models["weak"], models["strong"]
    card = (protocol_card(protocol).replace(f"{GENERATED_NOTE}\n\n", "").replace("\n#", "\n###")
            .replace("# Protocol", "### Protocol", 1))
    return f"""{header}
# {title}

The per-pair scores behind one ShiftBench leaderboard submission (`{meta['protocol']['name']}/{meta['models']['name']}/{meta['slug']}`,
submitted by {meta['submitter']}, {meta['created_utc']}): {s['cells']} source -> target cells x {s['seeds']} seeds.
ShiftBench trains a strong student reward model on a weak teacher's soft labels and scores both on the
source dataset (ID) and on its siblings (OOD); NTS is the gain that survives the shift.
{mark}
| metric | mean ± spread over seeds | 95% interval |
|---|---|---|
{rows}

Accuracies in points; WRG = student - teacher on the source's test split, AOG = the same on a target's,
NTS = AOG - max(0, teacher ID - student ID); means over source -> target cells, then over seeds; the
interval is a hierarchical bootstrap over seeds and test pairs ({meta['intervals']['n_boot']} replicates,
seed {meta['intervals']['seed']}).
{bon_text}
## Tables

- `scores` (default): one row per seed x source x eval set x pair: `teacher_chosen`, `teacher_rejected`,
  `student_chosen`, `student_rejected` are r(chosen) and r(rejected); `role` is `id` for the source's
  own test split and `ood` for a target's{far_text}.
- `cells`: one row per seed x source -> target (its `role` as in `scores`) with the numbers the submission's cells record, the
  student's misfit to the teacher's labels, the digest of the labels it learned from, the teacher's
  cache key{', and the checkpoint (Hub commit or weights sha256)' if meta.get('external') else ''}.
- `summary`: the submission's summary and intervals, one row.{bon_table}

`submission.json` is the submission's metadata as `bench validate` checked it (model pair with the
weights' sha256 or Hub commits, code versions, the commands that made every cell).

## Recompute the summary

```python
{RECOMPUTE}{RECOMPUTE_FAR if far else ''}{RECOMPUTE_BON if bon else ''}```

With ShiftBench, `bench validate` recomputes every number of the submission (accuracies, metrics,
summary and intervals) from the per-pair scores.

## Model pair `{models['name']}`

{models.get('description', '')}

- weak teacher: `{weak['name']}` (`{weak['path']}`, layers kept: {weak.get('num_layers') or 'all'})
- strong student: `{strong['name']}` (`{strong['path']}`, layers kept: {strong.get('num_layers') or 'all'})

## Datasets and licences

The scores are ShiftBench output; the pairs they score belong to these datasets, under their licences:

| dataset | licence |
|---|---|
{licences}

## The protocol

{card}
## Push it to the Hub

```bash
hf upload ORG/NAME THIS_FOLDER --repo-type dataset
```

(`huggingface-cli upload ORG/NAME THIS_FOLDER --repo-type dataset` with huggingface_hub before 1.0;
log in first with `hf auth login`.)
"""


def export_submission(folder: Path, dest: Path, force: bool = False, protocols: Mapping | None = None,
                      model_pairs: Mapping | None = None) -> Path:
    """Write ``folder``'s submission to ``dest`` as a Hub dataset folder (module docstring)."""
    import pandas as pd

    from bench.core.hubcard import hub_license
    from bench.core.protocols import DATASETS, protocol_named
    from bench.submissions import validate_submission

    folder, dest = Path(folder), Path(dest)
    v = validate_submission(folder, protocols, model_pairs)
    if v.submission is None or not v.ok:
        raise BenchError(f"{folder} is not a valid submission, so it is not exported:\n  "
                         + "\n  ".join(map(str, v.errors[:10])) + "\nFix: bench validate it and fix what it reports")
    if dest.exists() and not force:
        raise BenchError(f"{dest} exists; pass --force to replace it, or give another folder")
    protocol = protocol_named(v.submission["protocol"]["name"], protocols)
    scores, cells, summary, candidates = _tables(v, protocols)
    license = hub_license(DATASETS.get(name).license for name in protocol.datasets)
    with staged_folder(dest, "export folder (DEST)") as staging:
        (staging / "data").mkdir()
        for (name, path, _), rows in zip(configs(protocol), (scores, cells, [summary], candidates)):
            pd.DataFrame(rows).to_parquet(staging / path, index=False)
        shutil.copyfile(folder / "submission.json", staging / "submission.json")
        atomic_write_bytes(staging / "README.md", _card(v, protocol, license).encode())
    return dest
