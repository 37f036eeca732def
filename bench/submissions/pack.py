"""``bench submit``: finished run results packed into submissions -- grouped by method x params x
model pair x protocol, planned (refused whole when a cell is missing or doubled), written with every
command made public (``commands.public_command``), validated, then moved into place."""
from __future__ import annotations

import shutil
import sys
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from bench.core.cells import load_cells
from bench.core.errors import BenchError
from bench.core.io import atomic_write_json, sha256_file, staged_folder
from bench.core.result_schema import (
    CANDIDATES_FILE,
    EXTERNAL_NOTE,
    METHOD_SOURCE_FILE,
    RESULT_FILE,
    SCORES_FILE,
    CellResult,
)
from bench.core.results import BASELINE, load_cell, params_slug
from bench.core.specs import ModelPairSpec, ProtocolSpec
from bench.core.store import migrate_folder
from bench.submissions.check import validate_submission
from bench.submissions.commands import method_option, public_command
from bench.submissions.limits import (
    KIND,
    MAX_TEXT_CHARS,
    SCHEMA_VERSION,
    SUBMISSION_FILE,
    UNSAFE_TEXT_HELP,
    cell_folder,
    unsafe_text,
)
from bench.submissions.schema import (
    code_version,
    submission_intervals,
    submission_summary,
)


def _group_cells(paths: list[Path]) -> dict[tuple, list[tuple[Path, CellResult]]]:
    groups: dict[tuple, list[tuple[Path, CellResult]]] = defaultdict(list)
    for base in paths:
        if not Path(base).is_dir():
            raise BenchError(f"{base} is not a folder; give a results folder of `bench run` (e.g. results/ or "
                             "results/mini/tiny/naive)")
        for result_file in sorted(Path(base).rglob(RESULT_FILE)):
            result = load_cell(result_file.parent)
            if result is None:
                raise BenchError(f"{result_file.parent} is not a finished cell (result.json unreadable, another schema, "
                                 "the scores file changed, a non-finite score, or numbers that do not recompute from "
                                 "the scores: `bench verify` says which); rerun the cell with bench run (--force), "
                                 "or move it away")
            key = (result.protocol.name, result.models["name"], params_slug(result.method.name, result.method.params))
            if result.replicate and key[2] != BASELINE:
                raise BenchError(f"{result_file.parent} is replicate {result.replicate} of its cell (bench run "
                                 "--replicate: the A/A noise measurement), not a submission's run; submit the folder of "
                                 f"the method's own run (without #). Only {BASELINE}'s replicates go into a submission, "
                                 f"{BASELINE}'s, as its A/A runs")
            groups[key].append((result_file.parent, result))
    if not groups:
        raise BenchError(f"no cell results under {', '.join(map(str, paths))}; run `bench run` first")
    return groups


def models_option(models: dict) -> str:
    """The options that give a recorded model pair to ``bench run``: ``--models NAME``, or for a pair whose
    students were early-stopped (``tiny+early-stop-every2``: bench.core.specs.ModelPairSpec.early_stopped) the
    registered pair's name with ``--early-stopping`` and the recorded setting."""
    stopping = (models.get("student_train") or {}).get("early_stopping")
    if "+" not in models["name"] or not isinstance(stopping, dict):
        return f"--models {models['name']}"
    setting = ",".join(f"{key}={value}" for key, value in stopping.items())
    return f"--models {models['name'].partition('+')[0]} --early-stopping {setting}"


def _plan(cells: list[tuple[Path, CellResult]], protocol: ProtocolSpec) -> tuple[dict, dict, list[str]]:
    """The cells a submission holds, (seed, source) -> (folder, result), naive's replicates of them apart,
    (replicate, seed, source) -> (folder, result); and the problems that refuse it. A replicate's seed goes in
    whole or not at all: an A/A comparison pairs whole seeds."""
    from bench.core.protocols import protocol_hash

    if all(result.replicate for _, result in cells):
        folders = sorted({str(folder.parent.parent) for folder, _ in cells})
        return {}, {}, [f"holds only replicates ({', '.join(folders)}): give {BASELINE}'s own results folder "
                        "beside them"]
    found, problems = {}, []   # (replicate, seed, source) -> (folder, result): r = 0 is the method's own run
    for folder, result in cells:
        key = (result.replicate, result.seed, result.source)
        if result.protocol.hash != protocol_hash(protocol):
            problems.append(f"{folder}: made with protocol hash {result.protocol.hash}, {protocol.name} is "
                            f"{protocol_hash(protocol)} now: rerun it")
        elif key[1] in protocol.seed_order and key in found:
            what = f"replicate {key[0]} of seed" if key[0] else "seed"
            problems.append(f"{folder}: {what} {key[1]} {key[2]} also in {found[key][0]}: give one results folder")
        elif key[1] in protocol.seed_order:
            found[key] = (folder, result)
    chosen = {key[1:]: cell for key, cell in found.items() if not key[0]}
    seeds = protocol.submission_seeds(seed for seed, _ in chosen)   # beyond the protocol's: whole, without a gap
    missing = [f"seed {s} {d}" for s in seeds for d in protocol.sources if (s, d) not in chosen]
    if missing:
        own = next(result for _, result in cells if not result.replicate)
        problems += _missing(missing, seeds, chosen, own, protocol)
    kinds = {result.external is not None for _, result in chosen.values()}
    if len(kinds) > 1:
        problems.append("holds cells of students trained by the harness and of students trained elsewhere (bench "
                        "evaluate) under one name: give the external student another --name")
    held = {seed for seed, _ in chosen}
    whole = {(r, seed) for r, seed, _ in found
             if r and seed in held and all((r, seed, d) in found for d in protocol.sources)}
    for r, seed in sorted({key[:2] for key in found if key[0]} - whole):
        print(f"note: replicate {r} of seed {seed} is left out of {BASELINE}'s submission: it misses a source of the "
              "seed, or naive's own runs do (stopped part way?), so it corrects no run", file=sys.stderr)
    return chosen, {key: cell for key, cell in found.items() if key[:2] in whole}, problems


