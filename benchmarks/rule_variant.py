"""The reference decisions under variants of the rule: each comparison's deciding interval on NTS as `bench compare`
prints it, under the rule (no control), under the control the rule applied until 2026-12-07 (naive's replicates from
bench.core.runs.VARIANT_CONTROL_FROM seeds, variances "solved"), and under a variant of that control: its "bound"
variances, or (--beta) a fixed slope.

    python benchmarks/rule_variant.py extra-seeds/mini-v2/tiny-lr3e-4 ceiling anchor-mid_lam=1.0_layers=mid \
        probe_epochs=1_lr=0.001 [--fresh-from 3] [--variances bound | --beta 0.6666666666666666]

Each METHOD is compared with naive over the folder's runs (`bench compare METHOD naive --out FOLDER`); the control and
its variant are put in place of the rule for this process only (the harness's rule is unchanged).
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import io
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def deciding_line(method: str, folder: Path, fresh_from: int) -> str:
    """The NTS line of `bench compare METHOD naive --out FOLDER`'s "all" scope: estimate, interval, decided."""
    from bench.cli import main

    argv = ["compare", method, "naive", "--out", str(folder)] + (["--fresh-from", str(fresh_from)] if fresh_from else [])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        code = main(argv)
    lines = [line for line in printed.getvalue().splitlines() if line.split()[:2] == ["all", "NTS"]]
    if code not in (0, 1) or not lines:
        raise SystemExit(f"bench {' '.join(argv)} printed no NTS line (exit {code})")
    return " ".join(lines[0].split()[2:])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("folder", type=Path)
    p.add_argument("methods", nargs="+")
    p.add_argument("--fresh-from", type=int, default=0)
    p.add_argument("--variances", default="bound", choices=("bound",))
    p.add_argument("--beta", type=float, default=None, help="a fixed slope at every look instead of the fitted one "
                   "(bench.core.runs.stratified's beta; 2/3 with the baseline's two replicates compares a method's run "
                   "with the mean of the baseline's three), in place of --variances")
    args = p.parse_args()
    from bench.core import runs

    rule, control_from = runs.stratified, runs.CONTROL_FROM
    name = args.variances if args.beta is None else f"beta {args.beta:g}"
    variants = (("the rule", control_from, rule), ("control", runs.VARIANT_CONTROL_FROM, rule),
                (name, runs.VARIANT_CONTROL_FROM, functools.partial(
                    rule, **({"variances": args.variances} if args.beta is None else {"beta": args.beta}))))
    try:
        for method in args.methods:
            print(method)
            for label, control, stratified in variants:
                runs.stratified, runs.CONTROL_FROM = stratified, control
                print(f"  {label}: {deciding_line(method, args.folder, args.fresh_from)}")
    finally:
        runs.stratified, runs.CONTROL_FROM = rule, control_from


if __name__ == "__main__":
    main()
