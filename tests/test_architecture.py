"""The architecture holds: layers point down, no import cycles (those inside functions included), no
function-level import of the package without its reason, the command line lists its commands in pipeline
order, no test module imports a fixture or renames a pretriever name on import, and only the command line sets
the process environment."""

from __future__ import annotations

import ast
import os
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
    """The pretriever modules an import statement names (``from a.b import c`` is a.b.c when c is a module,
    and the module a.b's ``__init__`` took c from when it re-exports it)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name.startswith("pretriever")]
    if node.level:  # relative imports are not used in this package; resolve them anyway
        base = name.rsplit(".", node.level)[0]
        module = f"{base}.{node.module}" if node.module else base
    else:
        module = node.module or ""
    if not module.startswith("pretriever"):
        return []
    exported = _reexports(module, modules)
    return [f"{module}.{a.name}" if f"{module}.{a.name}" in modules else exported.get(a.name, module)
            for a in node.names]


def _reexports(package: str, modules: dict[str, Path]) -> dict[str, str]:
    """Names a package's ``__init__`` imports from its own submodules, and the submodule each comes from: an
    import of such a name through the package depends on that submodule, not on the package."""
    path = modules.get(package)
    if path is None or path.name != "__init__.py":
        return {}
    out = {}
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith(package + "."):
            for alias in node.names:
                out[alias.asname or alias.name] = node.module
    return out


def test_the_layer_contract_holds():
    """import-linter's layers contract (pyproject.toml): cli/serve > tune > evaluate, refine > reader > train > index,
    mine, generate > references > data > corpus > shared modules."""
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent)) or shutil.which("lint-imports")
    if linter is None:
        pytest.skip("import-linter is not installed (pip install -e '.[test]')")
    done = subprocess.run([linter, "--config", str(ROOT / "pyproject.toml")], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


def _function_level_imports(path: Path) -> list[ast.Import | ast.ImportFrom]:
    """The import statements inside a module's functions (methods and nested functions too)."""
    found: dict[int, ast.Import | ast.ImportFrom] = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for inner in ast.walk(node):
                if isinstance(inner, (ast.Import, ast.ImportFrom)):
                    found[id(inner)] = inner
    return list(found.values())


def test_no_function_level_import_of_the_package_without_its_reason():
    """A function-level import hides a dependency (and often a cycle); only one whose line says why (a heavy
    optional dependency, a worker process) is allowed, the CLI's included."""
    modules = _modules()
    found = []
    for name, path in modules.items():
        lines = path.read_text(encoding="utf-8").splitlines()
        for inner in _function_level_imports(path):
            if _target(name, inner, modules) and "#" not in lines[inner.lineno - 1]:
                found.append(f"{path.relative_to(ROOT)}:{inner.lineno}")
    assert not found, "function-level imports of pretriever modules without a comment saying why: " + ", ".join(found)


