"""``bench``: run the W2S preference-shift protocol, list what is registered, report results."""
from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path


def parse_param(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--param takes key=value, got {text!r} (e.g. --param lam=1e-4)")
    return key.strip(), value.strip()


SEED_LIMIT = 2**31


def parse_seed(text: str) -> int:
    """A cell's seed: a whole number 0 <= N < 2**31, written with the digits 0-9 alone. Each stage's seed
    is derived from it in 31 bits (bench.data.sub_seed), and 31 bits is what every RNG a run seeds takes
    as it is (Python's, numpy's, torch's, CUDA's, vLLM's int32 seeds): a negative or larger seed would be
    wrapped or refused by one of them, so two different seeds could run the same cell. Python's int()
    also reads "+1", "1_0", " 1" and other scripts' digits ("٣" is 3): refused, so that a seed is
    written one way only, as its folder (seedN) and results name it."""
    sign, digits = ("-", text[1:]) if text.startswith("-") else ("", text)
    if not (digits.isascii() and digits.isdigit()):
        raise argparse.ArgumentTypeError(f"invalid int value: {text!r} (--seeds takes whole numbers written with the "
                                         "digits 0-9, without a sign, underscore or space, e.g. --seeds 0 1 2)")
    seed = int(text)
    if sign or not 0 <= seed < SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"seed {text} is out of range: a seed is a whole number from 0 to "
                                         f"{SEED_LIMIT - 1} (2**31 - 1); the protocols' seeds are 0, 1, 2, ...")
    return seed


def parse_early_stopping(text: str):
    """--early-stopping's value as a bench.specs.EarlyStopping: empty for its defaults, else comma-separated
    key=value settings (e.g. holdout=0.2,every=5,metric=agreement)."""
    import dataclasses

    from bench.errors import BenchError
    from bench.specs import EarlyStopping

    fields = {f.name: type(f.default) for f in dataclasses.fields(EarlyStopping)}
    values: dict[str, object] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or key not in fields:
            raise BenchError(f"--early-stopping {text!r}: {item!r} is not a setting; give any of "
                             f"{', '.join(f'{k}=' for k in fields)} separated by commas (e.g. --early-stopping "
                             "holdout=0.2,every=5), or nothing for the defaults")
        try:
            values[key] = fields[key](value)
        except ValueError:
            raise BenchError(f"--early-stopping: {key}={value!r} is not a {'whole number' if fields[key] is int else 'number'}"
                             ) from None
    return EarlyStopping(**values)


def parse_replicate(text: str) -> int:
    if not (text.isascii() and text.isdigit()) or int(text) > 9999:
        raise argparse.ArgumentTypeError(f"invalid replicate {text!r}: give a whole number from 0 to 9999 (e.g. "
                                         "--replicate 1)")
    return int(text)


def parse_grid(text: str) -> tuple[str, list[str]]:
    key, values = parse_param(text)
    points = [v.strip() for v in values.split(",") if v.strip()]
    if not points:
        raise argparse.ArgumentTypeError(f"--grid takes key=v1,v2,..., got {text!r} (e.g. --grid lam=1e-5,1e-4)")
    return key, points


