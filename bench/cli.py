"""``bench``: run the W2S preference-shift protocol, list what is registered, report results."""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path


def default_cache_dir() -> Path:
    if os.environ.get("SHIFTBENCH_CACHE"):
        return Path(os.environ["SHIFTBENCH_CACHE"])
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "shiftbench"


def parse_param(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--param takes key=value, got {text!r} (e.g. --param lam=1e-4)")
    return key.strip(), value.strip()


def parse_grid(text: str) -> tuple[str, list[str]]:
    key, values = parse_param(text)
    points = [v.strip() for v in values.split(",") if v.strip()]
    if not points:
        raise argparse.ArgumentTypeError(f"--grid takes key=v1,v2,..., got {text!r} (e.g. --grid lam=1e-5,1e-4)")
    return key, points


def add_run_arguments(run: argparse.ArgumentParser) -> None:
    """What `bench run` and `bench sweep` share."""
    run.add_argument("--method", help="method name (bench list methods); optional with a --method-file that defines one")
    run.add_argument("--method-file", type=Path, metavar="FILE.py",
                     help="a Python file defining a Method subclass (see docs/adding-a-method.md)")
    run.add_argument("--protocol", default="mini", help="protocol name (default: mini)")
    run.add_argument("--models", default="tiny", help="model pair name (default: tiny)")
    run.add_argument("--source", nargs="+", metavar="NAME", help="sources to run (default: every dataset of the protocol)")
    run.add_argument("--seeds", nargs="+", type=int, metavar="N",
                     help="seeds to run (default: the protocol's first seed; the full protocol lists more)")
    run.add_argument("--param", action="append", type=parse_param, default=[], metavar="KEY=VALUE",
                     help="a method parameter, repeatable (e.g. --param lam=1e-4 --param layers=mid)")
    run.add_argument("--out", type=Path, default=Path("results"), help="results folder (default: ./results)")
    run.add_argument("--cache-dir", type=Path, default=None,
                     help="teacher cache (default: $SHIFTBENCH_CACHE or ~/.cache/shiftbench)")
    run.add_argument("--force", action="store_true", help="recompute cells that already have results")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bench", description="ShiftBench: weak-to-strong reward models under preference shift.")
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="train and score one method on a protocol, cell by cell")
    add_run_arguments(run)

    sweep = sub.add_parser("sweep", help="run a method over a grid of params; each point is its own result")
    add_run_arguments(sweep)
    sweep.add_argument("--grid", action="append", type=parse_grid, default=[], metavar="KEY=V1,V2,...", required=True,
                       help="values of one param, repeatable; the sweep runs every combination "
                            "(e.g. --grid lam=1e-5,1e-4,1e-3 --grid layers=last,mid)")

    ls = sub.add_parser("list", help="list registered methods, protocols, model pairs or datasets")
    ls.add_argument("what", choices=["methods", "protocols", "models", "datasets"])

    report = sub.add_parser("report", help="one row per method from a results folder, ranked by NTS")
    report.add_argument("--out", type=Path, default=Path("results"), help="results folder (default: ./results)")
    report.add_argument("--by", choices=["category", "source"], help="one row per method and category (or source)")

    verify = sub.add_parser("verify", help="recompute every cell's accuracies and metrics from its per-pair scores")
    verify.add_argument("--out", type=Path, default=Path("results"), help="results folder (default: ./results)")
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
    from bench.protocols import MODEL_PAIRS, PROTOCOLS

    method = chosen_method(args)
    protocol = PROTOCOLS.get(args.protocol)
    models = MODEL_PAIRS.get(args.models)
    sources = resolve_sources(protocol, args.source)
    seeds = args.seeds or list(protocol.seeds[:1])
    if not args.seeds and len(protocol.seeds) > 1:
        print(f"[bench] seed {seeds[0]} of the protocol's seeds {list(protocol.seeds)}; "
              f"pass --seeds {' '.join(map(str, protocol.seeds))} for all of them", file=sys.stderr)
    return method, protocol, models, sources, seeds


