"""What version of the code and of the platform made a cached stage or a finished cell.

A cache entry or a result is reused only when everything that decides its numbers is the same, and
that includes the code that computed them and the platform it ran on: the teacher's per-pair scores
changed (by up to 7.7e-5) between two commits whose cache key was the same, and float results
depend on the torch build, the device and the number of threads. Each key therefore holds a digest
of the code of the modules that decide its stage (``code_version``) and the platform
(``platform_version``); changing either computes the stage again instead of silently reusing it.

The code is digested as its syntax tree, not its text (``code_text``): docstrings, comments and
formatting decide no number, and a digest of the text retrained every teacher and marked every
archived row "code changed" after an edit that changed none. ``DIGEST_SCHEME`` names that rule and is
part of every digest, so a key made under another rule never matches one made under this one.
"""
from __future__ import annotations

import ast
import functools
import hashlib
import importlib.util
import inspect
import textwrap
from typing import Callable

# 1: the raw source text (keys made before this rule, which results do not mark); 2: the syntax tree
# without docstrings (``code_text``). Results record it beside a method's code digest
# (methods.method_origin), so the board compares a recorded digest under the rule it was made with.
DIGEST_SCHEME = 2

# The teacher's weights, labels and scores: how pairs are split and ordered (bench.core.data), turned into
# tokens (bench.core.formatting), how the model is loaded and initialised (bench.stages.models) and run on batches (bench.stages.batches), trained
# (bench.stages.train, with its batches sharded by bench.core.distributed) and with which loss (soft-label BT from
# the method API, methods.api), the stage itself (bench.stages.teacher) and how eval sets are scored
# (bench.stages.scorers). The pipeline (the student stage) is not in it: changing it retrains no teacher.
TEACHER_CODE = ("bench.core.data", "bench.core.formatting", "bench.stages.models", "bench.core.anatomy", "bench.stages.batches", "bench.stages.train",
                "bench.core.distributed", "methods.api", "bench.stages.teacher", "bench.stages.scorers")
# The code that decides a label-stage entry: bench.stages.label_stage, and the teacher's code (the extra teachers
# are trained by it; the pretrained strong model is loaded and read by bench.stages.models and bench.core.formatting,
# which are in it too). The method's own source is in the key apart, as it is in a cell's.
LABEL_CODE = TEACHER_CODE + ("bench.stages.label_stage", "bench.core.metrics")   # metrics: the held-out error in the record
# ANCHOR's pretrained reference states: computed by bench.stages.reference from sequences of bench.core.formatting
# with the model of bench.stages.models, run by bench.stages.batches (its collate and model_inputs).
REFERENCE_CODE = ("bench.stages.reference", "bench.stages.models", "bench.core.anatomy", "bench.stages.batches", "bench.core.formatting")
# A cell's numbers: the teacher's code, the whole pipeline (student stage, misfit, writing), the
# metrics, the reference states a method may use and the scorers. The method's own file is in the
# cell key apart (``method_code``), and each dataset's loader module is added by the pipeline.
CELL_CODE = TEACHER_CODE + ("bench.stages.pipeline", "bench.core.metrics", "bench.stages.reference", "bench.stages.scorers.vllm")


def _dump(node: object) -> str:
    """A syntax tree as text: each node's type and its fields by name, without positions (line and
    column: formatting), a string's ``u`` prefix (``kind``), or a field that is None or an empty list,
    which is how a Python that adds an optional field (3.12's ``type_params``) leaves a tree unchanged:
    the same code digests alike under every Python the project supports."""
    if isinstance(node, ast.AST):
        fields = [f"{name}={_dump(value)}" for name, value in ast.iter_fields(node)
                  if name != "kind" and value is not None and value != []]
        return f"{type(node).__name__}({', '.join(fields)})"
    if isinstance(node, list):
        return f"[{', '.join(_dump(item) for item in node)}]"
    return f"{type(node).__name__}:{node!r}"   # a constant: 1 and 1.0 and True stay apart


def code_text(source: bytes | str) -> bytes:
    """What a digest of Python ``source`` is taken over: its syntax tree with every string that stands
    alone as a statement removed (module, class and function docstrings, and an attribute's below it:
    Python evaluates and drops them) and without comments, line breaks and spacing, which the tree does
    not hold. Everything that runs is kept, names included. Text that does not parse (not Python) is
    taken as it is, marked so that it cannot equal a tree."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):   # ValueError: null bytes
        return b"raw\0" + (source if isinstance(source, bytes) else source.encode())
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            node.body = [statement for statement in body if not (isinstance(statement, ast.Expr)
                         and isinstance(statement.value, ast.Constant) and isinstance(statement.value.value, str))]
    return _dump(tree).encode()


@functools.lru_cache(maxsize=256)
def code_digest(source: bytes) -> str:
    """sha256 (64 hex digits) of the code of a Python file's bytes under ``DIGEST_SCHEME``: a docstring,
    comment or formatting edit leaves it; any change to what runs changes it."""
    return hashlib.sha256(f"code digest scheme {DIGEST_SCHEME}\0".encode() + code_text(source)).hexdigest()


@functools.lru_cache(maxsize=None)
def _module_code(name: str) -> bytes:
    spec = importlib.util.find_spec(name)
    if spec is None or not spec.origin or not spec.has_location:
        return f"<no source for {name}>".encode()
    with open(spec.origin, "rb") as handle:
        return code_text(handle.read())


@functools.lru_cache(maxsize=None)
def code_version(modules: tuple[str, ...], functions: tuple[Callable, ...] = ()) -> str:
    """sha256 (24 hex digits) of the code (``code_text``) of ``modules`` (dotted names) and of ``functions``,
    in order, under ``DIGEST_SCHEME``."""
    digest = hashlib.sha256(f"code digest scheme {DIGEST_SCHEME}\0".encode())
    for name in modules:
        digest.update(name.encode() + b"\0" + _module_code(name) + b"\0")
    for function in functions:
        digest.update(f"{function.__module__}.{function.__qualname__}".encode() + b"\0")
        # dedented: a method's source starts indented, which does not parse
        digest.update(code_text(textwrap.dedent(inspect.getsource(function))) + b"\0")
    return digest.hexdigest()[:24]


def platform_version() -> dict:
    """What float results depend on besides the code: the torch and transformers builds, the device
    (a GPU by its name: kernels differ between models) and torch's intra-op thread count."""
    import torch

    from bench.core.distributed import state

    device = state().device
    name = device.type
    if device.type == "cuda":
        name = f"cuda: {torch.cuda.get_device_name(device)}"
    try:
        from importlib.metadata import version
        transformers = version("transformers")
    except Exception:  # noqa: BLE001 -- a missing distribution is not an error here
        transformers = None
    return {"torch": torch.__version__, "transformers": transformers, "device": name,
            "threads": torch.get_num_threads()}
