"""Uncertainty on the board: hierarchical bootstrap intervals, paired comparisons, rank intervals.

Data: per method, cell (seed, source) and eval set, the teacher's and the student's per-pair
correctness c in {0, 1/2, 1} (r(chosen) > r(rejected), a tie 1/2: bench.core.metrics.accuracy). With
pair weights w (all ones for the point estimate) an accuracy is 100 * sum(w c) / sum(w); each
(seed, source -> target) row gives WRG, AOG, NTS as in bench.core.metrics; a method's value is the mean
over seeds of each seed's mean over rows (bench.core.report.summarise); PGR ID = WRG / WRG(ceiling) and
PGR OOD = AOG / AOG(ceiling) on those means, the ceiling's from the same replicate.

One bootstrap replicate draws S seeds from the S with replacement and, for every dataset D, n_D
test pairs from D's n_D with replacement (a count vector w_D), and averages the drawn seeds' means
over rows with every accuracy on D weighted by w_D. A protocol's test split is the same pairs at
every seed (crossed design), so by default one w_D serves every seed, method and source of the
replicate: A - B is paired pair by pair, and more seeds do not average test-set noise away.
nested=True draws a w_D per seed slot instead (as if each seed had its own test set).
Interval: the 2.5 and 97.5 percentiles of the replicates (np.quantile, linear). Paired A - B:
p = min(1, 2 min(P*(Δ <= 0), P*(Δ >= 0))) over the replicates, floored at 1/N ("< 1/N"); and
the t-interval mean ± t(0.975, S-1) sd / sqrt(S) of the S per-seed differences.

Best-of-N (docs/best-of-n.md): a candidate set's credit |T ∩ B| / |T| (bench.core.metrics.bon_credit) is to
BoN accuracy what a pair's correctness is to accuracy: BoN accuracy is 100 * its mean over the eval
set's sets. So a cell's BoN view (``bon_view``) is a Cell whose eval sets hold per-set credits in
place of per-pair correctness, and everything above applies to it unchanged: on a Board of BoN views,
WRG, AOG and NTS are BoN gain ID, BoN gain OOD and BoN NTS, with the same intervals, paired
comparisons, rank intervals and runs deltas (the sets are resampled as the pairs are).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import weakref
from collections import defaultdict
from dataclasses import asdict, dataclass
from types import MappingProxyType
from typing import Iterable, Mapping, Sequence

import numpy as np
import threadpoolctl

from bench.core.cells import Cell
from bench.core.runs import RunsDelta, runs_delta, whole_seeds
from bench.core.sequential import LEVEL, t_quantile

BOOTSTRAP_SEED = 20261130
N_BOOT = 2000
ACCURACIES = ("teacher_id", "student_id", "teacher_ood", "student_ood")
# A board of more methods than METHODS_KEPT computes its replicates' accuracies METHODS_PER_STEP methods at a time,
# for each scope it is asked about, instead of keeping them all (2 x methods x cells x eval sets x N_BOOT floats: GBs
# for a thousand submissions); a step's arrays, and the ranks' comparisons, take memory in proportion to the step.
# Every board computes its metrics from the accuracies a step at a time, kept or not: a few methods' temporaries are
# reused memory, where larger ones are fresh pages the kernel must map on every use (docs/results/results-store.md).
# Fixed counts, not a memory budget, so that what a board computes never depends on the machine.
METHODS_KEPT = 128
METHODS_PER_STEP = 4
METRICS = (*ACCURACIES, "wrg", "aog", "nts")


@dataclass(frozen=True, eq=False)
class Resamples:
    """Replicate b uses seeds[seeds_drawn[b, j]] in slot j, and weights[D][b, j or 0] on D's pairs."""
    seeds_drawn: np.ndarray              # (B, S) indices into the sorted seeds
    weights: dict[str, np.ndarray]       # D -> (B, 1, n_D) crossed, or (B, S, n_D) nested: pair counts

    @property
    def n(self) -> int:
        return len(self.seeds_drawn)


