"""The build's second phase: whole-corpus joins on DuckDB, then the store is moved into place.

Redirect chains are followed (up to :data:`MAX_REDIRECT_HOPS`) and every link gets
its final target title and, when that page is in the store, its document id. It
runs out of core: DuckDB spills to ``_work/duckdb`` when the title maps exceed memory.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import duckdb

from pretriever.corpus.model import InputError
from pretriever.corpus.schema import LINKS, STORE_TABLES
from pretriever.corpus.summary import add_up, summaries

MAX_REDIRECT_HOPS = 5
PARQUET = "(FORMAT parquet, COMPRESSION zstd)"


def _files(folder: Path) -> list[str]:
    return [str(p) for p in sorted(folder.glob("part-*.parquet"))]


def _sql_list(paths: list[str]) -> str:
    """A SQL list literal of file paths, quoted for DuckDB."""
    return "[" + ", ".join("'" + p.replace("'", "''") + "'" for p in paths) + "]"


def connect(work: Path) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    con.execute(f"SET temp_directory = '{work / 'duckdb'}'")
    con.execute("SET preserve_insertion_order = true")
    return con


def finalize_store(out: Path, work: Path, head: dict[str, Any]) -> dict[str, Any]:
    """Write documents, pages, redirects and resolved links; move the chunk tables into ``out``."""
    con = connect(work)
    con.execute(f"CREATE VIEW pages AS SELECT * FROM read_parquet({_sql_list(_files(work / 'pages'))})")
    _check_unique_ids(con)
    con.execute(f"COPY (SELECT * FROM pages) TO '{out / 'pages.parquet'}' {PARQUET}")
    con.execute(f"""COPY (SELECT doc_id, title, is_disambiguation, n_passages, n_sentences, n_links,
                        n_citations, n_words FROM pages WHERE status = 'kept')
                    TO '{out / 'documents.parquet'}' {PARQUET}""")
    con.execute(_redirect_chains_sql())
    con.execute(f"COPY (SELECT * FROM redirects ORDER BY title) TO '{out / 'redirects.parquet'}' {PARQUET}")
    con.execute("""CREATE TEMP TABLE title_map AS
                   SELECT title, min(doc_id) AS doc_id FROM pages WHERE status = 'kept' GROUP BY title""")
    _resolve_links(con, work, out / "links")
    for name in ("passages", "sentences", "sections", "citations"):
        target = out / name
        if target.exists():
            shutil.rmtree(target)
        os.replace(work / name, target)

    status, dropped_links, failures = add_up(summaries(work))
    counts = _counts(con, out, status, dropped_links)
    dropped = con.execute("""SELECT title, status FROM pages WHERE status LIKE 'dropped%'
                             ORDER BY title LIMIT 1000""").fetchall()
    con.close()
    return {**head, "counts": counts,
            "dropped_documents": [{"title": t, "status": s} for t, s in dropped],
            "errors": failures,
            "tables": {name: (f"{name}/" if is_dir else f"{name}.parquet")
                       for name, (_, is_dir) in STORE_TABLES.items()}}


def _check_unique_ids(con: duckdb.DuckDBPyConnection) -> None:
    dupes = con.execute("""SELECT doc_id, count(*) FROM pages WHERE status = 'kept'
                           GROUP BY doc_id HAVING count(*) > 1 ORDER BY doc_id LIMIT 5""").fetchall()
    if dupes:
        shown = ", ".join(f"{d!r} ({n} times)" for d, n in dupes)
        raise InputError(f"document ids must be unique; repeated: {shown}")


def _redirect_chains_sql() -> str:
    """Follow redirect chains: each redirect title maps to the title at the end of its chain."""
    return f"""
    CREATE TEMP TABLE redirects AS
    WITH RECURSIVE direct AS (
        SELECT title, min(redirect_to) AS target FROM pages WHERE status = 'redirect' GROUP BY title
    ), chain(title, target, hops) AS (
        SELECT title, target, 1 FROM direct
        UNION ALL
        SELECT c.title, d.target, c.hops + 1 FROM chain c JOIN direct d ON d.title = c.target
        WHERE c.hops < {MAX_REDIRECT_HOPS} AND d.target <> c.title
    )
    SELECT title, arg_max(target, hops) AS target_title, CAST(max(hops) AS INTEGER) AS hops
    FROM chain GROUP BY title
    """


def _resolve_links(con: duckdb.DuckDBPyConnection, work: Path, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    columns = ", ".join(f"l.{f.name}" for f in LINKS if f.name not in ("target_title", "target_doc_id", "via_redirect"))
    for part in _files(work / "links_raw"):
        target = dest / Path(part).name
        tmp = target.with_suffix(".tmp")
        con.execute(f"""
            COPY (SELECT {columns}, coalesce(r.target_title, l.written_target) AS target_title,
                         t.doc_id AS target_doc_id, r.title IS NOT NULL AS via_redirect
                  FROM read_parquet('{part}', file_row_number = true) l
                  LEFT JOIN redirects r ON r.title = l.written_target
                  LEFT JOIN title_map t ON t.title = coalesce(r.target_title, l.written_target)
                  ORDER BY l.file_row_number)
            TO '{tmp}' {PARQUET}""")
        os.replace(tmp, target)


def _counts(con, out: Path, status, dropped_links) -> dict[str, Any]:
    def scalar(sql: str) -> int:
        return int(con.execute(sql).fetchone()[0] or 0)

    links = f"read_parquet('{out / 'links'}/*.parquet')"
    refs = f"read_parquet('{out / 'citations'}/*.parquet')"
    return {
        "pages": sum(status.values()),
        "documents": status.get("kept", 0),
        "redirects": status.get("redirect", 0),
        "non_article_pages": status.get("non_article", 0),
        "dropped_short_title": status.get("dropped_short_title", 0),
        "dropped_blank": status.get("dropped_blank", 0),
        "errors": status.get("error", 0),
        "disambiguation_documents": scalar("SELECT count(*) FROM pages WHERE status = 'kept' AND is_disambiguation"),
        "passages": scalar(f"SELECT count(*) FROM read_parquet('{out / 'passages'}/*.parquet')"),
        "sentences": scalar(f"SELECT count(*) FROM read_parquet('{out / 'sentences'}/*.parquet')"),
        "links": scalar(f"SELECT count(*) FROM {links}"),
        "links_to_documents": scalar(f"SELECT count(*) FROM {links} WHERE target_doc_id IS NOT NULL"),
        "links_via_redirect": scalar(f"SELECT count(*) FROM {links} WHERE via_redirect"),
        "links_dropped": dict(sorted(dropped_links.items())),
        "citations": scalar(f"SELECT count(*) FROM {refs}"),
        "citations_with_url": scalar(f"SELECT count(*) FROM {refs} WHERE url IS NOT NULL"),
    }
