"""Checks of one file's fields in a submission: every string's text (no markup, control or disguised
characters, ``limits.unsafe_text``; a tokenizer's own text within its limit), names that could be
paths, recorded commands without local paths, and a JSON file read against its pydantic model."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterator

from pydantic import BaseModel, ValidationError

import bench.submissions.limits as limits
from bench.core.result_schema import SCHEMA_VERSION as RESULT_SCHEMA
from bench.submissions.commands import absolute_paths
from bench.submissions.limits import (
    LOCAL_PATH_RE,
    NAME_RE,
    REGENERATE,
    SCHEMA_VERSION,
    UNSAFE_TEXT_HELP,
    Validation,
    _Stop,
    unsafe_text,
)
from bench.submissions.schema import SubmissionFile


# --- one field, one file --------------------------------------------------------------------------------------
def field_path(loc: tuple) -> str:
    return ".".join(str(part) for part in loc)


def strings(obj: Any, loc: tuple = ()) -> Iterator[tuple[tuple, str, bool]]:
    """Every string in a JSON value, keys included, with where it is and whether it is a key."""
    if isinstance(obj, str):
        yield loc, obj, False
    elif isinstance(obj, dict):
        for key, value in obj.items():
            yield (*loc, key), key, True
            yield from strings(value, (*loc, key))
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            if isinstance(value, (str, dict, list)):   # a list of numbers (a loss curve) holds no string
                yield from strings(value, (*loc, i))


def tokenizer_text_limit(loc: tuple, is_key: bool) -> int | None:
    """The length limit of a tokenizer's own text (limits.TOKENIZER_TEXT_FIELDS) at ``loc``: a value of
    ``formatters.<role>.<field>`` (``special_tokens``: ``{name: token}``, one level deeper) or of
    ``models.<role>.chat_template``; None for every other string."""
    if is_key or len(loc) < 3:
        return None
    if loc[0] == "models" and loc[1] in ("weak", "strong"):
        tokenizer_text = len(loc) == 3 and loc[2] == "chat_template"
    else:
        tokenizer_text = (loc[0] == "formatters" and loc[2] in limits.TOKENIZER_TEXT_FIELDS
                          and len(loc) == (4 if loc[2] == "special_tokens" else 3))
    if not tokenizer_text:
        return None
    return limits.MAX_TEMPLATE_CHARS if loc[2] == "chat_template" else limits.MAX_TEXT_CHARS


@lru_cache(maxsize=1 << 16)
def _unsafe(text: str, markup_ok: bool) -> str | None:
    """``unsafe_text``, once per distinct string: every cell of a submission repeats its model pair's and
    protocol's strings."""
    return unsafe_text(text, markup_ok=markup_ok)


# Strings found plain (no unsafe text, within the least length limit, no local path) in this process: the cells of
# a tree repeat their model pair's, protocol's and environment's strings thousands of times. Short ones only (an
# upload is checked in the server's process: a few MB of text at most), and kept for the limit they were found
# under (a test may lower one).
_PLAIN: dict[int, set[str]] = {}
_PLAIN_TOKENS, _PLAIN_CHARS = 1 << 17, 256
_SCALARS = (int, float, bool, type(None))


def _all_strings(obj: Any) -> set[str]:
    """Every string of a JSON value, keys included, without where it is: a walk with its own stack (a value
    nested as deep as the parser allows does not overflow Python's), and no path made per string. A TypeError
    for anything JSON does not hold."""
    found: set[str] = set()
    stack = [obj]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            found.add(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str):
                    raise TypeError(f"a key {key!r} is not a string")
                found.add(key)
                stack.append(item)
        elif isinstance(value, list):
            stack.extend(item for item in value if not isinstance(item, _SCALARS))
        elif not isinstance(value, _SCALARS):
            raise TypeError(f"{type(value).__name__} is not a JSON value")
    return found


# Members of a result.json that every cell of a submission repeats whole: one equal to a member found plain before
# (the last few of each, for the limit they were found under) holds the same strings, and is compared (in C) faster
# than it is walked.
_REPEATED = ("protocol", "models", "method", "formatters", "environment")
_PLAIN_MEMBERS: dict[tuple[int, str], list] = {}
_MEMBERS_KEPT = 4


