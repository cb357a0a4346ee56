"""Docstrings as the anchors write them (sentence-transformers' losses): every public class and function says
what it is for, and the public API names its arguments (``Args:``) and what it gives back (``Returns:``).

Read with :mod:`ast`, so nothing is imported. Public: a top-level class or function whose name and module path
have no leading underscore. The public API: the classes and functions a package's ``__init__.py`` exports
(``__all__`` or its imports), followed to the module that defines them; for a class, its public methods and
``__init__`` (whose arguments the class docstring may document instead).

Left out of the ``Args:`` rule, and why:

* ``pretriever.cli``: a command's parameters carry their help in ``typer.Option(help=...)``, which ``--help``
  shows; its docstring *is* the command's help text, so an ``Args:`` section would print the help twice. Its
  docstrings are checked by ``tests/test_cli_help_text.py``. (The top-level docstring rule still applies.)
* ``pretriever.serve``'s FastAPI routes: nested in :func:`pretriever.serve.app.create_app`, so not top-level;
  their request and response models (``serve/schemas.py``) document them in the OpenAPI schema.
* Properties, and functions and methods with no argument but ``self``/``cls``: nothing to name (their summary
  line says what they give).
* A method that overrides one of a pretriever base class without a docstring of its own: it has its base's,
  as :func:`inspect.getdoc` gives it (an objective's ``row_terms``, a mining method's ``candidates``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pretriever

PACKAGE = Path(pretriever.__file__).parent
ROOT = PACKAGE.parent
NO_ARGS_RULE = ("pretriever.cli",)  # see the module docstring
SECTION = re.compile(r"^(\s*)(Args|Arguments|Returns|Yields|Raises|Example|Examples|Relations|Note|See also)::?\s*$")


def _modules() -> dict[str, tuple[Path, ast.Module]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = (path, ast.parse(path.read_text("utf-8")))
    return out


MODULES = _modules()
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _public_module(name: str) -> bool:
    return not any(part.startswith("_") for part in name.split("."))


def _top_level(module: str) -> dict[str, Definition]:
    return {node.name: node for node in MODULES[module][1].body if isinstance(node, Definition.__args__)}


def _where(module: str, node: ast.AST) -> str:
    return f"{MODULES[module][0].relative_to(ROOT)}:{node.lineno} {getattr(node, 'name', '')}"


def undocumented() -> list[str]:
    """Public top-level classes and functions without a docstring."""
    return [_where(module, node) for module in MODULES if _public_module(module)
            for name, node in _top_level(module).items() if not name.startswith("_") and not ast.get_docstring(node)]


def _resolve(module: str, name: str, seen: int = 0) -> tuple[str, Definition] | None:
    """Where ``module.name`` is defined, following re-exports; None for a constant or a module."""
    if module not in MODULES or seen > 10:
        return None
    found = _top_level(module).get(name)
    if found is not None:
        return module, found
    for node in MODULES[module][1].body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pretriever"):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    return _resolve(node.module, alias.name, seen + 1)
    return None


def public_api() -> list[tuple[str, Definition]]:
    """The classes and functions the package ``__init__`` files export, each once, where it is defined."""
    api: dict[tuple[str, str], tuple[str, Definition]] = {}
    for package, (path, tree) in MODULES.items():
        if path.name != "__init__.py" or package.startswith(NO_ARGS_RULE):
            continue
        exported = {name for node in tree.body if isinstance(node, ast.Assign)
                    and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
                    for name in ast.literal_eval(node.value)}
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pretriever"):
                for alias in node.names:
                    if exported and (alias.asname or alias.name) not in exported:
                        continue
                    found = _resolve(node.module, alias.name)
                    if found is not None and not found[0].startswith(NO_ARGS_RULE):
                        api[found[0], found[1].name] = found
    return sorted(api.values(), key=lambda item: (item[0], item[1].lineno))


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef, method: bool) -> list[str]:
    """The arguments a caller passes: a method's first (``self``/``cls``) left out, and ``_private`` ones."""
    args = node.args
    names = [a.arg for a in (*args.posonlyargs, *args.args)]
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
    if method and not static and names:
        names = names[1:]
    names += [a.arg for a in args.kwonlyargs]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return [n for n in names if not n.startswith("_")]


