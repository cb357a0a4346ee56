"""The parse phase's unit of work: one chunk of pages into its part files, in a worker process or a
Spark task.

Both engines run exactly this code, so a chunk's part files are the same bytes whichever engine
parsed it; the main process (or Spark's driver) only hands out chunks and collects the summaries.
"""

from __future__ import annotations

import atexit
import gc
from pathlib import Path
from typing import Any

from pretriever.corpus.formats.base import Chunk, InputFormat, PageFailure
from pretriever.corpus.segment import ChunkBuffers, SegmentOptions
from pretriever.corpus.summary import ChunkSummary
from pretriever.io import write_json, write_parquet

_WORKER: dict[str, Any] = {}


def init_worker(fmt_cls: type[InputFormat], context: Any, options: SegmentOptions, work: Path) -> None:
    """Set what every chunk of this build needs (called once per worker process, or per Spark task)."""
    first = not _WORKER
    _WORKER.update(fmt=fmt_cls, context=context, options=options, work=work)
    if first:
        # What the imports made lives on: frozen, the collection after each chunk walks only the chunk's own
        # objects (~70 ms less per chunk); unfrozen at exit, so that extension modules see their objects released.
        gc.freeze()
        atexit.register(gc.unfreeze)


def process_chunk(chunk: Chunk) -> ChunkSummary:
    """Parse one chunk and write its part files and summary under the work folder (each atomically)."""
    fmt, options, work = _WORKER["fmt"], _WORKER["options"], _WORKER["work"]
    buffers = ChunkBuffers()
    pages = 0
    gc.disable()  # a chunk allocates millions of small objects and no cycles; collect once at the end
    try:
        for result in fmt.parse_chunk(chunk, _WORKER["context"]):
            pages += 1
            if isinstance(result, PageFailure):
                buffers.add_failure(result)
            else:
                buffers.add_page(result, options)
        tables = buffers.to_arrow()
    finally:
        gc.enable()
        gc.collect()
    for name, table in tables.items():
        write_parquet(table, work / name / part_name(chunk.index))
    summary = ChunkSummary(chunk.index, pages, dict(buffers.status), dict(buffers.dropped_links),
                           buffers.failures, {name: t.num_rows for name, t in tables.items()})
    write_json(summary_path(work, chunk.index), summary.__dict__)
    return summary


def part_name(index: int) -> str:
    """The file name of chunk ``index``'s part in each table folder (sorted names are chunk order)."""
    return f"part-{index:06d}.parquet"


def summary_path(work: Path, index: int) -> Path:
    """Where chunk ``index``'s summary is written, last of its files (so its presence means the chunk is done)."""
    return work / "summaries" / f"part-{index:06d}.json"