def _missing(missing: list[str], seeds: list[int], chosen: dict, first: CellResult, protocol: ProtocolSpec
             ) -> list[str]:
    """What refuses a submission whose seeds miss cells, with the commands that run them."""
    method = first.method
    params = " ".join(f"--param {k}={v}" for k, v in sorted(method.params.items()))
    if first.external is not None:   # a student trained elsewhere: each missing cell needs its checkpoint
        problems = [f"missing cells: {', '.join(missing)}; train a student on each one's labels (bench labels) "
                    f"and score it with bench evaluate --name {method.name} {params} --protocol "
                    f"{protocol.name} --models {first.models['name']} --source S --seeds N "
                    "--student CHECKPOINT --labels LABELS".replace("  ", " ")]
    else:
        problems = [f"missing cells: {', '.join(missing)}; run them with bench run {method_option(method)} "
                    f"{params} --protocol {protocol.name} {models_option(first.models)} "
                    f"--seeds {' '.join(map(str, seeds))}".replace("  ", " ")]
    extra = sorted({s for s, _ in chosen} - set(protocol.seeds))
    if extra:   # a comparison grown past the protocol's seeds and cut short: its seeds may also be left out
        problems.append(f"or submit the protocol's seeds {list(protocol.seeds)} alone: give bench submit a results "
                        f"folder without the cells of seed{'s' if len(extra) > 1 else ''} "
                        f"{', '.join(map(str, extra))}")
    return problems


def _one_test_split(chosen: dict, destination: Path) -> list[str]:
    """A submission's cells score one test split per eval set (its intervals pair them pair by pair):
    the cell that does not, named, with what to do; empty when they do."""
    from bench.submissions.reference import same_splits

    try:
        same_splits(load_cells(folder for folder, _ in chosen.values()), str(destination))
    except ValueError as error:
        return [f"{error}: the cells were run on different test splits (another --cap-test, --data-dir or version "
                "of the data); rerun them with one setting, or give the results folder of one run"]
    return []


def _method_source(chosen: dict) -> tuple[bytes | None, list[str]]:
    """The source of a method that is not built in, which its submission carries (METHOD_SOURCE_FILE): the
    copy each cell's folder keeps, which must be the file every cell's result records the sha256 of. None
    for a built-in method (or a student trained elsewhere); the problems, if any."""
    origins = [(folder, result.method.origin) for folder, result in chosen.values()]
    if all(origin.get("kind") in ("built-in", "external") for _, origin in origins):
        return None, []
    digests = {origin.get("sha256") for _, origin in origins}
    if len(digests) > 1:
        return None, [f"its cells ran {len(digests)} versions of the method's file: rerun them with one"]
    for folder, origin in origins:
        copy = folder / METHOD_SOURCE_FILE
        if not copy.is_file() or sha256_file(copy) != origin.get("sha256"):
            return None, [f"{folder} holds no copy of the method's source ({origin.get('file') or origin.get('module')}) "
                          "with the sha256 its result records, which a submission of a method that is not built in "
                          "carries for a reviewer to read: rerun the cell with this version of shiftbench"]
    return copy.read_bytes(), []


def _pack_result(cell_dir: Path, result: CellResult, target: Path) -> CellResult:
    """The cell's result.json as the submission holds it: the run's, with its command made public
    (a byte copy where there is nothing to replace). Returns what was written."""
    if public_command(result.command) != result.command:
        result = result.model_copy(update={"command": public_command(result.command)})
        atomic_write_json(target / RESULT_FILE, result.to_json())
    else:
        shutil.copyfile(cell_dir / RESULT_FILE, target / RESULT_FILE)
    return result


