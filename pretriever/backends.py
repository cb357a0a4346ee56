"""The Ibis backends that stages share: a quiet Spark session and Arrow batches streamed out of DuckDB.

The corpus build (``--engine spark``) and mining (``--engine spark``) both run Ibis
expressions on DuckDB or PySpark; the session set-up and the DuckDB streaming
work-around live here once.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import ibis.expr.types as ir
import pyarrow as pa

from pretriever.errors import PretrieverError


class SparkUnavailable(PretrieverError):
    """PySpark is missing or a session cannot start; the message says what to install."""


@contextmanager
def quiet() -> Iterator[None]:
    """Silence deprecation noise from the libraries' glue (Ibis 12 on DuckDB 2.0, Ibis and PySpark on pandas 3)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r".*(fetch_arrow_table|copy keyword|infer_string).*")
        yield


def spark_session(threads: int | None = None, master: str | None = None, app: str = "pretriever"):
    """A quiet Spark session: ``local[threads or *]`` unless a master is given here or by ``spark-submit``.

    ``master`` is a Spark master URL (``spark://host:7077``, ``yarn``, ``k8s://...``); under
    ``spark-submit`` with no ``master`` the one given to ``spark-submit`` is kept.

    On a local master it also sets what suits one machine (this Python for the workers,
    few shuffle partitions, 4 GB of driver memory or ``$PRETRIEVER_SPARK_DRIVER_MEMORY``);
    on a cluster the cluster's own settings are left alone.
    """
    try:
        from pyspark.sql import SparkSession  # optional dependency (pretriever[spark])
    except ImportError as err:  # pragma: no cover - depends on the environment
        raise SparkUnavailable("--engine spark needs PySpark: pip install 'pretriever[spark]' "
                               "(and a Java 17+ runtime)") from err
    if master is None and "PYSPARK_GATEWAY_PORT" not in os.environ:  # not started by spark-submit
        master = f"local[{threads or '*'}]"
    builder = (SparkSession.builder.appName(app)
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC"))
    if master:
        builder = builder.master(master)
    if master and master.startswith("local"):
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        cores = threads or os.cpu_count() or 2
        builder = (builder.config("spark.ui.enabled", "false")
                   .config("spark.sql.shuffle.partitions", str(max(2, min(cores * 2, 64))))
                   .config("spark.driver.memory", os.environ.get("PRETRIEVER_SPARK_DRIVER_MEMORY", "4g")))
    try:
        session = builder.getOrCreate()
    except Exception as err:  # no Java, a port in use, ...: say so instead of a JVM stack trace
        raise SparkUnavailable(f"could not start a Spark session for --engine spark ({err}); "
                               "PySpark needs a Java 17+ runtime on the PATH or in JAVA_HOME") from err
    session.sparkContext.setLogLevel("ERROR")
    return session


def lent_or_new_spark_session(session: Any = None, threads: int | None = None, master: str | None = None,
                              app: str = "pretriever") -> tuple[Any, bool]:
    """The Spark session to run on, and whether it is ours to stop when done.

    A session passed in, or one already running in this process (a notebook's, a test's, a previous
    stage's), is lent: stopping it would break its owner. Only a session started here is ours.
    """
    if session is not None:
        return session, False
    try:
        from pyspark.sql import SparkSession  # optional dependency (pretriever[spark])
    except ImportError:
        SparkSession = None
    active = SparkSession.getActiveSession() if SparkSession is not None else None
    if active is not None:
        return active, False
    return spark_session(threads, master, app=app), True


def duckdb_batches(con: Any, expr: ir.Table, rows: int = 50_000) -> Iterator[pa.RecordBatch]:
    """Arrow batches of ``expr`` run on the Ibis DuckDB backend ``con``, streamed (never all in memory).

    Ibis 12's ``to_pyarrow_batches`` calls ``fetch_record_batch``, which DuckDB 2.0 removed.
    """
    con._run_pre_execute_hooks(expr)  # registers in-memory tables
    return duckdb_query_batches(con.con, con.compile(expr), rows)


def duckdb_query_batches(raw: Any, sql: str, rows: int = 50_000) -> Iterator[pa.RecordBatch]:
    """Arrow batches of a SQL query on a DuckDB connection, streamed (a query compiled once, run many times)."""
    relation = raw.sql(sql)
    reader = (relation.to_arrow_reader(rows) if hasattr(relation, "to_arrow_reader")
              else relation.fetch_arrow_reader(rows))  # DuckDB 1.x
    for batch in reader:
        if batch.num_rows:
            yield batch
