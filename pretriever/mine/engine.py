"""Where the relational mining runs: DuckDB (default) or local PySpark, both through Ibis.

Mining is written once as Ibis expressions over the store's tables; a :class:`MineEngine`
only registers the tables, writes intermediate results to Parquet (so each is computed
once and DuckDB can spill to disk) and streams final rows back. Randomness never comes
from an engine's RNG: every sampling decision orders rows by ``md5(seed|tag|key...)``
(:func:`hkey`), a string both engines compute byte for byte the same, so the same seed
gives the same pairs on either engine.
"""

from __future__ import annotations

import itertools
import math
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import ibis
import ibis.expr.types as ir
import psutil
import pyarrow as pa

from pretriever.backends import duckdb_batches, lent_or_new_spark_session, quiet
from pretriever.data.store import CorpusStore
from pretriever.errors import PretrieverError

SEP = "|"


class MineError(PretrieverError):
    """Mining cannot start or go on; the message says why and what to do."""


def as_str(value: Any) -> ir.StringValue:
    """A column or Python value as a string, ints written in decimal on every engine."""
    if isinstance(value, ir.Value):
        return value if value.type().is_string() else value.cast("string")
    return ibis.literal(str(value))


def hkey(seed: int, tag: str, *parts: Any) -> ir.StringValue:
    """``md5("seed|tag|part1|part2...")`` as 32 hex digits: the sampling key used everywhere.

    Ordering rows by it is a seeded random permutation that DuckDB and Spark agree on.
    Parts must not be NULL (the whole key would be NULL).
    """
    expr: ir.StringValue = ibis.literal(f"{seed}{SEP}{tag}")
    for part in parts:
        expr = expr + SEP + as_str(part)
    return expr.hexdigest("md5")


def hex_fraction_below(h: ir.StringValue, fraction: float) -> ir.BooleanValue:
    """True for about ``fraction`` of rows: the first 4 hex digits of a hash, compared as text."""
    cut = min(max(int(round(fraction * 65536)), 0), 65536)
    if cut >= 65536:
        return ibis.literal(True)
    return h.substr(0, 4) < f"{cut:04x}"


def part_key(value: ir.StringValue) -> ir.StringValue:
    """4 hex digits of ``md5(value)``: the key :class:`Part` splits rows by (the same on every engine)."""
    return value.hexdigest("md5").substr(0, 4)


@dataclass(frozen=True)
class Part:
    """Part ``index`` of ``count``: the rows whose :func:`part_key` falls in the index-th of ``count`` equal ranges.

    A join too large for memory runs as ``count`` joins of disjoint slices when both sides are split by the key
    they join on (a Grace hash join done by us, see :meth:`MineEngine.materialize_parts`): each slice's build side
    fits, so DuckDB spills neither side, where one large join spills both (at 10^8 links, tens of GB).
    """

    index: int = 0
    count: int = 1

    def holds(self, key: ir.StringValue) -> ir.BooleanValue:
        """True for the rows of this part; ``key`` is a :func:`part_key` column."""
        lo, hi = (self.index * 65536 // self.count, (self.index + 1) * 65536 // self.count)
        inside = ibis.literal(True) if lo == 0 else key >= f"{lo:04x}"
        return inside if hi >= 65536 else inside & (key < f"{hi:04x}")


def first_per_group(t: ir.Table, group_by: Sequence[str], order_by: Sequence[str], n: int = 1) -> ir.Table:
    """The first ``n`` rows of each group in the given (total, deterministic) order."""
    rn = ibis.row_number().over(group_by=[t[c] for c in group_by], order_by=[t[c] for c in order_by])
    return t.mutate(_rn=rn).filter(lambda x: x._rn < n).drop("_rn")


def word_count(s: ir.StringValue) -> ir.IntegerValue:
    """Words as spaces + 1: crude, but identical on every engine (no regex dialects involved)."""
    return (s.length() - s.replace(" ", "").length() + 1).cast("int64")


def remove(path: Path) -> None:
    """Delete a work table's Parquet file or folder."""
    shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)


