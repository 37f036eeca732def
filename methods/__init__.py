"""Method adapters: one short file each, registered here by name.

Add one: subclass ``methods.base.Method`` in a new file, then register it below as
``"methods.yourfile:YourClass"`` (imported only when used).
"""
from __future__ import annotations

from bench.registry import Registry
from bench.errors import BadParamsError
from methods.base import Method, describe_params, parse_params

METHODS: Registry[type[Method]] = Registry("method")
METHODS.register("naive", "methods.naive:Naive")
METHODS.register("anchor", "methods.anchor:Anchor")
METHODS.register("ceiling", "methods.ceiling:Ceiling")


def make_method(name: str, params: dict[str, object] | None = None, defaults: dict[str, object] | None = None) -> Method:
    """The method ``name`` with ``defaults`` (a model pair's) overridden by ``params`` (the user's)."""
    cls = METHODS.get(name)
    try:
        return cls(parse_params(cls, {**(defaults or {}), **(params or {})}))
    except BadParamsError as error:
        if not defaults:
            raise
        shown = ", ".join(f"{k}={v}" for k, v in defaults.items())
        raise BadParamsError(f"{error} (the model pair sets {shown})") from None


__all__ = ["METHODS", "Method", "make_method", "describe_params"]
