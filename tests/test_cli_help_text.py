"""CLI docstrings are wrapped for an editor; ``help_text`` gives --help the paragraphs and examples back whole."""

import ast
from pathlib import Path

import typer

from pretriever.cli import app
from pretriever.cli.common import help_text

CLI = Path(__file__).resolve().parents[1] / "pretriever" / "cli"


def test_help_text_rejoins_prose_and_example_continuations():
    doc = """Summary that goes
    on.

    A paragraph wrapped
    in the source.

    Examples:

      pretriever mine enwiki/ --out pairs/
          --seed 0
          (a comment that is
            long)
      pretriever pairs show pairs/
    """
    assert help_text(doc) == ("Summary that goes on.\n\nA paragraph wrapped in the source.\n\nExamples:\n\n"
                              "  pretriever mine enwiki/ --out pairs/ --seed 0   (a comment that is long)\n"
                              "  pretriever pairs show pairs/")


def test_cli_docstrings_fit_an_editor_and_help_keeps_no_source_line_break():
    long = [f"{path.name}:{node.lineno}" for path in CLI.glob("*.py")
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.FunctionDef) and ast.get_docstring(node)
            and max(map(len, path.read_text(encoding="utf-8").splitlines()[node.body[0].lineno - 1:
                                                                            node.body[0].end_lineno])) > 110]
    assert not long, (f"docstrings with lines over 110 characters: {long}; wrap them as "
                      "pretriever.cli.common.help_text says (prose at the margin, an example's continuation "
                      "indented deeper, a comment's continuation opening with '(')")
    root = typer.main.get_command(app)
    for name in ("mine", "train", "evaluate"):
        paragraphs = root.get_command(None, name).help.split("\n\n")
        prose = [p for p in paragraphs if not p.startswith(" ")]
        assert all("\n" not in p for p in prose), name
