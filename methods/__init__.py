"""Method adapters: one short file each, found by name.

Three places a method can come from:
- built in: any ``Method`` subclass defined in a module of this package registers itself, on first use,
  under the ``name:`` (and ``aliases:``) of its docstring's front matter: its one name;
- an installed package: an entry point in the group ``bench.methods``, e.g. in its pyproject.toml
  ``[project.entry-points."bench.methods"] my-method = "my_package.module:MyMethod"``;
- a file: ``bench run --method-file my_method.py`` registers every Method subclass defined in it.
How to write one: docs/adding-a-method.md.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import pkgutil
import sys
from importlib import metadata
from pathlib import Path

from bench.core.errors import BadParamsError, BenchError
from bench.core.registry import Registry
from bench.core.versions import DIGEST_SCHEME, code_digest
from methods.api import Method, check_method_class, describe_params, parse_params

ENTRY_POINT_GROUP = "bench.methods"


class MethodRegistry(Registry[type[Method]]):
    """The methods: on the first lookup, every module of this package (but the API) is imported and each
    Method subclass it defines with a front-matter name is registered under that name and its aliases.
    Imported then, not when the package is: ``import methods`` stays light, and no module of the package
    imports another through it."""

    def __init__(self) -> None:
        super().__init__("method")
        self._found = False

    def _built_in(self) -> None:
        if self._found:
            return
        self._found = True
        for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
            if info.name == "api":
                continue
            module = importlib.import_module(f"{__name__}.{info.name}")
            for cls in vars(module).values():
                if inspect.isclass(cls) and issubclass(cls, Method) and cls.__module__ == module.__name__ and cls.name:
                    self.register(cls.name, check_method_class(cls, f"methods/{info.name}.py"), aliases=cls.aliases)

    def register(self, name, entry, *, aliases=(), replace=False):
        self._built_in()
        return super().register(name, entry, aliases=aliases, replace=replace)

    def canonical(self, name: str) -> str:
        self._built_in()
        return super().canonical(name)

    def names(self) -> list[str]:
        self._built_in()
        return super().names()

    def __contains__(self, name: str) -> bool:
        self._built_in()
        return super().__contains__(name)

    def __iter__(self):
        self._built_in()
        return super().__iter__()


METHODS = MethodRegistry()

_PLUGIN_ORIGIN: dict[str, dict] = {}   # method name -> where it came from, when not built in
_PLUGIN_FILES: dict[str, Path] = {}    # method name -> its method file, resolved: the same file may load again
_plugins_loaded = False


def load_plugins() -> None:
    """Register the methods of installed packages (entry point group ``bench.methods``), once.
    A plugin never replaces a built-in method of the same name."""
    global _plugins_loaded
    if _plugins_loaded:
        return
    _plugins_loaded = True
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        if entry.name in METHODS:
            print(f"[methods] plugin method {entry.name!r} ({entry.value}) ignored: the name is taken", file=sys.stderr)
            continue
        METHODS.register(entry.name, entry.value)
        dist = entry.dist
        _PLUGIN_ORIGIN[entry.name] = {"kind": "entry point", "entry_point": entry.value,
                                      "distribution": dist.metadata["Name"] if dist else None,
                                      "version": dist.version if dist else None}


def load_method_file(path: str | Path) -> list[str]:
    """Import a Python file and register every Method subclass defined in it; returns their names."""
    path = Path(path)
    if not path.is_file() or path.suffix != ".py":
        raise BenchError(f"method file {str(path)!r} not found or not a .py file; pass the path of your method's Python file")
    module_name = f"bench_method_file_{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except SystemExit as error:  # sys.exit() at import would end bench silently with the file's code
        sys.modules.pop(module_name, None)
        raise BenchError(f"method file {str(path)!r} called sys.exit({error.code!r}) on import, which would end bench "
                         f"without a word. Fix the file: a method file only defines classes; put code that runs under "
                         f"`if __name__ == \"__main__\":`") from None
    except Exception as error:  # any error in user code: report it as theirs, with its type and message
        sys.modules.pop(module_name, None)
        raise BenchError(f"method file {str(path)!r} raised {type(error).__name__} on import: {error}. "
                         f"Fix the file (run `python {path}` to see the traceback)") from None
    classes = [obj for obj in vars(module).values()
               if inspect.isclass(obj) and issubclass(obj, Method) and obj.__module__ == module_name]
    if not classes:
        raise BenchError(f"method file {str(path)!r} defines no subclass of methods.api.Method")
    names = []
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    for cls in classes:
        check_method_class(cls, f"method file {path}")
        if cls.name in METHODS and _PLUGIN_FILES.get(cls.name) != path.resolve():
            raise BenchError(f"method file {str(path)!r}: the name {cls.name!r} is taken by another method; rename it")
        METHODS.register(cls.name, cls, replace=True)  # replaces only the same file's earlier load
        # The file's name and digest, never its folder: results and submissions record no machine path (the
        # source itself goes beside the results, method_source, and into a submission)
        _PLUGIN_ORIGIN[cls.name] = {"kind": "file", "file": path.name, "sha256": digest,
                                    "code_digest": code_digest(raw), "digest_scheme": DIGEST_SCHEME}
        _PLUGIN_FILES[cls.name] = path.resolve()
        names.append(cls.name)
    return names


def get_method_class(name: str) -> type[Method]:
    load_plugins()
    try:
        cls = METHODS.get(name)
    except (ImportError, AttributeError) as error:
        raise BenchError(f"method {name!r} could not be imported: {error}. Check that its package is installed "
                         f"and its entry point names a real 'module:Class'") from None
    return check_method_class(cls, f"method {name!r}")


def method_origin(cls: type[Method]) -> dict:
    """Where a method's code came from, with two digests of its source file: goes into every result.
    ``sha256``, of the file's bytes, names the exact file (the copy a submission carries is checked
    against it); ``code_digest``, of its code under ``digest_scheme`` (bench.core.versions.code_digest),
    tells whether a later version of the file runs the same code (the board's "code changed")."""
    origin = dict(_PLUGIN_ORIGIN.get(cls.name, {"kind": "built-in"}))
    source = inspect.getsourcefile(cls)
    origin.setdefault("module", cls.__module__)
    if source and "sha256" not in origin:
        raw = Path(source).read_bytes()
        origin.update(sha256=hashlib.sha256(raw).hexdigest(), code_digest=code_digest(raw),
                      digest_scheme=DIGEST_SCHEME)
    return origin


def method_source(cls: type[Method]) -> bytes | None:
    """The source file of a method that is not built in (a method file's, or an installed package's
    class's): its results keep a copy and a submission of it carries one (bench.core.result_schema.METHOD_SOURCE_FILE),
    so that a reviewer can read what trained its students. None for a built-in method."""
    source = inspect.getsourcefile(cls)
    if method_origin(cls)["kind"] == "built-in" or not source:
        return None
    return Path(source).read_bytes()


def method_code(cls: type[Method]) -> str:
    """sha256 of the code (bench.core.versions.code_digest) of the source files of the method's class and of
    every method class it inherits from (methods.api aside: it is in bench.core.versions' code versions), which
    goes into cell and label-stage keys: a method that inherits its rule from another's file (probe-filter from
    probe-relabel) is recomputed when that file's code changes, not only its own; a docstring, comment or
    formatting edit recomputes nothing.

    A method that is not built in keys its own file by its bytes instead: a submission of it carries that
    one file (``method_source``), which every cell must have run byte for byte (bench submit refuses cells
    of two versions of it), so an edit to it, a docstring's too, must run the cells again."""
    carried = inspect.getsourcefile(cls) if method_source(cls) is not None else None
    files = []
    for klass in cls.__mro__:
        if isinstance(klass, type) and issubclass(klass, Method) and klass is not Method:
            source = inspect.getsourcefile(klass)
            if source and source not in files:
                files.append(source)
    if not files:   # a class without a source file (defined interactively): its origin is all there is
        return str(method_origin(cls).get("sha256"))
    digest = hashlib.sha256(f"code digest scheme {DIGEST_SCHEME}\0".encode())
    for source in files:
        raw = Path(source).read_bytes()
        digest.update((raw if source == carried else code_digest(raw).encode()) + b"\0")
    return digest.hexdigest()


def make_method(name: str, params: dict[str, object] | None = None, defaults: dict[str, object] | None = None) -> Method:
    """The method ``name`` with ``defaults`` (a model pair's) overridden by ``params`` (the user's)."""
    cls = get_method_class(name)
    try:
        return cls(parse_params(cls, {**(defaults or {}), **(params or {})}))
    except BadParamsError as error:
        if not defaults:
            raise
        shown = ", ".join(f"{k}={v}" for k, v in defaults.items())
        raise BadParamsError(f"{error} (the model pair sets {shown})") from None


__all__ = ["METHODS", "Method", "make_method", "describe_params", "get_method_class", "load_method_file",
           "load_plugins", "method_origin", "method_source", "ENTRY_POINT_GROUP"]
