"""Numbers that decide: intervals, Δ against naive and rank intervals for a set of methods, and
``bench compare A B``, all from the per-pair scores (bench/core/stats.py does the bootstrap).

A difference is called **decided** when its t-interval over the per-seed paired differences
excludes 0. The hierarchical bootstrap interval is shown beside it, but with few seeds it is too
narrow (three seeds give ten distinct seed resamples; docs/statistics.md measures how much), so it
never decides alone.

``--metric bon-nts`` compares best-of-N numbers instead (protocols with candidate sets): the same
boards, intervals and rule, on the cells' BoN views (bench.core.stats.bon_view), whose NTS, AOG and WRG are
BoN NTS, BoN gain OOD and BoN gain ID.
"""
from __future__ import annotations

import dataclasses
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from bench.core.cells import Cell, cell_from_scores
from bench.core.errors import BenchError
from bench.core.report import fmt
from bench.core.results import BASELINE, CEILING
from bench.core.sequential import t_quantile
from bench.core.stats import LEVEL, Board, bon_view

# What a board's NTS, AOG and WRG are called, by what is compared (``bench compare --metric``): the pairs' metrics,
# or on the cells' BoN views (bench.core.stats.bon_view) the best-of-N ones (bench.core.metrics.BON_METRICS)
LABELS = {"nts": {"nts": "NTS", "aog": "AOG", "wrg": "WRG"},
          "bon-nts": {"nts": "BoN NTS", "aog": "BoN gain OOD", "wrg": "BoN gain ID"}}


def view(cells: list[Cell], metric: str) -> list[Cell]:
    """The cells as a Board of ``metric`` (a key of LABELS) reads them: as they are, or their BoN views."""
    if metric not in LABELS:
        raise BenchError(f"--metric {metric!r}: give one of {', '.join(LABELS)}")
    if metric == "nts":
        return cells
    try:
        return bon_view(cells)
    except ValueError as error:
        raise BenchError(f"--metric {metric}: {error}; compare its pair metrics (--metric nts), or run a protocol with "
                         "candidate sets (docs/best-of-n.md)") from None


# The most a difference A - B of two students of one teacher can be, in points: WRG and AOG differ by the
# students' accuracies, NTS also by their ID losses (bench.core.metrics: each in [0, 100]); the same for BoN.
# Kept out of bench.core.metrics, whose source is part of every cell's key (bench.core.versions.CELL_CODE).
DIFFERENCE_SPAN = {"wrg": 100.0, "aog": 100.0, "nts": 200.0}


def interval_text(low: float, high: float, signed: bool = True) -> str:
    """``[+1.2, +3.4]`` in the one number format (``bench.core.report.fmt``: never ``-0.0``; ``signed``: of a
    gain, else ``[78.0, 84.5]``); blank where the interval does not exist (one seed). A gain's end that rounds
    to 0.0 but is not 0 keeps its sign with two significant digits (``[-0.02, +2.8]``), so an interval that
    holds 0 never reads as one that does not, nor the other way round: which side of 0 an end lies on is what
    decides."""
    if math.isnan(low) or math.isnan(high):
        return ""

    def end(value: float) -> str:
        return f"{value:+.2g}" if signed and value != 0 and round(value, 1) == 0 else fmt(value, signed=signed)

    return f"[{end(low)}, {end(high)}]"


def cells_under(*roots: Path, methods: Sequence[str] | None = None) -> dict[tuple[str, str], list[Cell]]:
    """Every finished cell under results or submissions folders with its per-pair correctness,
    grouped by (protocol, model pair): only cells of one group can be compared. Several folders add up
    (the reference seeds in submissions/ and more seeds of the same methods elsewhere). ``methods``: only
    the cells of these (a slug or a bare method name, as ``resolve`` takes them, with their replicates), the
    others left unread: a comparison of two runs then reads their cells, not a whole folder's."""
    from bench.core.results import params_slug, read_cell_files
    from bench.core.store import cell_folders

    wanted = None if methods is None else set(methods)
    keep = None if wanted is None else \
        (lambda r: r.method.name in wanted or params_slug(r.method.name, r.method.params) in wanted)
    groups: dict[tuple[str, str], list[Cell]] = defaultdict(list)
    for folder in sorted(f for root in roots for f in cell_folders(root)):
        found = read_cell_files(folder, keep)
        if found is not None:
            result = found.result
            groups[result.protocol.name, result.models["name"]].append(
                cell_from_scores(result, found.rows, str(folder), found.candidates))
    return groups


