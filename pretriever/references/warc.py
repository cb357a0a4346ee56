"""``pretriever references import``: pre-crawled pages (WARC, e.g. Common Crawl, or JSONL) as ``references``.

At Wikipedia scale, looking the cited URLs up in an existing crawl is the realistic route, so
an import writes the same table as a fetch (``source`` = ``warc`` or ``jsonl``). The first record
of a URL wins; later ones are counted as duplicates.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from pretriever.data.store import CorpusStore
from pretriever.errors import PretrieverError
from pretriever.references.citations import cited_urls, load_citation_urls
from pretriever.references.client import Page, media_type
from pretriever.references.config import ImportConfig
from pretriever.references.errors import FetchFailure
from pretriever.references.fetch import config_dict, extract_row, failure_row, now_iso, write_outputs
from pretriever.references.table import CITATIONS_SCHEMA, ReferenceWriter
from pretriever.references.urls import normalise_url


class ImportInputError(PretrieverError):
    """An input file of ``references import`` cannot be read; the message names it (and the line)."""


Record = tuple[str, Page, str, str]  # url, page, source, fetched_at


def warc_records(path: Path, cap: int) -> Iterator[Record]:
    """HTTP response records of a WARC file (gzip or not), bodies decoded from chunking and gzip."""
    try:
        with open(path, "rb") as stream:
            for record in ArchiveIterator(stream):
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI") or ""
                status = int(record.http_headers.get_statuscode() or 0)
                kind, charset = media_type(record.http_headers.get_header("Content-Type"))
                body = record.content_stream().read(cap + 1)
                when = record.rec_headers.get_header("WARC-Date") or now_iso()
                yield url, Page(url, url, status, kind, charset, body), "warc", when
    except (ArchiveLoadFailed, OSError, ValueError) as err:
        raise ImportInputError(f"{path}: not a readable WARC file ({err})") from err


def jsonl_records(path: Path) -> Iterator[Record]:
    """Lines ``{"url": ..., "html": ...}`` or ``{"url": ..., "text": ...}`` (optional ``title`` is ignored)."""
    with open(path, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
                url = item["url"]
            except (json.JSONDecodeError, KeyError, TypeError) as err:
                raise ImportInputError(f"{path}:{number}: expected a JSON object with url and html or text ({err})") from err
            if isinstance(item.get("html"), str):
                kind, body = "text/html", item["html"]
            elif isinstance(item.get("text"), str):
                kind, body = "text/plain", item["text"]
            else:
                raise ImportInputError(f"{path}:{number}: {url}: neither an html nor a text string")
            page = Page(url, url, int(item.get("status", 200)), kind, "utf-8", body.encode("utf-8"))
            yield url, page, "jsonl", item.get("fetched_at") or now_iso()


def records(path: Path, cap: int) -> Iterator[Record]:
    if not path.exists():
        raise ImportInputError(f"{path}: no such file")
    name = path.name.lower()
    if name.endswith((".jsonl", ".json")):
        return jsonl_records(path)
    return warc_records(path, cap)


def check_page(page: Page, cfg: ImportConfig) -> None:
    if not 200 <= page.status < 300:
        raise FetchFailure("status", f"{page.url}: HTTP {page.status}", status=page.status)
    if page.content_type is not None and page.content_type not in cfg.content_types:
        raise FetchFailure("content_type", f"{page.url}: {page.content_type}", status=page.status)
    if len(page.body) > cfg.max_bytes:
        raise FetchFailure("too_large", f"{page.url}: over {cfg.max_bytes:,} bytes", status=page.status)


async def _import(cfg: ImportConfig, wanted: set[str] | None, writer: ReferenceWriter) -> Counter:
    counts: Counter = Counter()
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(cfg.extract_workers) as pool:
        pending: set[asyncio.Future] = set()
        try:
            for path in cfg.files:
                for raw_url, page, source, when in records(path, cfg.max_bytes):
                    counts["records"] += 1
                    url = normalise_url(raw_url)
                    if url is None or (wanted is not None and url not in wanted):
                        counts["not_cited" if url else "bad_url"] += 1
                        continue
                    if url in writer.done:
                        counts["duplicates"] += 1
                        continue
                    writer.done.add(url)
                    try:
                        check_page(page, cfg)
                    except FetchFailure as failure:
                        failure.final_url, failure.content_type = page.final_url, page.content_type
                        writer.add(failure_row(url, failure, source, when))
                        continue
                    pending.add(loop.create_task(extract_row(url, page, pool, source, False, when)))
                    if len(pending) >= 4 * cfg.extract_workers:
                        finished, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                        for task in finished:
                            writer.add(task.result())
            for task in asyncio.as_completed(pending):
                writer.add(await task)
        except BaseException:  # a bad input line: drop the extractions not yet run
            for task in pending:
                task.cancel()
            raise
    return counts


def import_references(cfg: ImportConfig) -> dict[str, Any]:
    """Import ``cfg.files`` into ``cfg.out``; returns the manifest (funnel, failures, record counts)."""
    started = time.monotonic()
    if cfg.corpus is not None:
        cited = cited_urls(load_citation_urls(CorpusStore(cfg.corpus)))
        mapping, funnel, wanted = cited.mapping, cited.funnel, {url for url, _ in cited.targets}
    else:
        mapping, funnel, wanted = CITATIONS_SCHEMA.empty_table(), {}, None
    writer = ReferenceWriter(cfg.out, resume=False, overwrite=cfg.overwrite)
    counts = asyncio.run(_import(cfg, wanted, writer))
    table = writer.close()
    return write_outputs(config_dict(cfg), cfg.out, mapping, table, funnel, time.monotonic() - started,
                         records=dict(counts))
