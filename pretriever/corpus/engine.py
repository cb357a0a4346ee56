"""Where a corpus build runs: on this machine (worker processes, then DuckDB) or on Spark.

An engine does the two phases' legwork and nothing else. *Parse*: run
:func:`~pretriever.corpus.parse.process_chunk` on every chunk (local worker processes, or
Spark tasks). *Finalize*: run the Ibis expressions of :mod:`pretriever.corpus.finalize`
and hand their rows, in a fixed order, to pyarrow's writer
(:class:`~pretriever.io.ParquetBatchWriter`), so a store's bytes do not depend on the
engine that built it. :class:`LocalBuildEngine` is here; the Spark engine is in
:mod:`pretriever.corpus.spark`.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

import ibis
import ibis.expr.types as ir
import pyarrow as pa

from pretriever.backends import duckdb_batches, duckdb_query_batches
from pretriever.corpus.formats.base import Chunk, InputFormat
from pretriever.corpus.model import InputError
from pretriever.corpus.parse import init_worker, process_chunk
from pretriever.corpus.segment import ChunkBuffers, SegmentOptions
from pretriever.corpus.summary import ChunkSummary
from pretriever.io import write_parquet_batches

# (chunk summary, bytes of the input read so far or None) for each chunk as it is done
ChunksDone = Iterator[tuple[ChunkSummary, int | None]]
# Turns a table of one part's rows (plus a ``_row`` column: the row's place in its part) into the output rows
PartTransform = Callable[[ir.Table], ir.Table]


def part_files(folder: Path) -> list[Path]:
    """The part files of a chunk table, in chunk order."""
    return sorted(Path(folder).glob("part-*.parquet"))


class BuildEngine:
    """What both engines offer the build; finalize's expressions run on ``self.con`` (an Ibis backend)."""

    name = "?"
    con: Any = None

    @classmethod
    def check_input(cls, fmt: InputFormat) -> None:
        """Raise a :class:`~pretriever.errors.PretrieverError` when this engine cannot read ``fmt``'s input."""

    def run_chunks(self, chunks: Iterator[Chunk], fmt_cls: type[InputFormat], context: Any,
                   options: SegmentOptions, work: Path, position: Callable[[], int] | None) -> ChunksDone:
        """Parse every chunk into its part files under ``work``; yield each summary as its chunk is done."""
        raise NotImplementedError

    def open(self, work: Path) -> None:
        """Connect for finalize; scratch files go under ``work``."""
        raise NotImplementedError

    def read(self, folder: Path) -> ir.Table:
        """All part files of a folder as one table."""
        raise NotImplementedError

    def materialize(self, expr: ir.Table, name: str) -> ir.Table:
        """Compute ``expr`` once (it is used more than once) and return it as a table."""
        raise NotImplementedError

    def to_arrow(self, expr: ir.Expr) -> pa.Table:
        """A small result, in the driver's memory."""
        return self.con.to_pyarrow(expr)

    def write_sorted(self, expr: ir.Table, by: list[str], schema: pa.Schema, dest: Path) -> None:
        """Write ``expr`` ordered by ``by`` (a unique key) into one Parquet file."""
        raise NotImplementedError

    def write_parts(self, source: Path, transform: PartTransform, schema: pa.Schema, dest: Path) -> None:
        """For each part file of ``source``, write ``transform`` of its rows to ``dest`` under the same name,
        in the part's row order."""
        raise NotImplementedError

    def close(self) -> None:
        """Let go of processes, connections and sessions this engine started."""


class LocalBuildEngine(BuildEngine):
    """This machine: ``workers`` processes parse, DuckDB (out of core, spilling to ``_work/duckdb``) finalizes."""

    name = "local"

    def __init__(self, workers: int):
        self.workers = workers

    def run_chunks(self, chunks, fmt_cls, context, options, work, position) -> ChunksDone:
        """Chunks in order, with at most ``2 * workers`` in flight.

        The window bounds memory whatever the dump's size: the reader never runs more
        than a few chunks ahead of the writers.
        """
        where = position or (lambda: None)
        if self.workers == 1:
            init_worker(fmt_cls, context, options, work)
            for chunk in chunks:
                yield process_chunk(chunk), where()
            return
        ChunkBuffers().to_arrow()  # pyarrow's first conversion is slow: pay it once, before the fork
        with ProcessPoolExecutor(self.workers, initializer=init_worker,
                                 initargs=(fmt_cls, context, options, work)) as pool:
            window: deque[Future[ChunkSummary]] = deque()
            try:
                for chunk in chunks:
                    window.append(pool.submit(process_chunk, chunk))
                    if len(window) >= 2 * self.workers:
                        yield window.popleft().result(), where()
            except InputError:  # keep the chunks already handed out, then report the error
                while window:
                    yield window.popleft().result(), where()
                raise
            while window:
                yield window.popleft().result(), where()

    def open(self, work: Path) -> None:
        self.con = ibis.duckdb.connect()
        self.con.raw_sql(f"SET temp_directory = '{work / 'duckdb'}'")
        self._names = itertools.count()

    def read(self, folder: Path) -> ir.Table:
        return self.con.read_parquet([str(p) for p in part_files(folder)])

    def materialize(self, expr: ir.Table, name: str) -> ir.Table:
        return self.con.create_table(f"{name}_{next(self._names)}", expr, temp=True)

    def write_sorted(self, expr, by, schema, dest) -> None:
        write_parquet_batches(duckdb_batches(self.con, expr.order_by(by)), schema, dest)

    def write_parts(self, source, transform, schema, dest) -> None:
        # Part by part: each join is small, and no sort of the whole table is needed to keep row order.
        # The query is compiled once, over a view that each part in turn replaces.
        parts = part_files(source)
        if not parts:
            return
        view = f"part_{next(self._names)}"
        self._point_view(view, parts[0])
        expr = transform(self.con.table(view)).order_by("_row")
        self.con._run_pre_execute_hooks(expr)  # registers in-memory tables
        sql = self.con.compile(expr)
        for part in parts:
            self._point_view(view, part)
            write_parquet_batches(duckdb_query_batches(self.con.con, sql), schema, dest / part.name)

    def _point_view(self, view: str, part: Path) -> None:
        path = str(part).replace("'", "''")
        self.con.raw_sql(f"CREATE OR REPLACE TEMP VIEW {view} AS SELECT * EXCLUDE (file_row_number), "
                         f"file_row_number AS _row FROM read_parquet('{path}', file_row_number = true)")

    def close(self) -> None:
        if self.con is not None:
            self.con.disconnect()
            self.con = None
