"""What every command shares: one way to fail, one way to run a stage.

A stage raises :class:`~pretriever.errors.PretrieverError` (or a subclass) with a message for
a person; :func:`stage` turns it into ``error: MESSAGE`` on stderr and the error's exit status,
and :func:`fail` does the same for problems the command line finds itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn

import typer
from rich.markup import escape

from pretriever.errors import PretrieverError
from pretriever.progress import console

EXIT_USAGE = 2  # bad options, unreadable inputs, a folder that is not what the command needs


def fail(err: BaseException | str, code: int | None = None) -> NoReturn:
    """Print ``error: ...`` (markup in the message is shown as written) and exit with ``code``
    (default: the error's ``exit_code``, else 2)."""
    exit_code = code if code is not None else getattr(err, "exit_code", EXIT_USAGE)
    console.print(f"[red]error:[/red] {escape(str(err))}")
    raise typer.Exit(exit_code) from (err if isinstance(err, BaseException) else None)


@contextmanager
def stage(progress=None) -> Iterator[None]:
    """Run a stage's work: a :class:`PretrieverError`, or a file that cannot be read or written,
    ends the command with a clear message (after stopping ``progress``: a
    :class:`~pretriever.progress.RichReporter` or a rich Progress, anything with ``stop()``)."""
    try:
        yield
    except (PretrieverError, OSError) as err:
        if progress is not None:
            progress.stop()
        fail(err if isinstance(err, PretrieverError) else f"{err.filename or ''}: {err.strerror or err}".lstrip(": "))


def given(**values) -> dict | None:
    """The options that were given (not None), for a nested config table; None when none was."""
    chosen = {k: v for k, v in values.items() if v is not None}
    return chosen or None


def help_text(doc: str) -> str:
    """A command's docstring as ``--help`` shows it, rejoined from lines wrapped for an editor.

    typer's rich mode keeps every line break of a docstring, so the help would break where the source
    does. Paragraphs (separated by blank lines) stay; in one that starts at the margin (prose) every line
    continues the one above, and rich wraps it to the terminal. In an indented paragraph (examples) each
    line at the paragraph's indent is one example; a deeper-indented line continues the line above, set
    off by one space, or by three when it opens a comment with "(" (as tests/test_cli_examples.py reads
    ``pretriever ...   (comment)``).
    """
    paragraphs = []
    for paragraph in inspect.cleandoc(doc).split("\n\n"):
        first, *rest = paragraph.split("\n")
        margin = len(first) - len(first.lstrip())
        lines = [first]
        for line in rest:
            if margin == 0 or len(line) - len(line.lstrip()) > margin:
                gap = "   " if margin and line.lstrip().startswith("(") else " "
                lines[-1] = lines[-1].rstrip() + gap + line.strip()
            else:
                lines.append(line)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)
