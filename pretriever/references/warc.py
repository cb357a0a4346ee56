"""``pretriever references import``: pre-crawled pages (WARC, e.g. Common Crawl, or JSONL) as ``references``.

At Wikipedia scale, looking the cited URLs up in an existing crawl is the realistic route, so
an import writes the same table as a fetch (``source`` = ``warc`` or ``jsonl``). The first record
of a URL wins; later ones are counted as duplicates.
"""

from __future__ import annotations

import asyncio
import json
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from warcio.archiveiterator import ArchiveIterator
from warcio.exceptions import ArchiveLoadFailed

from pretriever.data.store import CorpusStore
from pretriever.errors import PretrieverError
from pretriever.progress import QUIET, Reporter
from pretriever.references.citations import cited_urls, load_citation_urls
from pretriever.references.client import Page, media_type
from pretriever.references.config import ImportConfig
from pretriever.references.errors import FetchFailure
from pretriever.references.fetch import ReferencesResult, config_dict, extract_row, failure_row, now_iso, write_outputs
from pretriever.references.table import CITATIONS_SCHEMA, ReferenceWriter
from pretriever.references.urls import normalise_url

IMPORTING = "importing"  # the Reporter's task: records read from the files


class ImportInputError(PretrieverError):
    """An input file of ``references import`` cannot be read; the message names it (and the line)."""


class TruncatedInput(ImportInputError):
    """A WARC file ends inside a record; what was read before it is kept for --resume."""

    exit_code = 4  # as corpus build's unreadable input: fix the input and run again with --resume

    def __init__(self, path: Path, record: int, offset: int):
        super().__init__(f"{path}: the file ends, or is corrupt, inside record {record} (which starts at byte "
                         f"{offset:,}): truncated? The {record - 1:,} records before it were read; give "
                         "--allow-truncated to import them and leave the rest of the file out")
        self.where = {"file": str(path), "record": record, "byte": offset}


Record = tuple[str, Page, str, str]  # url, page, source, fetched_at


def _cut(archive: ArchiveIterator, record) -> bool:
    """Whether the record just read to its end was cut off: its block is shorter than its Content-Length,
    its Content-Length does not end where the record does (warcio counts the record not followed by its blank
    lines in ``err_count``, and only warns on stderr: the next record is swallowed), or (gzip) its member has no
    end and no record follows in it."""
    if getattr(record.raw_stream, "limit", 0) > 0 or archive.err_count:
        return True
    decompressor = archive.reader.decompressor
    return decompressor is not None and not decompressor.eof and not archive.next_line


def _reason(err: Exception) -> str:
    """warcio's message on one printable line, without the raw bytes it quotes."""
    text = (str(err).split(", first line:")[0].strip().splitlines() or [""])[0]
    return text.encode("ascii", "replace").decode()[:120] or type(err).__name__


def warc_records(path: Path, cap: int) -> Iterator[Record]:
    """HTTP response records of a WARC file (gzip or not), bodies decoded from chunking and gzip; a record cut
    off by the end of the file raises :class:`TruncatedInput`, never passes as complete."""
    try:
        with open(path, "rb") as stream:
            archive = ArchiveIterator(stream)
            records, number, next_start = iter(archive), 0, 0
            while True:
                try:
                    record = next(records)
                except StopIteration:
                    break
                except (AttributeError, TypeError, ValueError) as err:  # warcio on a header block cut short
                    raise TruncatedInput(path, number + 1, next_start) from err
                except ArchiveLoadFailed as err:
                    if number:  # after whole records: the next one is cut or corrupt
                        raise TruncatedInput(path, number + 1, next_start) from err
                    raise
                number += 1
                if record.format != "warc":
                    raise ImportInputError(f"{path}: not a WARC file (record {number} at byte {next_start:,} "
                                           f"reads as {record.format.upper()})")
                response = record.rec_type == "response" and record.http_headers is not None
                body = record.content_stream().read(cap + 1) if response else b""
                archive.read_to_end()  # the rest of the record and of its gzip member
                if record.rec_type is None or record.length is None or _cut(archive, record):
                    raise TruncatedInput(path, number, next_start)
                next_start = archive.offset
                if not response:
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI") or ""
                status = int(record.http_headers.get_statuscode() or 0)
                kind, charset = media_type(record.http_headers.get_header("Content-Type"))
                when = record.rec_headers.get_header("WARC-Date") or now_iso()
                yield url, Page(url, url, status, kind, charset, body), "warc", when
            if next_start < path.stat().st_size:  # warcio stops quietly at a record cut short
                raise TruncatedInput(path, number + 1, next_start)
            if number == 0:
                raise ImportInputError(f"{path}: is empty, not a WARC file")
    except ArchiveLoadFailed as err:
        raise ImportInputError(f"{path}: not a WARC file ({_reason(err)})") from err
    except (OSError, ValueError, zlib.error) as err:
        raise ImportInputError(f"{path}: not a readable WARC file ({_reason(err)})") from err


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
    """The pages of a crawl file: JSONL (by its name) or WARC (a body read to just past ``cap``: too large shows)."""
    if not path.exists():
        raise ImportInputError(f"{path}: no such file")
    name = path.name.lower()
    if name.endswith((".jsonl", ".json")):
        return jsonl_records(path)
    return warc_records(path, cap)