def add_cell_arguments(parser: argparse.ArgumentParser, out: str = "results", what: str = "results folder") -> None:
    """Which cells (protocol, model pair, sources, seeds), where they are written and read from: what
    `bench run`, `bench sweep`, `bench labels` and `bench evaluate` share."""
    parser.add_argument("--protocol", default="mini", help="protocol name (default: mini), or a capped one's as "
                        "--cap-train/--cap-test/--cap-length name it (mini+cap-train800-test200)")
    parser.add_argument("--models", default="tiny", help="model pair name (default: tiny)")
    parser.add_argument("--source", nargs="+", metavar="NAME",
                        help="sources to run (default: every dataset of the protocol)")
    parser.add_argument("--seeds", nargs="+", type=parse_seed, metavar="N",
                        help="seeds to run, each 0 <= N < 2**31 (every RNG a run seeds takes 31 bits as they are); "
                             "default: the protocol's first seed. Any seed runs, but a leaderboard submission takes "
                             "the protocol's seeds (bench list protocols)")
    parser.add_argument("--out", type=Path, default=Path(out), help=f"{what} (default: ./{out})")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="teacher cache (default: $SHIFTBENCH_CACHE or ~/.cache/shiftbench)")
    parser.add_argument("--data-dir", type=Path, metavar="DIR",
                        help="read real datasets from local files in their original schema instead of the Hub "
                             "(layout: bench/datasets/loading.py)")
    parser.add_argument("--cap-train", type=int, metavar="N",
                        help="use at most N train-pool pairs per source (a capped protocol, named and hashed as such)")
    parser.add_argument("--cap-test", type=int, metavar="N", help="use at most N pairs per test split (as --cap-train)")
    parser.add_argument("--cap-length", type=int, metavar="N",
                        help="cut sequences to at most N tokens instead of the protocol's max length (as --cap-train)")


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    """What `bench run` and `bench sweep` share."""
    run.add_argument("--method", help="method name (bench list methods); optional with a --method-file that defines one")
    run.add_argument("--method-file", type=Path, metavar="FILE.py",
                     help="a Python file defining a Method subclass (see docs/adding-a-method.md)")
    add_cell_arguments(run)
    run.add_argument("--param", action="append", type=parse_param, default=[], metavar="KEY=VALUE",
                     help="a method parameter, repeatable (e.g. --param lam=1e-4 --param layers=mid)")
    run.add_argument("--force", action="store_true", help="recompute cells that already have results")
    run.add_argument("--scorer", choices=["hf", "vllm"], default="hf",
                     help="how the student is scored: hf (default) or vllm, for decoder reward models on a GPU "
                          "(pip install -e '.[vllm]'; docs/performance.md)")
    run.add_argument("--replicate", type=parse_replicate, default=0, metavar="R",
                     help="train each cell's student again with fresh randomness (R = 1, 2, ...) on the same split, "
                          "teacher and labels; its rows are named METHOD#R, so `bench compare naive naive#1` measures "
                          "run-to-run noise alone (the A/A test, docs/statistics.md). Default 0: the cell itself")
    run.add_argument("--early-stopping", nargs="?", const="", metavar="KEY=VALUE,...",
                     help="keep each student's best checkpoint on a held-out share of its training pairs, labelled "
                          "as it trains (the teacher's labels), never on the test splits: holdout=0.1 of the pairs, "
                          "checked every=10 steps and after the last, by metric=loss (soft-BT) or agreement. The model "
                          "pair becomes another one, named so (tiny+early-stop), with results and board rows of its own")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench", description="ShiftBench: weak-to-strong reward models under preference shift.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="train and score one method on a protocol, cell by cell")
    add_run_arguments(run)
    run.add_argument("--jobs", type=int, metavar="N",
                     help="cells at once, each in a worker process with cores/N torch threads; 1: one cell after "
                          "another in this process. Default: one per CPU core on a machine without a GPU (as many "
                          "as there are cells), else 1; SHIFTBENCH_JOBS sets the default")

    sweep = sub.add_parser("sweep", help="run a method over a grid of params; each point is its own result")
    add_run_arguments(sweep)
    sweep.add_argument("--grid", action="append", type=parse_grid, default=[], metavar="KEY=V1,V2,...", required=True,
                       help="values of one param, repeatable; the sweep runs every combination "
                            "(e.g. --grid lam=1e-5,1e-4,1e-3 --grid layers=last,mid)")
    sweep.add_argument("--executor", choices=["local", "processes", "slurm"], default="local",
                       help="where cells run: here one by one (default), in --jobs local processes, or as Slurm "
                            "jobs through submitit (pip install -e '.[slurm]'); each cell is independent and resumable")
    sweep.add_argument("--jobs", type=int, metavar="N",
                       help="cells at once (processes: default the CPU count; slurm: the array's parallelism)")
    sweep.add_argument("--slurm", action="append", type=parse_param, default=[], metavar="KEY=VALUE",
                       help="a submitit parameter, repeatable (e.g. --slurm slurm_partition=gpu --slurm timeout_min=240 "
                            "--slurm gpus_per_node=1)")
    sweep.add_argument("--slurm-folder", type=Path, default=Path("submitit"),
                       help="submitit's job files and logs (default: ./submitit)")

    labels = sub.add_parser(
        "labels", help="export each cell's student training data (half B with the teacher's soft labels) for "
                       "training a student elsewhere (docs/bring-your-own-student.md)",
        description="Export each cell's student training data: half B of the source's train pool with the teacher's "
                    "soft labels, as a datasets dataset and as JSONL in TRL's preference format, with a card and "
                    "provenance, to OUT/<protocol>/<models>/seed<N>/<source>/. The labels are the teacher's as every "
                    "teacher-label method (naive, anchor, ...) trains on them; label-side methods, which change the "
                    "labels before the student sees them, will add a --method option here with that pipeline stage.")
    add_cell_arguments(labels, out="labels", what="labels folder")
    labels.add_argument("--force", action="store_true",
                        help="replace a cell's labels folder that holds other labels (the teacher changed since)")

    evaluate = sub.add_parser(
        "evaluate", help="score a reward model trained anywhere (a checkpoint or a peft adapter) on the protocol's "
                         "cells, as a normal cell result marked external (docs/bring-your-own-student.md)",
        description="Score a reward model trained outside the harness on each cell's ID and OOD test splits, against "
                    "the cell's cached teacher, and write a normal cell result (per-pair scores, WRG/AOG/NTS) marked "
                    "as external, with the checkpoint's sha256 or hub commit and the digest of the labels it was "
                    "trained on. --student, --adapter and --labels may name each cell with {seed}, {source} (the short "
                    "name) and {cell} (<protocol>/<models>/seed<N>/<source folder>, the layout of bench labels).")
    evaluate.add_argument("--name", required=True,
                          help="the student's name on the board (not a registered method's), e.g. trl-soft-bt")
    evaluate.add_argument("--student", metavar="PATH_OR_HUB_ID",
                          help="the reward model: a folder save_pretrained wrote, or a hub id "
                               "(AutoModelForSequenceClassification, one label, safetensors); with --adapter, its base "
                               "(default: the pair's strong model)")
    evaluate.add_argument("--revision", metavar="R", help="the hub revision (branch, tag or commit) of --student")
    evaluate.add_argument("--adapter", metavar="PATH_OR_HUB_ID",
                          help="a peft adapter (task_type SEQ_CLS, head included) on --student")
    evaluate.add_argument("--labels", type=Path, required=True, metavar="DIR",
                          help="the labels the student was trained on: the --out folder of bench labels (or one cell's "
                               "folder, or its train.jsonl); refused unless they are the cell's")
    evaluate.add_argument("--param", action="append", type=parse_param, default=[], metavar="KEY=VALUE",
                          help="a setting of the external training to show with the name, repeatable (recorded as "
                               "given, e.g. --param loss=soft-bt)")
    evaluate.add_argument("--paper", default="", help="where the training method is described (shown as its paper)")
    add_cell_arguments(evaluate)
    evaluate.add_argument("--force", action="store_true", help="score cells that already have results again")

    export = sub.add_parser("export", help="write a submission's per-pair scores and summary as a Hub dataset folder "
                                           "(parquet and a dataset card; datasets.load_dataset(DIR) reads it)")
    export.add_argument("submission", type=Path, help="a submission folder (it holds submission.json)")
    export.add_argument("dest", type=Path, help="the folder to write (push it with: hf upload ORG/NAME DIR "
                                                "--repo-type dataset)")
    export.add_argument("--force", action="store_true", help="replace DEST if it exists")

    ls = sub.add_parser("list", help="list registered methods, protocols, model pairs or datasets")
    ls.add_argument("what", choices=["methods", "protocols", "models", "datasets"])
    ls.add_argument("--data-dir", type=Path, metavar="DIR",
                    help="with `datasets`: load every real dataset's splits from DIR and show rows kept and dropped")

    card = sub.add_parser("card", help="print a protocol's card: every choice that decides its numbers")
    card.add_argument("protocol", nargs="?", default="mini", help="protocol name (default: mini)")

    report = sub.add_parser("report", help="one row per method from a results folder, ranked by NTS")
    report.add_argument("--out", type=Path, default=Path("results"), help="results folder (default: ./results)")
    report.add_argument("--by", choices=["category", "source"], help="one row per method and category (or source)")

    compare = sub.add_parser("compare", help="method A against method B, paired: Δ NTS, AOG and WRG with intervals "
                                             "and p-values, from the per-pair scores")
    compare.add_argument("a", help="a method's name, or its folder name with params (anchor_lam=0.1_layers=last); "
                                   "METHOD@PAIR names its model pair, to compare across the pairs of one protocol "
                                   "that share a teacher (naive@tiny+early-stop naive@tiny)")
    compare.add_argument("b", help="the method to compare against (e.g. naive, or naive@tiny)")
    compare.add_argument("--out", type=Path, nargs="+", default=[Path("results")],
                         help="a results folder, or a submissions folder (default: ./results); several add up, e.g. "
                              "the reference seeds in submissions/mini/tiny and more seeds of the same methods")
    compare.add_argument("--by", choices=["category", "source"], help="also per category (or source)")
    compare.add_argument("--metric", choices=["nts", "bon-nts"], default="nts",
                         help="what to compare: NTS, AOG and WRG on the pairs (default), or bon-nts: BoN NTS and the BoN "
                              "gains on the best-of-N candidate sets of a protocol that has them (docs/best-of-n.md)")
    compare.add_argument("--until-decided", action="store_true",
                         help="run more seeds of both methods, a batch at a time, until their NTS difference is "
                              "decided or known to ±--precision points, or --budget is spent (a protocol seeded per "
                              "source, whose sequential boundaries keep the 95%% however early it stops; resumable)")
    compare.add_argument("--budget", type=float, default=2.0, metavar="CPU_HOURS",
                         help="with --until-decided: CPU-hours this command may spend (default 2)")
    compare.add_argument("--precision", type=float, default=1.0, metavar="POINTS",
                         help="with --until-decided: stop once the interval's half-width is at most this (default 1)")
    compare.add_argument("--batch", type=int, default=1, metavar="SEEDS", help="with --until-decided: seeds per round")
    compare.add_argument("--jobs", type=int, metavar="N", help="with --until-decided: cells at once (as bench run)")
    compare.add_argument("--cache-dir", type=Path, default=None, help="with --until-decided: the teacher cache")

    verify = sub.add_parser("verify", help="recompute every cell's accuracies and metrics from its per-pair scores")
    verify.add_argument("--out", type=Path, default=Path("results"), help="results folder (default: ./results)")

    submit = sub.add_parser("submit", help="turn finished results into leaderboard submissions (one per method x "
                                           "params x model pair x protocol)")
    submit.add_argument("results", nargs="+", type=Path,
                        help="results folders of bench run (e.g. results, or results/mini/tiny/naive)")
    submit.add_argument("--out", type=Path, default=Path("submissions"), help="submissions root (default: ./submissions)")
    submit.add_argument("--submitter", help="who submits (default: git config user.name, else the login name)")
    submit.add_argument("--force", action="store_true", help="replace submissions that already exist")

    validate = sub.add_parser("validate", help="check submissions: schema, completeness, protocol hash, and every "
                                               "number recomputed from the per-pair scores")
    validate.add_argument("paths", nargs="+", type=Path, help="a submission folder, or a folder of them")

    board = sub.add_parser("leaderboard", help="serve the leaderboard (Gradio), or write it as HTML or markdown")
    board.add_argument("--submissions", type=Path, default=Path("submissions"),
                       help="submissions root (default: ./submissions)")
    board.add_argument("--host", default="127.0.0.1", help="address to serve on (default: 127.0.0.1, this machine only)")
    board.add_argument("--port", type=int, default=7860, help="port (default: 7860)")
    board.add_argument("--html", type=Path, metavar="DIR", help="write a static page to DIR instead of serving")
    board.add_argument("--markdown", action="store_true", help="print the ranking as a markdown table instead of serving")
    board.add_argument("--only", nargs=2, metavar=("PROTOCOL", "MODELS"),
                       help="with --markdown: one protocol x model pair's ranking (e.g. --only mini tiny)")
    return parser


