"""The library's import graph: no circle among src/helixclock's modules, counting every import
(at the top, inside functions, under TYPE_CHECKING), and no import of the package's own modules
inside a function unless the line above says why (it keeps a heavy library out of a light job)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from helpers.paths import REPO

PACKAGE = REPO / "src" / "helixclock"
DEFERRED = "# deferred:"  # the comment a function-level import of the package's own modules needs


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in PACKAGE.rglob("*.py")}


def own_imports(path: Path, known: set[str]) -> list[tuple[ast.ImportFrom | ast.Import, str]]:
    """Every import in ``path`` of a module of the package, with the module it names (a relative
    import resolved against the file's package; ``from .x import y`` names x.y when that is a
    module)."""
    name = module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for candidate in [target] + [f"{target}.{a.name}" for a in node.names]:
                if candidate in known:
                    out.append((node, candidate))
        elif isinstance(node, ast.Import):
            out += [(node, a.name) for a in node.names if a.name in known]
    return out


def import_graph() -> dict[str, set[str]]:
    """module -> the modules it imports, each with its parent packages (importing
    helixclock.patching.engine runs helixclock.patching's __init__ first)."""
    known = modules()
    graph = {}
    for name, path in known.items():
        deps = set()
        for _, target in own_imports(path, set(known)):
            parts = target.split(".")
            for i in range(2, len(parts) + 1):
                parent = ".".join(parts[:i])
                if parent in known and parent != name and not name.startswith(parent + "."):
                    deps.add(parent)
        graph[name] = deps
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_library_has_no_import_circle():
    graph = import_graph()
    assert len(graph) > 60 and "helixclock.patching.engine" in graph["helixclock.patching.paths"]
    assert cycles(graph) == []


def test_the_cycle_finder_finds_a_planted_circle():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


def test_function_level_imports_of_own_modules_say_why():
    known = set(modules())
    unexplained = []
    for name, path in modules().items():
        lines = path.read_text().splitlines()
        own = {(n.lineno, n.col_offset) for n, _ in own_imports(path, known)}
        for fn in ast.walk(ast.parse(path.read_text())):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if isinstance(node, (ast.Import, ast.ImportFrom)) and (node.lineno, node.col_offset) in own:
                    above = lines[node.lineno - 2].strip()
                    if not above.startswith(DEFERRED):
                        unexplained.append(f"{name}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    assert unexplained == []


@pytest.mark.parametrize("light", ["helixclock.pipeline", "helixclock.preconditions", "helixclock.cache"])
def test_light_modules_import_no_torch(light):
    """Table jobs import these: torch (seconds to import) stays out of them."""
    import subprocess
    import sys

    code = f"import sys, {light}; print('torch' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
