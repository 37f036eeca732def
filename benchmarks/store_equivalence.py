"""Whether a migrated tree of results reads exactly as the tree it was migrated from (bench migrate, the compact
store): every submission's validation outcome, and every results cell, compared value for value.

    mkdir BEFORE && git archive 9959b0e submissions extra-seeds | tar -x -C BEFORE   # the tree before the migration
    python benchmarks/store_equivalence.py BEFORE .

For each submission under ``BEFORE/submissions`` it validates both copies (bench.submissions.validate_submission,
from scratch: no validation record) and requires the same errors, warnings, submission.json, every cell's result,
and every per-pair and best-of-N correctness array (==, bit for bit): what the board's numbers, intervals and
verdicts are computed from. For each cell folder under ``BEFORE/extra-seeds`` it requires the migrated cell to read
back (bench.core.results.read_cell_files) with the same result and the same score rows, float for float. It prints
one line per submission and a total, and exits 1 on any difference.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.core.results import read_cell_files  # noqa: E402
from bench.core.store import cell_folders  # noqa: E402
from bench.submissions import validate_submission  # noqa: E402
from bench.submissions.tree import find_submissions  # noqa: E402


def outcome(v) -> dict:
    def cells(found):
        return [(c.method, c.seed, c.source, c.category, c.independent, c.looks, c.name,
                 [(e.name, e.role, e.pair_ids, e.teacher.tolist(), e.student.tolist()) for e in (*c.eval_sets, *c.bon)])
                for c in found]

    return {"errors": [str(p) for p in v.errors], "warnings": [str(p) for p in v.warnings],
            "submission": v.submission, "results": [c.model_dump() for c in v.cells], "pairs": cells(v.pairs),
            "controls": cells(v.controls)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("before", type=Path, help="the tree before the migration (holds submissions/, extra-seeds/)")
    parser.add_argument("after", type=Path, help="the migrated tree")
    args = parser.parse_args()
    differ = submissions = cells = 0
    started = time.process_time()
    for folder in find_submissions(args.before / "submissions"):
        rel = folder.relative_to(args.before)
        same = outcome(validate_submission(folder)) == outcome(validate_submission(args.after / rel))
        submissions += 1
        differ += not same
        print(f"{'same' if same else 'DIFFERENT'} {rel}")
    for folder in cell_folders(args.before / "extra-seeds"):
        a, b = read_cell_files(folder), read_cell_files(args.after / folder.relative_to(args.before))
        same = a is not None and b is not None and a.result == b.result and \
            [{k: float(v) if k not in ("eval_set", "pair_id", "set_id", "candidate") else v for k, v in r.items()}
             for r in (*a.rows, *(a.candidates or ()))] == list((*b.rows, *(b.candidates or ())))
        cells += 1
        differ += not same
        if not same:
            print(f"DIFFERENT {folder.relative_to(args.before)}")
    print(f"{submissions} submissions and {cells} extra-seeds cells compared in {time.process_time() - started:.0f} "
          f"CPU-s: {'all the same' if not differ else f'{differ} differ'}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
