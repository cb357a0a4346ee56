"""Atomic file output: every file appears whole or not at all (temp file + rename)."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
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
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")


def write_parquet(table: pa.Table, path: Path) -> None:
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, **PARQUET_OPTIONS)


def text_pair_hashes(first: pa.Array, second: pa.Array) -> np.ndarray:
    """A 64-bit hash of each (first, second) text pair (nulls as ""), to find a pair seen before cheaply."""
    first, second = (pc.fill_null(a.cast(pa.string()), "") for a in (first, second))
    joined = pc.binary_join_element_wise(first, second, "\x1f")
    return pd.util.hash_array(np.asarray(joined.to_pylist(), dtype=object))
