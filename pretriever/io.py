"""Atomic file output: every file appears whole or not at all (temp file + rename)."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

PARQUET_OPTIONS = {"compression": "zstd", "write_statistics": True}


@contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it onto ``path`` only if the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def read_json(path: Path, error: type[Exception], what: str = "") -> Any:
    """A JSON file's content; ``error`` (naming the file, and ``what`` it should be) when it is missing or not
    valid JSON."""
    if not Path(path).is_file():
        raise error(f"{path}: no such file")
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise error(f"{path}: not valid JSON ({err.msg} at line {err.lineno}){'; ' + what if what else ''}") from None


def read_jsonl(path: Path, error: type[Exception]) -> Iterator[tuple[str, Any]]:
    """("PATH, line N", object) for every non-blank line of a JSONL file; ``error`` naming the line when one
    is not JSON."""
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.strip():
                continue
            where = f"{path}, line {line_no}"
            try:
                yield where, json.loads(line)
            except json.JSONDecodeError as err:
                raise error(f"{where}: not JSON ({err.msg})") from None


def write_json(path: Path, data: Any) -> None:
    """Write ``data`` as indented UTF-8 JSON, atomically: a reader never sees half a file."""
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")


def write_parquet(table: pa.Table, path: Path) -> None:
    """Write ``table`` with the package's Parquet options, atomically: a reader never sees half a file."""
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, **PARQUET_OPTIONS)


# Rows per row group of the files write_parquet_batches writes: fixed, so that the bytes of a file depend
# only on its rows, never on how an engine happened to batch them.
ROW_GROUP_ROWS = 131_072


class ParquetBatchWriter:
    """Write Arrow batches into one Parquet file in row groups of exactly ``row_group_rows`` rows (the last
    one shorter), cast to ``schema``; used as a context manager, the file appears whole or not at all.

    Two engines that produce the same rows in the same order thus write byte-identical files, whatever
    their batch sizes (the corpus build on DuckDB and on Spark relies on it).
    """

    def __init__(self, path: Path, schema: pa.Schema, row_group_rows: int = ROW_GROUP_ROWS):
        self.path, self.schema, self.row_group_rows = Path(path), schema, row_group_rows
        self.rows = 0
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def __enter__(self) -> ParquetBatchWriter:
        self._atomic = atomic_path(self.path)
        self._writer = pq.ParquetWriter(self._atomic.__enter__(), self.schema, **PARQUET_OPTIONS)
        return self

    def write(self, batch: pa.RecordBatch | pa.Table) -> None:
        table = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        self._pending.append(table.select(self.schema.names).cast(self.schema))
        self._pending_rows += table.num_rows
        self.rows += table.num_rows
        if self._pending_rows >= self.row_group_rows:
            rows = pa.concat_tables(self._pending)
            full = rows.num_rows // self.row_group_rows * self.row_group_rows
            self._writer.write_table(rows.slice(0, full), row_group_size=self.row_group_rows)
            self._pending, self._pending_rows = [rows.slice(full)], rows.num_rows - full

    def __exit__(self, *exc: Any) -> None:
        try:
            if exc[0] is None and self._pending_rows:
                self._writer.write_table(pa.concat_tables(self._pending), row_group_size=self.row_group_rows)
            self._writer.close()
        except BaseException:
            self._atomic.__exit__(*sys.exc_info())  # removes the temporary file
            raise
        self._atomic.__exit__(*exc)


def write_parquet_batches(batches: Iterable[pa.RecordBatch | pa.Table], schema: pa.Schema, path: Path) -> int:
    """Stream ``batches`` into one Parquet file (see :class:`ParquetBatchWriter`); return the rows written."""
    with ParquetBatchWriter(path, schema) as writer:
        for batch in batches:
            writer.write(batch)
    return writer.rows


def text_pair_hashes(first: pa.Array, second: pa.Array) -> np.ndarray:
    """A 64-bit hash of each (first, second) text pair (nulls as ""), to find a pair seen before cheaply."""
    first, second = (pc.fill_null(a.cast(pa.string()), "") for a in (first, second))
    import pandas as pd  # here, not at the top: every command's `--help` imports this module

    joined = pc.binary_join_element_wise(first, second, "\x1f")
    return pd.util.hash_array(np.asarray(joined.to_pylist(), dtype=object))
