"""How a submission records commands: without the submitter's local paths.

A submission records the ``bench submit`` line (``command`` in submission.json) and the lines that
made its cells (``run_commands``, and the ``command`` of every packed ``result.json``). Where a
submitter keeps results is not the leaderboard's business, so ``bench submit`` stores each of them
as ``public_command(command)``. The rule: split the command as a shell would (``shlex.split``), then
replace by its last path component

- every token that is a local path: absolute (``/...``, ``\\...``, ``C:\\...``), ``~``-prefixed, or
  with a ``..`` component;
- the value of a path option (``--out``, ``--cache-dir``, ``--data-dir``, ``--method-file``,
  ``--slurm-folder``, ``--submissions``, ``--html``, ``--labels``), written ``--out DIR`` or ``--out=DIR``,
  whatever it is;
- the value of a ``NAME=VALUE`` token whose VALUE is a local path;

and join the tokens again with ``shlex.join``. ``bench run --seeds 0 --out /home/me/runs/results``
becomes ``bench run --seeds 0 --out results``. A command with nothing to replace is returned
unchanged, and ``public_command`` of its own output changes nothing.

``bench validate`` refuses a command that still holds an absolute path (``absolute_paths``; a
``~``-prefixed one counts, as the shell makes it one), so no submission that passes leaks one.
"""
from __future__ import annotations

import re
import shlex
from functools import lru_cache

PATH_OPTIONS = frozenset({"--out", "--cache-dir", "--data-dir", "--method-file", "--slurm-folder",
                          "--submissions", "--html", "--labels"})

_SEPARATORS = re.compile(r"[/\\]+")
_ABSOLUTE = re.compile(r"[/\\~]|[A-Za-z]:[/\\]")   # at the start of a token


def _tokens(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # unbalanced quotes: not a line bench wrote, but still split it
        return command.split()


def _is_absolute(token: str) -> bool:
    return bool(_ABSOLUTE.match(token))


def _is_local(token: str) -> bool:
    return _is_absolute(token) or ".." in _SEPARATORS.split(token)


def last_component(path: str) -> str:
    """``/home/me/runs/results/`` -> ``results``; ``.`` when there is none (``/``, ``~``, ``~user``)."""
    parts = _SEPARATORS.split(path)
    if parts[0].startswith("~"):
        parts = parts[1:]
    parts = [p for p in parts if p not in ("", ".")]
    return parts[-1] if parts else "."


def _public_token(token: str, after_path_option: bool) -> str:
    if after_path_option or _is_local(token):
        return last_component(token)
    name, eq, value = token.partition("=")
    if eq and (name in PATH_OPTIONS or _is_local(value)):
        return f"{name}={last_component(value)}"
    return token


def public_command(command: str) -> str:
    """``command`` with every local path replaced by its last component (the rule is the module's docstring)."""
    tokens = _tokens(command)
    public = [_public_token(token, i > 0 and tokens[i - 1] in PATH_OPTIONS) for i, token in enumerate(tokens)]
    return command if public == tokens else shlex.join(public)


def absolute_paths(command: str) -> list[str]:
    """The absolute (or ``~``-prefixed) paths a command holds, as tokens or as the VALUE of ``NAME=VALUE``."""
    return list(_absolute_paths(command))


@lru_cache(maxsize=4096)   # a submission's cells record a handful of commands, each many times
def _absolute_paths(command: str) -> tuple[str, ...]:
    found = []
    for token in _tokens(command):
        value = token.partition("=")[2]
        if _is_absolute(token):
            found.append(token)
        elif _is_absolute(value):
            found.append(value)
    return tuple(found)


def method_option(method) -> str:
    """How ``bench run`` names a recorded method (a MethodRecord or its dict): ``--method NAME``, or for a method from
    a file, which no name finds, ``--method-file FILE`` with the file name its cells recorded (and --method where the
    file defines several)."""
    name = method["name"] if isinstance(method, dict) else method.name
    origin = (method.get("origin") if isinstance(method, dict) else method.origin) or {}
    if origin.get("kind") == "file":
        return f"--method-file {origin.get('file') or 'METHOD_FILE.py'} --method {name}"
    return f"--method {name}"
