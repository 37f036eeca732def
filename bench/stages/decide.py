"""``bench compare A B --until-decided``: grow a paired comparison seed by seed until it is decided.

On a protocol whose runs are independent (ProtocolSpec.seeding "per-source") with a sequential plan
(ProtocolSpec.looks), each round:
  1. looks at A - B on NTS (``metric`` "nts") or BoN NTS ("bon-nts", a protocol with candidate sets: the runs' BoN
     views, bench.core.compare.view) over the whole seeds both hold (bench.core.runs.runs_delta: stratified by
     source, with the plan's boundary at this many seeds, so stopping as soon as it decides keeps its 95%);
  2. stops when that interval excludes 0 (decided), when its half-width is at most ``precision`` points,
     when the plan's last look is reached, or when this command has spent ``budget`` CPU-hours;
  3. else runs the next ``batch`` seeds of both methods on every source, and of B's replicates where the folder
     holds them and the rule applies a control (bench.core.runs.CONTROL_FROM: since 2026-12-07 it applies none, so
     they are not run) (bench.stages.pipeline: a finished cell
     is skipped, so a stopped command resumes where it was, and cells another comparison ran are reused).
It prints every look and what it spent (CPU-seconds of this process and its workers).

``from_seed`` (``--fresh-from N``): the seeds below N chose this comparison (the zoo's best three by NTS at the
protocol's seeds 0-2, say). Runs that chose a method because they favoured it would bias its interval towards a
decision, so they are left out: the comparison starts afresh at seed N, its looks counting the seeds from N.
"""
from __future__ import annotations

import resource
import sys
from pathlib import Path

from bench.core.errors import BenchError


def cpu_seconds() -> float:
    """This process's and its finished children's (the cell workers') user + system CPU time."""
    return sum(u.ru_utime + u.ru_stime for u in (resource.getrusage(resource.RUSAGE_SELF),
                                                  resource.getrusage(resource.RUSAGE_CHILDREN)))


def settings_of(result, out: Path, cache_dir: Path | None, method_file: Path | None = None):
    """RunSettings that run more seeds of the method, protocol and model pair a finished cell records; a method
    from a file (its origin "file") runs from ``method_file``, which must be the very file its cells ran."""
    import dataclasses

    from bench.core.io import sha256_file

    origin = result.method.origin
    if origin.get("kind") == "file":
        if method_file is None or not Path(method_file).is_file():
            raise BenchError(f"{result.method.name!r} ran from a method file: give it with --method-file FILE.py (the "
                             "file its cells ran) so that more of its seeds can run")
        if sha256_file(Path(method_file)) != origin.get("sha256"):
            raise BenchError(f"--method-file {method_file}: not the file {result.method.name!r}'s cells ran (its sha256 "
                             "differs): an edited method is another method; run it from its first seed with bench run")
        from methods import load_method_file

        load_method_file(method_file)
    else:
        method_file = None

    from bench.core.protocols import MODEL_PAIRS, protocol_named
    from bench.core.settings import RunSettings, default_cache_dir
    from bench.core.specs import EarlyStopping

    protocol = protocol_named(result.protocol.name)
    name = result.models["name"]
    models = MODEL_PAIRS.get(name.partition("+")[0])
    stopping = (result.models.get("student_train") or {}).get("early_stopping")
    if stopping:
        models = models.early_stopped(EarlyStopping(**stopping))
    if models.name != name:
        raise BenchError(f"model pair {name!r} is not one this harness can rebuild by name; run its seeds with bench run")
    params = {key: str(value) for key, value in result.method.params.items() if value is not None}
    # bench run writes under ROOT/<protocol>/<pair>/: given that folder (or a method's below it), the new
    # seeds go beside the old ones, not into ROOT/<protocol>/<pair>/<protocol>/<pair>/
    parts = Path(out).parts
    for depth in (2, 3):
        if len(parts) > depth and parts[-depth:][:2] == (protocol.name, name):
            out = Path(*parts[:-depth])
    return RunSettings(protocol=protocol, models=dataclasses.replace(models), method=result.method.name,
                       params=params, out=out, cache_dir=cache_dir or default_cache_dir(), replicate=result.replicate,
                       command=f"bench compare --until-decided ({result.method.name})", method_file=method_file)


