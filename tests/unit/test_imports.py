"""The library's import graph: no circle among src/helixclock's modules, counting every import
(at the top, inside functions, under TYPE_CHECKING); no stage imports another stage's modules
(src/helixclock/stages/__init__.py); and no import inside a function, in src/, scripts/ or
benchmarks/, unless the comment above it says why (it keeps a heavy library out of a light job)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
from helpers.paths import REPO

PACKAGE = REPO / "src" / "helixclock"
STAGES = "helixclock.stages"
DEFERRED = "# deferred:"  # the comment a function-level import needs, on the line above it (or above its block)
CODE = ("src", "scripts", "benchmarks")  # where the rule on function-level imports holds


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


def stage_of(module: str) -> str | None:
    """The stage package a module belongs to (helixclock.stages.<stage>...), or None."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and ".".join(parts[:2]) == STAGES else None


def stage_crossings(graph: dict[str, set[str]]) -> list[str]:
    """Every import of one stage's module by another stage's: 'importer -> imported'."""
    return sorted(
        f"{name} -> {dep}"
        for name, deps in graph.items()
        for dep in deps
        if stage_of(name) and stage_of(dep) and stage_of(name) != stage_of(dep)
    )


def test_no_stage_imports_another_stage():
    """A stage reads another's saved outputs, never its modules: names several stages share live
    below the stages (helixclock.prompts.layout.READINGS, helixclock.stats.statistics.MIN_ERRORS, ...)."""
    graph = import_graph()
    stages = {stage_of(name) for name in graph} - {None}
    assert {"accuracy", "heads", "helix", "last_token", "mistakes", "mlps", "neurons", "report", "structure"} <= stages
    assert stage_crossings(graph) == []


def test_the_wall_check_finds_a_planted_crossing():
    graph = {
        "helixclock.stages.heads.readings": {"helixclock.stages.last_token.patching", "helixclock.prompts.layout"},
        "helixclock.stages.heads.jobs": {"helixclock.stages.heads.readings", "helixclock.stages"},
        "helixclock.prompts.layout": set(),
    }
    assert stage_crossings(graph) == ["helixclock.stages.heads.readings -> helixclock.stages.last_token.patching"]


def unexplained_imports(path: Path) -> list[str]:
    """The imports inside a function of ``path`` (of any module: the standard library's, a third
    party's, the package's own) whose block of consecutive imports has no ``# deferred:`` comment
    on the line above it."""
    text = path.read_text()
    lines = text.splitlines()
    found = []
    for fn in ast.walk(ast.parse(text)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        imports = sorted(
            (n for n in ast.walk(fn) if isinstance(n, (ast.Import, ast.ImportFrom))), key=lambda n: n.lineno
        )
        for i, node in enumerate(imports):
            first = node
            while i > 0 and imports[i - 1].end_lineno == first.lineno - 1:  # the top of its block
                i -= 1
                first = imports[i]
            if not lines[first.lineno - 2].strip().startswith(DEFERRED):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: {lines[node.lineno - 1].strip()}")
    return sorted(set(found))


def code_files() -> list[Path]:
    return sorted(p for d in CODE for p in (REPO / d).rglob("*.py"))


def test_function_level_imports_say_why():
    """An import belongs at the top of its file; one inside a function says, in a ``# deferred:``
    comment, what it keeps out of which job (torch out of a table job, transformers out of a job
    that loads no model, ...)."""
    files = code_files()
    assert len(files) > 100 and REPO / "scripts" / "head_patching.py" in files
    assert [line for p in files for line in unexplained_imports(p)] == []


def test_the_import_check_finds_an_unexplained_import(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "REPO", tmp_path)
    planted = tmp_path / "planted.py"
    planted.write_text(
        "def light():\n"
        "    # deferred: torch stays out of a table job\n"
        "    import torch\n"
        "    from torch import nn\n"
        "    return torch, nn\n\n\n"
        "def plain():\n"
        '    """Docstring."""\n'
        "    import json\n\n"
        "    return json\n"
    )
    assert unexplained_imports(planted) == ["planted.py:10: import json"]


@pytest.mark.parametrize(
    "light", ["helixclock.jobs.pipeline", "helixclock.jobs.preconditions", "helixclock.project.cache"]
)
def test_light_modules_import_no_torch(light):
    """Table jobs import these: torch (seconds to import) stays out of them."""
    code = f"import sys, {light}; print('torch' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]


def test_only_the_style_module_imports_seaborn():
    """Every figure module takes ``sns`` from helixclock.plotting.style: a module importing seaborn
    plainly before style.py would load scipy for its figure jobs, unseen by the test below (it
    imports the modules in one process)."""
    importers = sorted(
        module_name(p)
        for p in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(p.read_text()))
        if (isinstance(node, ast.Import) and any(a.name.split(".")[0] == "seaborn" for a in node.names))
        or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "seaborn" and not node.level)
    )
    assert importers == ["helixclock.plotting.style"]


@pytest.mark.slow  # three new interpreters (about 6 s): in `make test`
def test_a_figure_job_imports_seaborn_without_scipy_and_seaborn_elsewhere_is_as_usual():
    """A figure job (helixclock.jobs.pipeline, then one stage's figures module) draws with the
    seaborn of helixclock.plotting.style, imported with scipy.stats and scipy.cluster hidden (about 0.8
    of its CPU seconds: docs/benchmarks.md): no scipy module is loaded, and scipy.stats imports
    afterwards as usual.  The wrong arm, seaborn imported plainly, loads scipy.stats; and a
    process that imported scipy.stats first gets seaborn with it (its scipy KDE)."""
    figures = sorted(
        module_name(p) for p in (PACKAGE / "stages").glob("*/figures.py")
    )  # one module of figures per stage that draws any
    assert len(figures) >= 8
    code = (
        f"import sys, helixclock.jobs.pipeline, {', '.join(figures)}; "
        "loaded = sorted(m for m in sys.modules if m == 'scipy' or m.startswith('scipy.')); "
        "from scipy.stats import gaussian_kde; import scipy.cluster; "
        "print(loaded, sys.modules['seaborn']._statistics._no_scipy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["[]", "True"]
    plain = "import sys, seaborn; print('scipy.stats' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", plain], capture_output=True, text=True, check=True).stdout == "True\n"
    first = "import scipy.stats, helixclock.plotting.style as s; print(s.sns._statistics._no_scipy)"
    assert subprocess.run([sys.executable, "-c", first], capture_output=True, text=True, check=True).stdout == "False\n"
