"""What each chunk of a corpus build produced, saved beside its part files, and the sum of them.

The build writes one summary per chunk as it finishes; finalize adds them up for the
manifest's counts, so a resumed build counts the chunks of the interrupted run too.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class ChunkSummary:
    """What one chunk produced; saved beside its part files so finalize can add them up."""

    index: int
    pages: int = 0
    status: dict[str, int] = field(default_factory=dict)
    dropped_links: dict[str, int] = field(default_factory=dict)
    failures: list[dict[str, str]] = field(default_factory=list)
    rows: dict[str, int] = field(default_factory=dict)


def summaries(work: Path) -> list[ChunkSummary]:
    """Every chunk summary saved under ``work``, in chunk order (those of an interrupted run too)."""
    return [ChunkSummary(**json.loads(p.read_text())) for p in sorted((work / "summaries").glob("part-*.json"))]


def add_up(parts: list[ChunkSummary]) -> tuple[Counter, Counter, list[dict[str, str]]]:
    """The build's totals from its chunks: page statuses, dropped links by reason, and the failures."""
    status, dropped, failures = Counter(), Counter(), []
    for part in parts:
        status.update(part.status)
        dropped.update(part.dropped_links)
        failures.extend(part.failures)
    return status, dropped, failures