def run_methods(names: Iterable[str]) -> list[str]:
    """What ``cells_under`` reads for runs named as ``resolve`` takes them: a replicate's (``naive#1``) is its
    method's slug (``naive``), whose replicates it reads too."""
    from bench.core.results import replicate_of

    return [name.rpartition("#")[0] if replicate_of(name) else name for name in names]


def folders(root: Path | Sequence[Path]) -> list[Path]:
    """``--out``'s folders: one, or several whose cells add up."""
    return [Path(root)] if isinstance(root, (str, Path)) else [Path(r) for r in root]


def named(roots: list[Path]) -> str:
    return " and ".join(map(str, roots))


def decision_table(board: Board, baseline: str = BASELINE, category: str | None = None,
                   source: str | None = None, metric: str = "nts") -> pd.DataFrame:
    """One row per method (its slug): NTS with its 95% interval, the rank interval, and Δ NTS against
    ``baseline`` with the bootstrap interval, its p-value, the interval that decides (``deciding_interval``;
    on a board of independent runs also the runs it rests on) and whether it is decided. Δ is the estimate
    that interval is about: the bootstrap's over the seeds every method holds, or on independent runs the
    runs delta's over every seed both sides hold (the two agree where they hold the same seeds).
    ``metric`` names the columns: "bon-nts" for a board of BoN views (``view``)."""
    rows = []
    name = LABELS[metric]["nts"]
    contenders = ranked(board.methods)   # the ceiling is a reference and a replicate an A/A run: ranked with no one
    ranks = {r.method: r for r in board.ranks(contenders, category=category, source=source)} if contenders else {}
    for method in board.methods:
        nts = board.stats(method, category=category, source=source).metrics["nts"]
        row = {"method": method, name: nts.estimate, f"{name} 95% CI": interval_text(nts.low, nts.high)}
        if method in ranks:
            rank = ranks[method]
            row.update({"rank": rank.rank, "rank 95%": f"{rank.low}-{rank.high}" if rank.low != rank.high
                        else str(rank.low)})
        if baseline in board.methods and method != baseline:
            delta = board.compare(method, baseline, category=category, source=source).deltas["nts"]
            decision = deciding_interval(board, method, baseline, "nts", category, source, delta)
            row.update({f"Δ {name} vs {baseline}": decision.estimate, "Δ bootstrap 95%": interval_text(delta.low, delta.high),
                        "p": delta.p_text, decision_column(board.independent): interval_text(decision.low, decision.high),
                        "decided": ("better" if decision.estimate > 0 else "worse") if decision.decided else "no"})
            if board.independent:
                row["runs"] = decision.runs
        rows.append(row)
    table = pd.DataFrame(rows).sort_values(name, ascending=False, kind="stable").reset_index(drop=True)
    for column in ("rank", "runs"):   # integers, though the unranked ceiling and the baseline leave gaps
        if column in table:
            table[column] = table[column].astype("Int64")
    return table.astype(object).where(table.notna(), "")   # the baseline has no Δ against itself


def decision_column(independent: bool) -> str:
    """The name of the interval that decides: over independent runs (``Board.independent``), or over seeds
    (v1's protocols)."""
    return "Δ 95% (runs)" if independent else "Δ t 95% (seeds)"


def decision_rule(independent: bool) -> str:
    """The rule ``deciding_interval`` applies on a board of independent runs (``Board.independent``) or not,
    in words."""
    from bench.core.runs import CONTROL_FROM  # read when asked: a benchmark measuring the control sets it

    if independent:
        return ("decided when its 95% interval over independent runs, stratified by source, excludes 0 (with the "
                "protocol's sequential boundary, valid however many seeds were added until it decided; each run's "
                "difference as it is, without the baseline's replicates as a control: docs/statistics.md)"
                if CONTROL_FROM is None else
                "decided when its 95% interval over independent runs, stratified by source, excludes 0 (with the "
                f"protocol's sequential boundary, valid however many seeds were added until it decided; from {CONTROL_FROM} seeds, "
                "where the baseline's replicates ran too, each run's difference is corrected by their A/A difference, "
                "a control variate; docs/statistics.md)")
    return "decided when its t-interval over the seeds excludes 0 (docs/statistics.md)"


