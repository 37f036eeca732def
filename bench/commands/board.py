"""The commands of submissions and the board: ``bench submit``, ``validate`` and ``leaderboard``."""
from __future__ import annotations

import argparse
import shlex
import sys


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
                     command=shlex.join(["bench", *sys.argv[1:]]), force=args.force, fresh_from=args.fresh_from,
                     folders=args.folders)
    for folder in written:
        print(f"submitted: {folder} (bench validate {folder} passes)")
    return 0


def cmd_validate(args: argparse.Namespace) -> int:
    from bench.submissions.record import Record, validate_tree

    # The validation record (bench.submissions.record, the board's too): a submission whose files, and the
    # code and registries that check them, are those it was validated with is not validated again.
    record = Record(reuse=not args.no_cache)
    validations = [v for path in args.paths for v in validate_tree(path, record=record)]
    if not validations:
        print(f"no submission.json under {', '.join(map(str, args.paths))}", file=sys.stderr)
        return 1
    for v in validations:
        print(f"{'ok  ' if v.ok else 'FAIL'} {v.folder}" + "".join(f"\n     error: {p}" for p in v.errors)
              + "".join(f"\n     warning: {p}" for p in v.warnings))
    passed, reused = sum(v.ok for v in validations), len(record.reused)
    source = ("all validated in full: --no-cache" if args.no_cache else f"{reused} from the validation record, "
              "unchanged since validated" + ("; --no-cache validates them again" if reused else ""))
    print(f"{passed} of {len(validations)} submissions pass: complete, on the registered protocol, and every "
          f"number recomputes from the per-pair scores ({source})")
    return 0 if passed == len(validations) else 1


def cmd_leaderboard(args: argparse.Namespace) -> int:
    from bench.core.errors import BenchError
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
            from leaderboard.render import markdown_page

            protocol, models = args.only or (None, None)
            groups = sorted({(v.submission["protocol"]["name"], v.submission["models"]["name"]) for v in board.entries})
            if args.only and tuple(args.only) not in groups:
                raise BenchError(f"--only {protocol} {models}: no submission of that protocol and model pair under "
                                 f"{args.submissions}; there are: {', '.join(' '.join(g) for g in groups) or 'none'}")
            print(markdown_page(board, protocol=protocol, models=models))
        return 0
    from leaderboard.app import serve

    serve(args.submissions, args.host, args.port, admin=args.admin)
    return 0
