"""Keys that survive refactors: cache and cell keys digest the code (bench.core.versions.code_text: the syntax
tree without docstrings), not its text, so a docstring, comment or formatting edit changes no key and no
"code changed" badge on the board, and a change to a loss or a metric's constant changes both."""
from __future__ import annotations

import hashlib
import importlib
import linecache
import sys
from pathlib import Path

import pytest

from bench.core import versions
from bench.core.versions import DIGEST_SCHEME, code_digest, code_text, code_version
from bench.stages.resume import digest_scheme, why_rerun
from leaderboard.links import method_code as board_code
from leaderboard.links import recorded_code
from methods import load_method_file, method_code, method_origin

ROOT = Path(__file__).resolve().parents[1]
NAIVE = (ROOT / "methods" / "naive.py").read_text(encoding="utf-8")
METRICS = (ROOT / "bench" / "core" / "metrics.py").read_text(encoding="utf-8")

BASE = '''"""A module: its docstring."""
from methods.naive import Naive

SCALE = 2.0   # how much of the loss counts


class Doubled(Naive):
    """
    name: {name}
    idea: naive's loss, scaled
    paper: none
    """

    width: int = 3
    """an attribute's docstring"""

    def loss(self, step):
        """The loss, scaled by SCALE."""
        loss, logs = super().loss(step)
        return SCALE * loss, logs


def helper(x):
    """What helper does."""
    return x + 1
'''
# Each edit leaves the code as it was: a docstring, a comment, the layout (line breaks, spacing, quotes,
# redundant parentheses, a trailing comma), as `ruff format` or a tidy-up would.
SAME = {
    "docstring": lambda s: s.replace("The loss, scaled by SCALE.", "The loss, times SCALE (see the paper).")
                            .replace('"""A module: its docstring."""', '"""Another module docstring,\n\nlonger."""')
                            .replace("idea: naive's loss, scaled", "idea: naive's loss, multiplied")
                            .replace("an attribute's docstring", "width, in nothing"),
    "comment": lambda s: s.replace("# how much of the loss counts", "# the factor").replace(
        "        loss, logs = super().loss(step)\n", "        # the base loss first\n        loss, logs = super().loss(step)  # BT\n"),
    "format": lambda s: s.replace("SCALE = 2.0   #", "SCALE=2.0 #").replace(
        "return SCALE * loss, logs", "return (\n            SCALE*loss,\n            logs,\n        )").replace(
        "return x + 1", "return (x+1)").replace("\n\n\ndef helper", "\n\ndef helper").replace(
        "from methods.naive import Naive", "from methods.naive import (\n    Naive,\n)"),
    "no docstrings": lambda s: s.replace('        """The loss, scaled by SCALE."""\n', "").replace(
        '    """What helper does."""\n', "").replace('"""A module: its docstring."""\n', ""),
}
# Each edit changes what runs.
OTHER = {
    "operator": lambda s: s.replace("return SCALE * loss, logs", "return SCALE + loss, logs"),
    "constant": lambda s: s.replace("SCALE = 2.0", "SCALE = 2.5"),
    "int for float": lambda s: s.replace("SCALE = 2.0", "SCALE = 2"),
    "name": lambda s: s.replace("return x + 1", "return x + SCALE"),
    "statement": lambda s: s.replace("        return SCALE * loss, logs",
                                     "        logs['scale'] = SCALE\n        return SCALE * loss, logs"),
}


def base(name: str = "doubled-digest") -> str:
    return BASE.format(name=name)


@pytest.mark.parametrize("edit", sorted(SAME))
def test_a_docstring_comment_or_layout_edit_keeps_the_code_digest(edit):
    edited = SAME[edit](base())
    assert edited != base()
    assert code_text(edited) == code_text(base()) and code_digest(edited.encode()) == code_digest(base().encode())


@pytest.mark.parametrize("edit", sorted(OTHER))
def test_a_change_to_what_runs_changes_the_code_digest(edit):
    edited = OTHER[edit](base())
    assert edited != base() and code_digest(edited.encode()) != code_digest(base().encode())


def test_the_digest_names_its_scheme_and_takes_text_that_is_not_python_as_it_is():
    assert code_digest(b"x = 1\n") == hashlib.sha256(f"code digest scheme {DIGEST_SCHEME}\0".encode()
                                                     + code_text("x = 1\n")).hexdigest()
    assert code_digest(b"x = 1\n") != hashlib.sha256(b"x = 1\n").hexdigest()   # never a scheme-1 digest
    assert code_text(b"not python (") == b"raw\0not python ("
    assert code_digest(b"not python (") != code_digest(b"not python  (")


