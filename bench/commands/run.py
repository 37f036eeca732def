"""The commands that train and score: ``bench run``, ``sweep``, ``labels``, ``evaluate`` and ``export``."""
from __future__ import annotations

import argparse

from bench.commands.args import typed
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
    archived(settings.protocol.name)
    return 0


def archived(protocol: str) -> None:
    """After cells of an archived protocol, say so and what replaces it (the quick start's default, mini, is one)."""
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
                       params=dict(args.param), paper=args.paper)
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
