"""Open a references folder (REFS_DIR, from ``pretriever references fetch/import``) and check it.

REFS_DIR holds ``references.parquet`` (one row per unique URL: ``url``, ``final_url``,
``status``, ``content_type``, ``fetched_at``, ``bytes``, ``title``, ``text`` (main text
extracted with trafilatura, NULL when none), ``error`` (the reason a URL failed),
``error_detail`` (its message), ``source``, ``via_archive``) and,
optionally, ``citations.parquet`` (``doc_id``, ``citation_idx``, ``url``, ``archive_url``:
which citation of the store cites which fetched URL). Stages read the files at the paths
this gives (the mining engine reads them as tables); nothing else opens REFS_DIR.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pretriever.errors import PretrieverError

REFERENCES = "references.parquet"
CITATIONS = "citations.parquet"
REFERENCE_COLUMNS = ("url", "title", "text")  # what reading a reference needs; the fetcher writes more
CITATION_COLUMNS = ("doc_id", "citation_idx", "url")


class ReferencesError(PretrieverError):
    """The folder is not a usable references folder."""


@dataclass(frozen=True)
class References:
    """A checked REFS_DIR: the Parquet files to read (checking reads only their schemas and row counts)."""

    path: Path
    references: Path
    citations: Path | None  # None: cited URLs are matched by the store's citations.url
    rows: int

    def with_text(self) -> int:
        """How many references have a non-blank main text (streams the text column: GBs at scale)."""
        count = 0
        for batch in pq.ParquetFile(self.references).iter_batches(columns=["text"], batch_size=10_000):
            length = pc.utf8_length(pc.utf8_trim_whitespace(batch.column(0)))
            count += int(pc.sum(pc.greater(length, 0).fill_null(False).cast(pa.int64())).as_py() or 0)
        return count


def _check_columns(path: Path, needed: tuple[str, ...]) -> pa.Schema:
    try:
        schema = pq.read_schema(path)
    except (OSError, pa.ArrowInvalid) as err:
        raise ReferencesError(f"{path}: cannot read it as Parquet ({err})") from err
    missing = [c for c in needed if c not in schema.names]
    if missing:
        raise ReferencesError(f"{path} lacks column(s) {', '.join(missing)} (it has: {', '.join(schema.names)}); "
                              "write it with `pretriever references fetch` or `pretriever references import`")
    return schema


def load_references(refs_dir: Path | str) -> References:
    """Check ``refs_dir`` and say where its tables are; a :class:`ReferencesError` names what is wrong.

    Example: ``refs = load_references("refs/"); refs.rows`` URLs, ``refs.with_text()`` of them with main text.

    Args:
        refs_dir: the folder ``pretriever references fetch`` or ``import`` wrote.

    Returns:
        Where its tables are and how many references it holds.
    """
    path = Path(refs_dir)
    table = path / REFERENCES
    if not table.exists():
        raise ReferencesError(f"{path} is not a references folder: {REFERENCES} is missing; fetch the cited pages "
                              "with `pretriever references fetch CORPUS_DIR --out REFS_DIR` (or import WARC/JSONL "
                              "with `pretriever references import`)")
    _check_columns(table, REFERENCE_COLUMNS)
    citations = path / CITATIONS
    if citations.exists():
        _check_columns(citations, CITATION_COLUMNS)
    return References(path=path, references=table, citations=citations if citations.exists() else None,
                      rows=pq.ParquetFile(table).metadata.num_rows)
