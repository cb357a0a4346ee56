"""Canned pages for URLs the real enwiki sample cites (tests/data/cmore_pages/: navigation, cookie banner,
sidebar, footer around an article that states the cited facts; index.json maps url -> file), and
``make_refs``, which turns them into a REFS_DIR the way `pretriever references fetch` does (trafilatura main
text), so qac can be mined without the fetcher. Shared by the qac and serve tests."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

PAGES = Path(__file__).parent / "data" / "cmore_pages"
REFERENCES = pa.schema([("url", pa.string()), ("final_url", pa.string()), ("status", pa.int32()),
                        ("content_type", pa.string()), ("fetched_at", pa.string()), ("bytes", pa.int64()),
                        ("title", pa.string()), ("text", pa.string()), ("error", pa.string()),
                        ("source", pa.string()), ("via_archive", pa.bool_())])


def make_refs(store, out: Path) -> Path:
    """A REFS_DIR for the canned pages, as the fetcher writes it (references + citations tables)."""
    import trafilatura

    index = json.loads((PAGES / "index.json").read_text(encoding="utf-8"))
    rows = []
    for url, name in index.items():
        page = (PAGES / name).read_text(encoding="utf-8")
        rows.append({"url": url, "final_url": url, "status": 200, "content_type": "text/html; charset=utf-8",
                     "fetched_at": "2026-01-01T00:00:00Z", "bytes": len(page.encode("utf-8")),
                     "title": trafilatura.extract_metadata(page).title, "text": trafilatura.extract(page),
                     "error": None, "source": "test", "via_archive": False})
    rows.append({"url": "http://example.invalid/gone", "final_url": None, "status": 404, "content_type": None,
                 "fetched_at": "2026-01-01T00:00:00Z", "bytes": 0, "title": None, "text": None,
                 "error": "status 404", "source": "test", "via_archive": False})
    out.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=REFERENCES), out / "references.parquet")
    cites = pq.read_table(store.path / "citations", columns=["doc_id", "citation_idx", "url", "archive_url"])
    cites = cites.filter(pa.compute.is_in(cites.column("url"), pa.array(list(index))))
    pq.write_table(cites, out / "citations.parquet")
    return out
