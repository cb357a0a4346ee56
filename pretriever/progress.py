"""Rich progress bars with rates, shared by every long-running command."""

from __future__ import annotations

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