def _write(chosen: dict, controls: dict, protocol: ProtocolSpec, folder: Path, submitter: str, command: str,
           fresh_from: int | None) -> None:
    seeds = protocol.submission_seeds(s for s, _ in chosen)
    ordered = [chosen[(s, d)] for s in seeds for d in protocol.sources]
    replicated = [controls[key] for key in sorted(controls, key=lambda k: (k[0], k[1], protocol.sources.index(k[2])))
                  if key[1] in seeds]
    refs, results = [], []
    for cell_dir, result in (*ordered, *replicated):
        target = folder / cell_folder(result.seed, result.source, result.replicate)
        target.mkdir(parents=True)
        results.append(_pack_result(cell_dir, result, target))
        shutil.copyfile(cell_dir / SCORES_FILE, target / SCORES_FILE)
        refs.append({"seed": result.seed, "source": result.source,
                     "result_sha256": sha256_file(target / RESULT_FILE),
                     "scores_sha256": sha256_file(target / SCORES_FILE)})
        if result.candidates_file is not None:   # a protocol with best-of-N sets: every candidate's scores
            shutil.copyfile(cell_dir / CANDIDATES_FILE, target / CANDIDATES_FILE)
            refs[-1]["candidates_sha256"] = sha256_file(target / CANDIDATES_FILE)
        if result.replicate:
            refs[-1]["replicate"] = result.replicate
    every, results = results, results[:len(ordered)]   # the replicates are A/A runs: no summary, no interval
    first = results[0]
    atomic_write_json(folder / SUBMISSION_FILE, {
        "schema_version": SCHEMA_VERSION,
        "kind": KIND,
        "slug": params_slug(first.method.name, first.method.params),
        "method": first.method.model_dump(),
        "protocol": first.protocol.model_dump(exclude_none=True),
        "models": first.models,
        "code_version": code_version(results),
        "submitter": submitter,
        "created_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": public_command(command),
        "run_commands": sorted({r.command for r in every}),
        "cells": refs,
        "summary": submission_summary(results, {protocol.name: protocol}),
        "intervals": submission_intervals(load_cells((folder / cell_folder(r.seed, r.source) for r in results),
                                                     {protocol.name: protocol})),
        **({"external": EXTERNAL_NOTE} if first.external is not None else {}),
        **({"fresh_from": fresh_from} if fresh_from is not None else {}),
    })


def submit(paths: list[Path], out: Path, submitter: str, command: str = "", force: bool = False,
           protocols: Mapping[str, ProtocolSpec] | None = None,
           model_pairs: Mapping[str, ModelPairSpec] | None = None, fresh_from: int | None = None,
           folders: bool = False) -> list[Path]:
    """One submission per method x params x model pair x protocol found in the results ``paths``,
    written to ``out/<protocol>/<models>/<slug>/`` and validated; all or nothing. ``command`` (the
    ``bench submit`` line) and the cells' commands are stored through ``public_command``. ``fresh_from``: the
    seeds below it chose these methods, so their Δ against naive is decided on the others (SubmissionFile). The cells
    are kept as a store (bench.core.store); ``folders``: as a folder per cell instead (the layout before it)."""
    from bench.core.protocols import protocol_named

    what = unsafe_text(submitter)   # the same rule as validation's, said before anything is packed
    if what or not submitter.strip() or len(submitter) > MAX_TEXT_CHARS:
        raise BenchError(f"--submitter {submitter[:100]!r}: " + (f"contains {what}; " if what else "") +
                         f"give a plain name: {UNSAFE_TEXT_HELP}, at most {MAX_TEXT_CHARS} characters")
    plans, problems = [], []
    for (protocol_name, models, slug), cells in sorted(_group_cells(paths).items()):
        protocol = protocol_named(protocol_name, protocols)
        chosen, controls, group_problems = _plan(cells, protocol)
        problems += [f"{protocol_name}/{models}/{slug}: {p}" for p in group_problems]
        destination = Path(out) / protocol_name / models / slug
        if destination.exists() and not force:
            problems.append(f"{destination} exists; pass --force to replace it")
        plans.append((chosen, controls, protocol, destination))
    sources = []
    for chosen, _, protocol, destination in plans:
        if not chosen:   # replicates alone: said by _plan
            sources.append(None)
            continue
        problems += _one_test_split(chosen, destination)
        source, missing = _method_source(chosen)
        sources.append(source)
        problems += [f"{destination}: {p}" for p in missing]
    if problems:
        raise BenchError("nothing submitted:\n  " + "\n  ".join(problems))
    written = []
    for (chosen, controls, protocol, destination), source in zip(plans, sources):
        with staged_folder(destination, "submissions folder (--out)", replace=force) as staging:
            _write(chosen, controls, protocol, staging, submitter, command, fresh_from)
            if source is not None:
                (staging / METHOD_SOURCE_FILE).write_bytes(source)
            if not folders:   # the compact store (bench.core.store), each cell read back byte for byte first
                migrate_folder(staging)
            check = validate_submission(staging, protocols, model_pairs)
            if not check.ok:
                raise BenchError(f"the submission for {destination} does not validate:\n  " +
                                 "\n  ".join(map(str, check.errors)))
        written.append(destination)
    return written
