"""One small generic registry: names, aliases, lazy "module:attr" entries, did-you-mean errors.

Every named thing in the harness (datasets, protocols, model pairs, methods) lives in a
``Registry``. Entries may be the object itself or a ``"module:attr"`` string that is imported
on first use, so listing names never imports heavy code.
"""
from __future__ import annotations

import difflib
import importlib
from typing import Any, Generic, Iterator, TypeVar

from bench.core.errors import BenchError, UnknownNameError

T = TypeVar("T")


def import_object(ref: str) -> Any:
    """Import ``"package.module:attr"``; errors name the reference and what is wrong with it."""
    module_name, sep, attr = ref.partition(":")
    if not sep or not module_name or not attr:
        raise BenchError(f"bad reference {ref!r}: expected 'package.module:attribute'")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, attr)
    except AttributeError:
        raise ImportError(f"module {module_name!r} has no attribute {attr!r} (from reference {ref!r})") from None


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, T | str] = {}
        self._aliases: dict[str, str] = {}

    def register(self, name: str, entry: T | str, *, aliases: tuple[str, ...] = (), replace: bool = False) -> T | str:
        for key in (name, *aliases):
            if (key in self._entries and not (replace and key == name)) or key in self._aliases:
                raise ValueError(f"{self.kind} {key!r} is already registered")
        self._entries[name] = entry
        for alias in aliases:
            self._aliases[alias] = name
        return entry

    def canonical(self, name: str) -> str:
        name = self._aliases.get(name, name)
        if name not in self._entries:
            choices = sorted([*self._entries, *self._aliases])
            close = difflib.get_close_matches(name, choices, n=1, cutoff=0.5)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise UnknownNameError(f"unknown {self.kind} {name!r}.{hint} Valid choices: {', '.join(choices)}")
        return name

    def get(self, name: str) -> T:
        key = self.canonical(name)
        entry = self._entries[key]
        if isinstance(entry, str):
            entry = import_object(entry)
            self._entries[key] = entry
        return entry  # type: ignore[return-value]

    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: str) -> bool:
        return self._aliases.get(name, name) in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)