class MineEngine:
    """Base class: a connected Ibis backend plus a work folder for intermediate Parquet."""

    name = "?"

    def __init__(self, store: CorpusStore, work: Path):
        self.store = store
        self.work = Path(work).absolute()  # Spark resolves a relative path against its JVM's folder, not ours
        self.work.mkdir(parents=True, exist_ok=True)
        self._tables: dict[str, ir.Table] = {}
        self._names = itertools.count()
        self._written: dict[str, Path] = {}  # table name -> the Parquet that materialize() wrote

    # -- tables ------------------------------------------------------------------
    def table(self, name: str) -> ir.Table:
        """A table of the corpus store (``documents``, ``passages``, ``links``, ...)."""
        if name not in self._tables:
            path, is_dir = self.store.table_path(name)
            with quiet():
                self._tables[name] = self._read(path.absolute(), is_dir, f"store_{name}")
        return self._tables[name]

    def read(self, path: Path, name: str, is_dir: bool = False) -> ir.Table:
        """A Parquet file (or folder of them) that is not a store table (a method's own output, a references
        table) as a table."""
        with quiet():
            return self._read(Path(path).absolute(), is_dir, f"f_{name}_{next(self._names)}")

    def materialize(self, expr: ir.Table, name: str) -> ir.Table:
        """Compute ``expr`` once into Parquet under the work folder and read it back."""
        path = self.work / f"{name}-{next(self._names)}"
        table_name = f"t_{path.name.replace('-', '_')}"
        with quiet(), self.guard():
            self._write(expr, path)
            self._written[table_name] = path
            return self._read(path, self._writes_dirs, table_name)

    def materialize_parts(self, build: Callable[[Part], ir.Table], name: str, parts: int) -> ir.Table:
        """``build(part)`` for each of ``parts`` parts, written one after the other as the files of one Parquet
        folder and read back as one table. The parts' rows must be disjoint (see :class:`Part`)."""
        if parts <= 1:
            return self.materialize(build(Part()), name)
        folder = self.work / f"{name}-{next(self._names)}"
        table_name = f"t_{folder.name.replace('-', '_')}"
        folder.mkdir()
        with quiet(), self.guard():
            for index in range(parts):
                self._write(build(Part(index, parts)), folder / f"part-{index:05d}.parquet")
            self._written[table_name] = folder
            return self._read(folder, True, table_name)

    def parts_for(self, rows: int, row_bytes: int = 0) -> int:
        """How many parts a join or sort of ``rows`` rows (of about ``row_bytes`` each in memory; default
        ``BUILD_ROW_BYTES``) should run in (see :class:`Part`): 1 unless the engine works within a fixed memory."""
        return 1

    def release(self, table: ir.Table) -> None:
        """Delete the Parquet behind a table from :meth:`materialize` once nothing will read it again: at
        10^8 links a method's candidates are gigabytes that the spill of the next join can use."""
        path = self._written.pop(table.get_name(), None)
        if path is not None:
            remove(path)

    def release_owned(self, owner: str) -> None:
        """Release every table materialized under a name starting with ``owner + "-"`` (a method's own work
        tables, such as ``dl-links``, once its candidates are written)."""
        for table_name in [n for n, path in self._written.items() if path.name.startswith(f"{owner}-")]:
            remove(self._written.pop(table_name))

    def to_arrow(self, expr: ir.Expr) -> pa.Table:
        with quiet(), self.guard():
            return expr.to_pyarrow()

    def scalar(self, expr: ir.Scalar) -> Any:
        with quiet(), self.guard():
            value = expr.to_pyarrow()
        return value.as_py() if hasattr(value, "as_py") else value

    def count(self, t: ir.Table) -> int:
        return int(self.scalar(t.count()) or 0)

    def batches(self, expr: ir.Table, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        raise NotImplementedError

    def close(self) -> None:
        shutil.rmtree(self.work, ignore_errors=True)

    # -- engine specific ---------------------------------------------------------------
    _writes_dirs = False

    def guard(self) -> AbstractContextManager[None]:
        """Where the engine's own failures (out of memory, disk full) become a :class:`MineError`."""
        return nullcontext()

    def _read(self, path: Path, is_dir: bool, name: str) -> ir.Table:
        raise NotImplementedError

    def _write(self, expr: ir.Table, path: Path) -> None:
        raise NotImplementedError


BUILD_ROW_BYTES = 100  # a hash-join build row of link ids (two string ids, two ints), with DuckDB's overhead
BUILD_SHARE = 0.25  # of the memory limit, for one part's build side; the rest is the probe's pipeline and slack
UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
         "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def size_bytes(size: str) -> int:
    """A DuckDB size (``'8GiB'``, ``'500 MB'``, ``'1.5GiB'``) in bytes."""
    text = size.strip().lower().replace(" ", "")
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(number):] or "b"
    if unit not in UNITS or not number:
        raise MineError(f"{size!r} is not a size (e.g. 8GiB, 500MB)")
    return int(float(number) * UNITS[unit])


