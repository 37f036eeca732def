"""Benchmark: what scoring best-of-N candidate sets adds to a cell (issue 32's bar: at most 25%, N = 4).

One cell of ``mini`` x ``tiny`` scores its eval sets (the source's test split and its two siblings',
400 pairs each) with the student and, when it trains its teacher, with the teacher. This measures,
interleaved in one process, the student (all-MiniLM-L6-v2) and the teacher (its first layer)
scoring the eval sets' pairs alone (bench.stages.scorers.score_eval_sets, as a cell does) against the pairs
plus the candidate sets of the first K test prompts of each eval set (bench.core.candidates.
score_candidate_sets: N - 2 new sequences per set, the pair's two scores reused). Encoding the
sequences is timed with the scoring, as a cell does both. The models are untrained (the pretrained
backbone, a seeded head): scoring time does not depend on the weights.

What the ratio means for a whole cell comes from the harness's own timers in the committed reference
cells (submissions/mini/tiny/naive/cells/*/*/result.json, ``timings_s``): the shares of a cell's
total time spent scoring by the student and by the teacher (in the cells that trained one). The
student's share also holds its misfit pass (bench.stages.pipeline.student_misfit: the first MISFIT_PAIRS
pairs of half B), which candidates do not touch; that pass is timed here too, interleaved, and the
eval sets' part of the student's scoring is t(pairs) / (t(pairs) + t(misfit)). Candidate time grows
with the number of new sequences, so it is linear in K; the largest K that keeps the added time
within the bar is printed, for cells that train their teacher and for cells that find it cached.

    OMP_NUM_THREADS=1 python benchmarks/bench_bon_cost.py [--source mini/recipes] [--sizes 4 16] [--repeats 5]
"""
from __future__ import annotations

import json
import os
import statistics

from common import ROOT, Timer, formatter, interleave, median, parser, ratio, setup

os.environ.setdefault("TQDM_DISABLE", "1")   # the progress bars would drown the rounds' lines

BAR = 0.25   # issue 32: scoring the candidates adds at most 25% to a cell's time


def cell_shares() -> dict[str, tuple[float, float, int]]:
    """Per kind of committed naive cell (one that trained its teacher, one that found it cached): the median
    shares of the cell's total time spent scoring by the student and by the teacher, and how many cells."""
    kinds: dict[str, list[tuple[float, float]]] = {"train their teacher": [], "find their teacher cached": []}
    for path in sorted((ROOT / "submissions" / "mini" / "tiny" / "naive" / "cells").glob("*/*/result.json")):
        timings = json.loads(path.read_text())["timings_s"]
        kind = "train their teacher" if timings.get("teacher_train", 0) > 0 else "find their teacher cached"
        kinds[kind].append((timings["student_score"] / timings["total"], timings["teacher_score"] / timings["total"]))
    if not any(kinds.values()):
        raise SystemExit("no committed cells under submissions/mini/tiny/naive/cells: the shares need their timings")
    return {kind: (statistics.median(s for s, _ in shares), statistics.median(t for _, t in shares), len(shares))
            for kind, shares in kinds.items() if shares}


