"""Where a stage tells what it does: :class:`Reporter` (one message call, one progress call), :data:`QUIET`
(says nothing) and :class:`RichReporter` (rich bars with rates on stderr, for every long-running command)."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

console = Console(stderr=True)


class Reporter:
    """Where a stage tells what it is doing: one message call, one progress call.

    Every stage's entry point takes one (``run(cfg, report)``); this base class says nothing, so
    library callers pass nothing and hear nothing. The command line passes a :class:`RichReporter`;
    tests pass :class:`pretriever.testing.RecordingReporter` to check what was said.

    - ``message(text)``: one line for a person ("reading pairs", "stage 1 done").
    - ``progress(task, done, total=None, unit="items", **fields)``: ``done`` of ``total`` (None when
      unknown) units of the named task so far; ``fields`` are shown beside the bar (a loss, a count).
      Calls for one task must give a non-decreasing ``done``.
    """

    def message(self, text: str) -> None:
        """Say one line (no-op here)."""

    def progress(self, task: str, done: int, total: int | None = None, unit: str = "items", **fields: object) -> None:
        """Advance the named task to ``done`` of ``total`` (no-op here)."""


QUIET = Reporter()


class RichReporter(Reporter):
    """A :class:`Reporter` drawing one rich bar per task, with its rate, on stderr; messages print above.

    Use it as a context manager (the bars start and stop with it). ``unit="bytes"`` shows MB and MB/s.
    """

    def __init__(self, out: Console = console):
        self.bars = Progress(TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.fields[count]}"),
                             TextColumn("{task.fields[rate]}"), TextColumn("{task.fields[info]}"), TimeElapsedColumn(),
                             TimeRemainingColumn(), console=out, transient=False)
        self.tasks: dict[str, tuple[int, float, int]] = {}

    def __enter__(self) -> RichReporter:
        self.bars.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bars.stop()

    def stop(self) -> None:
        """Stop drawing (before an error message is printed)."""
        self.bars.stop()

    def message(self, text: str) -> None:
        from rich.markup import escape

        self.bars.console.print(f"[dim]{escape(text)}[/dim]")

    def progress(self, task: str, done: int, total: int | None = None, unit: str = "items", **fields: object) -> None:
        if task not in self.tasks:
            self.tasks[task] = (self.bars.add_task(task, total=total, count="", rate="", info=""),
                                time.perf_counter(), done)
        bar, started, first = self.tasks[task]
        elapsed = time.perf_counter() - started
        rate = (done - first) / elapsed if elapsed > 0 else 0.0
        info = "  ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in fields.items())
        self.bars.update(bar, completed=done, total=total, count=_count(done, total, unit),
                         rate=_rate(rate, unit) if done > first else "", info=info)


def _count(done: int, total: int | None, unit: str) -> str:
    if unit == "bytes":
        return f"{done / 1e6:,.1f}" + (f"/{total / 1e6:,.1f} MB" if total else " MB")
    return f"{done:,}" + (f"/{total:,}" if total else "") + f" {unit}"


def _rate(rate: float, unit: str) -> str:
    return f"{rate / 1e6:,.1f} MB/s" if unit == "bytes" else f"{rate:,.1f} {unit}/s"
