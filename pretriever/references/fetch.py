"""``pretriever references fetch``: download every URL a corpus store cites, once, resumably.

``concurrency`` workers take URLs in host-interleaved order; each page goes through
:class:`~pretriever.references.client.PageClient` (politeness, robots.txt, address checks,
caps, retries), then trafilatura in a thread pool, then one journalled row of ``references``.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from pretriever.data.store import CorpusStore
from pretriever.io import write_parquet
from pretriever.progress import QUIET, Reporter
from pretriever.references.citations import CitedUrls, cited_urls, load_citation_urls
from pretriever.references.client import Page, PageClient
from pretriever.references.config import FetchConfig
from pretriever.references.errors import FetchFailure
from pretriever.references.extract import extract_text
from pretriever.references.manifest import ReferencesManifest
from pretriever.references.table import CITATIONS_FILE, ReferenceWriter, references_folder
from pretriever.references.urls import redact
from pretriever.stage import StageResult

FETCHING = "fetching"  # the Reporter's task: pages done of those this run fetches


@dataclass
class ReferencesResult(StageResult):
    """A fetch or an import: ``out`` holds references.parquet, ``manifest`` is its manifest.json."""

    manifest: ReferencesManifest | None = None


@dataclass
class Tally:
    """Running figures of a fetch, for the progress line and the manifest."""

    total: int = 0
    done: int = 0
    bytes: int = 0
    failures: Counter = field(default_factory=Counter)

    def add(self, row: dict[str, Any]) -> None:
        self.done += 1
        self.bytes += row["bytes"] or 0
        if row["error"]:
            self.failures[row["error"]] += 1

    def tell(self, report: Reporter) -> None:
        """Pages done (the reporter shows pages/s), MB downloaded and the failures so far."""
        failed = ", ".join(f"{k} {v}" for k, v in self.failures.most_common()) or "none"
        report.progress(FETCHING, self.done, self.total, unit="pages", MB=round(self.bytes / 1e6, 2), failures=failed)


def now_iso() -> str:
    """The time now in UTC, to the second, as ISO 8601: a reference row's ``fetched_at``."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def page_row(url: str, page: Page, title: str | None, text: str | None, source: str, via_archive: bool,
             fetched_at: str | None = None) -> dict[str, Any]:
    """The references-table row of a fetched page (``error`` is ``extract_empty`` when no main text came out)."""
    return {"url": url, "final_url": page.final_url, "status": page.status, "content_type": page.content_type,
            "fetched_at": fetched_at or now_iso(), "bytes": len(page.body), "title": title, "text": text,
            "error": None if text else "extract_empty", "error_detail": None, "source": source,
            "via_archive": via_archive}


def failure_row(url: str, failure: FetchFailure, source: str, fetched_at: str | None = None) -> dict[str, Any]:
    """The references-table row of a URL that failed: the reason as ``error``, the message as ``error_detail``."""
    return {"url": url, "final_url": failure.final_url, "status": failure.status,
            "content_type": failure.content_type, "fetched_at": fetched_at or now_iso(), "bytes": 0,
            "title": None, "text": None, "error": failure.reason, "error_detail": str(failure), "source": source,
            "via_archive": False}


async def extract_row(url: str, page: Page, pool: ThreadPoolExecutor, source: str, via_archive: bool,
                      fetched_at: str | None = None) -> dict[str, Any]:
    """The row of a downloaded page, with trafilatura run off the event loop."""
    try:
        title, text = await asyncio.get_running_loop().run_in_executor(
            pool, extract_text, page.body, page.content_type, page.charset, page.final_url)
    except FetchFailure as failure:
        failure.status, failure.final_url, failure.content_type = page.status, page.final_url, page.content_type
        return failure_row(url, failure, source, fetched_at)
    return page_row(url, page, title, text, source, via_archive, fetched_at)


async def fetch_one(client: PageClient, pool: ThreadPoolExecutor, url: str, archive: str | None,
                    cfg: FetchConfig) -> dict[str, Any]:
    """The row of one cited URL: the original, or its archive copy first or as a fallback."""
    candidates = [url]
    if archive and cfg.prefer_archive:
        candidates = [archive, url]
    elif archive and cfg.archive_fallback:
        candidates = [url, archive]
    failures: dict[str, FetchFailure] = {}
    for candidate in candidates:
        try:
            page = await client.get(candidate)
        except FetchFailure as failure:
            failures[candidate] = failure
            continue
        return await extract_row(url, page, pool, "fetch", via_archive=candidate != url)
    return failure_row(url, failures.get(url) or failures[candidates[0]], "fetch")


