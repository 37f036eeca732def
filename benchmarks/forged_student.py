"""Issue 59's forged student on the reference board: one cell of a reference submission forged as a careful forger
would (half of its student's wrong verdicts on its own test split turned right by swapping the two scores, every
number recomputed and every checksum resealed: tests/test_reliability_three.py's ``forge``), validated (it passes),
then reproduced with the host's draw seed, which is made to draw that very cell.

    python benchmarks/forged_student.py submissions/mini-v2/tiny-lr3e-4/naive --seed 20261206 --work WORK

Prints the validation's outcome and bench reproduce's lines; the record goes to WORK/reproductions.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def main() -> int:
    from small_runs import as_folders
    from test_reliability_three import forge
    from test_reproduce import flip_half_the_student_losses

    from bench.cli import main as bench
    from bench.submissions import validate_submission
    from bench.submissions.reproduce import draw

    parser = argparse.ArgumentParser()
    parser.add_argument("submission", type=Path)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args()
    folder = args.work / "submissions" / Path(*args.submission.resolve().parts[-3:])
    shutil.copytree(args.submission, folder)
    as_folders(args.work / "submissions")
    meta = json.loads((folder / "submission.json").read_text())
    cells = [(r["seed"], r["source"]) for r in meta["cells"] if not r.get("replicate", 0)]
    [(seed, source)] = draw(cells, 1, args.seed, "/".join(folder.parts[-3:]))
    forge(folder, flip_half_the_student_losses(seed, source))
    v = validate_submission(folder)
    print(f"forged seed {seed} {source}; bench validate: {'passes' if v.ok else 'refuses'}"
          + ("" if v.ok else f" ({v.errors[0]})"))
    return bench(["reproduce", str(folder), "--cells", "1", "--seed", str(args.seed), "--record",
                  str(args.work / "reproductions")])


if __name__ == "__main__":
    raise SystemExit(main())
