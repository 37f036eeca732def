"""Reading one submission's scores file in bounded memory: streamed a line at a time, read only as far
as its cell's declared pairs, with a bounded number of problems kept (limits.py says how far)."""
from __future__ import annotations

import csv
import gzip
import math
import zlib
from pathlib import Path
from typing import Iterator, Mapping

import bench.submissions.limits as limits
from bench.results import SCORE_COLUMNS
from bench.submissions.limits import REGENERATE, Validation, unsafe_text


class _Unreadable(Exception):
    """A scores file that cannot be read further (the message says why); reading stops there."""


def _lines(handle) -> Iterator[str]:
    """The decompressed text a line at a time: never more than one line of at most
    MAX_SCORES_LINE_BYTES held, and no more than MAX_SCORES_BYTES read in all."""
    read = 0
    while True:
        line = handle.readline(limits.MAX_SCORES_LINE_BYTES + 1)
        if not line:
            return
        read += len(line)
        if read > limits.MAX_SCORES_BYTES:
            raise _Unreadable(f"decompresses to more than {limits.MAX_SCORES_BYTES} bytes")
        if len(line) > limits.MAX_SCORES_LINE_BYTES:
            raise _Unreadable(f"has a line longer than {limits.MAX_SCORES_LINE_BYTES} bytes (a scores line is under 200)")
        try:
            yield line.decode("utf-8")
        except UnicodeDecodeError as error:
            raise _Unreadable(f"is not UTF-8 CSV ({error})") from None


_BAD_KINDS = {"fields": "wrong number of fields", "eval_set": "an eval set not of this cell",
              "twice": "a pair given twice", "text": "a pair id that is not plain text",
              "number": "a score that is not a finite number"}


def read_scores(v: Validation, rel: str, path: Path, n_pairs: Mapping[str, int]) -> list[tuple] | None:
    """The cell's score rows as (eval_set, pair_id, 4 floats), or None after recording what is wrong.
    Streams: it stops at the first row past the sum of ``n_pairs`` (the pairs result.json declares,
    bounded by the protocol before this is called), and keeps MAX_ERRORS_PER_KIND messages per kind
    of bad line -- a file of a million duplicate rows costs what its first few do."""
    max_rows = sum(n_pairs.values())
    seen: set[tuple[str, str]] = set()
    parsed: list[tuple] = []
    bad: dict[str, list[str]] = {kind: [] for kind in _BAD_KINDS}
    counts = dict.fromkeys(_BAD_KINDS, 0)

    def flag(kind: str, message: str) -> None:
        counts[kind] += 1
        if len(bad[kind]) < limits.MAX_ERRORS_PER_KIND:
            bad[kind].append(message)

    def judge(line: int, row: list[str]) -> None:
        if len(row) != len(SCORE_COLUMNS):
            flag("fields", f"line {line}: {len(row)} fields, expected {len(SCORE_COLUMNS)}")
            return
        eval_set, pair_id = row[0], row[1]
        what = unsafe_text(pair_id)
        if eval_set not in n_pairs:
            flag("eval_set", f"line {line}: eval set {eval_set[:60]!r} is not one of this cell's")
        elif (eval_set, pair_id) in seen:
            flag("twice", f"line {line}: pair {pair_id[:60]!r} of {eval_set} twice")
        elif what:
            flag("text", f"line {line}: pair id contains {what}")
        else:
            try:
                scores = tuple(float(x) for x in row[2:])
                if not all(map(math.isfinite, scores)):
                    raise ValueError
            except ValueError:
                flag("number", f"line {line}: scores must be finite numbers")
                return
            seen.add((eval_set, pair_id))
            parsed.append((eval_set, pair_id, *scores))

    try:
        with gzip.open(path, "rb") as handle:
            reader = csv.reader(_lines(handle))
            header = next(reader, None)
            if header != list(SCORE_COLUMNS):
                v.error(rel, "header", f"is {str(header)[:200]}, expected {list(SCORE_COLUMNS)}", REGENERATE)
                return None
            for line, row in enumerate(reader, start=2):
                judge(line, row)
                if line - 1 > max_rows:  # that row is judged too, so a pair added twice is named as such
                    raise _Unreadable(f"holds more than {max_rows} rows, the pairs its result.json's eval sets "
                                      f"declare (n_pairs); reading stopped at line {line}")
    except _Unreadable as error:
        v.error(rel, "", str(error), REGENERATE)
        return None
    except csv.Error as error:
        v.error(rel, "", f"is not UTF-8 CSV ({error})", REGENERATE)
        return None
    except (OSError, EOFError, zlib.error) as error:
        v.error(rel, "", f"is not a readable gzip file ({error})", REGENERATE)
        return None
    finally:
        for kind, messages in bad.items():
            for problem in messages:
                v.error(rel, "", problem, REGENERATE)
            if counts[kind] > len(messages):
                v.error(rel, "", f"and {counts[kind] - len(messages)} more lines with {_BAD_KINDS[kind]}", REGENERATE)
    return None if any(counts.values()) else parsed


def as_rows(parsed: list[tuple]) -> Iterator[dict]:
    """Rows as recompute and the board read them (a dict per row, made as they are read)."""
    for values in parsed:
        yield dict(zip(SCORE_COLUMNS, values))
