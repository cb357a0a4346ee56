"""``corpus build --engine spark``: the same build, on a Spark cluster (or local Spark).

*Parse*: the chunks are the byte ranges of whole bz2 streams that a multistream dump's
index gives (the chunks local workers get); one Spark task per chunk runs the same
:func:`~pretriever.corpus.parse.process_chunk`, which seeks, decompresses, parses and
writes the chunk's part files itself. A task that fails is retried by Spark
(``spark.task.maxFailures``); a page that cannot be parsed is listed in the manifest, as
locally. *Finalize*: the Ibis expressions of :mod:`pretriever.corpus.finalize` run as
Spark SQL; the resolved links are written part by part by the executors, the single-file
tables by the driver, all through pyarrow in a fixed order, so the store is byte for byte
the one a local build writes.

Every executor and the driver must see the dump and the output folder at the same path
(a shared filesystem such as NFS or Lustre): executors write the part files there.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterator
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any

import ibis
import ibis.expr.types as ir
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pretriever.backends import lent_or_new_spark_session
from pretriever.corpus.engine import BuildEngine, ChunksDone, part_files
from pretriever.corpus.formats.base import Chunk, InputFormat
from pretriever.corpus.model import InputError
from pretriever.corpus.parse import init_worker, process_chunk, summary_path
from pretriever.corpus.summary import ChunkSummary
from pretriever.errors import ConfigError, PretrieverError
from pretriever.io import write_json, write_parquet_batches

ERRORS = "errors"  # under the work folder: why a chunk failed, written by its task for the driver to report
POLL_SECONDS = 0.5


class SparkJobError(PretrieverError):
    """A Spark job failed for a reason other than the input (lost executors, out of memory, ...)."""


class SparkBuildEngine(BuildEngine):
    """Spark tasks parse, Spark SQL finalizes (through Ibis); a session is started unless one is lent."""

    name = "spark"

    def __init__(self, workers: int, master: str | None = None, session: Any = None):
        self.session, self._own_session = lent_or_new_spark_session(session, workers, master, app="pretriever-corpus")
        self._names = itertools.count()

    @classmethod
    def check_input(cls, fmt: InputFormat) -> None:
        if not fmt.splittable():
            raise ConfigError(
                f"--engine spark reads a multistream MediaWiki dump through its index, so that each task reads "
                f"its own byte ranges; {fmt.path} is a {fmt.name} input without one. Download the dump as "
                f"*-pages-articles-multistream.xml.bz2 together with its *-pages-articles-multistream-index.txt.bz2 "
                f"(https://dumps.wikimedia.org/<wiki>/<date>/; put the index beside the dump or pass "
                f"--multistream-index), or build this input with --engine local.")

    # -- parse ---------------------------------------------------------------------------
    def run_chunks(self, chunks, fmt_cls, context, options, work, position) -> ChunksDone:
        """One Spark task per chunk; summaries are yielded as their files appear (in any order)."""
        todo = {chunk.index: chunk for chunk in chunks}
        if not todo:
            return
        read = {index: _chunk_bytes(chunk) for index, chunk in todo.items()}
        work = Path(work).absolute()  # executors do not share our working folder
        task = partial(_parse_chunk_task, fmt_cls, context, options, work)
        rdd = self.session.sparkContext.parallelize(list(todo.values()), len(todo)).map(task)
        outcome: dict[str, Any] = {}
        job = threading.Thread(target=_collect, args=(rdd, outcome), daemon=True)
        job.start()
        done_bytes = min((_chunk_start(c) for c in todo.values()), default=0)
        while todo:
            finished = not job.is_alive()  # looked at first, so no summary written before the end is missed
            for index in sorted(todo):
                path = summary_path(work, index)
                if path.exists():
                    del todo[index]
                    done_bytes += read[index]
                    yield ChunkSummary(**_read_json(path)), done_bytes
            if finished:
                break
            time.sleep(POLL_SECONDS)
        job.join()
        if "error" in outcome:
            raise _job_error(outcome["error"], work) from outcome["error"]
        if todo:
            raise SparkJobError(f"the Spark job ended without the summaries of chunk(s) {sorted(todo)} in "
                                f"{summary_path(work, 0).parent}: is --out on a filesystem every executor shares?")

    # -- finalize ------------------------------------------------------------------------
    def open(self, work: Path) -> None:
        self.con = ibis.pyspark.connect(self.session)
        self.scratch = Path(work).absolute() / "spark"  # Spark resolves relative paths against its JVM's folder
        self._views: list[str] = []

    def _view(self, name: str) -> str:
        view = f"pretriever_{name}_{next(self._names)}"
        self._views.append(view)
        return view

    def _df(self, expr: ir.Table):
        self.con._run_pre_execute_hooks(expr)  # registers in-memory tables
        return self.session.sql(self.con.compile(expr))

    def read(self, folder: Path) -> ir.Table:
        return self.con.read_parquet(str(Path(folder).absolute()), table_name=self._view(Path(folder).name))

    def materialize(self, expr: ir.Table, name: str) -> ir.Table:
        path = self.scratch / name
        self.con.to_parquet(expr, str(path), mode="overwrite")
        return self.con.read_parquet(str(path), table_name=self._view(name))

    def write_sorted(self, expr, by, schema, dest) -> None:
        # Spark sorts across the cluster and writes its part files in order; the driver streams them into one file
        path = self.scratch / f"sorted-{dest.stem}"
        self._df(expr.order_by(by)).write.mode("overwrite").parquet(str(path))
        write_parquet_batches((batch for part in sorted(path.glob("part-*.parquet"))
                               for batch in pq.ParquetFile(part).iter_batches()), schema, dest)

    def write_parts(self, source, transform, schema, dest) -> None:
        # every row carries its part's name and place, so Spark can send each part to one task, in order
        names = [p.name for p in part_files(source)]
        if not names:
            return
        numbered = (self.session.read.parquet(str(Path(source).absolute()))
                    .selectExpr("*", "_metadata.file_name AS _file", "_metadata.row_index AS _row"))
        view = self._view(source.name)
        numbered.createOrReplaceTempView(view)
        rows = self._df(transform(self.con.table(view)))
        dest.mkdir(parents=True, exist_ok=True)
        written = (rows.repartition(len(names), "_file").sortWithinPartitions("_file", "_row")
                   .mapInArrow(partial(_write_part_files, Path(dest).absolute(), schema), "file string, rows long").collect())
        for name in set(names) - {row.file for row in written}:  # parts without rows get no task output
            write_parquet_batches([], schema, dest / name)

    def close(self) -> None:
        if self._own_session:
            self.session.stop()
        else:  # a session we were lent: leave it as we found it
            for view in getattr(self, "_views", []):
                self.session.catalog.dropTempView(view)


# --- executor side: module-level functions, so Spark pickles them by reference ----------------


def _parse_chunk_task(fmt_cls: type[InputFormat], context: Any, options, work: Path, chunk: Chunk) -> int:
    """A Spark task: parse one chunk; on an input error, leave the message for the driver, then fail."""
    init_worker(fmt_cls, context, options, work)
    try:
        return process_chunk(chunk).index
    except InputError as err:
        write_json(work / ERRORS / summary_path(work, chunk.index).name, {"chunk": chunk.index, "message": str(err)})
        raise


def _write_part_files(dest: Path, schema: pa.Schema, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Write a partition's rows (sorted by ``_file``, ``_row``) into one file per ``_file``."""
    for name, group in itertools.groupby(_by_file(batches), key=itemgetter(0)):
        rows = write_parquet_batches((piece for _, piece in group), schema, dest / name)
        yield pa.RecordBatch.from_pydict({"file": [name], "rows": [rows]})


def _by_file(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[str, pa.RecordBatch]]:
    for batch in batches:
        files = batch.column("_file")
        for name in pc.unique(files).to_pylist():  # in order of first appearance, i.e. sorted
            yield name, batch.filter(pc.equal(files, name))


# --- driver side ---------------------------------------------------------------------------


def _collect(rdd, outcome: dict[str, Any]) -> None:
    try:
        outcome["indexes"] = rdd.collect()
    except Exception as err:  # reported by the main thread
        outcome["error"] = err


def _job_error(err: Exception, work: Path) -> PretrieverError:
    """The input error a task left behind (the first failed chunk's), else the Spark failure itself."""
    reports = [p for p in sorted((work / ERRORS).glob("part-*.json"))
               if not summary_path(work, int(p.stem.split("-")[1])).exists()]  # not a chunk that a retry then finished
    if reports:
        return InputError(_read_json(reports[0])["message"])
    return SparkJobError(f"the Spark job failed: {str(err).strip().splitlines()[0][:500]}")


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _chunk_start(chunk: Chunk) -> int:
    return chunk.items[0][0]


def _chunk_bytes(chunk: Chunk) -> int:
    start, end = chunk.items[0]
    return end - start