def test_no_import_cycles_between_modules():
    """No cycle among the package's imports, those inside functions included (a command that imports the
    package that registers it is a cycle import-linter does not see)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        body = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
        for node in body + _function_level_imports(path):
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
    assert not cycles, f"import cycles: {cycles}"


def _fixtures_of(path: Path) -> set[str]:
    """The names of the functions a module decorates with ``pytest.fixture`` (called or not)."""
    names = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for decorator in node.decorator_list:
                target = decorator.func if isinstance(decorator, ast.Call) else decorator
                if ast.unparse(target) in ("pytest.fixture", "fixture"):
                    names.add(node.name)
    return names


def test_no_test_module_imports_a_fixture():
    """A fixture imported into a test module is a new definition there: a session-scoped one would be built
    again for every module that imports it. Shared fixtures reach the tests through conftest.py's
    ``pytest_plugins``."""
    tests = Path(__file__).resolve().parent
    found = []
    for path in sorted(tests.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and node.module and (tests / f"{node.module}.py").exists():
                imported = {alias.name for alias in node.names} & _fixtures_of(tests / f"{node.module}.py")
                found += [f"{path.name}:{node.lineno} {name}" for name in sorted(imported)]
    assert not found, "fixtures imported instead of shared through pytest_plugins: " + ", ".join(found)


def _pretriever_renames(path: Path) -> list[str]:
    """``line: statement`` for each import in a module that gives a pretriever module or name another name
    (``import pretriever.a.b as x``, ``from pretriever.a import b as x``), inside functions too."""
    def renames(node: ast.AST) -> bool:
        if isinstance(node, ast.Import):
            return any(alias.asname and alias.name.split(".")[0] == "pretriever" for alias in node.names)
        return (isinstance(node, ast.ImportFrom) and not node.level
                and (node.module or "").split(".")[0] == "pretriever" and any(alias.asname for alias in node.names))

    return [f"{node.lineno}: {ast.unparse(node)}"
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))) if renames(node)]


def test_no_test_renames_a_pretriever_name_on_import():
    """A test calls the library by the name the library gives it (``build.run``, not ``corpus_build.run``;
    ``pipeline.run``, not ``refinement.run``), so a reader sees at the call site which function runs."""
    tests = Path(__file__).resolve().parent
    found = [f"{path.name}:{where}" for path in sorted(tests.glob("*.py")) for where in _pretriever_renames(path)]
    assert not found, "tests that rename a pretriever module or name on import:\n" + "\n".join(found)


def test_help_lists_the_commands_in_pipeline_order():
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    listed = [line.split()[1] for line in result.output.splitlines()
              if line.startswith("│ ") and len(line.split()) > 1 and line.split()[1] in PIPELINE_ORDER]
    assert listed == sorted(listed, key=PIPELINE_ORDER.index)
    assert listed[:2] == ["quickstart", "corpus"] and "mine" in listed and "evaluate" in listed


# The process environment belongs to the command line, the composition root. The one exception: the Python that
# a local Spark session's workers run, which PySpark reads from the environment only (pyspark/core/context.py).
ENVIRONMENT_WRITES_ALLOWED = {("pretriever.backends", "PYSPARK_PYTHON")}
_ENVIRON_METHODS = {"setdefault", "update", "pop", "popitem", "clear", "__setitem__", "__delitem__"}


def _environment_writes(path: Path) -> list[tuple[int, str]]:
    """(line, variable) of each statement in a module that changes ``os.environ`` ('?' when the name is not a
    literal)."""
    def is_environ(node: ast.AST) -> bool:
        return ast.unparse(node) in ("os.environ", "environ")

    def key(node: ast.AST | None) -> str:
        return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else "?"

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if (is_environ(node.func.value) and node.func.attr in _ENVIRON_METHODS) or \
                    ast.unparse(node.func) in ("os.putenv", "os.unsetenv"):
                found.append((node.lineno, key(node.args[0] if node.args else None)))
        targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else \
            [node.target] if isinstance(node, ast.AugAssign) else []
        found += [(node.lineno, key(t.slice)) for t in targets if isinstance(t, ast.Subscript) and is_environ(t.value)]
    return found


def test_the_library_never_sets_the_process_environment():
    """HF_HUB_OFFLINE, TOKENIZERS_PARALLELISM and the like are the command line's decision (its app callback),
    so a library caller's process keeps the environment it was given."""
    found = [f"{path.relative_to(ROOT)}:{line} {variable}"
             for name, path in _modules().items() if not name.startswith("pretriever.cli")
             for line, variable in _environment_writes(path) if (name, variable) not in ENVIRONMENT_WRITES_ALLOWED]
    assert not found, "library code sets environment variables: " + ", ".join(found)


def test_the_command_line_runs_offline_unless_told_otherwise(monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    assert CliRunner().invoke(app, ["corpus", "formats"]).exit_code == 0
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")  # a user who wants the hub says so, and the command line keeps it
    assert CliRunner().invoke(app, ["corpus", "formats"]).exit_code == 0
    assert os.environ["HF_HUB_OFFLINE"] == "0"