def main() -> None:
    p = parser(__doc__)
    p.add_argument("--source", default="mini/recipes", help="the cell's source (default mini/recipes)")
    p.add_argument("--sizes", type=int, nargs="+", default=[4], help="N of the candidate sets (default 4)")
    p.add_argument("--k", type=int, default=None, help="prompts with a candidate set per eval set (default: all)")
    args = p.parse_args()
    setup(args.threads)

    from bench.core.data import cell_seed, eval_sets, load_pairs, split_prompt_disjoint
    from bench.core.protocols import DATASETS, MODEL_PAIRS, PROTOCOLS
    from bench.stages.models import load_reward_model
    from bench.stages.pipeline import MISFIT_PAIRS
    from bench.stages.scorers import score_candidate_sets, score_eval_sets, score_with_model
    from bench.suites.mini.candidates import load_candidates

    protocol, tiny = PROTOCOLS.get("mini"), MODEL_PAIRS.get("tiny")
    names = list(eval_sets(protocol, args.source))
    evals = {name: load_pairs(DATASETS.get(name), "test", protocol.test_size).pairs for name in names}
    k = args.k or protocol.test_size
    sets = {n: {name: load_candidates(DATASETS.get(name), k, n) for name in names} for n in args.sizes}
    models = {who: (load_reward_model(spec, seed=0), formatter(spec, protocol.max_length))
              for who, spec in (("student", tiny.strong), ("teacher", tiny.weak))}
    batch = tiny.score_batch_size
    # the misfit pass of the cell's student (seed 0): MISFIT_PAIRS pairs of its half B, already encoded (as
    # training left them); which pairs of the half does not change its time
    _, half_b = split_prompt_disjoint(load_pairs(DATASETS.get(args.source), "train", protocol.train_pool_size).pairs,
                                      cell_seed(protocol, 0, args.source))
    fmt = models["student"][1]
    misfit = [fmt.encode(p.prompt, p.chosen) for p in half_b[:MISFIT_PAIRS]] + \
        [fmt.encode(p.prompt, p.rejected) for p in half_b[:MISFIT_PAIRS]]
    new = {n: sum(len(s.new_positions()) for its in sets[n].values() for s in its) for n in args.sizes}
    print(f"## {args.source}'s cell: eval sets {', '.join(names)} ({protocol.test_size} pairs each, "
          f"{2 * protocol.test_size * len(names)} sequences); candidate sets for the first {k} prompts of each: "
          + ", ".join(f"N={n} adds {new[n]} sequences" for n in args.sizes), flush=True)

    def run(who: str, n: int | None) -> dict:
        model, fmt = models[who]
        with Timer() as t:
            scores = score_eval_sets(model, fmt, evals, batch, who)
            if n is not None:
                score_candidate_sets(model, fmt, sets[n], evals, scores, batch, who)
        return {"seconds": t.seconds}

    def misfit_pass() -> dict:
        with Timer() as t:
            score_with_model(models["student"][0], misfit, batch, "misfit", pairs=True)
        return {"seconds": t.seconds}

    variants = {"student misfit pass": misfit_pass}
    for who in models:
        variants[f"{who} pairs"] = lambda who=who: run(who, None)
        for n in args.sizes:
            variants[f"{who} pairs+N{n}"] = lambda who=who, n=n: run(who, n)
    runs = interleave(variants, args.repeats)
    seconds = {name: [r["seconds"] for r in rs] for name, rs in runs.items()}

    shares = cell_shares()
    for kind, (student, teacher, cells) in shares.items():
        print(f"## committed naive cells that {kind} (median of {cells}): student "
              f"scoring {100 * student:.1f}% of the cell's time, teacher scoring {100 * teacher:.1f}%")
    eval_part = median([p / (p + m) for p, m in zip(seconds["student pairs"], seconds["student misfit pass"])])
    print(f"student: misfit pass ({len(misfit) // 2} pairs) {median(seconds['student misfit pass']):.2f} s (median): "
          f"the eval sets take {100 * eval_part:.1f}% of the student's scoring stage")
    for n in args.sizes:
        for who in models:
            print(f"{who}: pairs {median(seconds[f'{who} pairs']):.2f} s, pairs + N={n} sets "
                  f"{median(seconds[f'{who} pairs+N{n}']):.2f} s (medians): "
                  f"{ratio(seconds[f'{who} pairs+N{n}'], seconds[f'{who} pairs'])}")
        extra = {who: median([a / b for a, b in zip(seconds[f"{who} pairs+N{n}"], seconds[f"{who} pairs"])]) - 1.0
                 for who in models}
        added = {kind: extra["student"] * student * eval_part + extra["teacher"] * teacher
                 for kind, (student, teacher, _) in shares.items()}
        worst = max(added.values())
        # linear in K: each prompt's set adds the same number of sequences
        k_max = min(protocol.test_size, int(BAR * k / worst)) if worst > 0 else protocol.test_size
        print(f"N={n}: sets for {k} prompts per eval set add "
              + ", ".join(f"{100 * a:.1f}% to cells that {kind}" for kind, a in added.items())
              + f"; the bar ({100 * BAR:.0f}%) allows K = {k_max} prompts per eval set")


if __name__ == "__main__":
    main()