def resamples_from_indices(seeds_drawn, pairs_drawn: Mapping[str, np.ndarray]) -> Resamples:
    """Explicit resamples: pairs_drawn[D] holds pair indices, (B, n_D) shared by the seeds or (B, S, n_D)."""
    weights = {}
    for name, idx in pairs_drawn.items():
        idx = np.asarray(idx)
        idx = idx[:, None, :] if idx.ndim == 2 else idx
        n = idx.shape[-1]
        flat = (idx + n * np.arange(idx.shape[0] * idx.shape[1]).reshape(idx.shape[:2] + (1,))).ravel()
        weights[name] = np.bincount(flat, minlength=idx.size).reshape(idx.shape).astype(np.float64)
    return Resamples(np.asarray(seeds_drawn, dtype=np.intp), weights)


def draw_resamples(n_seeds: int, n_pairs: Mapping[str, int], n_boot: int = N_BOOT, seed: int = BOOTSTRAP_SEED,
                   resample: str = "both", nested: bool = False) -> Resamples:
    """The recorded bootstrap: a function of (n_seeds, sorted datasets and sizes, n_boot, seed, nested) only,
    so a method gets the same draws on the whole board and in its own submission. resample="seeds" or
    "pairs" keeps the other level fixed (the variance decomposition of benchmarks/bench_power.py).
    Being a function of its arguments, it is drawn once per process for each of them (``_drawn``): validating
    a tree of submissions draws each protocol's resamples once, not once per submission. Its arrays are
    read-only, as they are shared."""
    return _drawn(n_seeds, tuple(sorted(n_pairs.items())), n_boot, seed, resample, nested)


@functools.lru_cache(maxsize=8)
def _drawn(n_seeds: int, n_pairs: tuple[tuple[str, int], ...], n_boot: int, seed: int, resample: str,
           nested: bool) -> Resamples:
    n_pairs = dict(n_pairs)
    if resample not in ("both", "seeds", "pairs"):
        raise ValueError(f"resample must be both, seeds or pairs, not {resample!r}")
    rng = np.random.default_rng(seed)
    seeds_drawn = rng.integers(0, n_seeds, (n_boot, n_seeds))
    pairs = {d: rng.integers(0, n, (n_boot, n_seeds if nested else 1, n)) for d, n in sorted(n_pairs.items())}
    if resample == "pairs":
        seeds_drawn = np.broadcast_to(np.arange(n_seeds), (n_boot, n_seeds))
    if resample == "seeds":
        pairs = {d: np.broadcast_to(np.arange(n_pairs[d]), idx.shape) for d, idx in pairs.items()}
    drawn = resamples_from_indices(seeds_drawn, pairs)
    for array in (drawn.seeds_drawn, *drawn.weights.values()):
        array.flags.writeable = False
    return Resamples(drawn.seeds_drawn, MappingProxyType(drawn.weights))


@functools.cache
def one_blas_thread() -> None:
    """Set numpy's BLAS to one thread, for the rest of the process (torch's threads are its own and untouched).
    The bootstrap's products are a few rows by thousands of replicates: a second thread does not make them
    faster, and OpenBLAS keeps it spinning between calls, which burns about as much CPU again as the work
    (docs/performance.md). Called by whatever reads results (a Board, the validation of a tree); one thread
    also makes float64 products independent of the machine's core count."""
    threadpoolctl.threadpool_limits(1, user_api="blas")


_MADE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()   # resamples -> what is made once from them
_KEPT_ROWS = 512   # teacher rows whose replicate counts are kept, per resamples and dataset (16 KB each at N_BOOT)


def _flat_weights(resamples: Resamples, d: str, J: int) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """D's weights as (B * J, n_D), their row sums, and the weights transposed, (n_D, B * J) in float32, where they
    are whole pair counts (as drawn) adding up to less than 2**22 (else None): made once per resamples, as every
    submission of a tree shares its protocol's resamples (``_drawn``). Transposed in memory, as a product with a
    few rows runs several times faster on it."""
    own = _MADE.setdefault(resamples, {})
    if (d, J) not in own:
        w = resamples.weights[d]
        w = np.broadcast_to(w, (resamples.n, J, w.shape[2])).reshape(resamples.n * J, -1)
        whole = bool((w == np.floor(w)).all() and (w >= 0).all() and w.sum(1).max() < 2 ** 22)
        own[d, J] = (w, w.sum(1), np.ascontiguousarray(w.T, dtype=np.float32) if whole else None)
    return own[d, J]


