"""``bench migrate``: per-cell folders into the compact store (bench.core.store), and back.

A submission folder (``submission.json`` and ``cells/``) becomes ``submission.json`` beside the store's three
tables; a results folder of one method (``<slug>/seed<N>/<source>/``, as ``bench run`` writes and extra-seeds
keeps) becomes ``<slug>/`` holding the store. With ``--refer-to ROOT``, a results cell that a store under
ROOT already holds (the same result.json and score files, by sha256) is stored there only, and referred to.

Nothing is removed before the store is written and read back: every cell's result.json must come back
byte for byte, and its score files' CSV text too, else the folder is left as it was and the command
fails naming the cell. ``--unpack DEST`` writes a store's cells back as folders (what ``bench run`` resumes
from), their CSV text byte for byte and gzip'd as the harness writes them.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from bench.core.result_schema import RESULT_FILE
from bench.core.store import CELLS, index_cells, migrate_folder, unpack


def _units(root: Path) -> list[Path]:
    """The folders under ``root`` to migrate: submissions (submission.json beside cells/) and results folders of
    one method (the folder above seed<N>/<source>/result.json), not yet stores."""
    units = set()
    for result in Path(root).rglob(RESULT_FILE):
        parts = result.relative_to(root).parts
        if "cells" in parts[:-1]:
            units.add(Path(root, *parts[:parts.index("cells")]))
        elif len(parts) >= 3 and parts[-3].startswith("seed"):
            units.add(Path(root, *parts[:-3]))
    return sorted(units)


def cmd_migrate(args: argparse.Namespace) -> int:
    if args.unpack is not None:
        stores = [p.parent for p in sorted(Path(args.root).rglob(CELLS))]
        in_place = Path(args.unpack).resolve() == Path(args.root).resolve()
        if not stores:
            print(f"no stores under {args.root}", file=sys.stderr)
            return 0 if in_place else 1
        n = sum(unpack(s, Path(args.unpack) / s.relative_to(args.root)) for s in stores)
        print(f"{n} cells of {len(stores)} stores written as folders under {args.unpack}"
              + (" (in place: the stores removed)" if in_place else ""))
        return 0
    units = _units(Path(args.root))
    if not units:
        print(f"nothing to migrate under {args.root}: no cell folders", file=sys.stderr)
        return 1
    index = index_cells(args.refer_to)
    kept = referred = 0
    for unit in units:
        k, r = migrate_folder(unit, index=index)
        kept, referred = kept + k, referred + r
        print(f"{unit}: {k} cells stored" + (f", {r} referred to in {args.refer_to}" if r else ""))
    print(f"{len(units)} folders migrated: {kept} cells stored, {referred} referred to; every cell reads back byte "
          "for byte")
    return 0


def add_parser(sub) -> None:
    migrate = sub.add_parser("migrate", help="convert per-cell result folders (submissions, results) into the compact "
                             "store, checking every cell reads back byte for byte; or --unpack a store into folders")
    migrate.add_argument("root", type=Path, help="a submissions root, a submission, or a results folder")
    migrate.add_argument("--refer-to", type=Path, default=None, metavar="ROOT",
                         help="store a cell that a store under ROOT already holds there only (e.g. extra-seeds' cells "
                              "that a submission holds)")
    migrate.add_argument("--unpack", type=Path, default=None, metavar="DEST",
                         help="write the cells of every store under ROOT as folders under DEST instead (DEST = ROOT: "
                              "in place, the stores removed once every cell is written)")
