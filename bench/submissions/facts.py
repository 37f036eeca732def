"""What the validation record keeps of each cell (a CellResult) beside the result itself, so that the board's rows
and the checks across submissions (bench.submissions.tree) read no result: a record's Validation holds its results
as ``LazyResults``, parsed only when something reads them (an export, a detail view), with these facts at hand."""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from bench.core.report import cell_row_dicts
from bench.core.specs import ProtocolSpec


def teacher_keys(cell) -> list[tuple[tuple, float]]:
    """A cell's teacher accuracies, each keyed by what makes it the same teacher's verdict."""
    return [((cell.protocol.hash, cell.models["name"], cell.seed, cell.source, name), round(acc.teacher_acc, 9))
            for name, acc in cell.eval_sets.items()]


def label_keys(cell) -> list[tuple[tuple, str]]:
    """A cell's label digest, keyed by the teacher entry and label stage it came from (none: not a teacher's)."""
    if cell.labels is not None and cell.labels.kind == "teacher" and cell.teacher.get("cache_key"):
        return [((cell.protocol.hash, cell.models["name"], cell.seed, cell.source, cell.teacher["cache_key"],
                  cell.labels.stage), cell.labels.digest)]
    return []


def _rows(cell, protocols: Mapping[str, ProtocolSpec] | None) -> list[dict] | None:
    """The cell's rows of the board's table; None for a cell too broken to tabulate (validation says why)."""
    try:
        return cell_row_dicts([cell], protocols)
    except (KeyError, TypeError):
        return None


# What the record keeps of each cell (CellResult) beside its result: name -> (cell, protocols) -> a JSON value.
FACTS: dict[str, Callable] = {
    "rows": _rows,                                                         # Board.cells'
    "teacher": lambda c, protocols: teacher_keys(c),                       # teacher_conflicts'
    "labels": lambda c, protocols: label_keys(c),                          # label_conflicts'
    "n_pairs": lambda c, protocols: [e.n_pairs for e in c.eval_sets.values()],   # the board's context line
}


def facts_of(cell, protocols: Mapping[str, ProtocolSpec] | None) -> dict:
    """Every fact of one cell, as the record stores it."""
    return {name: fact(cell, protocols) for name, fact in FACTS.items()}


def cell_facts(cells: Sequence, name: str, protocols: Mapping[str, ProtocolSpec] | None = None) -> list:
    """Each cell's fact ``name`` (``FACTS``), of a Validation's ``cells``: where they are a record's
    (``LazyResults``), from the summary, as it was found with the protocols the submission was validated with,
    and without reading a result; else found now, with ``protocols``."""
    if isinstance(cells, LazyResults):
        return cells.described(name)
    fact = FACTS[name]
    return [fact(c, protocols) for c in cells]


class Lazy(Sequence):
    """A sequence as the validation record holds it: its number, and what it says of each item (``described``),
    at once, from the summary; the items themselves on first use (``load()``)."""

    def __init__(self, about: list[dict], load: Callable[[], list]):
        self._about, self._load, self._items = about, load, None

    def _got(self) -> list:
        if self._items is None:
            self._items = self._load()
        return self._items

    def __len__(self) -> int:
        return len(self._about)

    def described(self, name: str) -> list:
        """Each item's ``name`` from the summary: no item is read."""
        return [a[name] for a in self._about]

    def __getitem__(self, i):
        return self._got()[i]

    def __iter__(self):
        return iter(self._got())


class LazyResults(Lazy):
    """A Validation's ``cells`` (CellResult) as the record holds them: their facts (``FACTS``) described, the
    results on first use."""