def _counts(resamples: Resamples, d: str, J: int, correct: np.ndarray, shared: bool) -> np.ndarray:
    """(rows, B * J): each replicate's count of correct pairs of D for each row of ``correct`` (rows, n_D).
    ``shared``: rows that recur across boards (a group's teacher, the same in every submission of it), whose
    counts are kept per resamples and computed once.

    Correctness is 0, 0.5 (a tie) or 1, so with whole weights every count is a multiple of 0.5 below 2**22,
    which float32 holds exactly: its product (half of float64's work) gives the very counts float64's does, in
    any order of summation, and a row's counts do not depend on the rows beside it."""
    w, _, w32t = _flat_weights(resamples, d, J)
    if w32t is None or not ((correct == 0) | (correct == 0.5) | (correct == 1)).all():
        return correct @ w.T
    correct = correct.astype(np.float32)
    if not shared:
        return (correct @ w32t).astype(np.float64)
    kept = _MADE[resamples].setdefault(("rows", d, J), {})
    keys = [row.tobytes() for row in correct]
    missing = list({key: i for i, key in enumerate(keys) if key not in kept}.values())   # each distinct row once
    if missing:
        if len(kept) + len(missing) > _KEPT_ROWS:
            return (correct @ w32t).astype(np.float64)
        for i, counts in zip(missing, (correct[missing] @ w32t).astype(np.float64)):
            kept[keys[i]] = counts
    return np.stack([kept[key] for key in keys])


@dataclass(frozen=True)
class _Known:
    """A method's replicate values (metric -> (B,)) on a board: of its cells (its first the key of ``_KNOWN``, the
    rest held here), on the rows ``rows`` (cell, eval set and seed of each row of the scope) and the resamples
    ``resamples`` (a weak reference: draws made again are other draws)."""
    resamples: weakref.ref
    rows: tuple[bytes, bytes, bytes]
    rest: tuple[Cell, ...]
    values: dict[str, np.ndarray]


# A method's replicate values, kept on its first cell (they go with the cells, one scope each): validating a
# submission computes them on its own board, and its group's board of the same cells and draws takes them.
_KNOWN: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class Interval:
    estimate: float
    low: float
    high: float


@dataclass(frozen=True)
class MethodStats:
    method: str
    scope: str                           # "all", "category=helpful" or "source=mini/chat"
    seeds: int
    rows: int                            # source -> target rows per seed
    n_boot: int
    metrics: dict[str, Interval]         # METRICS, plus pgr_id and pgr_ood when the ceiling is on the board


@dataclass(frozen=True)
class Delta:
    estimate: float
    low: float                           # bootstrap percentile interval of A - B
    high: float
    p_value: float                       # floored at 1 / n_boot
    p_text: str                          # "0.034" or "< 0.0005"
    t_low: float                         # t-interval over the per-seed differences (nan with one seed)
    t_high: float
    per_seed: tuple[float, ...]


@dataclass(frozen=True)
class Comparison:
    a: str
    b: str
    scope: str
    seeds: int
    n_boot: int
    deltas: dict[str, Delta]             # "nts", "aog", "wrg"


@dataclass(frozen=True)
class RankInterval:
    method: str
    rank: int                            # 1 + the number of methods with a higher point NTS
    low: int                             # 2.5 and 97.5 percentiles of the rank over replicates
    high: int
    nts: float


def bon_view(cells: Iterable[Cell]) -> list[Cell]:
    """Each cell with its BoN credits in place of its pairs' correctness (module docstring): on a Board of these,
    WRG, AOG and NTS are BoN gain ID, BoN gain OOD and BoN NTS. A ValueError names a cell without candidate sets."""
    out = []
    for c in cells:
        if not c.bon:
            raise ValueError(f"{c.method} seed {c.seed} {c.source}: no best-of-N candidate scores (its protocol scores "
                             "no candidate sets), so it has no BoN metrics")
        out.append(dataclasses.replace(c, eval_sets=c.bon, bon=()))
    return out


