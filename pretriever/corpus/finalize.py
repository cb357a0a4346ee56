"""The build's second phase: whole-corpus joins, written once as Ibis expressions, run by the build's engine.

Redirect chains are followed (up to :data:`MAX_REDIRECT_HOPS`) and every link gets its
final target title and, when that page is in the store, its document id. The same
expressions run on DuckDB (``--engine local``, out of core) and on Spark
(``--engine spark``); every output is written by pyarrow in a fixed order, so both
engines write the same bytes. Then the chunk tables are moved into place.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import ibis
import ibis.expr.types as ir
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pretriever.backends import quiet
from pretriever.corpus.engine import BuildEngine, part_files
from pretriever.corpus.model import InputError
from pretriever.corpus.schema import DOCUMENTS, LINKS, PAGES, REDIRECTS, STORE_TABLES
from pretriever.corpus.summary import add_up, summaries
from pretriever.io import ParquetBatchWriter

MAX_REDIRECT_HOPS = 5
MOVED_TABLES = ("passages", "sentences", "sections", "citations", "page_tags")


def finalize_store(out: Path, work: Path, engine: BuildEngine) -> dict[str, Any]:
    """Write documents, pages, redirects and resolved links; move the chunk tables into ``out``. Returns the
    manifest's keys that say what the store holds (counts, dropped documents, errors, tables)."""
    with quiet():
        engine.open(work)
        pages = engine.read(work / "pages")
        _check_unique_ids(engine, pages)
        write_pages_and_documents(part_files(work / "pages"), out)
        redirects = engine.materialize(redirect_chains(pages), "redirects")
        engine.write_sorted(redirects, ["title"], REDIRECTS, out / "redirects.parquet")
        titles = engine.materialize(title_map(pages), "title_map")
        engine.write_parts(work / "links_raw", lambda links: resolve_links(links, redirects, titles), LINKS,
                           out / "links")
        for name in MOVED_TABLES:
            target = out / name
            if target.exists():
                shutil.rmtree(target)
            os.replace(work / name, target)
        status, dropped_links, failures = add_up(summaries(work))
        counts = _counts(engine, out, pages, status, dropped_links)
        dropped = engine.to_arrow(dropped_documents(pages)).to_pylist()
    return {"counts": counts, "dropped_documents": dropped, "errors": failures,
            "tables": {name: (f"{name}/" if is_dir else f"{name}.parquet")
                       for name, (_, is_dir) in STORE_TABLES.items()}}


# --- the logic: Ibis expressions over the chunk tables ------------------------------------


def redirect_chains(pages: ir.Table) -> ir.Table:
    """Each redirect's title and the title at the end of its chain, with the hops taken (1 to 5).

    A chain stops at a title that is not a redirect, after :data:`MAX_REDIRECT_HOPS` hops, or
    just before it would come back to where it started (a cycle); a title redirected twice
    follows the smaller target. Each step is one join, so it runs as well on Spark as on DuckDB.
    """
    redirect = pages.filter(pages.status == "redirect")
    direct = redirect.group_by("title").aggregate(target=redirect.redirect_to.min())
    step = direct.select(_from=direct.title, _to=direct.target)
    chain = direct.select("title", "target", hops=ibis.literal(1, "int32"))
    for _ in range(MAX_REDIRECT_HOPS - 1):
        nxt = step.view()  # a fresh alias: chain and step come from the same table
        joined = chain.left_join(nxt, chain.target == nxt._from)
        moves = joined._to.notnull() & (joined._to != joined.title)
        chain = joined.select("title", target=moves.ifelse(joined._to, joined.target),
                              hops=moves.ifelse(joined.hops + 1, joined.hops).cast("int32")).view()  # joined again
    return chain.select("title", target_title=chain.target, hops=chain.hops)


def title_map(pages: ir.Table) -> ir.Table:
    """Title -> document id of the documents kept (the smallest id when two share a title)."""
    kept = pages.filter(pages.status == "kept")
    return kept.group_by("title").aggregate(doc_id=kept.doc_id.min())


def resolve_links(links: ir.Table, redirects: ir.Table, titles: ir.Table) -> ir.Table:
    """Links as parsed plus ``target_title`` (redirects followed), ``target_doc_id`` (when that title is a
    document of the store) and ``via_redirect``; every column of ``links`` (e.g. ``_row``) is kept."""
    r = redirects.select(_r_title=redirects.title, _r_target=redirects.target_title)
    t = titles.select(_t_title=titles.title, _t_doc=titles.doc_id)
    first = links.left_join(r, links.written_target == r._r_title)
    first = first.select(*links.columns, target_title=ibis.coalesce(first._r_target, first.written_target),
                         via_redirect=first._r_title.notnull()).view()  # a relation of its own to join again
    second = first.left_join(t, first.target_title == t._t_title)
    return second.select(*first.columns, target_doc_id=second._t_doc)


def dropped_documents(pages: ir.Table, limit: int = 1000) -> ir.Table:
    """The first ``limit`` pages dropped by a filter (short title, blank text), by title."""
    dropped = pages.filter(pages.status.startswith("dropped"))
    return dropped.select("title", "status").order_by(["title", "status"]).limit(limit)


def _check_unique_ids(engine: BuildEngine, pages: ir.Table) -> None:
    kept = pages.filter(pages.status == "kept")
    dupes = (kept.group_by("doc_id").aggregate(n=kept.count()).filter(lambda t: t.n > 1)
             .order_by("doc_id").limit(5))
    rows = engine.to_arrow(dupes).to_pylist()
    if rows:
        shown = ", ".join(f"{r['doc_id']!r} ({r['n']} times)" for r in rows)
        raise InputError(f"document ids must be unique; repeated: {shown}")


def write_pages_and_documents(parts: list[Path], out: Path) -> None:
    """``pages.parquet`` (every page, in input order) and ``documents.parquet`` (the pages kept): a
    concatenation, streamed by pyarrow whatever the engine."""
    with (ParquetBatchWriter(out / "pages.parquet", PAGES) as pages,
          ParquetBatchWriter(out / "documents.parquet", DOCUMENTS) as documents):
        for part in parts:
            for batch in pq.ParquetFile(part).iter_batches():
                pages.write(batch)
                documents.write(batch.filter(pc.equal(batch.column("status"), "kept")))


def _counts(engine: BuildEngine, out: Path, pages: ir.Table, status, dropped_links) -> dict[str, Any]:
    def counts(table: str, **where) -> dict[str, int]:
        t = engine.read(out / table)
        metrics = {table: t.count(), **{name: t.count(where=cond(t)) for name, cond in where.items()}}
        return engine.to_arrow(t.aggregate(**metrics)).to_pylist()[0]

    links = counts("links", links_to_documents=lambda t: t.target_doc_id.notnull(),
                   links_via_redirect=lambda t: t.via_redirect)
    citations = counts("citations", citations_with_url=lambda t: t.url.notnull())
    disambiguation = pages.filter((pages.status == "kept") & pages.is_disambiguation).count()
    return {
        "pages": sum(status.values()),
        "documents": status.get("kept", 0),
        "redirects": status.get("redirect", 0),
        "non_article_pages": status.get("non_article", 0),
        "dropped_short_title": status.get("dropped_short_title", 0),
        "dropped_blank": status.get("dropped_blank", 0),
        "errors": status.get("error", 0),
        "disambiguation_documents": int(engine.to_arrow(disambiguation).as_py()),
        **counts("passages"),
        **counts("sentences"),
        **links,
        "links_dropped": dict(sorted(dropped_links.items())),
        **citations,
    }