def _returns_value(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the function gives something back: a return annotation other than None, or (unannotated) a
    ``return`` with a value of its own (nested functions' returns are theirs)."""
    if node.returns is not None:
        return not (isinstance(node.returns, ast.Constant) and node.returns.value is None) and not (
            isinstance(node.returns, ast.Name) and node.returns.id in ("None", "NoReturn", "Never"))
    stack = list(node.body)
    while stack:
        child = stack.pop()
        if isinstance(child, ast.Return) and child.value is not None:
            return True
        if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(child))
    return False


def sections(doc: str) -> dict[str, list[str]]:
    """A Google-style docstring's sections: ``Args`` -> the names it documents, ``Returns`` -> its lines."""
    out: dict[str, list[str]] = {}
    current, indent = None, 0
    for line in doc.splitlines():
        match = SECTION.match(line)
        if match:
            current, indent = match.group(2), len(match.group(1))
            current = {"Arguments": "Args", "Yields": "Returns", "Examples": "Example"}.get(current, current)
            out.setdefault(current, [])
        elif current and line.strip() and len(line) - len(line.lstrip()) <= indent:
            current = None
        elif current:
            out[current].append(line)
    if "Args" in out:
        lines = [line for line in out["Args"] if line.strip()]
        first = min((len(line) - len(line.lstrip()) for line in lines), default=0)
        out["Args"] = [m.group(1) for line in lines if len(line) - len(line.lstrip()) == first
                       for m in [re.match(r"\s*\**(\w+)\b[^:]*:", line)] if m]
    return out


def _check_function(module: str, node: ast.FunctionDef | ast.AsyncFunctionDef, doc: str | None,
                    owner: str = "") -> list[str]:
    where = f"{MODULES[module][0].relative_to(ROOT)}:{node.lineno} {owner}{node.name}"
    parameters, found = _parameters(node, method=bool(owner)), sections(doc or "")
    if not parameters:
        return []
    problems = []
    missing = [p for p in parameters if p not in found.get("Args", [])]
    if missing:
        problems.append(f"{where}: Args: lacks {', '.join(missing)}")
    if _returns_value(node) and node.name != "__init__" and "Returns" not in found:
        problems.append(f"{where}: no Returns:")
    return problems


def _is_property(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any((isinstance(d, ast.Name) and d.id in ("property", "cached_property", "overload"))
               or (isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter", "cached_property"))
               for d in node.decorator_list)


def _inherited_doc(module: str, cls: ast.ClassDef, method: str, seen: int = 0) -> str | None:
    """The docstring of ``method`` in the nearest pretriever base class of ``cls`` that documents it."""
    for base in cls.bases:
        name = base.id if isinstance(base, ast.Name) else None
        found = _resolve(module, name) if name and seen < 10 else None
        if found is None or not isinstance(found[1], ast.ClassDef):
            continue
        for child in found[1].body:
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) and child.name == method:
                if ast.get_docstring(child):
                    return ast.get_docstring(child)
        inherited = _inherited_doc(found[0], found[1], method, seen + 1)
        if inherited:
            return inherited
    return None


def api_problems() -> list[str]:
    """Each public API function or method whose docstring does not name its arguments or what it returns."""
    problems = []
    for module, node in public_api():
        if isinstance(node, ast.ClassDef):
            for child in node.body:
                if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) or _is_property(child):
                    continue
                if child.name == "__init__":  # the class docstring may document the constructor instead
                    doc = "\n".join(filter(None, (ast.get_docstring(node), ast.get_docstring(child))))
                elif child.name.startswith("_"):
                    continue
                else:
                    doc = ast.get_docstring(child) or _inherited_doc(module, node, child.name)
                problems += _check_function(module, child, doc, owner=f"{node.name}.")
        else:
            problems += _check_function(module, node, ast.get_docstring(node))
    return problems


def test_every_public_class_and_function_has_a_docstring():
    missing = undocumented()
    assert not missing, f"{len(missing)} public classes/functions without a docstring:\n" + "\n".join(missing)


def test_the_public_api_documents_its_arguments_and_returns():
    problems = api_problems()
    assert not problems, (f"{len(problems)} public API docstrings lack Args:/Returns: (Google style, as "
                          "sentence-transformers' losses write them):\n" + "\n".join(problems))


def test_the_section_reader_reads_google_style():
    doc = """Summary.

    Args:
        query: the text.
        k (int): how many.
            A continuation line: not an argument.
        **kwargs: passed on.

    Returns:
        The hits, best first.
    """
    import inspect
    found = sections(inspect.cleandoc(doc))
    assert found["Args"] == ["query", "k", "kwargs"]
    assert found["Returns"] == ["    The hits, best first."]