class Board:
    """Every method of one protocol x model pair, bootstrapped once (a few seconds); queries are cheap.
    Refuses methods whose cells (seed, source), eval sets or test pair ids differ, or whose teachers judge
    a test pair of a cell otherwise. On a protocol whose runs are independent, methods may hold different
    seeds (a comparison grown until decided, bench compare --until-decided): the bootstrap takes the whole
    seeds every method holds, and ``runs_delta`` every whole seed both sides of a comparison hold."""

    def __init__(self, cells: Sequence[Cell], resamples: Resamples | None = None, *, n_boot: int = N_BOOT,
                 seed: int = BOOTSTRAP_SEED, resample: str = "both", nested: bool = False,
                 controls: Sequence[Cell] = ()):
        if not cells:
            raise ValueError("no cells")
        one_blas_thread()
        self._every: dict[str, list[Cell]] = defaultdict(list)   # method -> all its cells, every seed
        for c in cells:
            self._every[c.method].append(c)
        self._controls: dict[str, list[Cell]] = defaultdict(list)   # replicates that only correct runs_delta's
        for c in controls:   # differences where the rule applies a control: no rows, no say in the seeds held
            self._controls[c.method].append(c)
        if all(c.independent for c in cells):   # a seed a stopped comparison cut mid-way waits for its other cells
            sources = {c.source for c in cells}
            common = set.intersection(*(whole_seeds(own, sources) for own in self._every.values()))
            cells = [c for c in cells if c.seed in common]
            if not cells:
                raise ValueError(f"methods {', '.join(sorted(self._every))} hold no seed in common")
        self.methods, self.seeds = tuple(sorted({c.method for c in cells})), tuple(sorted({c.seed for c in cells}))
        of_method: dict[str, list[Cell]] = defaultdict(list)   # one pass: a board may hold a thousand methods
        for c in cells:
            of_method[c.method].append(c)
        self._cells = [sorted(of_method[m], key=lambda c: (c.seed, c.source)) for m in self.methods]
        layout, splits = self._cells[0], {}        # splits: (seed if nested, dataset) -> pair ids
        for own in self._cells:
            keys, ref = [(c.seed, c.source) for c in own], [(c.seed, c.source) for c in layout]
            if len(set(keys)) != len(keys):
                raise ValueError(f"method {own[0].method!r} has a cell (seed, source) twice")
            if keys != ref:
                raise ValueError(f"methods {layout[0].method!r} and {own[0].method!r} have different cells "
                                 f"(seed, source) {sorted(set(ref) ^ set(keys))}: compare only methods run on "
                                 f"the same protocol, model pair and seeds")
            for c, r in zip(own, layout):
                if [(e.name, e.role) for e in c.eval_sets] != [(e.name, e.role) for e in r.eval_sets]:
                    raise ValueError(f"{c.method!r} seed {c.seed} {c.source}: eval sets differ from {r.method!r}'s")
                for e, first in zip(c.eval_sets, r.eval_sets):
                    if splits.setdefault((c.seed if nested else None, e.name), e.pair_ids) != e.pair_ids:
                        raise ValueError(f"{c.method!r} seed {c.seed} {c.source}: pair ids of {e.name} differ from "
                                         f"another cell's{'' if nested else ' (nested=True allows a split per seed)'}"
                                         f": a paired bootstrap needs the same test pairs in the same order")
                    # Every method of a cell is measured against one teacher: a paired difference of two
                    # students is a difference of their gains over it only when it is the same teacher.
                    flipped = int((e.teacher != first.teacher).sum()) if e.pair_ids == first.pair_ids else 0
                    if flipped:
                        raise ValueError(f"{c.method!r} seed {c.seed} {c.source}: its teacher's verdicts on {e.name} "
                                         f"differ from those of {r.method!r} on {flipped} of {len(e.teacher)} test pairs: "
                                         "methods are compared only on one teacher (the same weak model, teacher "
                                         "training, code, thread count and CPU kernels)")
        self.datasets = {d: len(ids) for (_, d), ids in sorted(splits.items())}
        rows = [(ci, ei) for ci, c in enumerate(layout) for ei, e in enumerate(c.eval_sets) if e.role == "ood"]
        self._row_cell, self._row_eval = (np.array(x) for x in zip(*rows))
        self._row_seed = np.array([self.seeds.index(layout[ci].seed) for ci, _ in rows])
        self._row_source = [layout[ci].source for ci, _ in rows]
        self._row_category = np.array([layout[ci].category for ci, _ in rows])
        self.categories = tuple(sorted(set(self._row_category)))   # what category= and source= can name
        self.sources = tuple(sorted(set(self._row_source)))
        self.resamples = resamples or draw_resamples(len(self.seeds), self.datasets, n_boot, seed, resample, nested)
        for d, n in self.datasets.items():
            w = self.resamples.weights.get(d)
            if w is None or w.shape[0] != self.resamples.n or w.shape[2] != n or w.shape[1] not in (1, len(self.seeds)):
                raise ValueError(f"resamples for {d} must have shape (B, 1 or {len(self.seeds)}, {n})")
        self._point = Resamples(np.arange(len(self.seeds))[None, :], {d: np.ones((1, 1, n)) for d, n in self.datasets.items()})
        # The replicates' accuracies, (2, M, C, E, B, J), are kept while the board has at most METHODS_KEPT
        # methods; past that they would take GBs, so each scope computes them a step of methods at a time. Made
        # when first needed: a board whose methods' replicate values are all known (``_known``) needs none.
        self._acc = {False: self._accuracies(self._point)}

    def _steps(self) -> list[range]:
        """The methods, METHODS_PER_STEP at a time: a fixed number, so a method's numbers never depend on memory."""
        return [range(lo, min(lo + METHODS_PER_STEP, len(self.methods)))
                for lo in range(0, len(self.methods), METHODS_PER_STEP)]

    def _accuracies(self, resamples: Resamples, methods: range | None = None) -> np.ndarray:
        """(2: teacher/student, M, C, E, B, J) accuracies of ``methods`` (default: every one), M of them: one matrix
        product per dataset."""
        methods = methods if methods is not None else range(len(self.methods))
        cells = self._cells[methods.start:methods.stop]
        B, J = resamples.n, max(w.shape[1] for w in resamples.weights.values())
        E = max(len(c.eval_sets) for c in self._cells[0])
        shape = (2, len(cells), len(self._cells[0]), E, B, J)
        whole = sum(len(c.eval_sets) for own in cells for c in own) == len(cells) * len(self._cells[0]) * E
        acc = np.empty(shape) if whole else np.full(shape, np.nan)   # every slot written, or NaN where none is
        for d in self.datasets:
            slots = [(mi, ci, ei) for mi, own in enumerate(cells) for ci, c in enumerate(own)
                     for ei, e in enumerate(c.eval_sets) if e.name == d]
            idx = tuple(np.array(s) for s in zip(*slots))
            own = [cells[mi][ci].eval_sets[ei] for mi, ci, ei in slots]
            total = _flat_weights(resamples, d, J)[1]
            for k, who in enumerate(("teacher", "student")):
                counts = _counts(resamples, d, J, np.stack([getattr(e, who) for e in own]), who == "teacher")
                acc[(k, *idx)] = (100.0 * counts / total).reshape(len(slots), B, J)
        return acc

    def _scope(self, category: str | None, source: str | None) -> tuple[str, np.ndarray]:
        mask = np.ones(len(self._row_seed), dtype=bool) if category is None else self._row_category == category
        if source is not None:    # "mini/chat" or "chat"
            mask &= np.array([s == source or s.split("/", 1)[-1] == source for s in self._row_source])
        if not mask.any():
            raise ValueError(f"no rows for category={category!r} source={source!r}")
        scope = "all" if category is None and source is None else ",".join(
            f"{k}={v}" for k, v in (("category", category), ("source", source)) if v is not None)
        return scope, mask

    def _values(self, category: str | None, source: str | None, boot: bool) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """metric -> (per-seed means (M, K, B, J), replicate values (M, B)), kept on the board (a cache on
        the method would keep every board it saw alive: a server that builds one per upload grew by GBs)."""
        cached = self.__dict__.setdefault("_values_cache", {})
        if (category, source, boot) not in cached:
            cached[category, source, boot] = self._compute_values(category, source, boot)
        return cached[category, source, boot]

    def _compute_values(self, category: str | None, source: str | None, boot: bool
                        ) -> dict[str, tuple[np.ndarray | None, np.ndarray]]:
        """metric -> (per-seed means (M, K, 1, 1), point values (M, 1)) of the point, or (None, replicate values
        (M, B)) of the replicates, whose per-seed means nothing reads. A method's replicate values known from another
        board of its cells (``_known``) are taken, not computed again."""
        resamples = self.resamples if boot else self._point
        draws = resamples.seeds_drawn
        _, mask = self._scope(category, source)
        rc, re = self._row_cell[mask], self._row_eval[mask]
        seed_of = self._row_seed[mask]
        rows_key = (rc.tobytes(), re.tobytes(), seed_of.tobytes())
        parts: dict[str, list[tuple[np.ndarray | None, np.ndarray]]] = defaultdict(list)
        for methods in self._steps():   # kept or not, a step at a time: the temporaries stay small (and fast)
            known = [self._known(m, rows_key) for m in methods] if boot else []
            if known and all(v is not None for v in known):
                for name in METRICS:
                    parts[name].append((None, np.stack([v[name] for v in known])))
                continue
            acc = self._kept_accuracies(boot, methods)
            B, S, J = draws.shape[0], draws.shape[1], acc.shape[-1]
            slot = np.arange(S)[None, :] if J > 1 else np.zeros((1, S), dtype=np.intp)
            per_seed = np.empty((len(METRICS), len(methods), len(self.seeds), B, J))
            for k in range(len(self.seeds)):   # a seed's rows, every metric at once: (METRICS, M, rows, B, J)
                c, e = rc[seed_of == k], re[seed_of == k]
                tid, sid, tood, sood = acc[0][:, c, 0], acc[1][:, c, 0], acc[0][:, c, e], acc[1][:, c, e]
                per_seed[:, :, k] = np.stack((tid, sid, tood, sood, sid - tid, sood - tood,
                                              sood - tood - np.maximum(0.0, tid - sid))).mean(2)
            # each replicate's mean over its seeds, added in seed order: numpy's mean would add them pairwise (from 8
            # seeds) where they lie contiguous, as for a board of one method, else in order, so that a method's values
            # would depend on what is beside it
            drawn = per_seed[:, :, draws.T, np.arange(B)[None, :], slot.T]   # (METRICS, M, S, B)
            total = drawn[:, :, 0].copy()
            for k in range(1, S):
                total += drawn[:, :, k]
            replicated = total / S
            for k, name in enumerate(METRICS):
                parts[name].append((None if boot else per_seed[k], replicated[k]))
            if boot:
                for k, m in enumerate(methods):
                    self._remember(m, rows_key, {name: steps[-1][1][k] for name, steps in parts.items()})
        return {name: tuple(None if got[0] is None else got[0] if len(got) == 1 else np.concatenate(got, 0)
                            for got in zip(*steps)) for name, steps in parts.items()}

    def _kept_accuracies(self, boot: bool, methods: range) -> np.ndarray:
        """The accuracies of a step of methods: of the kept ones (made once, at most METHODS_KEPT methods), else
        computed for the step."""
        if boot not in self._acc:
            self._acc[boot] = self._accuracies(self.resamples) if len(self.methods) <= METHODS_KEPT else None
        kept = self._acc[boot]
        return kept[:, methods.start:methods.stop] if kept is not None else \
            self._accuracies(self.resamples if boot else self._point, methods)

    def _known(self, m: int, rows_key: tuple) -> dict[str, np.ndarray] | None:
        """Method ``m``'s replicate values, metric -> (B,), where a board of the very same cells, rows and resamples
        computed them (``_KNOWN``); else None."""
        own = self._cells[m]
        entry = _KNOWN.get(own[0])
        if entry is None or entry.resamples() is not self.resamples or entry.rows != rows_key or \
                len(entry.rest) != len(own) - 1 or any(a is not b for a, b in zip(entry.rest, own[1:])):
            return None
        return entry.values

    def _remember(self, m: int, rows_key: tuple, values: dict[str, np.ndarray]) -> None:
        """Keep method ``m``'s replicate values on its first cell, where no other method's could have changed them:
        where every count is exact (whole weights, correctness 0, 0.5 or 1: ``_counts``), a method's values are
        those of its own rows alone, bit for bit, whatever else is on the board."""
        own = self._cells[m]
        J = max(w.shape[1] for w in self.resamples.weights.values())
        if not all(_flat_weights(self.resamples, d, J)[2] is not None for d in self.datasets):
            return
        correct = np.concatenate([a for c in own for e in c.eval_sets for a in (e.teacher, e.student)])
        if not ((correct == 0) | (correct == 0.5) | (correct == 1)).all():
            return
        for value in values.values():
            value.flags.writeable = False
        _KNOWN[own[0]] = _Known(weakref.ref(self.resamples), rows_key, tuple(own[1:]), values)

    def replicates(self, metric: str, category: str | None = None, source: str | None = None) -> dict[str, np.ndarray]:
        """method -> the metric's N_BOOT replicate values."""
        reps = self._values(category, source, True)[metric][1]
        return dict(zip(self.methods, reps))

    def stats(self, method: str, ceiling: str | None = "ceiling", category: str | None = None,
              source: str | None = None) -> MethodStats:
        """Point estimate and percentile interval of every metric (and PGR when the ceiling is on the board); asked
        again (a board's table and its decisions both ask for every method's), the same object."""
        key = (method, ceiling if ceiling in self.methods else None, category, source)
        cached = self.__dict__.setdefault("_stats_cache", {})
        if key not in cached:
            cached[key] = self._stats(*key)
        return cached[key]

    def _stats(self, method: str, ceiling: str | None, category: str | None, source: str | None) -> MethodStats:
        m = self._index(method)
        point, boot = self._values(category, source, False), self._values(category, source, True)
        est = {k: (float(point[k][1][m, 0]), boot[k][1][m]) for k in METRICS}
        if ceiling in self.methods:
            c = self._index(ceiling)
            with np.errstate(divide="ignore", invalid="ignore"):
                for pgr, base in (("pgr_id", "wrg"), ("pgr_ood", "aog")):
                    est[pgr] = (est[base][0] / float(point[base][1][c, 0]), boot[base][1][m] / boot[base][1][c])
        scope, mask = self._scope(category, source)
        q = (1 - LEVEL) / 2
        with np.errstate(invalid="ignore"):   # a PGR replicate whose ceiling gain is 0 is inf or nan
            bounds = np.quantile(np.stack([r for _, r in est.values()]), [q, 1 - q], axis=1).T.tolist()
        metrics = {k: Interval(e, low, high) for (k, (e, _)), (low, high) in zip(est.items(), bounds)}
        return MethodStats(method, scope, len(self.seeds), int(mask.sum()) // len(self.seeds), self.resamples.n, metrics)

    def compare(self, a: str, b: str, category: str | None = None, source: str | None = None) -> Comparison:
        """Paired A - B on the same replicates (same seeds drawn, same pair weights) for NTS, AOG and WRG."""
        ia, ib = self._index(a), self._index(b)
        point, boot = self._values(category, source, False), self._values(category, source, True)
        n, q, deltas = self.resamples.n, (1 - LEVEL) / 2, {}
        for k in ("nts", "aog", "wrg"):
            d = boot[k][1][ia] - boot[k][1][ib]
            p = min(1.0, 2 * min(float(np.mean(d <= 0)), float(np.mean(d >= 0))))
            per_seed = point[k][0][ia, :, 0, 0] - point[k][0][ib, :, 0, 0]
            S = len(per_seed)
            half = t_quantile(1 - q, S - 1) * per_seed.std(ddof=1) / math.sqrt(S) if S > 1 else math.nan
            est = float(point[k][1][ia, 0] - point[k][1][ib, 0])
            deltas[k] = Delta(est, *map(float, np.quantile(d, [q, 1 - q])), max(p, 1 / n),
                              f"< {1 / n:.2g}" if p < 1 / n else f"{p:.3g}", float(est - half), float(est + half),
                              tuple(map(float, per_seed)))
        return Comparison(a, b, self._scope(category, source)[0], len(self.seeds), n, deltas)

    def cells_of(self, method: str) -> list[Cell]:
        """Every cell of a method, every seed it holds."""
        return list(self._every[self.methods[self._index(method)]])

    @property
    def independent(self) -> bool:
        """Whether every cell is an independent training run (its protocol seeds each cell on its own): then
        a paired difference is decided over runs (``runs_delta``), else over seeds (``compare``'s t-interval)."""
        return all(c.independent for own in self._cells for c in own)

    def runs_delta(self, a: str, b: str, metric: str = "nts", category: str | None = None,
                   source: str | None = None, level: float = LEVEL) -> RunsDelta:
        """A - B over the independent runs of the scope (bench.core.runs.runs_delta), with the protocol's looks and,
        where the board holds them and the rule applies a control (bench.core.runs.CONTROL_FROM), B's replicates
        (``B#1``, ... other than A) as the control of each run."""
        self._scope(category, source)   # refuses an empty scope

        def wanted(c: Cell) -> bool:
            return (category is None or c.category == category) and \
                (source is None or c.source == source or c.source.split("/", 1)[-1] == source)
        cells_a, cells_b = ([c for c in self._every[self.methods[self._index(m)]] if wanted(c)] for m in (a, b))
        controls = [[c for c in self._every.get(m) or self._controls[m] if wanted(c)]
                    for m in self.replicates_of(b) if m != a]
        return runs_delta(cells_a, cells_b, metric, self._cells[0][0].looks, level, controls=controls)

    def replicates_of(self, method: str) -> list[str]:
        """``method``'s replicates (``METHOD#1``, ``METHOD#2``, ...: bench run --replicate) among the board's rows and
        its controls, in order."""
        from bench.core.results import replicates_of

        return replicates_of((*self.methods, *self._controls), method)

    def ranks(self, methods: Sequence[str] | None = None, category: str | None = None,
              source: str | None = None) -> list[RankInterval]:
        """Rank by NTS (1 = best; ties share the better rank) in every replicate; best point NTS first."""
        idx = [self._index(m) for m in (methods or self.methods)]
        point = self._values(category, source, False)["nts"][1][idx, 0]
        boot = self._values(category, source, True)["nts"][1][idx]
        rank = 1 + above(point)
        ranks = 1 + above(boot)   # per replicate, 1 + the number of methods above
        q = (1 - LEVEL) / 2
        low, high = (np.quantile(ranks, level, axis=1, method="inverted_cdf") for level in (q, 1 - q))
        out = [RankInterval(self.methods[i], int(r), int(low[k]), int(high[k]), float(point[k]))
               for k, (i, r) in enumerate(zip(idx, rank))]
        return sorted(out, key=lambda r: (r.rank, r.method))

    def _index(self, method: str) -> int:
        if method not in self.methods:
            raise ValueError(f"method {method!r} is not on the board: {', '.join(self.methods)}")
        return self.methods.index(method)


def above(values: np.ndarray) -> np.ndarray:
    """(M, ...) -> (M, ...) counts: along the first axis, how many values are greater than each (ties count as not
    above): rank 1 + that, ties sharing the better rank. Each column sorted once and searched, M log M per replicate
    rather than M² comparisons; where a value is NaN (which no order holds) by the comparisons themselves,
    METHODS_PER_STEP rows at a time."""
    values = np.asarray(values)
    if values.size == 0:
        return np.zeros(values.shape, dtype=np.int64)
    if values.ndim != 2:
        return above(values.reshape(len(values), -1)).reshape(values.shape)
    if np.isnan(values).any():
        return np.concatenate([(values[None] > values[lo:lo + METHODS_PER_STEP, None]).sum(1)
                               for lo in range(0, len(values), METHODS_PER_STEP)])
    ordered = np.sort(values, axis=0)
    found = np.empty(values.shape, dtype=np.int64)
    for b in range(values.shape[1]):
        found[:, b] = len(values) - np.searchsorted(ordered[:, b], values[:, b], side="right")
    return found


def plain(obj):
    """A result, or a list or dict of results, as plain lists, dicts, floats and strings (for JSON)."""
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    return [plain(o) for o in obj] if isinstance(obj, list) else asdict(obj)
