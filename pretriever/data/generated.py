"""Generated queries (``pretriever generate``): where they are and how they are read.

A QUERIES_DIR holds ``generated_queries.parquet``: one row per (passage_id, candidate, text),
``candidate`` numbering the C queries sampled for a passage. Method qc (mine) pairs them with
their passages; query-as-context pre-training reads them through those pairs.
"""

from __future__ import annotations

from pathlib import Path

QUERIES_FILE = "generated_queries.parquet"


def generated_queries_path(queries: Path | str) -> Path:
    """The generated_queries.parquet of a QUERIES_DIR (or ``queries`` itself when it names the file).

    Args:
        queries: ``pretriever generate``'s --out folder, or the Parquet file itself.

    Returns:
        The file's path (not checked).
    """
    queries = Path(queries)
    return queries / QUERIES_FILE if queries.is_dir() else queries
