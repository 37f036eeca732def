"""A command's settings from its command line: names resolved to specs, defaults that depend on the
protocol, local model folders checked before any work (bench.core.settings.RunSettings, built once)."""
from __future__ import annotations

import argparse
import math
import shlex
import sys
from pathlib import Path

from bench.commands.args import params_of, parse_early_stopping


def resolve_sources(protocol, names: list[str] | None) -> list[str]:
    """Source names as given or without the protocol prefix ("travel" for "mini/travel")."""
    from bench.core.registry import Registry

    if not names:
        return list(protocol.sources)
    choices: Registry[str] = Registry(f"source of protocol {protocol.name!r}")
    for dataset in protocol.sources:
        short = dataset.split("/", 1)[-1]
        choices.register(dataset, dataset, aliases=(short,) if short != dataset else ())
    return [choices.canonical(name) for name in names]


def chosen_method(args: argparse.Namespace) -> str:
    """--method, or the one method a --method-file defines (registered either way)."""
    from bench.core.errors import BenchError
    from methods import load_method_file

    defined = load_method_file(args.method_file) if args.method_file else []
    if args.method:
        return args.method
    if len(defined) == 1:
        return defined[0]
    if defined:
        raise BenchError(f"{args.method_file} defines {', '.join(defined)}; pick one with --method")
    raise BenchError("say which method to run: --method NAME (bench list methods) or --method-file FILE.py")


MIN_STUDENT_STEPS = 20   # below this the student's loss barely leaves log 2 on mini (2 steps at --cap-train 64: 0.693)


def student_steps(protocol, models) -> int:
    """About how many optimiser steps a student takes: half B (half of the train pool), less what early stopping holds
    out, in batches, per epoch."""
    train = models.student_train
    held = train.early_stopping.holdout if train.early_stopping is not None else 0.0
    return math.ceil(protocol.train_pool_size / 2 * (1 - held) / train.batch_size) * train.epochs


def warn_few_steps(protocol, models) -> None:
    """Say so, by name, where the protocol's train pool (a --cap-train) leaves the student too few steps to learn."""
    steps = student_steps(protocol, models)
    if steps < MIN_STUDENT_STEPS:
        train = models.student_train
        least = math.ceil(MIN_STUDENT_STEPS / train.epochs) * train.batch_size * 2
        print(f"[bench] warning: {protocol.name} leaves the student about {steps} training step"
              f"{'s' if steps != 1 else ''} (half of a {protocol.train_pool_size}-pair train pool, batches of "
              f"{train.batch_size}, {train.epochs} epoch{'s' if train.epochs != 1 else ''}), under {MIN_STUDENT_STEPS}: "
              f"its loss hardly moves from log 2, and its numbers say little about the method. A train pool of "
              f"{least} pairs or more (--cap-train {least}, or no cap) gives it {MIN_STUDENT_STEPS}", file=sys.stderr)


def run_settings(args: argparse.Namespace):
    """The run's settings from the command line (`bench run`, `bench sweep`): the commands that train students."""
    settings = cell_settings(args, chosen_method(args))
    warn_few_steps(settings.protocol, settings.models)
    return settings


def cell_settings(args: argparse.Namespace, method: str):
    """A command's settings from the command line, built once. The options that need resolving (names
    to specs, defaults that depend on the protocol) are resolved here; every other option is copied by
    its name, so a new one needs only its field in RunSettings and its argument in the parser."""
    import dataclasses

    from bench.core.errors import BenchError
    from bench.core.protocols import PROTOCOLS, model_pair_from_cli, protocol_named
    from bench.core.settings import RunSettings, default_cache_dir

    if args.data_dir is not None and not args.data_dir.is_dir():
        raise BenchError(f"--data-dir {args.data_dir}: no such folder; its layout is in bench/datasets/loading.py")
    protocol = protocol_named(args.protocol)
    caps = (args.cap_train, args.cap_test, args.cap_length)
    if protocol.name not in PROTOCOLS and any(cap is not None for cap in caps):
        raise BenchError(f"--protocol {args.protocol} is capped already: give the caps on the protocol it caps "
                         f"({args.protocol[:args.protocol.rindex('+cap-')]}) instead")
    protocol = protocol.capped(*caps)   # refuses caps below the minimums (bench.core.specs.MIN_CAP_PAIRS, MIN_CAP_LENGTH)
    if not args.seeds and len(protocol.seeds) > 1:
        print(f"[bench] seed {protocol.seeds[0]} of the protocol's seeds {list(protocol.seeds)}; "
              f"pass --seeds {' '.join(map(str, protocol.seeds))} for all of them", file=sys.stderr)
    foreign = [seed for seed in dict.fromkeys(args.seeds or ()) if seed not in protocol.seed_order]
    if foreign:  # allowed (a study may want more seeds), but said: bench submit leaves them out
        print(f"[bench] seed{'s' if len(foreign) > 1 else ''} {', '.join(map(str, foreign))} not among "
              f"{protocol.name}'s {protocol.seeds_text}: run and reported, but bench submit takes only the "
              "protocol's seeds", file=sys.stderr)
    models = model_pair_from_cli(args.models or protocol.models or "tiny")
    check_model_folders(models)
    if getattr(args, "early_stopping", None) is not None:   # bench run and sweep; labels and evaluate train no student
        models = models.early_stopped(parse_early_stopping(args.early_stopping))
    resolved = {"protocol": protocol, "models": models, "method": method,
                "params": params_of(getattr(args, "param", ())), "sources": tuple(resolve_sources(protocol, args.source)),
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

    from bench.core.errors import BenchError

    for role in ("weak", "strong"):
        spec = getattr(models, role)
        folder = Path(spec.path) if spec.path and not spec.path_resolver else None
        if folder is None or not folder.is_dir():
            continue   # a hub id (or a packaged model): loaded, and its errors explained, by bench.stages.models
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