def test_the_real_loss_and_metrics_digest_their_code():
    """methods/naive.py's loss and bench/core/metrics.py's NTS: their docs and layout are free, their formulas not."""
    naive = code_digest(NAIVE.encode())
    assert code_digest(NAIVE.replace("The base of most methods here", "Most methods build on it").encode()) == naive
    assert code_digest(NAIVE.replace("        loss = soft_bt_loss", "        # the soft-label BT loss\n"
                                     "        loss = soft_bt_loss").encode()) == naive
    assert code_digest(NAIVE.replace("soft_bt_loss(step.r_a, step.r_b, step.target)",
                                     "soft_bt_loss(\n            step.r_a,\n            step.r_b,\n            "
                                     "step.target,\n        )").encode()) == naive
    changed = NAIVE.replace("soft_bt_loss(step.r_a, step.r_b, step.target)",
                            "soft_bt_loss(step.r_a, step.r_b, 1 - step.target)")
    assert changed != NAIVE and code_digest(changed.encode()) != naive
    metrics = code_digest(METRICS.encode())
    nts = '"nts": aog - max(0.0, teacher_id - student_id)'
    assert nts in METRICS
    assert code_digest(METRICS.replace(nts, '"nts": aog - max(0.5, teacher_id - student_id)').encode()) != metrics
    assert code_digest(METRICS.replace(nts, '"nts": aog + max(0.0, teacher_id - student_id)').encode()) != metrics
    assert code_digest(METRICS.replace(nts, '"nts": aog - max(0.0, (teacher_id - student_id))').encode()) == metrics


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    """A folder on sys.path for modules written by a test; bench.core.versions' caches cleared around it."""
    monkeypatch.syspath_prepend(str(tmp_path))
    versions._module_code.cache_clear()
    versions.code_version.cache_clear()
    yield tmp_path
    versions._module_code.cache_clear()
    versions.code_version.cache_clear()
    for name in [n for n in sys.modules if n.startswith("digest_probe_")]:
        del sys.modules[name]


def _version_of(folder: Path, name: str, text: str, functions: tuple[str, ...] = ()) -> str:
    """code_version of module ``name`` (and of its ``functions``, by name) once it holds ``text``."""
    path = folder / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    versions._module_code.cache_clear()
    versions.code_version.cache_clear()
    importlib.invalidate_caches()
    linecache.clearcache()   # inspect.getsource reads through it
    module = importlib.reload(sys.modules[name]) if name in sys.modules else importlib.import_module(name)
    return code_version((name,), tuple(getattr(module, f) for f in functions))


def test_code_version_of_a_module_and_its_functions_ignores_docs_and_layout(module_dir):
    name = "digest_probe_module"
    first = _version_of(module_dir, name, base())
    assert len(first) == 24
    for edit in SAME.values():
        assert _version_of(module_dir, name, edit(base())) == first
    for edit in OTHER.values():
        assert _version_of(module_dir, name, edit(base())) != first
    # functions: a method's source (indented in its class: dedented to parse) and a module function

    def version(text: str) -> str:
        (module_dir / f"{name}.py").write_text(text, encoding="utf-8")
        versions.code_version.cache_clear()
        linecache.clearcache()
        loaded = importlib.reload(sys.modules[name])
        return code_version((), (loaded.Doubled.loss, loaded.helper))

    assert version(SAME["docstring"](base())) == version(SAME["format"](base())) == version(base())
    assert version(OTHER["operator"](base())) != version(base())


def test_the_real_naive_module_keeps_its_version_through_a_docstring_edit(module_dir):
    """End to end on methods/naive.py's text, as a module of its own (the repository's file is not touched)."""
    name = "digest_probe_naive"
    first = _version_of(module_dir, name, NAIVE)
    docs = NAIVE.replace('"""The plain W2S student', '"""The plain weak-to-strong student')
    assert _version_of(module_dir, name, docs) == first
    changed = NAIVE.replace('{"bt": loss.detach()}', '{"bt": loss.detach(), "twice": 2 * loss.detach()}')
    assert _version_of(module_dir, name, changed) != first


def test_a_methods_key_follows_its_code_and_a_method_file_its_bytes(module_dir):
    """method_code (in cell and label-stage keys): a built-in's file by its code; a method file, whose
    submission carries it byte for byte (method_source.py), by its bytes, while its origin records both."""
    name = "digest_probe_builtin"
    path = module_dir / f"{name}.py"
    path.write_text(base("digest-probe-builtin"), encoding="utf-8")
    cls = importlib.import_module(name).Doubled
    assert method_origin(cls)["kind"] == "built-in"   # not a method file or a package's: keyed as ours are
    key = method_code(cls)
    for edit in SAME.values():   # method_code reads the file as it is now
        path.write_text(edit(base("digest-probe-builtin")), encoding="utf-8")
        assert method_code(cls) == key
    path.write_text(OTHER["operator"](base("digest-probe-builtin")), encoding="utf-8")
    assert method_code(cls) != key

    file = module_dir / "digest_probe_file.py"
    file.write_text(base("digest-probe-file"), encoding="utf-8")
    [loaded] = load_method_file(file)
    from methods import METHODS

    first_cls = METHODS.get(loaded)
    first, first_origin = method_code(first_cls), method_origin(first_cls)
    file.write_text(SAME["docstring"](base("digest-probe-file")), encoding="utf-8")
    load_method_file(file)
    again_cls = METHODS.get(loaded)
    again_origin = method_origin(again_cls)
    assert method_code(again_cls) != first   # a submission could not carry cells of both versions
    assert again_origin["sha256"] != first_origin["sha256"]
    assert again_origin["code_digest"] == first_origin["code_digest"]
    assert again_origin["sha256"] == hashlib.sha256(file.read_bytes()).hexdigest()   # what the submission check reads
    assert again_origin["digest_scheme"] == DIGEST_SCHEME