def first_result(out: Path, slug: str):
    """A finished cell of the run named ``slug`` (bench.core.results.replicate_slug) under ``out`` (which
    ``board_for`` has checked holds one protocol x model pair)."""
    from bench.core.results import params_slug, read_cell_files, replicate_slug
    from bench.core.store import cell_folders

    def named(result) -> bool:   # read before its scores: only the run's own cells are recomputed
        return replicate_slug(params_slug(result.method.name, result.method.params), result.replicate) == slug

    for folder in cell_folders(out):
        found = read_cell_files(folder, named)
        if found is not None:
            return found.result
    raise BenchError(f"no finished cell of {slug} under {out}")


def run_seeds(sides: list, seeds: list[int], jobs: int) -> None:
    """Every side's cells of ``seeds`` on every source. Each side is checked first (bench.stages.resume: no finished
    cell replaced, none added beside cells of other CPU kernels), so a refusal leaves all of them unrun."""
    from bench.stages.resume import findings, refuse_to_mix
    from bench.stages.sweep import cell_threads, run_jobs

    batches = [settings.replace(seeds=tuple(seeds), sources=settings.protocol.sources) for settings in sides]
    refuse_to_mix("bench compare --until-decided",
                  [found for settings in batches for found in findings(settings, cell_threads(jobs))])
    for settings in batches:
        run_jobs(settings, jobs, checked=True)


def until_decided(out: Path, a: str, b: str, *, budget_hours: float, precision: float = 1.0, batch: int = 1,
                  jobs: int = 1, cache_dir: Path | None = None, metric: str = "nts", from_seed: int = 0,
                  method_file: Path | None = None, plan_file: Path | None = None) -> int:
    from bench.core import plans
    from bench.core.compare import LABELS, board_for, interval_text, plural
    from bench.core.runs import CONTROL_FROM

    if not isinstance(out, (str, Path)):
        raise BenchError("--until-decided writes the seeds it adds into one results folder: give one --out (copy "
                         "the cells of the others into it first)")
    board, (slug_a, slug_b) = board_for(out, [a, b], metric)   # refuses bon-nts on cells without candidate sets
    if not board.independent:
        raise BenchError(f"{a} and {b} are on a protocol whose sources share their seeds (v1): its runs are not "
                         "independent, so it has no sequential plan. Compare on a protocol seeded per source (mini v2)")
    # where the rule applies a control, B's replicates (bench run --replicate) correct each run's difference
    # (bench.core.runs) and grow with it; it applies none, and a replicate run that corrects nothing is not run
    controls = [r for r in board.replicates_of(slug_b) if r != slug_a] if CONTROL_FROM is not None else []
    results = [first_result(out, slug) for slug in (slug_a, slug_b, *controls)]
    protocol, models = results[0].protocol.name, results[0].models["name"]
    if results[0].protocol.looks is None:
        raise BenchError(f"protocol {protocol} has no sequential plan (ProtocolSpec.looks): it decides at its seeds alone")
    first, last = results[0].protocol.looks
    sides = [settings_of(result, Path(out), cache_dir, method_file) for result in results]
    # a fresh comparison ends where a submission's seeds end (ProtocolSpec.seed_order): its looks keep the whole
    # plan's boundaries, which are wider than a shorter plan's, so stopping early keeps its 95%
    last = min(last, len(sides[0].protocol.seed_order) - from_seed)
    if last < first:
        raise BenchError(f"--fresh-from {from_seed} leaves {max(0, last)} of the seeds a submission of {protocol} can "
                         f"hold, fewer than the plan's first look ({first}); give a smaller seed")
    plan = _plan(plan_file, sides[0].protocol, models, slug_a, slug_b, metric, from_seed, precision, controls)
    log = plans.log_path(Path(out), slug_a, slug_b, from_seed, metric)
    # before any seed runs, so that a refused comparison spends nothing
    plans.check_log(Path(out), plan, slug_a, slug_b, from_seed, metric)
    if plan is not None and not plans.logged_looks(log):   # a plan's first look: were its seeds seen before?
        try:
            held = len(board_for(out, [slug_a, slug_b], metric, from_seed)[0].seeds)
        except BenchError:   # no whole seed of both from there yet
            held = 0
        plans.check_unlogged(plan, slug_a, slug_b, held, from_seed)
    spent, start = 0.0, cpu_seconds()
    fresh = (f" from seed {from_seed} (the seeds before it chose {slug_a}: left out; the last look at seed "
             f"{from_seed + last - 1}, the last a submission holds)" if from_seed else "")
    print(f"{slug_a} − {slug_b} on {protocol}/{models}: {LABELS[metric]['nts']} over independent runs{fresh}, "
          f"looks at {first}..{last} seeds; stop when decided, at ±{precision:g} points, at {last} seeds or after "
          f"{budget_hours:g} CPU-hours" + (f"; {', '.join(controls)} run too, the control of each run" if controls else ""))
    print(f"under plan {plan.id}, fixed {plan.fixed}: every look is logged in {log}" if plan is not None else
          f"under no plan (--plan FILE: a plan fixed before the data, bench/core/plans.py): its looks, logged in {log}, "
          "are tied to no rule fixed in advance, so its verdict is post hoc")
    if from_seed:   # the fresh seeds of the first look; a look at fewer decides nothing (its boundary is infinite)
        run_seeds(sides, list(range(from_seed, from_seed + first)), jobs)
    while True:
        board, _ = board_for(out, [slug_a, slug_b], metric, from_seed)
        delta = board.runs_delta(slug_a, slug_b)
        half = (delta.high - delta.low) / 2
        spent = cpu_seconds() - start
        if not any(look.get("seeds") == delta.seeds for look in plans.logged_looks(log)):   # a resumed look is one
            plans.log_look(log, plan, delta, from_seed)
        print(f"  {delta.seeds} seeds, {delta.runs} runs: {delta.estimate:+.2f} {interval_text(delta.low, delta.high)} "
              f"(boundary t {delta.boundary:.2f}, df {delta.df}, run SD {delta.sd:.2f}{' corrected' if delta.controls else ''}"
              f"{', ' + plural(delta.controls, 'control replicate') if delta.controls else ''}); "
              f"{spent / 3600:.2f} CPU-hours spent here", flush=True)
        reason = ("decided" if delta.decided else f"half-width {half:.2f} <= {precision:g}" if half <= precision
                  else f"the plan's last look ({last} seeds)" if delta.seeds >= last
                  else f"the budget ({budget_hours:g} CPU-hours)" if spent >= budget_hours * 3600 else None)
        if reason:
            verdict = (f"{'better' if delta.estimate > 0 else 'worse'} than {slug_b}" if delta.decided
                       else "undecided")
            print(f"stopped: {reason}. {slug_a} is {verdict}: {delta.estimate:+.2f} "
                  f"{interval_text(delta.low, delta.high)} over {delta.runs} runs ({delta.seeds} seeds); "
                  f"{spent:.0f} CPU-seconds spent by this command")
            return 0
        seeds = list(range(from_seed, from_seed + min(last, delta.seeds + batch)))
        print(f"  running seeds {from_seed + delta.seeds}..{seeds[-1]} of each ({len(sides)} runs per cell x "
              f"{len(sides[0].protocol.sources)} sources)", file=sys.stderr, flush=True)
        run_seeds(sides, seeds, jobs)


