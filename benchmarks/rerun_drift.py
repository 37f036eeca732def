"""How far a rerun of the same cells moves: on another machine, another thread count, or after a change.

    python benchmarks/rerun_drift.py submissions/mini/tiny/naive RERUN/mini/tiny/naive

Cells are paired by (protocol, model pair, method and params, seed, source); only finished cells count
(bench.core.results.read_cell: their numbers recompute from their scores). Per cell it prints the largest
change of any teacher or student score, how many test pairs' verdicts (bench.core.cells.correctness)
flipped, and the change of the student's ID and OOD accuracy and of the cell's mean NTS; then each
side's mean NTS over the paired cells and the change per seed. The teacher's verdicts decide whether
the two sides can be compared pair by pair at all (`bench compare METHOD@PAIR` refuses otherwise).
docs/reliability.md ("A rerun on another machine") has a measurement.
"""
from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.core.cells import correctness  # noqa: E402
from bench.core.results import params_slug, read_cell, replicate_slug  # noqa: E402
from bench.core.store import cell_folders  # noqa: E402


def cells(root: Path) -> dict[tuple, tuple]:
    """(protocol, pair, method slug, seed, source) -> (result, scores as {(eval set, pair id): 4 floats})."""
    found = {}
    for folder in cell_folders(root):
        read = read_cell(folder)
        if read is None:
            continue
        result, rows = read
        key = (result.protocol.name, result.models["name"],
               replicate_slug(params_slug(result.method.name, result.method.params), result.replicate),
               result.seed, result.source)
        if key in found:
            raise SystemExit(f"{root} holds the cell {key} twice (e.g. {folder}): point at one run of it")
        found[key] = result, {(r["eval_set"], r["pair_id"]): np.array([float(r[c]) for c in (
            "teacher_chosen", "teacher_rejected", "student_chosen", "student_rejected")]) for r in rows}
    return found


def cell_nts(result) -> float:
    return float(np.mean([m.nts for m in result.metrics.values()]))


def accuracy(result, role: str) -> float:
    """The student's accuracy on the ID set, or its mean over the OOD sets."""
    return float(np.mean([e.student_acc for e in result.eval_sets.values() if e.role == role]))


def kernels(results) -> str:
    return ", ".join(f"{c} x{t}" for c, t in sorted({(str((r.environment.get("cpu") or {}).get("torch_capability",
                                                     "not recorded")), r.environment.get("torch_threads"))
                                                    for r in results}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("a", type=Path, help="a results or submissions folder")
    parser.add_argument("b", type=Path, help="the rerun: another folder holding the same cells")
    args = parser.parse_args()
    a, b = cells(args.a), cells(args.b)
    keys = sorted(set(a) & set(b))
    if not keys:
        print(f"no finished cell is in both {args.a} and {args.b}", file=sys.stderr)
        return 2
    print(f"{len(keys)} cells in both ({len(a) - len(keys)} only in A, {len(b) - len(keys)} only in B)")
    print(f"{'seed':>4} {'source':<18} {'teacher max|Δ|':>14} {'flips':>5} {'student max|Δ|':>14} {'flips':>5} "
          f"{'Δ ID acc':>8} {'Δ OOD acc':>9} {'Δ NTS':>6}")
    per_seed: dict[int, list[tuple[float, float]]] = defaultdict(list)
    flips = {"teacher": 0, "student": 0}
    pairs = 0
    for key in keys:
        (ra, sa), (rb, sb) = a[key], b[key]
        if set(sa) != set(sb):
            print(f"{key}: the two sides scored different test pairs; not a rerun of one cell", file=sys.stderr)
            return 2
        ids = sorted(sa)
        xa, xb = np.stack([sa[i] for i in ids]), np.stack([sb[i] for i in ids])
        drift, flipped = [], []
        for who, cols in (("teacher", slice(0, 2)), ("student", slice(2, 4))):
            pa, pb = xa[:, cols], xb[:, cols]
            drift.append(float(np.abs(pa - pb).max()))
            n = int((correctness(pa[:, 0], pa[:, 1]) != correctness(pb[:, 0], pb[:, 1])).sum())
            flipped.append(n)
            flips[who] += n
        pairs += len(ids)
        d_id, d_ood = accuracy(rb, "id") - accuracy(ra, "id"), accuracy(rb, "ood") - accuracy(ra, "ood")
        nts = cell_nts(ra), cell_nts(rb)
        per_seed[key[3]].append(nts)
        print(f"{key[3]:>4} {key[4]:<18} {drift[0]:>14.2e} {flipped[0]:>5} {drift[1]:>14.2e} {flipped[1]:>5} "
              f"{d_id:>+8.2f} {d_ood:>+9.2f} {nts[1] - nts[0]:>+6.2f}")
    nts_a = np.mean([x for v in per_seed.values() for x, _ in v])
    nts_b = np.mean([y for v in per_seed.values() for _, y in v])
    print(f"verdicts flipped: teacher {flips['teacher']}, student {flips['student']} of {pairs} (cell, test pair) "
          "verdicts each")
    print(f"mean NTS: A {nts_a:+.2f}, B {nts_b:+.2f}, B − A {nts_b - nts_a:+.2f}; per seed: "
          + " ".join(f"{s}: {np.mean([y - x for x, y in v]):+.2f}" for s, v in sorted(per_seed.items())))
    print(f"kernels and threads of the paired cells: A {kernels(a[k][0] for k in keys)}; "
          f"B {kernels(b[k][0] for k in keys)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