def to_fetch(cfg: FetchConfig, targets: list[tuple[str, str | None]],
             writer: ReferenceWriter) -> list[tuple[str, str | None]]:
    """The targets without a row yet, and with ``retry_failed`` those whose row is a failure."""
    return [t for t in targets if t[0] not in writer.done or (cfg.retry_failed and t[0] in writer.failed)]


async def run_fetch(cfg: FetchConfig, todo: list[tuple[str, str | None]], writer: ReferenceWriter,
                    tally: Tally, report: Reporter = QUIET) -> None:
    """Fetch ``todo`` (see :func:`to_fetch`) with ``cfg.concurrency`` workers."""
    queue = iter(todo)

    async def worker() -> None:
        for url, archive in queue:  # one shared iterator: each URL goes to exactly one worker
            row = await fetch_one(client, pool, url, archive, cfg)
            writer.add(row)
            tally.add(row)
            tally.tell(report)

    with ThreadPoolExecutor(cfg.extract_workers, thread_name_prefix="extract") as pool:
        async with PageClient(cfg) as client:
            await asyncio.gather(*(worker() for _ in range(cfg.concurrency)))


def funnel_of(base: dict[str, int], table: pa.Table) -> dict[str, int]:
    """``base`` (the URL counts so far) with how many rows of ``table`` were fetched (2xx) and gave text."""
    ok = pc.and_(pc.greater_equal(table["status"], 200), pc.less(table["status"], 300))
    return {**base, "fetched": pc.sum(pc.fill_null(ok, False)).as_py() or 0,
            "text_extracted": table.num_rows - table["text"].null_count}


def failures_of(table: pa.Table) -> dict[str, int]:
    """How many rows of ``table`` failed for each reason, the most common first."""
    counts = pc.value_counts(table["error"].drop_null()).to_pylist()
    return dict(sorted(((c["values"], c["counts"]) for c in counts), key=lambda kv: -kv[1]))


def write_outputs(cfg_dict: dict[str, Any], out, mapping: pa.Table, table: pa.Table, base_funnel: dict[str, int],
                  seconds: float, **extra: Any) -> ReferencesManifest:
    """citations.parquet and manifest.json beside references.parquet; returns the manifest."""
    write_parquet(mapping, out / CITATIONS_FILE)
    manifest = ReferencesManifest.from_json({
        "config": cfg_dict, "funnel": funnel_of(base_funnel, table), "failures": failures_of(table),
        "via_archive": pc.sum(table["via_archive"]).as_py() or 0, "seconds": round(seconds, 3), **extra})
    manifest.write(out)
    references_folder(out).seal()
    return manifest


def config_dict(cfg: Any) -> dict[str, Any]:
    """The options for manifest.json, paths as text and credentials in URLs (a proxy's) redacted."""
    return {k: (str(v) if hasattr(v, "__fspath__") else [str(x) for x in v] if isinstance(v, list)
                else redact(v) if isinstance(v, str) else v)
            for k, v in asdict(cfg).items()}


def fetch_cited(cfg: FetchConfig, cited: CitedUrls, report: Reporter = QUIET) -> dict[str, Any]:
    """Fetch the URLs of ``cited`` into ``cfg.out`` (resuming when asked); returns the manifest."""
    started = time.monotonic()
    writer = ReferenceWriter(cfg.out, resume=cfg.resume, overwrite=cfg.overwrite, part_rows=cfg.checkpoint_rows,
                             report=report)
    targets = cited.targets[:cfg.limit] if cfg.limit is not None else cited.targets
    todo = to_fetch(cfg, targets, writer)
    tally = Tally(total=len(todo))
    tally.tell(report)
    asyncio.run(run_fetch(cfg, todo, writer, tally, report))
    table = writer.close()
    return write_outputs(config_dict(cfg), cfg.out, cited.mapping, table, cited.funnel,
                         time.monotonic() - started, this_run={"fetched": tally.done,
                                                               "failures": dict(tally.failures)})


def run(cfg: FetchConfig, report: Reporter = QUIET) -> ReferencesResult:
    """``pretriever references fetch``: every cited URL of the store at ``cfg.corpus``; ``report`` hears the
    pages done, the MB downloaded and the failures."""
    manifest = fetch_cited(cfg, cited_urls(load_citation_urls(CorpusStore(cfg.corpus))), report)
    return ReferencesResult(out=cfg.out, manifest=manifest)
