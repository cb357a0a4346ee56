"""``pretriever references ...``: the pages citations point at, fetched or imported from a crawl."""

from __future__ import annotations

import typer
from rich.markup import escape
from rich.table import Table

from pretriever.cli.common import stage
from pretriever.cli.options import Flag, config_command
from pretriever.progress import RichReporter, console
from pretriever.references import fetch as fetching
from pretriever.references import warc
from pretriever.references.config import FetchConfig, ImportConfig
from pretriever.references.manifest import ReferencesManifest

references_app = typer.Typer(
    help=("Stage 1b: fetch the pages that citations point at (or import them from WARC/JSONL crawls) into "
          "references.parquet, for the qac mining method (C-MORE)."),
    no_args_is_help=True,
)


def _pairs(values: list[str]) -> dict[str, str]:
    """--resolve HOST:ADDRESS (repeatable) -> {host: address}."""
    pairs = {}
    for value in values:
        host, sep, address = value.rpartition(":") if value.count(":") == 1 else value.partition(":")
        if not sep or not host or not address:
            raise typer.BadParameter(f"--resolve {value!r}: expected HOST:ADDRESS")
        pairs[host] = address
    return pairs


def print_manifest(manifest: ReferencesManifest) -> None:
    """What ``references fetch`` and ``import`` print: the URL funnel, failures by reason, and the time."""
    table = Table(title="references")
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, value in manifest.funnel.items():
        table.add_row(key.replace("_", " "), f"{value:,}")
    for reason, count in manifest.failures.items():
        table.add_row(f"failed: {reason}", f"{count:,}")
    table.add_row("seconds", f"{manifest.seconds:.1f}")
    console.print(table)


@references_app.command("fetch")
@config_command(FetchConfig, "references", arguments=("corpus",),
                flags={"robots": Flag("--robots/--ignore-robots"), "resolve": Flag(parse=_pairs)})
def fetch(cfg: FetchConfig) -> None:
    """Download the pages the citations of CORPUS point at, into OUT/references.parquet.

    Each unique URL is fetched once, politely (robots.txt, per-host limits and delay) and safely (every
    host and redirect hop resolved and refused when not public, also behind --proxy or $HTTP_PROXY; size,
    type and time caps). Finished pages are journalled at once: after a crash or Ctrl-C, run again with
    --resume.

    Example:

      pretriever references fetch enwiki/ --out refs/ --limit 100   (a first look: 100 of the cited pages)

    Without --limit every cited page is fetched; after a crash run the same command with --resume.
    """
    with RichReporter() as report, stage(report):
        result = fetching.run(cfg, report)
    print_manifest(result.manifest)


@references_app.command("import")
@config_command(ImportConfig, "references_import", arguments=("files",))
def import_(cfg: ImportConfig) -> None:
    """Import pre-crawled pages (WARC files, or JSONL of {url, html|text}) into OUT/references.parquet.

    A file that is not a WARC file, or a bad JSONL line, stops the import (exit status 2); a WARC file cut
    off inside a record, or a record whose Content-Length does not end where it does, stops it with exit
    status 4 (--allow-truncated imports the records before it). The references imported before a failure
    are kept: run again with --resume.

    Example:

      pretriever references import pages.jsonl --corpus enwiki/ --out refs-imported/
          (JSONL of {url, html})
    """
    with RichReporter() as report, stage(report):
        manifest = warc.run(cfg, report).manifest
    console.print("records: " + ", ".join(f"{k} {v:,}" for k, v in (manifest.records or {}).items()))
    for cut in manifest.truncated or []:
        console.print(f"[yellow]truncated:[/yellow] {escape(cut['file'])} ends inside record {cut['record']:,} "
                      f"(byte {cut['byte']:,}); the records before it were imported")
    print_manifest(manifest)
