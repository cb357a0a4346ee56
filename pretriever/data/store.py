"""Open a built corpus store and query it with DuckDB.

Every later stage reads the store through :class:`CorpusStore`, which checks that
the manifest and the tables are there with the expected columns before any work
starts, so a wrong folder fails at once with a message naming what is missing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq

from pretriever.corpus.manifest import MANIFEST, StoreError, StoreManifest
from pretriever.corpus.schema import STORE_TABLES


# Tables added after stores were first built: a store without one still opens (rebuild it to get it).
OPTIONAL_TABLES = frozenset({"page_tags"})


class CorpusStore:
    """A corpus store folder (``pretriever corpus build``), checked when opened: its manifest, and every table
    with the columns pretriever reads (an older store may lack an optional table). Reads go through
    :class:`~pretriever.data.PassageLookup`, :class:`~pretriever.data.PassageSource` or :meth:`connect`'s views.

    Relations:
        The folder stage 1 hands on; :class:`~pretriever.data.pairs.PairsDir` (mine's) and
        :class:`~pretriever.index.IndexFolder` (index's) are the other typed folders.

    Args:
        path: the store's folder.

    Raises:
        StoreError: the folder is not a store, or a table or column is missing (the message says which).
    """

    def __init__(self, path: Path | str):
        self.path = Path(path)
        if not (self.path / MANIFEST).exists():
            hint = " (an interrupted build? continue it with --resume)" if (self.path / "_work").exists() else ""
            raise StoreError(f"{self.path} is not a corpus store: {MANIFEST} is missing{hint}; "
                             "build one with `pretriever corpus build INPUT --out DIR`")
        self.manifest = StoreManifest.read(self.path)
        for name in STORE_TABLES:
            if name in OPTIONAL_TABLES and not self.has_table(name):
                continue  # a store built before the table existed: what reads it does without
            self.check_table(name)

    def has_table(self, name: str) -> bool:
        """Whether the store holds table ``name`` (an older store may lack an :data:`OPTIONAL_TABLES` one).

        Args:
            name: a table of :data:`STORE_TABLES` (``passages``, ``documents``, ``links``, ...).

        Returns:
            Whether it is there.
        """
        path, is_dir = self.table_path(name)
        return any(path.glob("*.parquet")) if is_dir else path.exists()

    def table_path(self, name: str) -> tuple[Path, bool]:
        """Where table ``name`` lives: (a folder of part files, True) or (one Parquet file, False).

        Args:
            name: a table of :data:`STORE_TABLES` (``passages``, ``documents``, ``links``, ...).

        Returns:
            ``(path, is_folder)``.
        """
        _, is_dir = STORE_TABLES[name]
        return (self.path / name, True) if is_dir else (self.path / f"{name}.parquet", False)

    def table_glob(self, name: str) -> str:
        """The glob of a table's Parquet files, for DuckDB's and Spark's readers.

        Args:
            name: a table of :data:`STORE_TABLES` (``passages``, ``documents``, ``links``, ...).

        Returns:
            The glob (the file itself for a one-file table).
        """
        path, is_dir = self.table_path(name)
        return str(path / "*.parquet") if is_dir else str(path)

    def check_table(self, name: str) -> None:
        """Refuse a table that is missing or lacks a column pretriever reads (:class:`StoreError`).

        Args:
            name: a table of :data:`STORE_TABLES` (``passages``, ``documents``, ``links``, ...).
        """
        schema, is_dir = STORE_TABLES[name]
        files = sorted((self.path / name).glob("*.parquet")) if is_dir else [self.path / f"{name}.parquet"]
        if not files or not files[0].exists():
            raise StoreError(f"{self.path}: table {name!r} is missing (expected {self.table_glob(name)})")
        found = set(pq.read_schema(files[0]).names)
        missing = [f.name for f in schema if f.name not in found]
        if missing:
            raise StoreError(f"{files[0]}: table {name!r} lacks column(s) {', '.join(missing)}; "
                             "was it written by another tool or an older pretriever? rebuild the store")

    def read_table(self, name: str, columns: list[str] | None = None,
                   sort_by: list[str] | None = None) -> pa.Table:
        """A whole table (or some of its columns) as Arrow, optionally sorted; for tables that fit in memory.

        Args:
            name: a table of :data:`STORE_TABLES`.
            columns: the columns to read (None: all).
            sort_by: columns to sort by, ascending (None: file order).

        Returns:
            The table.
        """
        path, is_dir = self.table_path(name)
        files = sorted(path.glob("*.parquet")) if is_dir else [path]
        tables = [pq.read_table(f, columns=columns) for f in files]
        table = pa.concat_tables(tables) if tables else pa.table({})
        return table.sort_by([(c, "ascending") for c in sort_by]) if sort_by else table

    def connect(self) -> duckdb.DuckDBPyConnection:
        """A DuckDB connection with one view per table (``documents``, ``passages``, ``links``, ...)."""
        con = duckdb.connect()
        for name in filter(self.has_table, STORE_TABLES):
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{self.table_glob(name)}')")
        return con

    @property
    def counts(self) -> dict[str, Any]:
        return self.manifest.counts
