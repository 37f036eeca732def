"""``bench``: run the W2S preference-shift protocol, list what is registered, report results."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.commands.args import (
    add_cell_arguments,
    add_run_arguments,
    parse_count,
    parse_grid,
    parse_param,
    parse_seed,
    results_location,
)
from bench.commands.board import cmd_leaderboard, cmd_submit, cmd_validate
from bench.commands.migrate import add_parser as add_migrate_parser
from bench.commands.migrate import cmd_migrate
from bench.commands.read import cmd_card, cmd_compare, cmd_list, cmd_report, cmd_reproduce, cmd_verify
from bench.commands.run import cmd_evaluate, cmd_export, cmd_labels, cmd_run, cmd_sweep


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
    card.add_argument("protocol", nargs="?", default="mini-v2", help="protocol name (default: mini-v2)")

    report = sub.add_parser("report", help="one row per method from a results folder, ranked by NTS")
    report.add_argument("--out", type=results_location, default=Path("results"),
                        help="results folder, or a Hub dataset hf://datasets/OWNER/NAME[@REVISION][/FOLDER] "
                             "(default: ./results)")
    report.add_argument("--by", choices=["category", "source"], help="one row per method and category (or source)")

    compare = sub.add_parser("compare", help="method A against method B, paired: Δ NTS, AOG and WRG with intervals "
                                             "and p-values, from the per-pair scores")
    compare.add_argument("a", help="a method's name, or its folder name with params (anchor_lam=0.1_layers=last); "
                                   "METHOD@PAIR names its model pair, to compare across the pairs of one protocol "
                                   "that share a teacher (naive@tiny+early-stop naive@tiny)")
    compare.add_argument("b", help="the method to compare against (e.g. naive, or naive@tiny)")
    compare.add_argument("--out", type=results_location, nargs="+", default=[Path("results")],
                         help="a results folder, or a submissions folder, or a Hub dataset hf://datasets/OWNER/NAME"
                              "[@REVISION][/FOLDER] (default: ./results); several add up, e.g. "
                              "the reference seeds in submissions/mini/tiny and more seeds of the same methods")
    compare.add_argument("--by", choices=["category", "source"], help="also per category (or source)")
    compare.add_argument("--metric", choices=["nts", "bon-nts"], default="nts",
                         help="what to compare: NTS, AOG and WRG on the pairs (default), or bon-nts: BoN NTS and the BoN "
                              "gains on the best-of-N candidate sets of a protocol that has them (docs/best-of-n.md)")
    compare.add_argument("--until-decided", action="store_true",
                         help="run more seeds of both methods, a batch at a time, until their NTS (--metric: or BoN "
                              "NTS) difference is decided or known to ±--precision points, or --budget is spent (a protocol seeded per "
                              "source, whose sequential boundaries keep the 95%% however early it stops; resumable)")
    compare.add_argument("--fresh-from", type=parse_seed, default=0, metavar="SEED",
                         help="leave out the seeds below SEED: they chose this comparison (e.g. the zoo's best three by "
                              "NTS at the protocol's seeds 0 1 2: --fresh-from 3), and runs that chose a method because "
                              "they favour it would bias its interval; with --until-decided the looks count from SEED")
    compare.add_argument("--method-file", type=Path, metavar="FILE.py",
                         help="with --until-decided: the file that defines a method run from one (bench run --method-file), "
                              "the very file its cells ran (same sha256), so that more of its seeds can run")
    compare.add_argument("--plan", type=Path, metavar="PLAN.json",
                         help="with --until-decided: the committed plan this comparison runs under (bench/core/plans.py: "
                              "its comparisons and rule, fixed before the data); every look is logged with its id, and "
                              "looks made under another plan are refused")
    compare.add_argument("--budget", type=float, default=2.0, metavar="CPU_HOURS",
                         help="with --until-decided: CPU-hours this command may spend (default 2)")
    compare.add_argument("--precision", type=float, default=1.0, metavar="POINTS",
                         help="with --until-decided: stop once the interval's half-width is at most this (default 1)")
    compare.add_argument("--batch", type=int, default=1, metavar="SEEDS", help="with --until-decided: seeds per round")
    compare.add_argument("--jobs", type=int, metavar="N", help="with --until-decided: cells at once, each in a worker process "
                         "with cores/N torch threads (default as bench run: one per CPU core, so the cells it adds have "
                         "the keys and teachers of bench run's)")
    compare.add_argument("--cache-dir", type=Path, default=None, help="with --until-decided: the teacher cache")

    verify = sub.add_parser("verify", help="recompute every cell's accuracies and metrics from its per-pair scores")
    verify.add_argument("--out", type=Path, default=Path("results"), help="results folder (default: ./results)")

    reproduce = sub.add_parser("reproduce", help="rerun some of a submission's cells on this machine and compare them "
                                                 "with it, pair by pair (the host's check that its student is real)")
    reproduce.add_argument("submission", type=Path, help="a submission folder (e.g. submissions/mini-v2/tiny-lr3e-4/gce_exponent=0.7)")
    reproduce.add_argument("--cells", type=parse_count, default=1, metavar="K",
                           help="how many of its cells to rerun (default 1)")
    reproduce.add_argument("--seed", type=parse_seed, default=None, metavar="SEED",
                           help="the seed that draws the cells: the host's choice, never the submitter's (default: a "
                                "fresh random one, recorded)")
    reproduce.add_argument("--record", type=Path, default=None, metavar="DIR",
                           help="where reproduction records go (default: reproductions/ beside the submissions root)")
    reproduce.add_argument("--cache-dir", type=Path, default=None, help="the teacher cache")

    add_migrate_parser(sub)

    submit = sub.add_parser("submit", help="turn finished results into leaderboard submissions (one per method x "
                                           "params x model pair x protocol)")
    submit.add_argument("results", nargs="+", type=Path,
                        help="results folders of bench run (e.g. results, or results/mini/tiny/naive); naive's "
                             "replicates among them (naive#1, ...: bench run --replicate) go into naive's submission, "
                             "its A/A runs (benchmarks/aa_test.py)")
    submit.add_argument("--out", type=Path, default=Path("submissions"), help="submissions root (default: ./submissions)")
    submit.add_argument("--submitter", help="who submits (default: git config user.name, else the login name)")
    submit.add_argument("--force", action="store_true", help="replace submissions that already exist")
    submit.add_argument("--folders", action="store_true",
                        help="keep each cell as a folder of files (the layout before the compact store, which bench "
                             "migrate converts); by default a submission keeps its cells in three Parquet tables")
    submit.add_argument("--fresh-from", type=parse_seed, metavar="SEED",
                        help="the protocol's own seeds chose these methods (e.g. the zoo's best three by NTS at "
                             "mini-v2's seeds 0 1 2): SEED is the first seed after them (3 on mini-v2), and the board "
                             "decides their Δ against naive on the seeds from SEED on, as bench compare --fresh-from does")

    validate = sub.add_parser("validate", help="check submissions: schema, completeness, protocol hash, and every "
                                               "number recomputed from the per-pair scores")
    validate.add_argument("paths", nargs="+", type=results_location,
                          help="a submission folder, or a folder of them, or a Hub dataset hf://datasets/OWNER/NAME"
                               "[@REVISION][/FOLDER] of them")
    validate.add_argument("--no-cache", action="store_true",
                          help="validate every submission in full, even one whose files and checking code are unchanged "
                               "since it was validated (by default its recorded outcome is reused: "
                               "$SHIFTBENCH_CACHE/leaderboard, as the board's)")

    board = sub.add_parser("leaderboard", help="serve the leaderboard (Gradio), or write it as HTML or markdown")
    board.add_argument("--submissions", type=results_location, default=Path("submissions"),
                       help="submissions root: a folder, or a Hub dataset hf://datasets/OWNER/NAME[@REVISION][/FOLDER] "
                            "(fetched once; docs/leaderboard.md) (default: ./submissions)")
    board.add_argument("--host", default="127.0.0.1", help="address to serve on (default: 127.0.0.1, this machine only)")
    board.add_argument("--port", type=int, default=7860, help="port (default: 7860)")
    board.add_argument("--html", type=Path, metavar="DIR", help="write a static page to DIR instead of serving")
    board.add_argument("--markdown", action="store_true", help="print the ranking as a markdown table instead of serving")
    board.add_argument("--admin", action="store_true", help="show a 'reload submissions' button that re-reads the "
                       "submissions folder (seconds of server CPU a press): for the host; off, no visitor can make the "
                       "server reload")
    board.add_argument("--only", nargs=2, metavar=("PROTOCOL", "MODELS"),
                       help="with --markdown: one protocol x model pair's ranking (e.g. --only mini tiny)")
    return parser


def main(argv: list[str] | None = None) -> int:
    from bench.core.errors import BenchError, CellsFailedError

    args = build_parser().parse_args(argv)
    try:
        return {"run": cmd_run, "sweep": cmd_sweep, "labels": cmd_labels, "evaluate": cmd_evaluate, "export": cmd_export,
                "list": cmd_list, "card": cmd_card, "report": cmd_report, "compare": cmd_compare, "verify": cmd_verify,
                "reproduce": cmd_reproduce,
                "submit": cmd_submit, "validate": cmd_validate, "leaderboard": cmd_leaderboard,
                "migrate": cmd_migrate}[args.command](args)
    except CellsFailedError as error:  # the run went on past these cells: exit 1, not the bad-input 2
        print(f"bench: {error}", file=sys.stderr)
        return 1
    except BenchError as error:
        print(f"bench: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
