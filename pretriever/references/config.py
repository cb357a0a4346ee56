"""Settings of ``pretriever references fetch`` (also the ``[references]`` table of a TOML config).

The politeness defaults (32 connections in all, 2 per host, 1 s between two requests to one
host, robots.txt honoured) and the limits (5 MB, 5 redirects) are pretriever's choices for a
crawl of Wikipedia's citations; the C-MORE paper does not say how its references were fetched.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pretriever import __version__
from pretriever.config import option, overwrite_option, refuse_resume_with_overwrite, resume_option

PROJECT_URL = "https://github.com/pretriever/pretriever"
DEFAULT_USER_AGENT = f"pretriever/{__version__} (+{PROJECT_URL}; citation fetcher)"
HTML_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
PDF_TYPE = "application/pdf"


PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")


@dataclass
class FetchConfig:
    """One fetch job: which store, where to write, how politely and how safely to fetch."""

    corpus: Path = option(help="The corpus store whose citations are fetched.")
    out: Path = option(help="Folder for references.parquet, citations.parquet and manifest.json.")
    concurrency: int = option(32, "Requests in flight over all hosts.")
    per_host: int = option(2, "Requests in flight to one host.")
    host_delay: float = option(1.0, "Seconds between the starts of two requests to one host "
                                    "(raised to the host's robots.txt Crawl-delay).")
    connect_timeout: float = option(10.0, "Seconds to open a connection.")
    read_timeout: float = option(20.0, "Seconds to wait for the next bytes of a response.")
    total_timeout: float = option(60.0, "Seconds for one request from connect to the last byte.")
    max_bytes: int = option(5_000_000, "Largest body kept, in bytes, counted after decompression; "
                                       "longer downloads are aborted (error too_large).")
    max_redirects: int = option(5, "Redirect hops followed (each is resolved and checked).")
    retries: int = option(3, "Retries after a connection error, a 429 or a 5xx.")
    backoff: float = option(1.0, "Base of the exponential backoff in seconds (with jitter).")
    max_retry_after: float = option(120.0, "Longest Retry-After honoured, in seconds; a longer one "
                                           "is a permanent failure.")
    user_agent: str = option(DEFAULT_USER_AGENT, "User-Agent header, also the robots.txt agent.")
    robots: bool = option(True, "Honour robots.txt (read once per host, as RFC 9309 says: a 4xx means no rules; "
                                "a 5xx, a timeout, a refused connection or a corrupt file means nothing on the "
                                "host is fetched, each URL's failure saying robots.txt was unreachable).")
    pdf: bool = option(False, "Also accept PDF (text from pypdf: pip install 'pretriever[pdf]').")
    allow_private: bool = option(False, "Allow private, loopback, link-local and reserved addresses.")
    proxy: str | None = option(None, "Send every request through this HTTP proxy URL. The address guard still "
                                     "applies: each host, redirect hops included, is resolved here first and "
                                     "refused when not public (so names must resolve on this machine too); the "
                                     "proxy's own address is trusted for the connection to it, never as a target. Its "
                                     "user:password is never written (manifest.json and messages show ***).",
                               default_help="$HTTPS_PROXY or $HTTP_PROXY when set, else none")
    resolve: dict[str, str] = option(default_factory=dict, help=(
        "Pin host names to addresses, like curl --resolve HOST:ADDR (pinned addresses are trusted)."))
    prefer_archive: bool = option(False, "Fetch the citation's archive-url first, the original "
                                         "only when the archive fails.")
    archive_fallback: bool = option(True, "Fetch the archive-url when the original fails.")
    extract_workers: int = option(2, "Threads running text extraction (trafilatura).")
    checkpoint_rows: int = option(500, "Finished pages per checkpoint part (each page is also "
                                       "journalled at once, so a kill loses only pages in flight).")
    limit: int | None = option(None, "Fetch at most this many unique URLs (a sample).")
    resume: bool = resume_option("an interrupted job: finished URLs are not fetched again, failed ones neither "
                                  "(see --retry-failed)")
    retry_failed: bool = option(False, "With --resume, fetch again the URLs whose row is a failure (any error "
                                       "in references.parquet); the new row replaces the old one.")
    overwrite: bool = overwrite_option("the results in --out")

    def __post_init__(self) -> None:
        self.corpus, self.out = Path(self.corpus), Path(self.out)
        for name in ("concurrency", "per_host", "max_redirects", "extract_workers", "checkpoint_rows"):
            if getattr(self, name) < (0 if name == "max_redirects" else 1):
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        for name in ("host_delay", "backoff", "retries"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative, got {getattr(self, name)}")
        refuse_resume_with_overwrite(self.resume, self.overwrite, "--out")
        if self.retry_failed and not self.resume:
            raise ValueError("--retry-failed goes with --resume (it fetches again the failures of an earlier run)")
        if self.proxy is None:  # behind a gateway, as curl and pip do
            self.proxy = next((os.environ[v] for v in PROXY_VARIABLES if os.environ.get(v)), None)

    @property
    def content_types(self) -> tuple[str, ...]:
        return HTML_TYPES + ((PDF_TYPE,) if self.pdf else ())


@dataclass
class ImportConfig:
    """One import: pre-crawled pages (WARC or JSONL) into the same tables as a fetch."""

    files: list[Path] = option(help="WARC files (.warc, .warc.gz) or JSONL files of {url, html|text}.")
    out: Path = option(help="Folder for references.parquet (and citations.parquet with --corpus).")
    corpus: Path | None = option(None, "A corpus store: keep only its cited URLs, write citations.parquet "
                                       "and the funnel.")
    max_bytes: int = option(5_000_000, "Records with a longer body are recorded as too_large.")
    pdf: bool = option(False, "Also read PDF records (text from pypdf).")
    extract_workers: int = option(2, "Threads running text extraction (trafilatura).")
    allow_truncated: bool = option(False, "Import the records before the end of a WARC file that is cut off, "
                                          "or before a record whose Content-Length is wrong (listed as truncated "
                                          "in manifest.json), instead of stopping with exit status 4.")
    resume: bool = resume_option("a failed or earlier import in --out: URLs already imported are kept and not "
                                  "imported again")
    overwrite: bool = overwrite_option("the results in --out")

    def __post_init__(self) -> None:
        refuse_resume_with_overwrite(self.resume, self.overwrite, "--out")
        self.files = [Path(f) for f in self.files]
        self.out = Path(self.out)
        self.corpus = Path(self.corpus) if self.corpus is not None else None
        if not self.files:
            raise ValueError("give at least one WARC or JSONL file")

    @property
    def content_types(self) -> tuple[str, ...]:
        return HTML_TYPES + ((PDF_TYPE,) if self.pdf else ())