def _recorded(text: str) -> dict:
    """The origin a run of methods/naive.py holding ``text`` would have recorded (scheme 2)."""
    raw = text.encode()
    return {"kind": "built-in", "module": "methods.naive", "sha256": hashlib.sha256(raw).hexdigest(),
            "code_digest": code_digest(raw), "digest_scheme": DIGEST_SCHEME}


def test_the_code_changed_badge_compares_code_where_the_run_recorded_it():
    here = recorded_code(method_origin(__import__("methods.naive", fromlist=["Naive"]).Naive))
    assert (here.badge, here.changed) == ("code", False) and "same sha256" in here.note

    docs = _recorded(NAIVE.replace("The base of most methods here", "Most methods build on it"))
    same = recorded_code(docs)
    assert (same.badge, same.changed) == ("code", False)
    assert "only in docstrings, comments or formatting" in same.note

    loss = _recorded(NAIVE.replace("step.r_a, step.r_b, step.target", "step.r_b, step.r_a, step.target"))
    changed = recorded_code(loss)
    assert (changed.badge, changed.changed) == ("code changed", True) and "has changed since the run" in changed.note


def test_a_record_from_before_code_digests_is_compared_by_its_bytes_and_never_called_unchanged():
    """A submission recorded under scheme 1 has the file's sha256 only: the same bytes are the same code;
    other bytes may be a docstring edit or a new loss, and the badge says the file changed, no more."""
    current = hashlib.sha256(NAIVE.encode()).hexdigest()
    old = board_code("methods.naive", current)
    assert (old.badge, old.changed) == ("code", False)
    docs = hashlib.sha256(NAIVE.replace("The base of most", "The root of most").encode()).hexdigest()
    for recorded in (recorded_code({"kind": "built-in", "module": "methods.naive", "sha256": docs}),
                     board_code("methods.naive", docs, code_digest(NAIVE.encode()), 1)):   # another scheme's digest
        assert (recorded.badge, recorded.changed) == ("file changed", True)
        assert "before code digests" in recorded.note and "has changed since the run" in recorded.note
    assert recorded_code({"kind": "file", "file": "naive.py", "sha256": docs}) is None   # not ours to serve


def test_a_rerun_says_when_the_digest_scheme_changed_every_key():
    env = {"packages": {"torch": "2.5.1", "transformers": "4.46"}, "device": "cpu", "torch_threads": 2,
           "git": {"commit": "1bea2ba0"}}
    old = {"method": {"origin": {"kind": "built-in", "module": "methods.naive", "sha256": "0" * 64}}, "environment": env}
    new = {"method": {"origin": {**old["method"]["origin"], "code_digest": "1" * 64, "digest_scheme": DIGEST_SCHEME}}}
    assert digest_scheme(old) == 1 and digest_scheme(new) == DIGEST_SCHEME
    assert digest_scheme({"method": {"origin": {"kind": "external"}}}) == DIGEST_SCHEME   # no source: no claim
    assert why_rerun(env, env, digest_scheme(old)) == (f"code digest scheme 1 there, {DIGEST_SCHEME} here: every key "
                                                       "made under scheme 1 changed once")
    assert why_rerun(env, env, digest_scheme(new)) == "its code or settings differ from this run's"


def test_the_board_shows_the_badge_it_decided():
    from types import SimpleNamespace

    from leaderboard.columns import Row
    from leaderboard.render import _parts

    def shown(code) -> str:
        return str(_parts().method_cell(Row([], "method", True, code=code), SimpleNamespace(text="naive")))

    docs = NAIVE.replace("The base of most", "The root of most")
    loss = NAIVE.replace("step.r_a, step.r_b, step.target", "step.r_b, step.r_a, step.target")
    old = {"kind": "built-in", "module": "methods.naive", "sha256": hashlib.sha256(docs.encode()).hexdigest()}
    for origin, marked, badge in ((_recorded(docs), "code", "code"), (_recorded(loss), "code changed", "code changed"),
                                  (old, "code changed", "file changed")):
        html = shown(recorded_code(origin))
        assert f'<a class="{marked}" ' in html and f">{badge}</a>" in html
