"""Rich progress bars with rates, shared by every long-running command."""

from __future__ import annotations

import time

from rich.console import Console
from rich.progress import (BarColumn, DownloadColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn, TransferSpeedColumn)

console = Console(stderr=True)


def byte_progress() -> Progress:
    """Progress over the bytes of an input file, with MB/s and a running count of items."""
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), DownloadColumn(),
                    TransferSpeedColumn(), TextColumn("{task.fields[items]}"), TimeElapsedColumn(),
                    TimeRemainingColumn(), console=console, transient=False)


def count_progress() -> Progress:
    """Progress over a count of items (total may be unknown)."""
    return Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("{task.fields[rate]}"), TimeElapsedColumn(), console=console)


class StageProgress:
    """One rich progress line per stage (encode, merge, index, bm25) with a rate in items/s."""

    LABELS = {"encode": ("encoding", "passages"), "merge": ("merging chunks", "chunks"),
              "index": ("adding to FAISS", "vectors"), "bm25": ("BM25 tokenizing", "passages")}

    def __init__(self, progress: Progress):
        self.progress = progress
        self.tasks: dict[str, tuple[int, float]] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        label, unit = self.LABELS.get(stage, (stage, "items"))
        if stage not in self.tasks:
            self.tasks[stage] = (self.progress.add_task(label, total=total or None, rate=""), time.perf_counter())
        task, started = self.tasks[stage]
        elapsed = time.perf_counter() - started
        rate = f"{done / elapsed:,.1f} {unit}/s" if elapsed > 0 and done else ""
        self.progress.update(task, completed=done, total=total or None, rate=rate)