@dataclasses.dataclass(frozen=True)
class Decision:
    low: float
    high: float
    decided: bool
    estimate: float      # the difference the interval is about
    seeds: int           # the seeds it rests on (on independent runs: the whole seeds both sides hold)
    runs: int = 0        # the independent runs it rests on; 0 where it is decided over seeds
    controls: int = 0    # the baseline's replicates whose A/A difference corrected each run's (bench.core.runs)
    from_seed: int = 0   # the seeds below it chose the method, so they are left out (bench compare --fresh-from)

    @property
    def basis(self) -> str:
        """What the interval rests on: "18 runs", "18 runs, 2 control replicates" or "3 seeds"."""
        return f"{self.runs} runs{self.controlled}" if self.runs else plural(self.seeds, "seed")

    @property
    def rests_on(self) -> str:
        """The runs with the seeds they span, "18 runs (3 seeds)" (and ", 2 control replicates" where the
        baseline's replicates corrected them; ", from seed 3" where the seeds before chose the method), or the
        seeds alone, "3 seeds"."""
        return f"{self.runs} runs ({plural(self.seeds, 'seed')}{self.fresh}){self.controlled}" if self.runs \
            else plural(self.seeds, "seed") + self.fresh

    @property
    def fresh(self) -> str:
        return f", from seed {self.from_seed}" if self.from_seed else ""

    @property
    def controlled(self) -> str:
        return f", {plural(self.controls, 'control replicate')}" if self.controls else ""


def plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def deciding_interval(board: Board, a: str, b: str, metric: str, category: str | None, source: str | None,
                      delta, level: float = LEVEL) -> Decision:
    """The harness's one rule for A - B. On a protocol whose runs are independent, the interval over runs
    stratified by source with the protocol's sequential boundary (bench.core.runs.runs_delta); else the
    t-interval over the per-seed differences (``delta``, bench.core.stats.Delta). Decided when it excludes 0.

    The interval is cut to the values the difference can take (``DIFFERENCE_SPAN``): a first look at one
    category, each source's variance resting on two degrees of freedom, can reach thousands of points,
    which is what the rule says but reads as a bug. Cutting never moves 0 in or out of it."""
    span = DIFFERENCE_SPAN[metric]
    if board.independent:
        try:
            runs = board.runs_delta(a, b, metric, category, source, level)
        except ValueError:   # fewer than two whole seeds
            return Decision(math.nan, math.nan, False, delta.estimate, len(board.seeds))
        return Decision(max(runs.low, -span), min(runs.high, span), runs.decided, runs.estimate, runs.seeds,
                        runs.runs, runs.controls)
    low, high = delta.t_low, delta.t_high
    if level != LEVEL and len(delta.per_seed) > 1:   # the same t-interval over the per-seed differences, at ``level``
        per_seed = np.array(delta.per_seed)
        half = t_quantile(1 - (1 - level) / 2, len(per_seed) - 1) * per_seed.std(ddof=1) / math.sqrt(len(per_seed))
        low, high = delta.estimate - half, delta.estimate + half
    decided = not math.isnan(low) and (low > 0 or high < 0)
    return Decision(max(low, -span), min(high, span), decided, delta.estimate, len(board.seeds))


def holm(decides: dict[str, Callable[[float], Decision]], alpha: float = 1 - LEVEL) -> dict[str, Decision]:
    """Holm's step-down over a family of comparisons, family-wise at ``alpha``: each comparison given as its deciding
    interval at a level (``decides[name](level)``, a Decision), the ones it decides with the interval that did.

    With p_i the least a at which comparison i's interval at level 1 - a excludes 0 (its intervals nest: a higher
    level's holds a lower one's, for the t-interval and for a sequential plan's boundaries alike), Holm decides, in
    increasing p, while p_(k) <= alpha / (m - k + 1). Each step here decides every remaining comparison whose interval
    at 1 - alpha / r (r of them left) excludes 0, which is the same set. The chance of any false decision in the
    family is then at most ``alpha``, whatever the comparisons' dependence (they share naive's runs)."""
    remaining, found = list(decides), {}
    while remaining:
        level = 1 - alpha / len(remaining)
        now = {name: decision for name in remaining if (decision := decides[name](level)).decided}
        if not now:
            break
        found.update(now)
        remaining = [name for name in remaining if name not in now]
    return found


