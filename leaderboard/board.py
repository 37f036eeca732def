"""The board's data: every submission under a folder, validated (``bench.submissions.record``), as one row per
submission x seed x source -> target cell, its groups (protocol x model pair: only runs of one group are
compared) and the filters that narrow the cells behind every number.

Decisions come from the harness's one rule, ``bench.core.compare.decision_table`` and ``deciding_interval`` (a
difference from naive is decided when its t-interval over the per-seed differences excludes 0, or on a protocol
seeded per source its interval over independent runs), over the same bootstrap (``bench.core.stats``) that
``bench report`` and ``bench compare`` use; the board adds no rule of its own.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Callable, Mapping

import pandas as pd

from bench.core import runs
from bench.core.compare import BASELINE, LABELS, Decision, deciding_interval, decision_table, holm
from bench.core.errors import BenchError
from bench.core.protocols import replaced_by
from bench.core.report import COLUMNS, params_text
from bench.submissions.facts import cell_facts
from bench.submissions.limits import Validation
from bench.submissions.record import described
from bench.submissions.reproduce import RECORDS
from bench.submissions.tree import teacher_conflicts
from leaderboard import decided

# How a row of a method that is not built in is marked (method.origin.kind): its code is not the harness's,
# so what it did is read in its source, which the submission carries (bench.core.result_schema.METHOD_SOURCE_FILE).
NOT_BUILT_IN = {kind: f"method from {what}, not built in: its source is in the submission (method_source.py)"
                for kind, what in (("file", "a method file"), ("entry point", "an installed package"))}



def marks(v: Validation) -> list[tuple[str, str]]:
    """(badge, what it means) for each thing a reader must know about a submission's row before trusting it,
    the same wherever the row is shown (the app, the static page, --markdown, the CSV's status): students
    trained outside the harness, a method whose code the harness does not ship, a method chosen on the group's
    first seeds (SubmissionFile.fresh_from), a teacher not checked against a reference teacher."""
    s, found = v.submission or {}, []
    if s.get("external"):
        found.append(("external training", str(s["external"])))
    origin = (s.get("method") or {}).get("origin")
    kind = origin.get("kind") if isinstance(origin, dict) else None
    if kind in NOT_BUILT_IN:
        found.append(("method file" if kind == "file" else "package", NOT_BUILT_IN[kind]))
    fresh = s.get("fresh_from") or 0
    if fresh:   # its NTS is over the group's common seeds, among them those that chose it: its rank avoids that
        found.append((f"chosen on seeds 0–{fresh - 1}", f"picked as the best of several on seeds 0 to {fresh - 1}, "
                      f"which its NTS includes and so flatters; its rank (naive's NTS plus its Δ) and its Δ against "
                      f"naive are decided on the seeds from {fresh} on alone"))
    record = v.reproduction
    if record is not None:
        held = sum(not ref.get("replicate", 0) for ref in s.get("cells", []))
        done = sum(c["reproduced"] for c in record["cells"])
        if record["outcome"] == "reproduced":
            found.append((f"reproduced {done}/{held}", f"the host ran {done} of its {held} cells again, "
                          "drawn by the host's seed, and each student gave the submitted per-pair verdicts "
                          "(bench reproduce)"))
        elif record["outcome"] == "inconclusive":
            found.append(("reproduction inconclusive", f"{done} of the {len(record['cells'])} cells the host ran again "
                          "reproduced; the others are of a label-side method whose rerun trained its teacher to other "
                          "soft labels (another platform), so their students could not be judged (bench reproduce)"))
        else:
            found.append(("reproduction failed", f"{len(record['cells']) - done} of the {len(record['cells'])} cells "
                          "the host ran again gave other verdicts than the submitted ones (bench reproduce)"))
    if any(p.field == "teacher" for p in v.warnings):   # bench.submissions.tree.check_teachers found no reference
        found.append(("teacher not checked", "its teacher is not checked against a reference teacher (no committed "
                                             "reference and no naive submission of its protocol and model pair)"))
    return found



METRICS = {"nts": "NTS", "aog": "AOG", "wrg": "WRG"}
ALL = "all"
UPLOAD_PREFIX = "upload: "   # the key of an uploaded submission previewed on the board
FILTERS = ("protocol", "models", "category", "source")


@dataclass
class Board:
    """Every submission found under ``root``, validated; ``entries`` are those with cells to show."""

    root: Path
    validations: list[Validation]
    conflicts: list[tuple[str, set[str]]] = field(default_factory=list)
    _decisions: dict = field(default_factory=dict, repr=False)
    _independent: dict = field(default_factory=dict, repr=False)
    # the specs the submissions were validated with besides the registry's (load_board's): a far target of an
    # unregistered protocol is read apart from NTS too (bench.core.protocols.far_targets)
    protocols: Mapping = field(default_factory=dict, repr=False)
    # where the decisions of unchanged groups are kept (leaderboard.decided), beside the validation record; None: nowhere
    record_dir: Path | None = field(default=None, repr=False)
    # the committed plans beside the submissions root (bench.core.plans): which one each decision was made under
    plans: list = field(default_factory=list, repr=False)

    @cached_property
    def _row_lists(self) -> dict[int, list[dict]]:
        """Each tabulable submission's rows (``_rows``), by ``id`` of its Validation: found once, for ``entries``
        and ``cells`` both."""
        found = {id(v): self._rows(v) for v in self.validations if v.submission is not None and v.cells}
        return {k: rows for k, rows in found.items() if rows is not None}

    @cached_property
    def entries(self) -> list[Validation]:
        return [v for v in self.validations if id(v) in self._row_lists]

    @cached_property
    def unreadable(self) -> list[Validation]:
        return [v for v in self.validations if v not in self.entries]

    @cached_property
    def by_key(self) -> dict[str, Validation]:
        return {v.key: v for v in self.entries}

    def _rows(self, v: Validation) -> list[dict] | None:
        """``v``'s rows of ``cells`` (bench.core.report.cell_rows's, from the validation record where ``v`` is a
        record's: no result is read), with what the board says of the submission."""
        found = cell_facts(v.cells, "rows", self.protocols)
        if any(rows is None for rows in found):   # a cell too broken to tabulate; validation has said why
            return None
        rows = [row for cell in found for row in cell]
        s = v.submission
        status = "; ".join(["validated" if v.ok else f"NOT VALIDATED ({len(v.errors)} problems)",
                            *(note for _, note in marks(v))])
        own = {"submission": v.key, "params": params_text(s["method"]["params"]), "valid": v.ok, "status": status,
               "problem": str(v.errors[0]) if v.errors else "", "submitter": s["submitter"]}
        return [{**row, **own} for row in rows]

    @cached_property
    def cells(self) -> pd.DataFrame:
        """One row per submission x seed x source -> target cell."""
        rows = [row for v in self.entries for row in self._row_lists[id(v)]]
        return pd.DataFrame(rows) if rows else pd.DataFrame(
            columns=["submission", "method", "params", "models", "protocol", "category", "seed", "source", "target",
                     "role", *COLUMNS, "misfit", "valid", "status", "problem", "submitter"])

    @cached_property
    def groups(self) -> list[tuple[str, str]]:
        """The (protocol, model pair) groups: those of current protocols before archived ones
        (``bench.core.protocols.ARCHIVED``), the one with the most submissions first (the board's default), then
        by name."""
        counts: dict[tuple[str, str], int] = {}
        for v in self.entries:
            group = group_of(v)
            counts[group] = counts.get(group, 0) + 1
        return sorted(counts, key=lambda g: (replaced_by(g[0]) is not None, -counts[g], g))

    def in_group(self, protocol: str, models: str) -> list[Validation]:
        return [v for v in self.entries if group_of(v) == (protocol, models)]

    def independent(self, protocol: str, models: str) -> bool:
        """Whether the group's runs are independent (its protocol seeds every (seed, source) cell on its own,
        ProtocolSpec.seeding "per-source"): then a difference is decided over runs, not seeds. Found once per
        group (every row of the group asks)."""
        if (protocol, models) not in self._independent:
            flags = [flag for v in self.in_group(protocol, models) for flag in described(v.pairs, "independent")]
            self._independent[protocol, models] = bool(flags) and all(flags)
        return self._independent[protocol, models]

    def decisions(self, protocol: str, models: str, category: str | None = None, source: str | None = None
                  ) -> dict[str, dict]:
        """Per validated submission of a group (by its key): ``bench.core.compare.decision_table``'s row (NTS 95%
        CI, rank 95%, Δ NTS vs naive with its intervals, decided), plus as numbers the same bootstrap's 95%
        intervals of NTS, AOG and WRG (``ci``: metric -> (low, high)), against naive each metric's Δ
        (``delta``: metric -> (estimate, bootstrap low, high, t low, t high)) and the interval that decides it
        (``deciding``: metric -> ``bench.core.compare.Decision``, with what it rests on), and the seeds every number
        but Δ is over (``over``: those every submission of the group holds). Where every cell has
        best-of-N candidate sets, ``bon`` holds the same for the cells' BoN views (what ``bench compare --metric
        bon-nts`` compares: its NTS, AOG and WRG are BoN NTS, BoN gain OOD and BoN gain ID). Empty when they
        cannot be computed (submissions on different seeds or test pairs)."""
        from bench.core.stats import bon_view

        key = (protocol, models, category, source)
        if key in self._decisions:
            return self._decisions[key]
        # an unchanged group's decisions are read from the record: its per-pair values are not even loaded
        recorded = decided.key(self.in_group(protocol, models), key) if self.record_dir is not None else None
        found = decided.load(self.record_dir, recorded) if recorded else None
        if found is None:
            valid = [v for v in self.in_group(protocol, models) if v.ok]
            cells = [c for v in valid for c in v.pairs]
            # naive's replicates, as bench compare uses them: only where the rule applies a control (bench.core.runs)
            controls = [c for v in valid for c in v.controls] if runs.CONTROL_FROM is not None else []
            found = _decided(valid, cells, controls, "nts", category, source)
            if found and all(c.bon for c in (*cells, *controls)):
                for sub, row in _decided(valid, bon_view(cells), bon_view(controls), "bon-nts", category, source).items():
                    found[sub]["bon"] = row
            if recorded:
                decided.save(self.record_dir, recorded, found)
        self._decisions[key] = found
        return found

    def switcher_label(self, protocol: str, models: str) -> str:
        """A group as the switchers of both pages offer it: its label and its number of submissions, marked where
        its protocol is archived: ``mini-v2 · tiny-lr3e-4 (25)``, ``mini · tiny (26, archived)``."""
        archived = ", archived" if replaced_by(protocol) else ""
        return f"{group_label(protocol, models)} ({len(self.in_group(protocol, models))}{archived})"

    def seeds_in_common(self, protocol: str, models: str) -> tuple[int, ...] | None:
        """The seeds every validated submission of a group holds (``decisions``' ``over``), which every number of
        the board but Δ against naive is over, so that rows are ranked on one basis: a submission grown past them
        (naive's A/A pool, a comparison run until decided) would otherwise rank on seeds the others lack. None
        where the group's submissions cannot be paired."""
        return common_seeds(self.decisions(protocol, models))

    def on_common_seeds(self, cells: pd.DataFrame) -> pd.DataFrame:
        """Rows of ``cells`` on the seeds every submission of their group holds (``seeds_in_common``, ``on_seeds``),
        as every number of the ranking is: for the pictures, whose cells may span groups."""
        if cells.empty:
            return cells
        return pd.concat([on_seeds(group, self.seeds_in_common(protocol, models))
                          for (protocol, models), group in cells.groupby(["protocol", "models"], sort=False)])

    def with_entry(self, validation: Validation) -> "Board":
        """The board as it would be with one more submission (an upload's preview): it takes the place
        of the submission in its folder, ``<protocol>/<models>/<slug>``, as it would on merging."""
        kept = [v for v in self.validations if v.key != location(validation)]
        return Board(self.root, [*kept, validation], teacher_conflicts([*kept, validation]), protocols=self.protocols,
                     record_dir=self.record_dir)   # the groups it does not join keep their recorded decisions


NO_DELTA = (math.nan,) * 5


def common_seeds(decisions: dict[str, dict]) -> tuple[int, ...] | None:
    """The seeds every submission of a group holds, from its ``Board.decisions`` (any scope: whole seeds do not
    depend on a filter), so a caller that has them computes no other scope's."""
    return next((d["over"] for d in decisions.values() if "over" in d), None)


def on_seeds(cells: pd.DataFrame, seeds: tuple[int, ...] | None) -> pd.DataFrame:
    """``cells`` (rows of ``Board.cells``) on ``seeds`` (``Board.seeds_in_common``) where that leaves any; else all
    of them (a group whose submissions cannot be paired, or a submission that does not validate, on other seeds)."""
    kept = cells[cells["seed"].isin(seeds)] if seeds else cells
    return kept if len(kept) else cells


def _decided(valid: list[Validation], cells: list, controls: list, metric: str, category: str | None,
             source: str | None) -> dict[str, dict]:
    """``Board.decisions`` on ``cells`` (the submissions' cells, or their BoN views for ``metric`` "bon-nts"), each
    run's difference against naive corrected by its replicates' (``controls``: given only where the rule applies a
    control) where they ran every cell."""
    from bench.core.stats import Board as Bootstrap

    slugs = {v.submission["slug"]: v.key for v in valid}
    fresh = {v.submission["slug"]: v.submission.get("fresh_from") or 0 for v in valid}
    try:
        boot = Bootstrap(cells, controls=controls)
        table = decision_table(boot, category=category, source=source, metric=metric)
    except ValueError:
        return {}
    found = {slugs[row.pop("method")]: row for row in table.to_dict("records")}
    family: dict[str, Callable[[float], Decision]] = {}   # each comparison against naive: its interval at a level
    for slug, sub in slugs.items():
        # every number but Δ is over the seeds every submission holds, so rows are ranked on one basis (a
        # submission grown further, or naive's A/A pool, would otherwise rank on its own seeds)
        stats = boot.stats(slug, ceiling=None, category=category, source=source).metrics
        found[sub]["over"] = boot.seeds
        found[sub]["ci"] = {m: (stats[m].low, stats[m].high) for m in METRICS}
        if BASELINE not in boot.methods or slug == BASELINE:
            continue
        if fresh[slug]:   # chosen on its first seeds: decided on the others, as bench compare --fresh-from does
            on = _fresh_board(cells, controls, slug, fresh[slug])
            found[sub].update(_fresh_delta(on, slug, fresh[slug], table.columns, metric, category, source))
        else:
            found[sub].update(_against_naive(boot, slug, category, source))
            on = boot
        if on is not None and metric == "nts":   # the board states family-wise verdicts on NTS, what it ranks by
            delta = on.compare(slug, BASELINE, category=category, source=source).deltas["nts"]
            family[sub] = functools.partial(deciding_interval, on, slug, BASELINE, "nts", category, source, delta)
    # Family-wise: Holm over every comparison of the group against naive (the ceiling's too), as well as each alone
    decided_together = holm(family)
    for sub in family:
        found[sub]["family"] = {"decided": sub in decided_together, "comparisons": len(family)}
    return found


def _against_naive(boot, slug: str, category: str | None, source: str | None, from_seed: int = 0) -> dict:
    """A row's Δ against naive on ``boot``: ``delta`` (metric -> estimate, bootstrap low, high, t low, t high) and the
    interval that decides each (``deciding``), marked with the seed it starts from where the earlier ones chose it."""
    deltas = boot.compare(slug, BASELINE, category=category, source=source).deltas
    return {"delta": {m: (d.estimate, d.low, d.high, d.t_low, d.t_high) for m, d in deltas.items() if m in METRICS},
            "deciding": {m: dataclasses.replace(deciding_interval(boot, slug, BASELINE, m, category, source, deltas[m]),
                                                from_seed=from_seed) for m in METRICS}}


def _about_delta(column: str) -> bool:
    """Whether a ``decision_table`` column is about a row's Δ against naive (not its own NTS or rank)."""
    return column.startswith("Δ ") or column in ("p", "runs")


def _fresh_board(cells: list, controls: list, slug: str, fresh: int):
    """The bootstrap board of ``slug`` and naive (and naive's replicates) on the seeds from ``fresh`` on, where both
    hold a whole one; else None."""
    from bench.core.stats import Board as Bootstrap

    picked = [c for c in cells if c.method in (slug, BASELINE) and c.seed >= fresh]
    if {c.method for c in picked} != {slug, BASELINE}:
        return None
    try:
        return Bootstrap(picked, controls=[c for c in controls if c.seed >= fresh])
    except ValueError:   # no whole seed from ``fresh`` on that both hold
        return None


def _fresh_delta(boot, slug: str, fresh: int, columns, metric: str, category: str | None, source: str | None) -> dict:
    """The Δ against naive of a submission chosen on its first seeds (SubmissionFile.fresh_from): ``decision_table``'s
    columns about it, ``delta`` and ``deciding``, on ``boot``, its board over the seeds from ``fresh`` on of both sides
    (and of naive's replicates: ``_fresh_board``), as ``bench compare --fresh-from`` computes them. Where naive holds
    no whole seed from there on (no board) nothing is decided, and ``deciding`` says it rests on no seed."""
    if boot is None:
        none = Decision(math.nan, math.nan, False, math.nan, 0, from_seed=fresh)
        return {**{k: "" for k in columns if _about_delta(k)}, f"Δ {LABELS[metric]['nts']} vs {BASELINE}": math.nan,
                "decided": "no", "deciding": {m: none for m in METRICS}}
    row = decision_table(boot, category=category, source=source, metric=metric).set_index("method").loc[slug]
    return {**{k: v for k, v in row.items() if _about_delta(k) or k == "decided"},
            **_against_naive(boot, slug, category, source, fresh)}


def group_of(v: Validation) -> tuple[str, str]:
    return v.submission["protocol"]["name"], v.submission["models"]["name"]


def group_label(protocol: str, models: str) -> str:
    """A group as the switcher names it: ``mini · tiny``."""
    return f"{protocol} · {models}"


def location(v: Validation) -> str:
    """Where a submission belongs in a submissions root: ``<protocol>/<models>/<slug>``."""
    s = v.submission
    return f"{s['protocol']['name']}/{s['models']['name']}/{s['slug']}" if s else ""


def title(v: Validation) -> str:
    """A submission as a picture names it: method and params (``anchor lam=0.1, layers=last``), marked
    when it does not validate."""
    s = v.submission
    params = params_text(s["method"]["params"])
    return s["method"]["name"] + (f" {params}" if params else "") + ("" if v.ok else " (NOT VALIDATED)")


def apply_reproductions(validations: list[Validation], records: Path) -> None:
    """Each submission's reproduction record under ``records`` (bench.submissions.reproduce: some of its cells rerun by
    the host), where there is one of its content, on ``v.reproduction``. A failed one is an error of the submission:
    its row is marked NOT VALIDATED with the cell that did not reproduce, and leaves the ranking."""
    from bench.submissions.reproduce import RULE, failed_cells, read_record, why_not

    for v in validations:
        if v.submission is None or v.reproduction is not None:
            continue
        v.reproduction = read_record(records, v.submission, v.folder)
        for cell in failed_cells(v.reproduction or {}):
            v.error(f"{RECORDS}/{v.key}.json", f"cells.seed{cell['seed']}.{cell['source']}",
                    f"not reproduced: run again by the host, {why_not(cell)} ({RULE})",
                    "rerun the cells with this version of shiftbench, then bench submit again")


def load_board(root: Path, protocols: Mapping | None = None, model_pairs: Mapping | None = None,
               cache_dir: Path | None = None) -> Board:
    """Validate every submission under ``root`` (``protocols`` / ``model_pairs`` add specs to the
    registries), reusing the stored outcome of each submission whose files did not change
    (``bench.submissions.record``; ``cache_dir`` defaults to $SHIFTBENCH_CACHE/leaderboard)."""
    from bench.core.location import PLANS
    from bench.core.plans import read_plans
    from bench.submissions.record import default_dir, validate_tree

    validations = validate_tree(Path(root), protocols, model_pairs, cache_dir) if Path(root).is_dir() else []
    apply_reproductions(validations, Path(root).parent / RECORDS)
    try:
        plans = read_plans(Path(root).parent / PLANS)
    except BenchError as error:   # a host's plans are checked by its tests; a board of others' results shows without
        print(f"warning: the plans beside {root} are not read: {error}", file=sys.stderr)
        plans = []
    return Board(Path(root), validations, teacher_conflicts(validations), protocols=dict(protocols or {}),
                 record_dir=Path(cache_dir or default_dir()) / "decisions", plans=plans)


# --- filters ---------------------------------------------------------------------------------------------
def choices(board: Board, protocol: str | None = None, models: str | None = None) -> dict[str, list[str]]:
    """The values each filter can take (within a group when one is given), ``"all"`` first."""
    cells = select(board.cells, protocol, models)
    return {name: [ALL, *sorted(cells[name].astype(str).unique())] for name in FILTERS}


def select(cells: pd.DataFrame, protocol: str | None = None, models: str | None = None, category: str | None = None,
           source: str | None = None) -> pd.DataFrame:
    for column, value in zip(FILTERS, (protocol, models, category, source)):
        if value and value != ALL:
            cells = cells[cells[column] == value]
    return cells


def scope(value: str | None) -> str | None:
    """A filter's value as the bootstrap takes it: None for every cell."""
    return None if value in (None, ALL) else value
