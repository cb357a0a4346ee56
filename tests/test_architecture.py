"""The architecture holds: layers point down, no import cycles, no hidden function-level imports,
the command line lists its commands in pipeline order."""

from __future__ import annotations

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import pretriever
from pretriever.cli import PIPELINE_ORDER, app

PACKAGE = Path(pretriever.__file__).parent
ROOT = PACKAGE.parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def _target(name: str, node: ast.ImportFrom | ast.Import, modules: dict[str, Path]) -> list[str]:
    """The pretriever modules an import statement names (``from a.b import c`` is a.b.c when c is a module)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("pretriever")]
    if node.level:  # relative imports are not used in this package; resolve them anyway
        base = name.rsplit(".", node.level)[0]
        module = f"{base}.{node.module}" if node.module else base
    else:
        module = node.module or ""
    if not module.startswith("pretriever"):
        return []
    return [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else module for a in node.names]


def test_the_layer_contract_holds():
    """import-linter's layers contract (pyproject.toml): cli/serve > evaluate, refine, reader > train > index,
    mine, generate > references > data > corpus > shared modules."""
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if linter is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    done = subprocess.run([linter, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def test_no_function_level_imports_of_the_package_outside_the_cli():
    """A function-level import hides a dependency (and often a cycle); outside the CLI only a commented
    one (a heavy optional dependency, a worker process) is allowed."""
    modules = _modules()
    found = []
    for name, path in modules.items():
        if name.startswith("pretriever.cli"):
            continue
        lines = path.read_text(encoding="utf-8").splitlines()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Import, ast.ImportFrom)) and _target(name, inner, modules):
                        if "#" not in lines[inner.lineno - 1]:
                            found.append(f"{path.relative_to(ROOT)}:{inner.lineno}")
    assert not found, "function-level imports of pretriever modules without a comment saying why: " + ", ".join(found)


def test_no_import_cycles_between_modules():
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                graph[name].update(t for t in _target(name, node, modules) if t in graph and t != name)
    # Tarjan's strongly connected components
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
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
                cycles.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    # a package importing its own submodules in __init__ while a submodule imports a sibling through the
    # package is the one accepted shape; anything else is a cycle
    real = [c for c in cycles if not all(m == c[0] or m.startswith(c[0] + ".") for m in c)]
    assert not real, f"import cycles: {real}"


def test_help_lists_the_commands_in_pipeline_order():
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    listed = [line.split()[1] for line in result.output.splitlines()
              if line.startswith("│ ") and len(line.split()) > 1 and line.split()[1] in PIPELINE_ORDER]
    assert listed == sorted(listed, key=PIPELINE_ORDER.index)
    assert listed[:2] == ["quickstart", "corpus"] and "mine" in listed and "evaluate" in listed