def comparison_table(board: Board, a: str, b: str, by: str | None = None, metric: str = "nts") -> pd.DataFrame:
    """A - B on NTS, AOG and WRG, over all cells and (``by``) per category or source; ``metric`` "bon-nts" names
    them as a board of BoN views (``view``) holds them: BoN NTS, BoN gain OOD and BoN gain ID."""
    scopes: list[tuple[str | None, str | None]] = [(None, None)]
    if by == "category":
        scopes += [(c, None) for c in board.categories]
    elif by == "source":
        scopes += [(None, s) for s in board.sources]
    rows = []
    for category, source in scopes:
        comparison = board.compare(a, b, category=category, source=source)
        for key, delta in comparison.deltas.items():
            decision = deciding_interval(board, a, b, key, category, source, delta)
            rows.append({"scope": comparison.scope, "metric": LABELS[metric][key], f"{a} − {b}": f"{delta.estimate:+.2f}",
                         "bootstrap 95%": interval_text(delta.low, delta.high), "p": delta.p_text,
                         # the deciding interval's own centre: over runs with a control it is the corrected mean
                         # difference, which the plain one beside it is not (+1.50 against +1.30 for warm)
                         "deciding Δ": "" if math.isnan(decision.low) else f"{decision.estimate:+.2f}",
                         "deciding 95%": f"{interval_text(decision.low, decision.high)} ({decision.basis})",
                         "decided": "yes" if decision.decided else "no",
                         "per seed": " ".join(f"{d:+.1f}" for d in delta.per_seed)})
    return pd.DataFrame(rows)


def resolve(cells: list[Cell], name: str) -> str:
    """A method as given: its slug (``anchor_lam=0.1_layers=last``) or, when only one setting of it is
    among ``cells``, its name (``anchor``)."""
    methods = sorted({c.method for c in cells})
    if name in methods:
        return name
    matches = sorted({c.method for c in cells if c.method_name == name})
    if len(matches) == 1:
        return matches[0]
    raise BenchError(f"method {name!r} is {'ambiguous' if matches else 'not in these results'}: give one of "
                     f"{', '.join(sorted(matches or methods))}")


def split_pair(name: str) -> tuple[str, str | None]:
    """``naive@tiny+early-stop`` -> (``naive``, ``tiny+early-stop``); a name without ``@`` names no pair."""
    method, at, models = name.rpartition("@")
    return (method, models) if at and method and models else (name, None)


def holds(cells: list[Cell], name: str) -> bool:
    """Whether ``cells`` hold the method ``name`` names (its slug or, as ``resolve`` takes it, its bare name)."""
    return any(name in (c.method, c.method_name) for c in cells)


def one_side(groups: dict[tuple[str, str], list[Cell]], roots: list[Path], name: str) -> tuple[str, str, list[Cell]]:
    """(protocol, label ``slug@pair``, its cells) of a METHOD or METHOD@PAIR under ``roots``."""
    method, models = split_pair(name)
    holding = {k: v for k, v in groups.items() if holds(v, method)}
    held = {k: v for k, v in holding.items() if models is None or k[1] == models}
    if not holding:
        raise BenchError(f"no finished cells of {method!r} under {named(roots)}")
    if not held:
        raise BenchError(f"{name!r}: {method} is not on model pair {models} under {named(roots)}; its model pairs there: "
                         f"{', '.join(sorted({pair for _, pair in holding}))}: give METHOD@PAIR with one of them")
    if len(held) > 1:
        where = ", ".join("/".join(k) for k in sorted(held))
        fix = (f"point --out at one protocol's folder (e.g. {roots[0] / sorted(held)[0][0]})" if models
               else "give METHOD@PAIR with one of those pairs")
        raise BenchError(f"{name!r} is under {named(roots)} on {where}: {fix}")
    (protocol, pair), cells = next(iter(held.items()))
    slug = resolve(cells, method)
    return protocol, f"{slug}@{pair}", [c for c in cells if c.method == slug]


