"""The command line's argument types (a seed, a --param, a grid, early stopping) and the argument groups
several commands share."""
from __future__ import annotations

import argparse
from pathlib import Path


def parse_param(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--param takes key=value, got {text!r} (e.g. --param lam=1e-4)")
    return key.strip(), value.strip()


def params_of(pairs) -> dict[str, str]:
    """--param KEY=VALUE pairs as a dict; a key given twice is an error, not the last one silently winning."""
    from bench.core.errors import BenchError

    params: dict[str, str] = {}
    for key, value in pairs or ():
        if key in params and params[key] != value:
            raise BenchError(f"--param {key} is given twice ({key}={params[key]} and {key}={value}): give each "
                             "parameter once (--grid KEY=V1,V2 runs several values)")
        params[key] = value
    return params


SEED_LIMIT = 2**31


def parse_seed(text: str) -> int:
    """A cell's seed: a whole number 0 <= N < 2**31, written with the digits 0-9 alone. Each stage's seed
    is derived from it in 31 bits (bench.core.data.sub_seed), and 31 bits is what every RNG a run seeds takes
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


def parse_count(text: str) -> int:
    """A count of one or more (bench reproduce --cells), written with the digits 0-9 alone."""
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise argparse.ArgumentTypeError(f"invalid count: {text!r} (a whole number of 1 or more, e.g. --cells 1)")
    return int(text)


def parse_early_stopping(text: str):
    """--early-stopping's value as a bench.core.specs.EarlyStopping: empty for its defaults, else comma-separated
    key=value settings (e.g. holdout=0.2,every=5,metric=agreement)."""
    import dataclasses

    from bench.core.errors import BenchError
    from bench.core.specs import EarlyStopping

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


def typed(value: str) -> int | float | str:
    """A --slurm value as submitit wants it: a number where it is one."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def add_cell_arguments(parser: argparse.ArgumentParser, out: str = "results", what: str = "results folder") -> None:
    """Which cells (protocol, model pair, sources, seeds), where they are written and read from: what
    `bench run`, `bench sweep`, `bench labels` and `bench evaluate` share."""
    parser.add_argument("--protocol", default="mini-v2", help="protocol name (default: mini-v2, the protocol the board "
                        "opens on; mini is v1.0, archived), or a capped one's as "
                        "--cap-train/--cap-test/--cap-length name it (mini+cap-train800-test200)")
    parser.add_argument("--models", help="model pair name (default: the protocol's reference pair, tiny-lr3e-4 for "
                        "mini-v2, tiny for mini; bench list protocols)")
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


def results_location(text: str) -> Path:
    """A results or submissions folder, or a Hub dataset (``hf://datasets/OWNER/NAME[@REVISION][/FOLDER]``, fetched
    once: bench.core.location): the local folder to read."""
    from bench.core.errors import BenchError
    from bench.core.location import results_folder

    try:
        return results_folder(text)
    except BenchError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