def check_page(page: Page, cfg: ImportConfig) -> None:
    """Refuse, as the fetcher would, a page that is not a 2xx, has a content type not asked for, or is over the size
    cap.
    """
    if not 200 <= page.status < 300:
        raise FetchFailure("status", f"{page.url}: HTTP {page.status}", status=page.status)
    if page.content_type is not None and page.content_type not in cfg.content_types:
        raise FetchFailure("content_type", f"{page.url}: {page.content_type}", status=page.status)
    if len(page.body) > cfg.max_bytes:
        raise FetchFailure("too_large", f"{page.url}: over {cfg.max_bytes:,} bytes", status=page.status)


async def _import(cfg: ImportConfig, wanted: set[str] | None, writer: ReferenceWriter,
                  report: Reporter) -> tuple[Counter, list]:
    """Records -> rows; returns the record counts and where files were cut (with --allow-truncated)."""
    counts: Counter = Counter()
    truncated: list[dict[str, Any]] = []
    before = set(writer.done)  # imported by an earlier run (--resume)
    loop = asyncio.get_running_loop()
    with ThreadPoolExecutor(cfg.extract_workers) as pool:
        pending: set[asyncio.Future] = set()
        try:
            for path in cfg.files:
                try:
                    for raw_url, page, source, when in records(path, cfg.max_bytes):
                        counts["records"] += 1
                        report.progress(IMPORTING, counts["records"], unit="records")
                        url = normalise_url(raw_url)
                        if url is None or (wanted is not None and url not in wanted):
                            counts["not_cited" if url else "bad_url"] += 1
                            continue
                        if url in writer.done:
                            counts["imported_before" if url in before else "duplicates"] += 1
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
                except TruncatedInput as cut:
                    if not cfg.allow_truncated:
                        raise
                    truncated.append(cut.where)
        except ImportInputError:  # a bad file: keep every record read before it (for --resume)
            for task in asyncio.as_completed(pending):
                writer.add(await task)
            raise
        except BaseException:  # interrupted: drop the extractions not yet run
            for task in pending:
                task.cancel()
            raise
        for task in asyncio.as_completed(pending):
            writer.add(await task)
    return counts, truncated


def run(cfg: ImportConfig, report: Reporter = QUIET) -> ReferencesResult:
    """``pretriever references import``: ``cfg.files`` into ``cfg.out``; the manifest holds the funnel, failures,
    record counts, and the files cut short when ``cfg.allow_truncated``. ``report`` hears the records read."""
    started = time.monotonic()
    if cfg.corpus is not None:
        cited = cited_urls(load_citation_urls(CorpusStore(cfg.corpus)))
        mapping, funnel, wanted = cited.mapping, cited.funnel, {url for url, _ in cited.targets}
    else:
        mapping, funnel, wanted = CITATIONS_SCHEMA.empty_table(), {}, None
    writer = ReferenceWriter(cfg.out, resume=cfg.resume, overwrite=cfg.overwrite, report=report)
    try:
        counts, truncated = asyncio.run(_import(cfg, wanted, writer, report))
    except ImportInputError as err:
        kept = writer.abandon()
        hint = (f"the {kept:,} references imported before it are kept: run again with --resume (after "
                "fixing the file) or --overwrite to start again" if kept else "nothing was imported")
        err.args = (f"{err}; {hint}",)
        raise
    table = writer.close()
    manifest = write_outputs(config_dict(cfg), cfg.out, mapping, table, funnel, time.monotonic() - started,
                             records=dict(counts), truncated=truncated)
    return ReferencesResult(out=cfg.out, manifest=manifest)