def board_across_pairs(root: Path | Sequence[Path], names: list[str], metric: str = "nts") -> tuple[Board, list[str]]:
    """The board of two methods on two model pairs of one protocol (``naive@tiny+early-stop`` against
    ``naive@tiny``): a training setting against the same method without it. Paired only when both sides
    have the same cells and test pairs and their students learned from one teacher: every cell's teacher
    must judge every test pair alike on both sides, else the difference would mix two teachers' errors
    into the students'."""
    roots = folders(root)
    groups = cells_under(*roots, methods=run_methods(split_pair(n)[0] for n in names))
    (pa, a, cells_a), (pb, b, cells_b) = (one_side(groups, roots, n) for n in names)
    if pa != pb:
        raise BenchError(f"{a} is on protocol {pa} and {b} on {pb}: a paired comparison needs the same test pairs; "
                         "compare runs of one protocol")
    if a == b:
        raise BenchError(f"{a} against itself: name two methods or two model pairs")
    keys_a, keys_b = ({(c.seed, c.source) for c in cells} for cells in (cells_a, cells_b))
    for label, missing in ((a, keys_b - keys_a), (b, keys_a - keys_b)):
        if missing:
            raise BenchError(f"{label} has no cell for " + ", ".join(f"seed {s} {src}" for s, src in sorted(missing))
                             + ", which the other side has: run them, or compare the seeds and sources both have")
    judged = {(c.seed, c.source, e.name): e for c in cells_b for e in c.eval_sets}
    for c in cells_a:
        for e in c.eval_sets:
            other = judged.get((c.seed, c.source, e.name))
            where = f"seed {c.seed}, source {c.source}, on {e.name}"
            if other is None or other.pair_ids != e.pair_ids:
                raise BenchError(f"{a} and {b} scored different test pairs ({where}): not runs of the same cells")
            if (other.teacher != e.teacher).any():
                raise BenchError(f"the teachers of {a} and {b} differ ({where}: their verdicts differ on "
                                 f"{int((other.teacher != e.teacher).sum())} of {len(e.teacher)} test pairs), so their "
                                 "students' difference is not paired: compare model pairs that share one teacher "
                                 "(the same weak model and teacher training, thread count and CPU kernels)")
    try:
        return Board([dataclasses.replace(c, method=label) for label, cells in ((a, cells_a), (b, cells_b))
                      for c in view(cells, metric)]), [a, b]
    except ValueError as error:
        raise BenchError(f"cannot compare {a} and {b}: {error}") from None


def board_for(root: Path | Sequence[Path], names: list[str] | None = None, metric: str = "nts", from_seed: int = 0
              ) -> tuple[Board, list[str]]:
    """The bootstrap board of the one (protocol, model pair) under ``root`` (a folder, or several whose cells
    add up) that holds ``names`` (all its methods without names), and the names resolved to slugs; a name
    with ``@PAIR`` compares across model pairs (``board_across_pairs``). ``metric`` "bon-nts": a board of
    the cells' BoN views (``view``). ``from_seed``: the seeds below it are left out (they chose the comparison:
    ``bench compare --fresh-from``)."""
    if names and any(split_pair(n)[1] for n in names):
        if from_seed:
            raise BenchError("--fresh-from compares the methods of one model pair; leave out @PAIR")
        return board_across_pairs(root, names, metric)
    roots = folders(root)
    groups = cells_under(*roots, methods=run_methods(names) if names else None)
    if names:
        groups = {k: v for k, v in groups.items() if all(holds(v, n) for n in names)}
    if not groups:
        raise BenchError(f"no finished results under {named(roots)}" + (f" holding {' and '.join(names)}" if names else ""))
    if len(groups) > 1:
        raise BenchError(f"under {named(roots)} are several protocol x model pairs "
                         f"({', '.join('/'.join(k) for k in groups)}); point at one of them, e.g. "
                         f"{roots[0] / '/'.join(next(iter(groups)))}")
    cells = next(iter(groups.values()))
    slugs = [resolve(cells, n) for n in names or []]
    cells = [c for c in cells if c.seed >= from_seed]
    for slug in slugs:
        if not any(c.method == slug for c in cells):
            raise BenchError(f"{slug} has no finished cell from seed {from_seed} on under {named(roots)}: run its seeds "
                             f"from {from_seed} (bench compare ... --until-decided --fresh-from {from_seed} runs them)")
    controls: list[Cell] = []
    if slugs:   # the last named method's replicates: each run's control where the rule applies one (runs_delta)
        from bench.core.results import replicates_of

        replicates = set(replicates_of({c.method for c in cells}, slugs[-1])) - set(slugs)
        controls = [c for c in cells if c.method in replicates and (metric == "nts" or c.bon)]
        cells = [c for c in cells if c.method in slugs]
    try:
        return Board(view(cells, metric), controls=view(controls, metric) if controls else ()), slugs
    except ValueError as error:
        raise BenchError(f"cannot compare the methods under {named(roots)}: {error}") from None


