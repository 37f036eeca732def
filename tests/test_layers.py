"""The house's layers (docs/architecture.md): bench/core imports nothing from the stages, the commands
or the submissions; the stages nothing from the commands; the datasets and suites nothing above the
core; methods/api.py nothing from bench but the core; and no module imports itself back through others
(no import circle, counting imports inside functions too)."""
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bench", "methods", "leaderboard")
ABOVE = {"core": {"stages", "commands", "submissions", "cli"}, "stages": {"commands", "cli"},
         "datasets": {"stages", "commands", "submissions", "cli"}, "suites": {"stages", "commands", "submissions", "cli"}}


def modules() -> dict[str, Path]:
    found = {}
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
        if rel.parts[0] in PACKAGES:
            name = ".".join(rel.with_suffix("").parts)
            found[name.removesuffix(".__init__")] = path
    return found


def imports(name: str, path: Path, known: dict) -> list[tuple[str, int]]:
    """(module imported, line) for every import of a project module, at any depth of the file."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.append((target, node.lineno))
    return out


def layer(name: str) -> str:
    parts = name.split(".")
    if parts[0] != "bench":
        return parts[0]
    return parts[1] if len(parts) > 2 or parts[1] in ("core", "stages", "commands") else "cli" if parts[1] in ("cli", "__main__") else parts[1]


def test_no_module_imports_from_a_layer_above_its_own():
    known = modules()
    wrong = [f"{name}:{line} imports {target}" for name, path in known.items() for target, line in imports(name, path, known)
             if layer(target) in ABOVE.get(layer(name), ())]
    api = [f"methods.api:{line} imports {target}" for target, line in imports("methods.api", known["methods.api"], known)
           if layer(target) != "core" and target != "bench"]
    assert not wrong + api, "\n".join(wrong + api)


def test_there_is_no_import_circle():
    known = modules()
    edges = {name: {t for t, _ in imports(name, path, known)} for name, path in known.items()}
    index, low, stack, on, circles, counter = {}, {}, [], set(), [], [0]

    def visit(v):   # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for v in edges:
        if v not in index:
            visit(v)
    assert not circles, circles