MEMORY_SHARE = 0.5  # of the machine's RAM (or of the cgroup's limit), for DuckDB by default
SPILL = "spill"  # DuckDB's temp directory, inside the engine's work folder


def machine_memory() -> int:
    """Bytes of RAM this process may use: psutil's total, or a smaller cgroup v2 limit (a container)."""
    total = psutil.virtual_memory().total
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
    except OSError:
        return total
    return min(total, int(limit)) if limit.isdigit() else total


def default_memory_limit() -> str:
    """``MEMORY_SHARE`` of :func:`machine_memory` as a DuckDB size (``'11.7GiB'`` on a 23.5 GiB machine):
    the rest is left to the Python side, the OS page cache and whatever else runs on the machine."""
    return f"{machine_memory() * MEMORY_SHARE / 2**30:.1f}GiB"


def configure_duckdb(con: Any, work: Path, memory_limit: str | None = None, threads: int | None = None,
                     max_spill: str | None = None) -> str:
    """Bound a DuckDB connection's memory and let it spill to ``work/spill`` (at most ``max_spill``); returns the
    memory limit it got.

    ``preserve_insertion_order = false`` lets joins and aggregations stream and spill without
    keeping row order (every output of mining is sorted explicitly).
    """
    limit = memory_limit or default_memory_limit()
    try:
        con.execute(f"SET memory_limit = '{limit}'")
    except duckdb.Error as err:
        raise MineError(f"--memory-limit {limit!r} is not a size DuckDB understands (e.g. 8GiB, 500MB): {err}") from err
    con.execute(f"SET temp_directory = '{Path(work) / SPILL}'")
    if max_spill:
        try:
            con.execute(f"SET max_temp_directory_size = '{max_spill}'")
        except duckdb.Error as err:
            raise MineError(f"--max-spill {max_spill!r} is not a size DuckDB understands (e.g. 200GB, 0B): {err}") from err
    con.execute("SET preserve_insertion_order = false")
    con.execute("SET enable_progress_bar = false")  # it prints to stdout, into the CLI's tables and a caller's pipe
    if threads:
        con.execute(f"SET threads = {int(threads)}")
    return limit


@contextmanager
def explained(work: Path, limit: str) -> Iterator[None]:
    """DuckDB running out of memory or spill space -> a :class:`MineError` saying which and what to do."""
    try:
        yield
    except duckdb.OutOfMemoryException as err:
        free = shutil.disk_usage(work).free / 2**30 if Path(work).exists() else float("nan")
        raise MineError(
            f"DuckDB ran out of memory within --memory-limit {limit}: what it cannot spill did not fit, or the spill "
            f"to {Path(work) / SPILL} hit --max-spill or the disk ({free:.1f} GiB free there). Give more memory "
            f"(--memory-limit), fewer --threads, or an --out on a disk with more room. DuckDB said: "
            f"{str(err).splitlines()[0]}") from err
    except duckdb.IOException as err:
        if "space" not in str(err).lower():
            raise
        raise MineError(f"the disk under {work} is full ({str(err).splitlines()[0]}): mining at scale needs room "
                        "for the spilled joins and the pairs; choose an --out on a larger disk") from err


