"""What scoring a student in a separate process (bench/stages/apart.py, for methods not built in) costs against
scoring it in the run's process: one mini-v2 cell's eval sets and candidate sets (a source and its two targets),
scored both ways with the same untrained tiny-lr3e-4 student, and the scores compared.

    python benchmarks/score_apart_cost.py [--source mini/recipes]

Prints the CPU seconds of each way (the separate process's counted as a child's) and their ratio, and whether
every score is the same float.
"""
from __future__ import annotations

import argparse
import functools
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def cpu() -> float:
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def main() -> None:
    import torch

    from bench.core.candidates import load_candidate_sets
    from bench.core.data import load_pairs
    from bench.core.protocols import DATASETS, MODEL_PAIRS, PROTOCOLS
    from bench.stages.apart import ApartScoring
    from bench.stages.models import formatter_for, load_reward_model, load_tokenizer
    from bench.stages.scorers import SCORERS, score_candidate_sets, score_eval_sets

    parser = argparse.ArgumentParser()
    parser.add_argument("--source", default="mini/recipes")
    args = parser.parse_args()
    torch.set_num_threads(1)   # as the reference cells run
    protocol, spec = PROTOCOLS.get("mini-v2"), MODEL_PAIRS.get("tiny-lr3e-4").strong
    names = [args.source, *protocol.targets_of(args.source)]
    evals = {n: load_pairs(DATASETS.get(n), DATASETS.get(n).test_split, protocol.test_size).pairs for n in names}
    sets = {n: load_candidate_sets(DATASETS.get(n), evals[n], protocol.candidates) for n in names}
    student = load_reward_model(spec, seed=0)
    formatter = formatter_for(spec, load_tokenizer(spec), protocol.max_length)
    batch = MODEL_PAIRS.get("tiny-lr3e-4").score_batch_size
    scorer = functools.partial(SCORERS.get("hf"), spec=spec)

    start, wall = cpu(), time.perf_counter()
    here = score_eval_sets(student, formatter, evals, batch, "student", scorer)
    here_sets = score_candidate_sets(student, formatter, sets, evals, here, batch, "student", scorer)
    in_process, in_wall = cpu() - start, time.perf_counter() - wall
    start, wall = cpu(), time.perf_counter()
    apart, apart_sets = ApartScoring(student, spec, formatter.max_length, evals, sets, batch, "hf", "none").run()
    separate, separate_wall = cpu() - start, time.perf_counter() - wall
    same = {n: (list(a), list(b)) for n, (a, b) in here.items()} == {n: (list(a), list(b)) for n, (a, b) in apart.items()} \
        and here_sets == apart_sets
    pairs = sum(map(len, evals.values()))
    print(f"{pairs} pairs and {sum(map(len, sets.values()))} candidate sets of {args.source} and its targets, tiny-lr3e-4's "
          f"student, 1 torch thread")
    print(f"in the run's process: {in_process:.1f} CPU-s ({in_wall:.1f} s wall)")
    print(f"in a separate process: {separate:.1f} CPU-s ({separate_wall:.1f} s wall): {separate / in_process:.2f}x, "
          f"+{separate - in_process:.1f} CPU-s a cell")
    print(f"every score the same float: {same}")


if __name__ == "__main__":
    main()
