"""``pretriever references ...``: the pages citations point at, fetched or imported from a crawl."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from pretriever.cli.common import stage
from pretriever.config import build_config, help_for
from pretriever.progress import count_progress, console
from pretriever.references.config import FetchConfig, ImportConfig
from pretriever.references.fetch import Progress, fetch_references
from pretriever.references.warc import import_references

references_app = typer.Typer(
    help=("Stage 1b: fetch the pages that citations point at (or import them from WARC/JSONL crawls) into "
          "references.parquet, for the qac mining method (C-MORE)."),
    no_args_is_help=True,
)


def _pairs(values: list[str] | None) -> dict[str, str] | None:
    if not values:
        return None
    pairs = {}
    for value in values:
        host, sep, address = value.rpartition(":") if value.count(":") == 1 else value.partition(":")
        if not sep or not host or not address:
            raise typer.BadParameter(f"--resolve {value!r}: expected HOST:ADDRESS")
        pairs[host] = address
    return pairs


def print_manifest(manifest: dict) -> None:
    table = Table(title="references")
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, value in manifest["funnel"].items():
        table.add_row(key.replace("_", " "), f"{value:,}")
    for reason, count in manifest["failures"].items():
        table.add_row(f"failed: {reason}", f"{count:,}")
    table.add_row("seconds", f"{manifest['seconds']:.1f}")
    console.print(table)


@references_app.command("fetch")
def fetch(
    corpus: Path = typer.Argument(..., help=help_for(FetchConfig, "corpus"), show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help=help_for(FetchConfig, "out")),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", help=help_for(FetchConfig, "concurrency")),
    per_host: Optional[int] = typer.Option(None, "--per-host", help=help_for(FetchConfig, "per_host")),
    host_delay: Optional[float] = typer.Option(None, "--host-delay", help=help_for(FetchConfig, "host_delay")),
    connect_timeout: Optional[float] = typer.Option(None, "--connect-timeout", help=help_for(FetchConfig, "connect_timeout")),
    read_timeout: Optional[float] = typer.Option(None, "--read-timeout", help=help_for(FetchConfig, "read_timeout")),
    total_timeout: Optional[float] = typer.Option(None, "--total-timeout", help=help_for(FetchConfig, "total_timeout")),
    max_bytes: Optional[int] = typer.Option(None, "--max-bytes", help=help_for(FetchConfig, "max_bytes")),
    max_redirects: Optional[int] = typer.Option(None, "--max-redirects", help=help_for(FetchConfig, "max_redirects")),
    retries: Optional[int] = typer.Option(None, "--retries", help=help_for(FetchConfig, "retries")),
    backoff: Optional[float] = typer.Option(None, "--backoff", help=help_for(FetchConfig, "backoff")),
    user_agent: Optional[str] = typer.Option(None, "--user-agent", help=help_for(FetchConfig, "user_agent")),
    robots: Optional[bool] = typer.Option(None, "--robots/--ignore-robots", help=help_for(FetchConfig, "robots")),
    pdf: Optional[bool] = typer.Option(None, "--pdf/--no-pdf", help=help_for(FetchConfig, "pdf")),
    allow_private: Optional[bool] = typer.Option(None, "--allow-private", help=help_for(FetchConfig, "allow_private")),
    proxy: Optional[str] = typer.Option(None, "--proxy", help=help_for(FetchConfig, "proxy")),
    resolve: Optional[list[str]] = typer.Option(None, "--resolve", help=help_for(FetchConfig, "resolve")),
    prefer_archive: Optional[bool] = typer.Option(None, "--prefer-archive", help=help_for(FetchConfig, "prefer_archive")),
    archive_fallback: Optional[bool] = typer.Option(None, "--archive-fallback/--no-archive-fallback", help=help_for(FetchConfig, "archive_fallback")),
    extract_workers: Optional[int] = typer.Option(None, "--extract-workers", help=help_for(FetchConfig, "extract_workers")),
    checkpoint_rows: Optional[int] = typer.Option(None, "--checkpoint-rows", help=help_for(FetchConfig, "checkpoint_rows")),
    limit: Optional[int] = typer.Option(None, "--limit", help=help_for(FetchConfig, "limit")),
    resume: bool = typer.Option(False, "--resume", help=help_for(FetchConfig, "resume")),
    overwrite: bool = typer.Option(False, "--overwrite", help=help_for(FetchConfig, "overwrite")),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file whose \\[references] table sets any of these options."),
) -> None:
    """Download the pages the citations of CORPUS point at, into OUT/references.parquet.

    Each unique URL is fetched once, politely (robots.txt, per-host limits and delay) and safely (every host and redirect hop resolved and refused when not public; size, type and time caps). Finished pages are journalled at once: after a crash or Ctrl-C, run again with --resume.

    Example:

      pretriever references fetch enwiki/ --out refs/ --limit 100      (a first look: 100 of the cited pages)

    Without --limit every cited page is fetched; after a crash run the same command with --resume.
    """
    with stage():
        cfg = build_config(FetchConfig, config, "references", corpus=corpus, out=out, concurrency=concurrency,
                           per_host=per_host, host_delay=host_delay, connect_timeout=connect_timeout,
                           read_timeout=read_timeout, total_timeout=total_timeout, max_bytes=max_bytes,
                           max_redirects=max_redirects, retries=retries, backoff=backoff, user_agent=user_agent,
                           robots=robots, pdf=pdf, allow_private=allow_private, proxy=proxy,
                           resolve=_pairs(resolve), prefer_archive=prefer_archive,
                           archive_fallback=archive_fallback, extract_workers=extract_workers,
                           checkpoint_rows=checkpoint_rows, limit=limit, resume=resume or None,
                           overwrite=overwrite or None)
    with count_progress() as bar, stage(bar):
        task = bar.add_task("fetching", total=None, rate="")

        def on_row(progress: Progress) -> None:
            bar.update(task, total=progress.total, completed=progress.done, rate=progress.line())

        manifest = fetch_references(cfg, on_row)
    print_manifest(manifest)


@references_app.command("import")
def import_(
    files: list[Path] = typer.Argument(..., help=help_for(ImportConfig, "files"), show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help=help_for(ImportConfig, "out")),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help=help_for(ImportConfig, "corpus")),
    max_bytes: Optional[int] = typer.Option(None, "--max-bytes", help=help_for(ImportConfig, "max_bytes")),
    pdf: Optional[bool] = typer.Option(None, "--pdf/--no-pdf", help=help_for(ImportConfig, "pdf")),
    extract_workers: Optional[int] = typer.Option(None, "--extract-workers", help=help_for(ImportConfig, "extract_workers")),
    overwrite: bool = typer.Option(False, "--overwrite", help=help_for(ImportConfig, "overwrite")),
) -> None:
    """Import pre-crawled pages (WARC files, or JSONL of {url, html|text}) into OUT/references.parquet.

    Example:

      pretriever references import pages.jsonl --corpus enwiki/ --out refs-imported/      (JSONL of {url, html})
    """
    with stage():
        cfg = build_config(ImportConfig, None, "references_import", files=files, out=out, corpus=corpus,
                           max_bytes=max_bytes, pdf=pdf, extract_workers=extract_workers,
                           overwrite=overwrite or None)
        manifest = import_references(cfg)
    console.print("records: " + ", ".join(f"{k} {v:,}" for k, v in manifest["records"].items()))
    print_manifest(manifest)