class DuckDBMineEngine(MineEngine):
    """DuckDB in-process: out-of-core within ``memory_limit`` (default :func:`default_memory_limit`), spilling
    to the work folder; all cores by default."""

    name = "duckdb"

    def __init__(self, store: CorpusStore, work: Path, threads: int | None = None, memory_limit: str | None = None,
                 max_spill: str | None = None):
        super().__init__(store, work)
        self.con = ibis.duckdb.connect()
        self.memory_limit = configure_duckdb(self.con.con, self.work, memory_limit, threads, max_spill)

    def guard(self) -> AbstractContextManager[None]:
        return explained(self.work, self.memory_limit)

    def parts_for(self, rows: int, row_bytes: int = 0) -> int:
        """Enough parts that each part takes at most ``BUILD_SHARE`` of the memory limit."""
        limit = self.con.con.execute("SELECT current_setting('memory_limit')").fetchall()[0][0]  # '7.4 GiB'
        return max(1, math.ceil(rows * (row_bytes or BUILD_ROW_BYTES) / (size_bytes(limit) * BUILD_SHARE)))

    def _read(self, path: Path, is_dir: bool, name: str) -> ir.Table:
        source = str(path / "*.parquet") if is_dir else str(path)
        return self.con.read_parquet(source, table_name=name)

    def _write(self, expr: ir.Table, path: Path) -> None:
        self.con.to_parquet(expr, str(path))

    def batches(self, expr: ir.Table, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        with self.guard():
            for batch in duckdb_batches(self.con, expr):
                yield from pa.Table.from_batches([batch]).select(schema.names).cast(schema).to_batches()

    def close(self) -> None:
        try:
            self.con.disconnect()
        finally:
            super().close()


class SparkMineEngine(MineEngine):
    """Local PySpark (``local[*]``): the same expressions, compiled to Spark SQL by Ibis."""

    name = "spark"
    _writes_dirs = True

    def __init__(self, store: CorpusStore, work: Path, threads: int | None = None,
                 master: str | None = None, session: Any = None):
        super().__init__(store, work)
        self._views: list[str] = []
        self.session, self._own_session = lent_or_new_spark_session(session, threads, master, app="pretriever-mine")
        self.con = ibis.pyspark.connect(self.session)

    def materialize_parts(self, build: Callable[[Part], ir.Table], name: str, parts: int) -> ir.Table:
        """The parts as one union, one write: Spark shuffles by its own partitions."""
        return self.materialize(ibis.union(*(build(Part(index, parts)) for index in range(max(parts, 1)))), name)

    def _read(self, path: Path, is_dir: bool, name: str) -> ir.Table:
        self._views.append(name)
        return self.con.read_parquet(str(path), table_name=name)

    def _write(self, expr: ir.Table, path: Path) -> None:
        self.con.to_parquet(expr, str(path), mode="overwrite")

    def batches(self, expr: ir.Table, schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        self.con._run_pre_execute_hooks(expr)  # registers in-memory tables
        df = self.session.sql(self.con.compile(expr))
        names = schema.names
        rows = df.toLocalIterator(prefetchPartitions=True)
        while True:
            chunk = list(itertools.islice(rows, 20_000))
            if not chunk:
                return
            columns = {n: [r[n] for r in chunk] for n in names}
            yield pa.RecordBatch.from_pydict(columns, schema=schema)

    def close(self) -> None:
        try:
            if self._own_session:
                self.session.stop()
            else:  # a session we were lent: leave it as we found it
                for name in self._views:
                    self.session.catalog.dropTempView(name)
        finally:
            super().close()


def open_engine(name: str, store: CorpusStore, work: Path, threads: int | None = None,
                memory_limit: str | None = None, spark_master: str | None = None,
                spark_session: Any = None, max_spill: str | None = None) -> MineEngine:
    """The engine ``--engine`` names, over ``store``, spilling and materialising under ``work``.

    Args:
        name: ``duckdb`` or ``spark``.
        store: the corpus store.
        work: the run's work folder.
        threads: DuckDB threads or local Spark's cores (None: all).
        memory_limit: DuckDB's memory limit (None: its default).
        spark_master: the Spark master URL (None: local).
        spark_session: a running session to use instead.
        max_spill: DuckDB's cap on spilled data (None: none).

    Returns:
        The engine.
    """
    if name == "duckdb":
        return DuckDBMineEngine(store, work, threads=threads, memory_limit=memory_limit, max_spill=max_spill)
    if name == "spark":
        return SparkMineEngine(store, work, threads=threads, master=spark_master, session=spark_session)
    raise ValueError(f"unknown engine {name!r}; choose duckdb or spark")
