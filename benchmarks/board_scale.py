"""How the board and validation scale with the number of submissions: N copies of one 18-cell mini-v2 reference
submission, each a valid submission of its own (its method's parameter set to another value), in the compact store.

    python benchmarks/board_scale.py make SCALE --n 1000       # writes SCALE/submissions (n x 18 cells)
    python benchmarks/board_scale.py time SCALE                # cold and warm: validation, then the board

``make`` copies ``submissions/mini-v2/tiny-lr3e-4/bsr_lam=0.001`` (migrated into a store if it is still folders),
and for copy k sets ``method.params.lam`` to 0.001 + k * 1e-6 in every cell's result.json, with the slug and the
sha256s submission.json lists to match: every other number is the reference's, so each copy validates.

``time`` runs, each in a fresh process with an empty validation record ($SHIFTBENCH_CACHE set to a new folder
under the tree), then again with the record it filled:

- ``bench validate`` of the tree (CPU seconds of the process);
- the board's start to its first ranking: leaderboard.core.load_board, then the ranking of the group the board
  opens on (CPU seconds and peak RSS of the process).

It prints one line per measurement, and the CPU seconds per 1,000 cells of cold validation.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
TEMPLATE = ROOT / "submissions" / "mini-v2" / "tiny-lr3e-4" / "bsr_lam=0.001"


def make(out: Path, n: int) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from bench.core.results import params_slug
    from bench.core.store import CELLS, migrate_folder, write_store  # noqa: F401 (write_store: the format made here)

    base = out / "submissions" / "mini-v2" / "tiny-lr3e-4"
    base.mkdir(parents=True, exist_ok=True)
    template = Path(tempfile.mkdtemp()) / TEMPLATE.name
    shutil.copytree(TEMPLATE, template)
    if not (template / CELLS).is_file():
        migrate_folder(template)
    meta = json.loads((template / "submission.json").read_text())
    cells = pq.read_table(template / CELLS)
    for k in range(n):
        lam = round(0.001 + k * 1e-6, 9)
        params = {**meta["method"]["params"], "lam": lam}
        slug = params_slug(meta["method"]["name"], params)
        folder = base / slug
        if folder.exists():
            continue
        shutil.copytree(template, folder)
        results, shas = [], []
        for raw in cells.column("result_json").to_pylist():
            result = json.loads(raw)
            result["method"]["params"] = params
            data = (json.dumps(result, indent=2) + "\n").encode()
            results.append(data)
            shas.append(hashlib.sha256(data).hexdigest())
        table = cells.set_column(cells.schema.get_field_index("result_json"), "result_json",
                                 pa.array(results, type=pa.binary()))
        table = table.set_column(table.schema.get_field_index("result_sha256"), "result_sha256",
                                 pa.array(shas, type=pa.string()))
        pq.write_table(table.replace_schema_metadata(cells.schema.metadata), folder / CELLS, compression="zstd")
        by_path = dict(zip(cells.column("path").to_pylist(), shas))
        copy = {**meta, "slug": slug, "method": {**meta["method"], "params": params}}
        copy["cells"] = [{**ref, "result_sha256": by_path[f"cells/seed{ref['seed']}/{ref['source'].replace('/', '__')}"]}
                         for ref in meta["cells"]]
        (folder / "submission.json").write_text(json.dumps(copy, indent=2) + "\n")
    shutil.rmtree(template.parent)
    print(f"{n} submissions of {len(meta['cells'])} cells under {out / 'submissions'}")


_CHILD = r"""
import json, resource, sys, time
from pathlib import Path
what, root = sys.argv[1], Path(sys.argv[2])
started = time.process_time()
if what == "validate":
    from bench.submissions.record import validate_tree
    found = validate_tree(root)
    extra = {"submissions": len(found), "failed": sum(not v.ok for v in found), "cells": sum(len(v.cells) for v in found)}
else:
    from leaderboard import core
    board = core.load_board(root)
    protocol, models = board.groups[0]
    table = core.ranking(board, protocol=protocol, models=models)
    extra = {"rows": len(table)}
print(json.dumps({"cpu_s": time.process_time() - started,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, **extra}))
"""


def _run(what: str, root: Path, cache: Path) -> dict:
    env = {**os.environ, "SHIFTBENCH_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD, what, str(root)], env=env, capture_output=True, text=True,
                         cwd=ROOT)
    if out.returncode:
        raise SystemExit(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def time_it(tree: Path) -> None:
    root = tree / "submissions"
    cache = Path(tempfile.mkdtemp(prefix="board-scale-cache-"))
    try:
        cold = _run("validate", root, cache)
        warm = _run("validate", root, cache)
        print(f"bench validate, cold: {cold['cpu_s']:.1f} CPU-s, {cold['submissions']} submissions "
              f"({cold['failed']} failed), {cold['cells']} cells, {cold['rss_mb']:.0f} MB peak RSS; "
              f"{1000 * cold['cpu_s'] / max(cold['cells'], 1):.2f} CPU-s per 1,000 cells")
        print(f"bench validate, warm: {warm['cpu_s']:.1f} CPU-s, {warm['rss_mb']:.0f} MB peak RSS")
        shutil.rmtree(cache)
        cache.mkdir()
        board_cold = _run("board", root, cache)
        board_warm = _run("board", root, cache)
        for name, got in (("cold", board_cold), ("warm", board_warm)):
            print(f"board to its first ranking, {name}: {got['cpu_s']:.1f} CPU-s, {got['rows']} rows, "
                  f"{got['rss_mb']:.0f} MB peak RSS")
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("make")
    m.add_argument("out", type=Path)
    m.add_argument("--n", type=int, default=1000)
    t = sub.add_parser("time")
    t.add_argument("tree", type=Path)
    args = parser.parse_args()
    make(args.out, args.n) if args.command == "make" else time_it(args.tree)
    return 0


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    sys.exit(main())
