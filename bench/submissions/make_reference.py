"""``python -m bench.submissions.make_reference submissions/P/M/naive``: write the committed reference
teacher of a protocol x model pair (bench.submissions.reference) from its reference submission of naive, with the
reference submissions beside it that were chosen on the protocol's first seeds (their ``fresh_from``).
A command of its own, apart from ``reference``, which validation imports."""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from bench.core.io import atomic_write_bytes
from bench.submissions.check import validate_submission
from bench.submissions.limits import REFERENCES
from bench.submissions.reference import chosen_of, dumps, from_cells, path_of, sets_of_store


def main(argv: list[str] | None = None) -> int:
    """Write the committed reference of each submission given (its protocol x model pair's naive)."""
    parser = argparse.ArgumentParser(prog="python -m bench.submissions.make_reference",
                                     description="write the reference teacher of a protocol x model pair from its "
                                                 "reference submission of naive")
    parser.add_argument("submissions", nargs="+", type=Path, help="submission folders, e.g. submissions/mini/tiny/naive")
    parser.add_argument("--root", type=Path, default=REFERENCES, help="where references are written (default: the "
                                                                      "committed ones' folder)")
    args = parser.parse_args(argv)
    for folder in args.submissions:
        v = validate_submission(folder, references=None)   # checked against nothing but the registries
        if not v.ok:
            print(f"{folder} does not validate:\n  " + "\n  ".join(map(str, v.errors[:10])), file=sys.stderr)
            return 1
        meta = v.submission
        origin = f"submission {meta['protocol']['name']}/{meta['models']['name']}/{meta['slug']}"
        reference = dataclasses.replace(
            from_cells(v.pairs, meta["protocol"], meta["models"]["name"], origin, sets_of_store(folder)),
            chosen=chosen_of(folder) or None)
        path = path_of(meta["protocol"]["name"], meta["models"]["name"], args.root)
        atomic_write_bytes(path, dumps(reference.to_json()).encode())
        print(f"wrote {path}: {len(reference.test_pairs)} eval sets, {len(reference.verdicts or {})} cell x eval "
              "set verdicts"
              + (f", {sum(map(len, reference.candidate_sets.values()))} candidate sets" if reference.candidate_sets else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