def resolve_sources(protocol, names: list[str] | None) -> list[str]:
    """Source names as given or without the protocol prefix ("travel" for "mini/travel")."""
    from bench.registry import Registry

    if not names:
        return list(protocol.datasets)
    choices: Registry[str] = Registry(f"source of protocol {protocol.name!r}")
    for dataset in protocol.datasets:
        short = dataset.split("/", 1)[-1]
        choices.register(dataset, dataset, aliases=(short,) if short != dataset else ())
    return [choices.canonical(name) for name in names]


def chosen_method(args: argparse.Namespace) -> str:
    """--method, or the one method a --method-file defines (registered either way)."""
    from bench.errors import BenchError
    from methods import load_method_file

    defined = load_method_file(args.method_file) if args.method_file else []
    if args.method:
        return args.method
    if len(defined) == 1:
        return defined[0]
    if defined:
        raise BenchError(f"{args.method_file} defines {', '.join(defined)}; pick one with --method")
    raise BenchError("say which method to run: --method NAME (bench list methods) or --method-file FILE.py")


def run_settings(args: argparse.Namespace):
    """The run's settings from the command line (`bench run`, `bench sweep`)."""
    return cell_settings(args, chosen_method(args))


def cell_settings(args: argparse.Namespace, method: str):
    """A command's settings from the command line, built once. The options that need resolving (names
    to specs, defaults that depend on the protocol) are resolved here; every other option is copied by
    its name, so a new one needs only its field in RunSettings and its argument in the parser."""
    import dataclasses

    from bench.errors import BenchError
    from bench.protocols import PROTOCOLS, model_pair_from_cli, protocol_named
    from bench.settings import RunSettings, default_cache_dir

    if args.data_dir is not None and not args.data_dir.is_dir():
        raise BenchError(f"--data-dir {args.data_dir}: no such folder; its layout is in bench/datasets/loading.py")
    protocol = protocol_named(args.protocol)
    caps = (args.cap_train, args.cap_test, args.cap_length)
    if protocol.name not in PROTOCOLS and any(cap is not None for cap in caps):
        raise BenchError(f"--protocol {args.protocol} is capped already: give the caps on the protocol it caps "
                         f"({args.protocol[:args.protocol.rindex('+cap-')]}) instead")
    protocol = protocol.capped(*caps)   # refuses caps below the minimums (bench.specs.MIN_CAP_PAIRS, MIN_CAP_LENGTH)
    if not args.seeds and len(protocol.seeds) > 1:
        print(f"[bench] seed {protocol.seeds[0]} of the protocol's seeds {list(protocol.seeds)}; "
              f"pass --seeds {' '.join(map(str, protocol.seeds))} for all of them", file=sys.stderr)
    foreign = [seed for seed in dict.fromkeys(args.seeds or ()) if seed not in protocol.seeds]
    if foreign:  # allowed (a study may want more seeds), but said: bench submit leaves them out
        print(f"[bench] seed{'s' if len(foreign) > 1 else ''} {', '.join(map(str, foreign))} not among "
              f"{protocol.name}'s seeds {list(protocol.seeds)}: run and reported, but bench submit takes only the "
              "protocol's seeds", file=sys.stderr)
    models = model_pair_from_cli(args.models)
    check_model_folders(models)
    if getattr(args, "early_stopping", None) is not None:   # bench run and sweep; labels and evaluate train no student
        models = models.early_stopped(parse_early_stopping(args.early_stopping))
    resolved = {"protocol": protocol, "models": models, "method": method,
                "params": dict(getattr(args, "param", ())), "sources": tuple(resolve_sources(protocol, args.source)),
                "seeds": tuple(args.seeds or ()), "cache_dir": args.cache_dir or default_cache_dir(),
                "command": shlex.join(["bench", *sys.argv[1:]])}
    copied = {f.name: getattr(args, f.name) for f in dataclasses.fields(RunSettings)
              if f.name not in resolved and hasattr(args, f.name)}
    return RunSettings(**resolved, **copied)


