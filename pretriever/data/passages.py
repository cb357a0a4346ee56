"""The passages of a corpus store in index order, read a range of rows at a time.

Index order is the store's own order: the part files of ``passages/`` by name, rows in
file order. Row ``r`` of the embeddings, of ``passage_ids.parquet`` and of a FAISS
result is row ``r`` of that order. Only the rows asked for are read, so a shard of a
large corpus never holds the whole corpus in memory.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pyarrow.parquet as pq

from pretriever.data.store import CorpusStore
from pretriever.errors import PretrieverError


def passage_text(title: str | None, text: str | None, prepend_title: bool) -> str:
    """What is encoded or tokenized for a passage: ``title + " " + text`` (BEIR practice) or the text.

    Args:
        title: the document's title (None: none).
        text: the passage's text.
        prepend_title: put the title first.

    Returns:
        The text to encode.
    """
    text = text or ""
    if prepend_title and title:
        return f"{title} {text}".strip()
    return text


class PassageSource:
    """Row ranges of a store's passages, with their document titles.

    Args:
        store: the corpus store, or its folder.
    """

    def __init__(self, store: CorpusStore | Path | str):
        self.store = store if isinstance(store, CorpusStore) else CorpusStore(store)
        self.files: list[Path] = sorted((self.store.path / "passages").glob("*.parquet"))
        self.counts: list[int] = [pq.ParquetFile(f).metadata.num_rows for f in self.files]
        self.starts: list[int] = []
        total = 0
        for count in self.counts:
            self.starts.append(total)
            total += count
        self.total = total
        self._con = None

    def __len__(self) -> int:
        return self.total

    @property
    def con(self):
        if self._con is None:
            self._con = self.store.connect()
        return self._con

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None

    def fingerprint(self) -> dict:
        """What identifies the passage order: how many rows each part file holds."""
        return {"n_passages": self.total, "parts": [[f.name, c] for f, c in zip(self.files, self.counts)]}

    def read(self, lo: int, hi: int, prepend_title: bool) -> tuple[list[str], list[str]]:
        """Passage ids and texts (title prepended when asked) of rows ``lo`` to ``hi - 1``.

        Args:
            lo: first row (0-based, in index order).
            hi: the row after the last.
            prepend_title: put each document's title before the text.

        Returns:
            ``(ids, texts)``.
        """
        ids: list[str] = []
        texts: list[str] = []
        for passage_ids, titles, bodies in self._read_columns(lo, hi):
            ids.extend(passage_ids)
            texts.extend(passage_text(t, x, prepend_title) for t, x in zip(titles, bodies))
        return ids, texts

    def iter_parts(self, prepend_title: bool) -> Iterator[tuple[list[str], list[str]]]:
        """Ids and texts, one part file at a time (the whole corpus, in index order).

        Args:
            prepend_title: put each document's title before the text.

        Yields:
            ``(ids, texts)`` of each part file.
        """
        for start, count in zip(self.starts, self.counts):
            if count:
                yield self.read(start, start + count, prepend_title)

    def _read_columns(self, lo: int, hi: int) -> Iterator[tuple[list[str], list, list]]:
        if not 0 <= lo <= hi <= self.total:
            raise ValueError(f"rows {lo}..{hi} are outside 0..{self.total}")
        for path, start, count in zip(self.files, self.starts, self.counts):
            a, b = max(lo, start) - start, min(hi, start + count) - start
            if a >= b:
                continue
            table = self.con.sql(
                "SELECT p.passage_id, d.title, p.text "
                "FROM read_parquet(?, file_row_number = true) p LEFT JOIN documents d ON p.doc_id = d.doc_id "
                "WHERE p.file_row_number >= ? AND p.file_row_number < ? ORDER BY p.file_row_number",
                params=[str(path), a, b]).to_arrow_table()
            if table.num_rows != b - a:
                raise ValueError(f"{path}: expected {b - a} passages in rows {a}..{b}, read {table.num_rows} "
                                 "(is a document id repeated in documents.parquet?)")
            yield (table.column(0).to_pylist(), table.column(1).to_pylist(), table.column(2).to_pylist())


class ShardSpecError(PretrieverError, ValueError):
    """A ``--shard`` value is not ``i/n`` with ``0 <= i < n``."""


class Shard(NamedTuple):
    """Shard ``index`` of ``count`` (0-based): a contiguous run of checkpoint chunks."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(spec: str | Shard | None) -> Shard | None:
    """``"2/8"`` -> Shard(2, 8); None stays None; anything else is a :class:`ShardSpecError`.

    Args:
        spec: ``i/n``, a shard, or None.

    Returns:
        The shard, or None.
    """
    if spec is None or isinstance(spec, Shard):
        return spec
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(spec))
    if not match:
        raise ShardSpecError(f"--shard must look like i/n (shard i of n, counted from 0, e.g. 0/4), got {spec!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1:
        raise ShardSpecError(f"--shard {spec}: the number of shards must be at least 1")
    if index >= count:
        raise ShardSpecError(f"--shard {spec}: shards are counted from 0, so i must be below n "
                             f"(0/{count} ... {count - 1}/{count})")
    return Shard(index, count)
