"""The ``Example::`` blocks of the docstrings that need no data run as written (the others read a store
or an index built by the ``--help`` examples; they were run against those when written)."""

from __future__ import annotations

import importlib
import inspect
import textwrap

import pytest

SELF_CONTAINED = [
    "pretriever.reader.model:reader_loss",
    "pretriever.evaluate.tasks:EvaluationTask",
    "pretriever.evaluate.tasks:QrelsTask",
    "pretriever.evaluate.tasks:MultiHopTask",
    "pretriever.evaluate.core:evaluate_retrievers",
    "pretriever.refine.ops:aopt_loss",
    "pretriever.pretrain.objectives.base:Objective",
]


def examples(obj) -> list[str]:
    """The code of each ``Example::`` literal block of ``obj``'s docstring, dedented."""
    lines, blocks, i = (inspect.getdoc(obj) or "").split("\n"), [], 0
    while i < len(lines):
        if lines[i].rstrip().endswith("Example::"):
            body, i = [], i + 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith("    ")):
                body.append(lines[i])
                i += 1
            blocks.append(textwrap.dedent("\n".join(body)).strip("\n"))
        else:
            i += 1
    return blocks


@pytest.mark.parametrize("target", SELF_CONTAINED)
def test_docstring_example_runs(target, tmp_path, monkeypatch):
    module, _, name = target.partition(":")
    obj = getattr(importlib.import_module(module), name)
    blocks = examples(obj)
    assert blocks, f"{target} has no Example:: block"
    monkeypatch.chdir(tmp_path)
    for code in blocks:
        exec(compile(code, f"<{target} example>", "exec"), {"__name__": "__example__"})
