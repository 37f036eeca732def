"""The commands that train and score: ``bench run``, ``sweep``, ``labels``, ``evaluate`` and ``export``."""
from __future__ import annotations

import argparse
from pathlib import Path

from bench.commands.args import params_of, typed
from bench.commands.settings import cell_settings, run_settings


def cmd_run(args: argparse.Namespace) -> int:
    from bench.core.distributed import launched
    from bench.core.errors import BenchError
    from bench.core.report import cell_table, params_text
    from bench.stages.executors import auto_jobs
    from bench.stages.sweep import run_jobs

    settings = run_settings(args)
    if args.jobs is not None and args.jobs < 1:
        raise BenchError(f"--jobs {args.jobs}: give the number of cells to run at once, 1 or more")
    if args.jobs and args.jobs > 1 and launched():
        raise BenchError(f"--jobs {args.jobs} under a launcher (accelerate launch, torchrun): the launch already runs "
                         "processes; drop --jobs, or run bench run without the launcher")
    results = run_jobs(settings, args.jobs or auto_jobs())
    method = results[0].method
    print(f"\n{method.name} ({params_text(method.params) or 'no params'}) on {settings.protocol.name} "
          f"v{settings.protocol.version} with {settings.models.name}; "
          f"accuracy in points, teacher = weak model, student = strong model trained by the method")
    print(cell_table(results))
    print(f"\nresults: {settings.out}/{settings.protocol.name}/{settings.models.name}/")
    line = against_reference(results, settings.protocol.name, settings.models.name, settings.out)
    if line:
        print(line)
    archived(settings.protocol.name)
    return 0


def reference_folder(protocol: str, models: str) -> Path:
    """Naive's reference submission of a protocol x model pair in this checkout (submissions/, beside the package)."""
    from bench.core.results import BASELINE

    return Path(__file__).resolve().parents[2] / "submissions" / protocol / models / BASELINE


def against_reference(results: list, protocol: str, models: str, out: Path) -> str | None:
    """After a run, its NTS against naive's reference cells of the same seeds and sources, where the checkout holds
    naive's reference submission of the protocol and model pair and every cell ran on the same teacher (its teacher
    accuracies equal the reference's): the difference, and that one look decides nothing, with the command that
    does. None for naive itself, without a reference, or where the teachers differ."""
    from bench.core.report import cell_rows
    from bench.core.result_schema import CellResult
    from bench.core.results import BASELINE, params_slug
    from bench.core.store import StoreError, is_store, load_store

    method = results[0].method.name
    folder = reference_folder(protocol, models)
    if method == BASELINE or not is_store(folder):
        return None
    try:
        store = load_store(folder)
        reference = {(r.seed, r.source): r for r in map(CellResult.model_validate_json, store.results) if not r.replicate}
    except (StoreError, ValueError):
        return None
    paired = [(r, reference.get((r.seed, r.source))) for r in results]
    if not paired or any(ref is None or {k: e.teacher_acc for k, e in ref.eval_sets.items()}
                         != {k: e.teacher_acc for k, e in r.eval_sets.items()} for r, ref in paired):
        return None   # cells the reference does not hold, or another teacher (other code or CPU kernels)
    mine, theirs = cell_rows([r for r, _ in paired]), cell_rows([ref for _, ref in paired])
    keys = ["seed", "source", "target"]
    joined = mine.merge(theirs, on=keys, suffixes=("", "_naive"))
    delta = float((joined["nts"] - joined["nts_naive"]).mean())
    seeds = sorted({r.seed for r in results})
    where = Path("submissions") / protocol / models / BASELINE
    first = results[0].method
    file = first.origin.get("file") if first.origin.get("kind") == "file" else None
    seeds_text = " ".join(map(str, seeds))
    return (f"Δ NTS vs naive's reference cells of seed{'s' if len(seeds) > 1 else ''} {seeds_text} "
            f"({where.as_posix()}): {delta:+.2f} points over {len(joined)} source → target cells, same teacher. A few "
            "seeds decide nothing (two runs of one method differ by several points of NTS). To decide: `bench run "
            f"--method naive --seeds {seeds_text}` beside it, then `bench compare {params_slug(first.name, first.params)} "
            f"naive --out {Path(out).as_posix()}/{protocol}/{models} --until-decided"
            + (f" --method-file {file}" if file else "")
            + "`, which runs both, seed after seed, until the paired interval decides (docs/statistics.md).")


def archived(protocol: str) -> None:
    """After cells of an archived protocol (mini, run with --protocol mini), say so and what replaces it."""
    from bench.core.protocols import archived_note, replaced_by

    if successor := replaced_by(protocol):
        print(f"note: {archived_note(protocol)}; --protocol {successor} runs the current one")


def cmd_sweep(args: argparse.Namespace) -> int:
    from bench.core.report import left_out_note, method_table
    from bench.stages.executors import make_executor
    from bench.stages.sweep import run_sweep

    settings = run_settings(args)
    options = ({"folder": args.slurm_folder, "options": {k: typed(v) for k, v in args.slurm}}
               if args.executor == "slurm" else {})
    results = run_sweep(settings, args.grid, make_executor(args.executor, jobs=args.jobs, **options))
    print(f"\n{settings.method} sweep on {settings.protocol.name} v{settings.protocol.version} with "
          f"{settings.models.name}: one row per grid point")
    table = method_table(results)
    print(table.to_string(index=False) + left_out_note(table))
    print(f"\nresults: {settings.out}/{settings.protocol.name}/{settings.models.name}/")
    archived(settings.protocol.name)
    return 0


def cmd_labels(args: argparse.Namespace) -> int:
    from bench.stages.labels import export_labels

    settings = cell_settings(args, "naive")   # the labels of the teacher-label methods, naive's among them
    for folder in export_labels(settings, force=args.force):
        print(f"labels: {folder}")
    print(f"\ntrain a student on each cell's train.jsonl (or dataset/), then: bench evaluate --name NAME "
          f"--protocol {settings.protocol.name} --models {settings.models.name} --student 'STUDENTS/{{cell}}' "
          f"--labels {args.out} (docs/bring-your-own-student.md)")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from bench.core.report import cell_table
    from bench.stages.evaluate import evaluate

    settings = cell_settings(args, args.name)
    results = evaluate(settings, args.student, revision=args.revision, adapter=args.adapter, labels=args.labels,
                       params=params_of(args.param), paper=args.paper)
    print(f"\n{args.name} (external training: scores recompute, training not reproduced) on "
          f"{settings.protocol.name} v{settings.protocol.version} with {settings.models.name}; accuracy in points, "
          "teacher = weak model, student = the checkpoint")
    print(cell_table(results))
    print(f"\nresults: {settings.out}/{settings.protocol.name}/{settings.models.name}/")
    archived(settings.protocol.name)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from bench.commands.export import export_submission

    dest = export_submission(args.submission, args.dest, force=args.force)
    print(f"exported: {dest} (datasets.load_dataset({str(dest)!r}) reads it; push it with "
          f"hf upload ORG/NAME {dest} --repo-type dataset)")
    return 0