def _plan(plan_file: Path | None, protocol, models: str, a: str, b: str, metric: str, from_seed: int, precision: float,
          controls: list[str]):
    """The plan (bench.core.plans) a comparison runs under, checked: its rule is this harness's, it lists this
    comparison, on this model pair, with this --fresh-from and --precision, and the control it fixes (B's replicates,
    ``controls``) is there; None without --plan."""
    from bench.core import plans
    from bench.core.runs import CONTROL_FROM
    from bench.core.sequential import LEVEL

    if plan_file is None:
        return None
    plan = plans.read_plan(plan_file)
    plans.check_rule(plan, protocol, metric, CONTROL_FROM, LEVEL)
    if plan.models != models:
        raise BenchError(f"plan {plan.id} is for model pair {plan.models}, not {models}")
    if plan.comparison(a, b, from_seed) is None:
        listed = ", ".join(f"{c.a} − {c.b}" + (f" from seed {c.fresh_from}" if c.fresh_from else "")
                           for c in plan.comparisons)
        raise BenchError(f"{a} − {b}{f' from seed {from_seed}' if from_seed else ''} is not one of plan {plan.id}'s "
                         f"comparisons ({listed}). Fix: run one it lists, or commit a new version of the plan that "
                         "lists it, before its first look")
    if precision != plan.precision:
        raise BenchError(f"--precision {precision:g}: plan {plan.id} fixed ±{plan.precision:g}. Fix: drop --precision")
    if plan.control is not None and (plan.control.baseline != b or not controls):
        raise BenchError(f"plan {plan.id} fixes {plan.control.baseline}'s replicates as each run's control, and "
                         f"{'this comparison is against ' + b if plan.control.baseline != b else b + ' has no replicates in the folder'}. "
                         f"Fix: give the folder {plan.control.baseline}'s replicates (bench run --replicate 1, 2), or "
                         "run a comparison the plan lists")
    return plan