def _all_plain(obj: Any) -> bool:
    """Whether every string of a JSON value, keys included, is plain, with no regard to where it is: within the
    least length limit of any field, no unsafe text even where markup is allowed, no local path. Then
    ``check_text`` finds nothing, as every rule it applies somewhere admits a plain string; a value with any
    other string takes the walk that words what is wrong."""
    least = min(limits.MAX_TEXT_CHARS, limits.MAX_TEMPLATE_CHARS)
    known = _PLAIN.setdefault(least, set())
    repeated = {key: obj[key] for key in _REPEATED if isinstance(obj, dict) and isinstance(obj.get(key), dict)}
    seen = {key for key, member in repeated.items() if member in _PLAIN_MEMBERS.get((least, key), ())}
    new = _all_strings({**obj, **dict.fromkeys(seen)} if seen else obj) - known
    for text in new:
        if len(text) > least or _unsafe(text, False) or LOCAL_PATH_RE.match(text):
            return False
    if len(known) < _PLAIN_TOKENS:
        known.update(text for text in new if len(text) <= _PLAIN_CHARS)
    for key in set(repeated) - seen:
        kept = _PLAIN_MEMBERS.setdefault((least, key), [])
        kept.insert(0, repeated[key])
        del kept[_MEMBERS_KEPT:]
    return True


def check_text(v: Validation, file: str, obj: Any) -> None:
    """Every string of ``obj``, a JSON value, checked where it is: its text safe to show, its length within its
    field's limit, and no local path."""
    try:
        if _all_plain(obj):
            return
    except TypeError:   # not a JSON value: the walk says what it finds
        pass
    for loc, text, is_key in strings(obj):
        tokenizer_limit = tokenizer_text_limit(loc, is_key)
        limit = tokenizer_limit or limits.MAX_TEXT_CHARS
        what = _unsafe(text, tokenizer_limit is not None)
        if what:
            v.error(file, field_path(loc), f"text {text[:60]!r} contains {what}, which could be markup, script or "
                                       "disguised text where it is shown",
                    f"remove it: names, commands and notes are {UNSAFE_TEXT_HELP}")
        elif len(text) > limit:
            v.error(file, field_path(loc), f"text of {len(text)} characters (limit {limit})", "shorten it")
        elif tokenizer_limit is None and not is_key and loc[-1:] != ("command",) and LOCAL_PATH_RE.match(text):
            v.error(file, field_path(loc), f"holds the local path {text[:100]!r}: a submission records no folder of the "
                    "machine it was made on", "rerun with this version of shiftbench, whose results record file names "
                    "and hub ids only, then " + REGENERATE)


def no_constants(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def read_json(v: Validation, folder: Path, rel: str, model: type[BaseModel], content: bytes | None = None,
              read: list | None = None) -> BaseModel:
    """``folder / rel`` (or ``content``, the file's bytes as a store keeps them) as ``model``, after its size, JSON, text
    and schema version are checked; _Stop after recording what is wrong. ``read``: gets the bytes parsed appended."""
    path = folder / rel
    size = path.stat().st_size if content is None else len(content)
    if size > limits.MAX_JSON_BYTES:
        v.error(rel, "", f"{size} bytes, over the limit of {limits.MAX_JSON_BYTES}", REGENERATE)
        raise _Stop
    try:
        raw_bytes = path.read_bytes() if content is None else content
        data = json.loads(raw_bytes.decode("utf-8"), parse_constant=no_constants)
    except RecursionError:   # Python's message is about its own stack, not the file
        v.error(rel, "", "not valid JSON here: its values are nested deeper than the parser follows (a "
                "submission's JSON nests a few levels)", REGENERATE)
        raise _Stop from None
    except (UnicodeDecodeError, ValueError) as error:
        v.error(rel, "", f"not valid JSON ({str(error)[:200]})", REGENERATE)
        raise _Stop from None
    if not isinstance(data, dict):
        v.error(rel, "", "is not a JSON object", REGENERATE)
        raise _Stop
    check_text(v, rel, data)
    expected = SCHEMA_VERSION if model is SubmissionFile else RESULT_SCHEMA
    if data.get("schema_version") != expected:
        v.error(rel, "schema_version", f"is {data.get('schema_version')!r}; this bench reads {expected}",
                f"{REGENERATE} with this version of shiftbench")
        raise _Stop
    try:
        found = model.model_validate(data)
    except ValidationError as error:
        for item in error.errors()[:20]:
            v.error(rel, field_path(item["loc"]), item["msg"], REGENERATE)
        raise _Stop from None
    if read is not None:
        read.append(raw_bytes)
    return found


def check_commands(v: Validation, file: str, commands: list[tuple[str, str]]) -> None:
    """(field, command) pairs: refuse an absolute path in any (``bench submit`` stores commands without)."""
    for fld, command in commands:
        paths = absolute_paths(command)
        if paths:
            v.error(file, fld, f"holds the local path {paths[0][:100]!r}: a submission records commands without "
                    "the submitter's folders", "re-pack with bench submit, which replaces every local path in a "
                    "command by its last component")


def check_name(v: Validation, file: str, fld: str, name: Any) -> None:
    if not isinstance(name, str) or not NAME_RE.fullmatch(name) or ".." in name:
        v.error(file, fld, f"{name!r} is not a plain name (letters, digits and . _ + = -, no path "
                           "separators, no '..', at most 96 characters)", "use a plain name")