def cmd_run(args: argparse.Namespace) -> int:
    from bench.pipeline import run
    from bench.report import cell_table

    method_name, protocol, models, sources, seeds = run_settings(args)
    results = run(protocol, models, method_name, dict(args.param), sources, seeds, args.out,
                  args.cache_dir or default_cache_dir(), force=args.force,
                  command=shlex.join(["bench", *sys.argv[1:]]))
    method = results[0]["method"]
    params = ", ".join(f"{k}={v}" for k, v in method["params"].items()) or "no params"
    print(f"\n{method['name']} ({params}) on {protocol.name} v{protocol.version} with {models.name}; "
          f"accuracy in points, teacher = weak model, student = strong model trained by the method")
    print(cell_table(results))
    print(f"\nresults: {args.out}/{protocol.name}/{models.name}/")
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from bench.report import method_table
    from bench.sweep import run_sweep

    method_name, protocol, models, sources, seeds = run_settings(args)
    results = run_sweep(protocol, models, method_name, dict(args.param), args.grid, sources, seeds, args.out,
                        args.cache_dir or default_cache_dir(), force=args.force,
                        command=shlex.join(["bench", *sys.argv[1:]]))
    print(f"\n{method_name} sweep on {protocol.name} v{protocol.version} with {models.name}: one row per grid point")
    print(method_table(results).to_string(index=False))
    print(f"\nresults: {args.out}/{protocol.name}/{models.name}/")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from bench.protocols import DATASETS, MODEL_PAIRS, PROTOCOLS, protocol_hash
    from methods import METHODS, describe_params, get_method_class, load_plugins, method_origin

    if args.what == "methods":
        load_plugins()
        for name in METHODS.names():
            cls = get_method_class(name)
            origin = method_origin(cls)
            where = "" if origin["kind"] == "built-in" else f" [{origin['kind']}: {origin.get('distribution') or origin.get('file')}]"
            print(f"{name:11s} {cls.summary}{where}\n{'':11s} params: {describe_params(cls)}\n{'':11s} paper: {cls.paper}")
    elif args.what == "protocols":
        for name in PROTOCOLS.names():
            p = PROTOCOLS.get(name)
            print(f"{name} v{p.version} (hash {protocol_hash(p)}): {p.description}\n"
                  f"  datasets: {', '.join(p.datasets)}; train pool {p.train_pool_size}, test {p.test_size}, "
                  f"max length {p.max_length}, seeds {list(p.seeds)}")
    elif args.what == "models":
        for name in MODEL_PAIRS.names():
            m = MODEL_PAIRS.get(name)
            defaults = "; ".join(f"{method}: " + ", ".join(f"{k}={v}" for k, v in params) for method, params in m.method_defaults)
            print(f"{name}: weak {m.weak.name} ({m.weak.path}), strong {m.strong.name} ({m.strong.path})\n"
                  f"  {m.description}\n  method defaults: {defaults or 'none'}")
    else:
        for name in DATASETS.names():
            d = DATASETS.get(name)
            print(f"{name:18s} {d.category:9s} licence: {d.license}; test split: {d.test_split}; {d.description}")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from bench.report import method_table
    from bench.results import find_cells

    table = method_table(find_cells(args.out), by=args.by)
    if table.empty:
        print(f"no finished results under {args.out}", file=sys.stderr)
        return 1
    print(table.to_string(index=False))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from bench.results import RESULT_FILE, load_cell, recompute

    folders = sorted(p.parent for p in Path(args.out).rglob(RESULT_FILE))
    if not folders:
        print(f"no results under {args.out}", file=sys.stderr)
        return 1
    bad = 0
    for folder in folders:
        if load_cell(folder) is None:
            problems = ["incomplete: result.json unreadable, wrong schema, or scores file missing or changed"]
        else:
            problems = recompute(folder)
        bad += bool(problems)
        print(f"{'FAIL' if problems else 'ok  '} {folder}" + "".join(f"\n     {p}" for p in problems))
    print(f"{len(folders) - bad} of {len(folders)} cells recompute exactly from their per-pair scores")
    return 1 if bad else 0


def main(argv: list[str] | None = None) -> int:
    from bench.errors import BenchError

    args = build_parser().parse_args(argv)
    try:
        return {"run": cmd_run, "sweep": cmd_sweep, "list": cmd_list, "report": cmd_report, "verify": cmd_verify}[args.command](args)
    except BenchError as error:
        print(f"bench: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