def check_model_folders(models) -> None:
    """A model given as a local folder must be a model folder (config.json naming its model_type, and
    weights), checked before any work: transformers would stop with a traceback mid-run otherwise
    (e.g. --models weak=DIR,strong=DIR with DIR a folder of other files)."""
    import json

    from bench.errors import BenchError

    for role in ("weak", "strong"):
        spec = getattr(models, role)
        folder = Path(spec.path) if spec.path and not spec.path_resolver else None
        if folder is None or not folder.is_dir():
            continue   # a hub id (or a packaged model): loaded, and its errors explained, by bench.models
        try:
            config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
            weights = [p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin")]
        except (OSError, ValueError):   # unreadable, not UTF-8, not JSON
            config, weights = None, []
        if not isinstance(config, dict) or "model_type" not in config or not weights:
            lacks = ("a config.json naming its model_type" if not isinstance(config, dict) or "model_type" not in config
                     else "weights (*.safetensors or *.bin)")
            raise BenchError(f"--models: {role}={spec.path} is a folder without {lacks}, so not a model folder. Fix: "
                             "give a folder written by save_pretrained (config.json, tokenizer and weights), or a hub "
                             "id (org/name)")


def cmd_run(args: argparse.Namespace) -> int:
    from bench.errors import BenchError
    from bench.distributed import launched
    from bench.executors import auto_jobs, make_executor
    from bench.pipeline import run
    from bench.report import cell_table, params_text

    settings = run_settings(args)
    if args.jobs is not None and args.jobs < 1:
        raise BenchError(f"--jobs {args.jobs}: give the number of cells to run at once, 1 or more")
    if args.jobs and args.jobs > 1 and launched():
        raise BenchError(f"--jobs {args.jobs} under a launcher (accelerate launch, torchrun): the launch already runs "
                         "processes; drop --jobs, or run bench run without the launcher")
    jobs = args.jobs or auto_jobs()
    executor = make_executor("processes", jobs=jobs) if jobs > 1 else None
    if executor is not None and len(settings.cells) > 1:
        from bench.sweep import run_parallel

        print(f"[run] {len(settings.cells)} cells, up to {jobs} at a time in worker processes with {executor.threads} "
              "torch thread(s) each (--jobs 1: one after another in this process)", file=sys.stderr)
        results = run_parallel(settings, executor)
    else:
        if executor is not None:   # one cell: here, with the threads a worker would have, so that its key is the same
            import torch

            torch.set_num_threads(executor.threads)
        results = run(settings)
    method = results[0].method
    print(f"\n{method.name} ({params_text(method.params) or 'no params'}) on {settings.protocol.name} "
          f"v{settings.protocol.version} with {settings.models.name}; "
          f"accuracy in points, teacher = weak model, student = strong model trained by the method")
    print(cell_table(results))
    print(f"\nresults: {settings.out}/{settings.protocol.name}/{settings.models.name}/")
    return 0


def typed(value: str) -> int | float | str:
    """A --slurm value as submitit wants it: a number where it is one."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def cmd_sweep(args: argparse.Namespace) -> int:
    from bench.executors import make_executor
    from bench.report import method_table
    from bench.sweep import run_sweep

    settings = run_settings(args)
    options = ({"folder": args.slurm_folder, "options": {k: typed(v) for k, v in args.slurm}}
               if args.executor == "slurm" else {})
    results = run_sweep(settings, args.grid, make_executor(args.executor, jobs=args.jobs, **options))
    print(f"\n{settings.method} sweep on {settings.protocol.name} v{settings.protocol.version} with "
          f"{settings.models.name}: one row per grid point")
    print(method_table(results).to_string(index=False))
    print(f"\nresults: {settings.out}/{settings.protocol.name}/{settings.models.name}/")
    return 0


def cmd_labels(args: argparse.Namespace) -> int:
    from bench.labels import export_labels

    settings = cell_settings(args, "naive")   # the labels of the teacher-label methods, naive's among them
    for folder in export_labels(settings, force=args.force):
        print(f"labels: {folder}")
    print(f"\ntrain a student on each cell's train.jsonl (or dataset/), then: bench evaluate --name NAME "
          f"--protocol {settings.protocol.name} --models {settings.models.name} --student 'STUDENTS/{{cell}}' "
          f"--labels {args.out} (docs/bring-your-own-student.md)")
    return 0


def cmd_evaluate(args: argparse.Namespace) -> int:
    from bench.evaluate import evaluate
    from bench.report import cell_table

    settings = cell_settings(args, args.name)
    results = evaluate(settings, args.student, revision=args.revision, adapter=args.adapter, labels=args.labels,
                       params=dict(args.param), paper=args.paper)
    print(f"\n{args.name} (external training: scores recompute, training not reproduced) on "
          f"{settings.protocol.name} v{settings.protocol.version} with {settings.models.name}; accuracy in points, "
          "teacher = weak model, student = the checkpoint")
    print(cell_table(results))
    print(f"\nresults: {settings.out}/{settings.protocol.name}/{settings.models.name}/")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from bench.export import export_submission

    dest = export_submission(args.submission, args.dest, force=args.force)
    print(f"exported: {dest} (datasets.load_dataset({str(dest)!r}) reads it; push it with "
          f"hf upload ORG/NAME {dest} --repo-type dataset)")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from bench.catalog import print_registered

    print_registered(args.what, args.data_dir)
    return 0


def cmd_card(args: argparse.Namespace) -> int:
    from bench.card import protocol_card
    from bench.protocols import protocol_named

    print(protocol_card(protocol_named(args.protocol)), end="")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from bench.compare import cells_under, decision_rule, decision_table
    from bench.report import method_table
    from bench.results import RESULT_FILE, find_cells
    from bench.stats import Board, bon_view

    results = find_cells(args.out)
    table = method_table(results, by=args.by)
    if table.empty:
        print(f"no finished results under {args.out}", file=sys.stderr)
        return 1
    print(table.to_string(index=False))
    unfinished = sum(1 for _ in Path(args.out).rglob(RESULT_FILE)) - len(results)
    if unfinished:  # never shown: an edited or damaged cell is not a result
        print(f"\n{unfinished} cells under {args.out} are left out: incomplete, or their numbers do not recompute "
              f"from their scores (bench verify --out {args.out} says which)", file=sys.stderr)
    for (protocol, models), cells in cells_under(args.out).items():
        try:
            board = Board(cells)
        except ValueError as error:   # methods run on different seeds or sources: no paired comparison
            print(f"\n{protocol}/{models}: no intervals ({error})")
            continue
        print(f"\n{protocol}/{models}: 95% intervals over {len(board.seeds)} seeds and the test pairs; Δ vs naive is "
              f"paired, {decision_rule(board)}")
        print(decision_table(board).to_string(index=False, float_format=lambda v: f"{v:+.2f}"))
        if all(c.bon for c in cells):   # a protocol with best-of-N sets: the same table on them
            print(decision_table(Board(bon_view(cells)), metric="bon-nts").to_string(
                index=False, float_format=lambda v: f"{v:+.2f}"))
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from bench.compare import board_for, comparison_table, decision_rule
    from bench.stats import BOOTSTRAP_SEED

    if args.until_decided:
        from bench.decide import until_decided
        from bench.errors import BenchError

        if args.metric != "nts":
            raise BenchError(f"--until-decided decides on NTS; drop --metric {args.metric}, or compare without it")
        return until_decided(args.out[0] if len(args.out) == 1 else args.out, args.a, args.b,
                             budget_hours=args.budget, precision=args.precision, batch=args.batch,
                             jobs=args.jobs or 1, cache_dir=args.cache_dir)

    board, (a, b) = board_for(args.out, [args.a, args.b], args.metric)
    print(f"{a} − {b}, paired: the same seeds, teacher and test pairs on both sides ({len(board.seeds)} seeds, "
          f"{board.resamples.n} bootstrap replicates, seed {BOOTSTRAP_SEED}); a difference is {decision_rule(board)}")
    print(comparison_table(board, a, b, args.by, args.metric).to_string(index=False))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from bench.results import RESULT_FILE, SCORES_FILE, recompute_folder

    # a scores file without its result.json is a cell cut off mid-write: report it too
    folders = sorted({p.parent for name in (RESULT_FILE, SCORES_FILE) for p in Path(args.out).rglob(name)})
    if not folders:
        print(f"no results under {args.out}", file=sys.stderr)
        return 1
    bad = 0
    for folder in folders:
        problems = recompute_folder(folder)
        bad += bool(problems)
        print(f"{'FAIL' if problems else 'ok  '} {folder}" + "".join(f"\n     {p}" for p in problems))
    print(f"{len(folders) - bad} of {len(folders)} cells recompute exactly from their per-pair scores")
    return 1 if bad else 0


def default_submitter() -> str:
    import getpass
    import subprocess

    try:
        name = subprocess.run(["git", "config", "user.name"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        name = ""
    return name or getpass.getuser()


def cmd_submit(args: argparse.Namespace) -> int:
    from bench.submissions import submit

    written = submit(args.results, args.out, args.submitter or default_submitter(),
                     command=shlex.join(["bench", *sys.argv[1:]]), force=args.force)
    for folder in written:
        print(f"submitted: {folder} (bench validate {folder} passes)")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from bench.submissions import validate_tree

    validations = [v for path in args.paths for v in validate_tree(path)]
    if not validations:
        print(f"no submission.json under {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 1
    for v in validations:
        print(f"{'ok  ' if v.ok else 'FAIL'} {v.folder}" + "".join(f"\n     error: {p}" for p in v.errors)
              + "".join(f"\n     warning: {p}" for p in v.warnings))
    passed = sum(v.ok for v in validations)
    print(f"{passed} of {len(validations)} submissions pass: complete, on the registered protocol, and every "
          "number recomputes from the per-pair scores")
    return 0 if passed == len(validations) else 1


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from bench.errors import BenchError
    from leaderboard import core

    if not args.submissions.is_dir():
        raise BenchError(f"no submissions folder at {args.submissions}; pass --submissions DIR (run from the "
                         "repository root for the reference submissions)")
    if args.only and not args.markdown:
        raise BenchError("--only chooses the rows of --markdown; the page and the app show every protocol and "
                         "model pair, with filters")
    if args.markdown or args.html:
        board = core.load_board(args.submissions)
        if args.html:
            from leaderboard.static import write_site

            print(f"wrote {write_site(board, args.html)}", file=sys.stderr)
        if args.markdown:
            protocol, models = args.only or (None, None)
            groups = sorted({(v.submission["protocol"]["name"], v.submission["models"]["name"]) for v in board.entries})
            if args.only and tuple(args.only) not in groups:
                raise BenchError(f"--only {protocol} {models}: no submission of that protocol and model pair under "
                                 f"{args.submissions}; there are: {', '.join(' '.join(g) for g in groups) or 'none'}")
            print(core.markdown(board, protocol=protocol, models=models))
        return 0
    from leaderboard.app import serve

    serve(args.submissions, args.host, args.port)
    return 0


def main(argv: list[str] | None = None) -> int:
    from bench.errors import BenchError, CellsFailedError

    args = build_parser().parse_args(argv)
    try:
        return {"run": cmd_run, "sweep": cmd_sweep, "labels": cmd_labels, "evaluate": cmd_evaluate, "export": cmd_export,
                "list": cmd_list, "card": cmd_card, "report": cmd_report, "compare": cmd_compare, "verify": cmd_verify,
                "submit": cmd_submit, "validate": cmd_validate, "leaderboard": cmd_leaderboard}[args.command](args)
    except CellsFailedError as error:  # the run went on past these cells: exit 1, not the bad-input 2
        print(f"bench: {error}", file=sys.stderr)
        return 1
    except BenchError as error:
        print(f"bench: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