# --- do pair NTS and BoN NTS rank methods alike? ------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class RankAgreement:
    table: pd.DataFrame      # per method: rank by NTS, rank by BoN NTS, their difference's 95% interval, differs
    spearman: float          # Spearman's rho of the two point rankings
    low: float               # its 95% percentile interval over the bootstrap replicates
    high: float


def ranks_of(values: np.ndarray) -> np.ndarray:
    """Rank 1 = best along the first axis (ties share the better rank, as Board.ranks)."""
    from bench.core.stats import above

    return 1 + above(values)


def ranked(methods: Sequence[str]) -> list[str]:
    """The methods a rank agreement ranks unless told: all but the ceiling (a reference) and replicates (``naive#1``:
    naive's A/A runs, not a method)."""
    from bench.core.results import replicate_of

    return [m for m in methods if m != CEILING and not replicate_of(m)]


def rank_agreement(pair: Board, bon: Board, methods: Sequence[str] | None = None) -> RankAgreement:
    """Whether NTS and BoN NTS rank ``methods`` (default: every method but the ceiling and naive's replicates)
    alike, on boards of the same cells' pairs and BoN views. The two boards draw the same seeds in replicate b (draw_resamples draws
    the seeds first, from the recorded bootstrap seed), which carry almost all of the variance; pairs and sets
    are drawn apart. A method's ranks differ when the 95% interval of (BoN rank - NTS rank) over the
    replicates excludes 0; Spearman's rho is computed in every replicate, and its interval is their percentiles."""
    from scipy.stats import rankdata

    methods = list(methods or ranked(pair.methods))
    if len(methods) < 3:
        raise BenchError(f"{len(methods)} ranked methods: a rank agreement needs at least 3")
    if pair.seeds != bon.seeds or pair.resamples.n != bon.resamples.n:
        raise BenchError("the pair and BoN boards hold different seeds or replicate counts: build both from one set of cells")
    points = [np.array([board.stats(m, ceiling=None).metrics["nts"].estimate for m in methods]) for board in (pair, bon)]
    reps = [np.stack([board.replicates("nts")[m] for m in methods]) for board in (pair, bon)]   # (M, B)
    point_ranks = [ranks_of(p) for p in points]
    diff = ranks_of(reps[1]) - ranks_of(reps[0])
    q = (1 - LEVEL) / 2
    rows = []
    for k, method in enumerate(methods):
        low, high = (int(np.quantile(diff[k], x, method="inverted_cdf")) for x in (q, 1 - q))
        rows.append({"method": method, "rank by NTS": int(point_ranks[0][k]), "rank by BoN NTS": int(point_ranks[1][k]),
                     "BoN − NTS rank 95%": f"[{low:+d}, {high:+d}]", "differs": "yes" if low > 0 or high < 0 else "no"})

    def rho(a: np.ndarray, b: np.ndarray) -> float:
        with np.errstate(invalid="ignore", divide="ignore"):   # a replicate where all tie: no rho (nan, left out)
            return float(np.corrcoef(rankdata(a), rankdata(b))[0, 1])

    per_replicate = np.array([rho(reps[0][:, i], reps[1][:, i]) for i in range(reps[0].shape[1])])
    low, high = np.nanquantile(per_replicate, [q, 1 - q])
    return RankAgreement(pd.DataFrame(rows), rho(*points), float(low), float(high))


def agreement_text(found: RankAgreement) -> str:
    """The rank agreement in a few lines: rho with its interval, then the table."""
    differ = list(found.table.loc[found.table["differs"] == "yes", "method"])
    return (f"Rank by NTS against rank by BoN NTS: Spearman's rho {found.spearman:+.2f} [{found.low:+.2f}, "
            f"{found.high:+.2f}] (95%, bootstrap replicates) over {len(found.table)} methods; ranks that differ "
            f"(the 95% interval of the rank difference excludes 0): {', '.join(differ) or 'none'}\n"
            + found.table.to_string(index=False))
