"""The commands that read what is registered or finished: ``bench list``, ``card``, ``report``, ``compare``
and ``verify``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def cmd_list(args: argparse.Namespace) -> int:
    from bench.commands.catalog import print_registered

    print_registered(args.what, args.data_dir)
    return 0


def cmd_card(args: argparse.Namespace) -> int:
    from bench.core.card import protocol_card
    from bench.core.protocols import protocol_named

    print(protocol_card(protocol_named(args.protocol)), end="")
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from bench.core.compare import (
        agreement_text,
        cells_under,
        decision_rule,
        decision_table,
        rank_agreement,
        ranked,
    )
    from bench.core.report import left_out_note, method_table
    from bench.core.results import find_cells
    from bench.core.stats import Board, bon_view
    from bench.core.store import cell_folders

    results = find_cells(args.out)
    table = method_table(results, by=args.by)
    if table.empty:
        print(f"no finished results under {args.out}", file=sys.stderr)
        return 1
    print(table.to_string(index=False))
    print(left_out_note(table), end="")
    unfinished = sum(1 for _ in cell_folders(args.out)) - len(results)
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
              f"paired, {decision_rule(board.independent)}")
        print(decision_table(board).to_string(index=False, float_format=lambda v: f"{v:+.2f}"))
        if all(c.bon for c in cells):   # a protocol with best-of-N sets: the same table on them
            bon = Board(bon_view(cells))
            print(decision_table(bon, metric="bon-nts").to_string(index=False, float_format=lambda v: f"{v:+.2f}"))
            if len(ranked(board.methods)) >= 3:
                print("\n" + agreement_text(rank_agreement(board, bon)))
    return 0


def chosen_on_first_seeds(roots, slug: str) -> dict[Path, int]:
    """The submissions of ``slug`` under ``roots`` (``--out``) that record the seeds below N chose them: folder -> N."""
    import json

    from bench.core.compare import folders
    from bench.submissions.limits import SUBMISSION_FILE
    from bench.submissions.tree import find_submissions

    found = {}
    for folder in (f for root in folders(roots) for f in find_submissions(root)):
        try:
            meta = json.loads((folder / SUBMISSION_FILE).read_text())
        except (OSError, ValueError):
            continue   # bench validate says what is wrong with it
        if isinstance(meta, dict) and meta.get("slug") == slug and type(meta.get("fresh_from")) is int:
            found[folder] = meta["fresh_from"]
    return found


def cmd_compare(args: argparse.Namespace) -> int:
    from bench.core.compare import board_for, comparison_table, decision_rule
    from bench.core.stats import BOOTSTRAP_SEED

    if args.until_decided:
        from bench.stages.decide import until_decided
        from bench.stages.executors import auto_jobs

        return until_decided(args.out[0] if len(args.out) == 1 else args.out, args.a, args.b,
                             budget_hours=args.budget, precision=args.precision, batch=args.batch,
                             jobs=args.jobs or auto_jobs(), cache_dir=args.cache_dir, metric=args.metric,
                             from_seed=args.fresh_from, method_file=args.method_file, plan_file=args.plan)

    board, (a, b) = board_for(args.out, [args.a, args.b], args.metric, args.fresh_from)
    picked = {} if args.fresh_from else chosen_on_first_seeds(args.out, a)
    for folder, seed in picked.items():   # the board decides it on the seeds from there: say how to get its numbers
        print(f"note: {a}'s submission {folder} was chosen on the seeds below {seed} (fresh_from); the board decides "
              f"it on the seeds from {seed} on: add --fresh-from {seed} for its numbers", file=sys.stderr)
    fresh = f" from seed {args.fresh_from}" if args.fresh_from else ""
    print(f"{a} − {b}, paired: the same seeds, teacher and test pairs on both sides ({len(board.seeds)} seeds{fresh}, "
          f"{board.resamples.n} bootstrap replicates, seed {BOOTSTRAP_SEED}); a difference is {decision_rule(board.independent)}")
    print(comparison_table(board, a, b, args.by, args.metric).to_string(index=False))
    return 0


def cmd_verify(args: argparse.Namespace) -> int:
    from bench.core.result_schema import SCORES_FILE
    from bench.core.results import recompute_folder
    from bench.core.store import cell_folders

    # a scores file without its result.json is a cell cut off mid-write: report it too; a store's cells are read
    # from it, as the folders they were
    folders = sorted({*cell_folders(args.out), *(p.parent for p in Path(args.out).rglob(SCORES_FILE))})
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


def cmd_reproduce(args: argparse.Namespace) -> int:
    """bench reproduce: rerun drawn cells of a submission and compare (bench.submissions.reproduce); exit 1 when a
    cell is not reproduced."""
    import secrets

    from bench.core.errors import BenchError
    from bench.core.settings import default_cache_dir
    from bench.submissions.reproduce import RECORDS, RULE, reproduce, submissions_root, why_not

    folder = Path(args.submission)
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    root = args.record or submissions_root(folder).parent / RECORDS
    if root.exists() and not root.is_dir():   # found before the reruns, not after their minutes of training
        raise BenchError(f"--record {root}: a file, not a folder; give the folder that holds the reproduction "
                         f"records (it mirrors the submissions' paths), e.g. {RECORDS}/")
    record = reproduce(folder, args.cells, seed, args.cache_dir or default_cache_dir(), root)
    for cell in record["cells"]:
        worst = max(cell["eval_sets"].items(), key=lambda item: item[1]["student_differ"])
        state = "ok  " if cell["reproduced"] else "????" if cell.get("inconclusive") else "FAIL"
        print(f"{state} seed {cell['seed']} {cell['source']}: "
              + (why_not(cell) or f"student verdicts differ on {worst[1]['student_differ']} of {worst[1]['pairs']} "
                 f"pairs at most ({worst[0]})") + f"; largest student score change "
              f"{cell['largest_student_score_change']:.2g}")
    n = len(record["cells"])
    print(f"{record['submission']}: {sum(c['reproduced'] for c in record['cells'])} of {n} rerun cells reproduced "
          f"(draw seed {seed}; rule: {RULE}); record: {root}")
    if record["outcome"] == "inconclusive":
        print("inconclusive (????): a label-side method's cell whose rerun trained its teacher to other soft labels; "
              "rerun it on a machine of the kind the cell records (environment.cpu, packages)")
    return 0 if record["outcome"] == "reproduced" else 1
