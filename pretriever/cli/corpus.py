"""``pretriever corpus ...``: build a linked passage store and look at it."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from pretriever.cli.common import stage
from pretriever.cli.options import Flag, config_command
from pretriever.corpus import build as corpus_build
from pretriever.corpus.config import CorpusConfig
from pretriever.corpus.formats import FORMATS
from pretriever.corpus.manifest import StoreManifest
from pretriever.data.store import CorpusStore
from pretriever.progress import RichReporter, console

corpus_app = typer.Typer(
    help=(
        "Stage 1: turn a corpus into a store of Parquet tables (documents, passages, sentences, "
        "sections, links, citations, pages, redirects) plus manifest.json.\n\n"
        "Inputs are detected by content: MediaWiki XML dumps (.xml, .xml.bz2, multistream with "
        "its index), WikiExtractor --json --links output, BEIR corpus.jsonl, generic JSONL "
        "(id, title, text) and DPR psgs_w100.tsv."
    ),
    no_args_is_help=True,
)

EXIT_PAGE_ERRORS = 3  # the store was built, but some pages could not be parsed (listed in the manifest)


@corpus_app.command("build")
@config_command(CorpusConfig, "corpus", arguments=("input",), short={"workers": "-w"},
                flags={"keep_blank": Flag("--keep-blank/--drop-blank")})
def build(cfg: CorpusConfig) -> None:
    """Build a corpus store from INPUT.

    Streams the input page by page on all cores, writes each chunk of pages atomically, then resolves
    redirects and link targets over the whole corpus with DuckDB. The store is a folder of Parquet tables
    plus manifest.json (see docs/architecture.md).

    With --engine spark the same build runs on Spark (local, or a cluster with --spark-master or
    spark-submit): one task per byte range of a multistream dump, finalize as Spark SQL, and the same
    store, byte for byte. The dump and --out must be on a filesystem every executor sees; README.md says
    what each executor needs.

    Exit status: 0 on success; 2 for bad options; 3 when some pages could not be parsed (they are listed
    under "errors" in manifest.json); 4 when the input is unreadable past some point (what was parsed is
    kept: fix the input and run again with --resume).

    Examples:

      pretriever corpus build enwiki.xml.bz2 --out enwiki/ --workers 16
          (a Wikipedia dump, e.g. enwiki-20241101-pages-articles-multistream.xml.bz2 with its index beside
            it)

      pretriever corpus build scifact/ --out scifact-store/
    """
    result = run_build(cfg)
    if result.stopped:
        console.print(escape(f"Stopped after {result.chunks_done} chunk(s) as asked (--max-chunks); "
                             f"continue with: pretriever corpus build {cfg.input} --out {cfg.out} --resume"))
        return
    print_summary(result.manifest)
    errors = result.manifest.counts["errors"]
    if errors:
        console.print(f"[yellow]{errors} page(s) could not be parsed; they are listed under \"errors\" "
                      f"in {escape(str(cfg.out / 'manifest.json'))}[/yellow]")
        raise typer.Exit(EXIT_PAGE_ERRORS)


def run_build(cfg: CorpusConfig) -> corpus_build.CorpusResult:
    """Run a build under a progress bar; an unreadable input ends it with its message and exit status 4
    (:class:`~pretriever.corpus.model.InputError`)."""
    with RichReporter() as report, stage(report):
        return corpus_build.run(cfg, report)


def print_summary(manifest: StoreManifest) -> None:
    """The store's counts as a table (the same numbers are in manifest.json)."""
    counts = manifest.counts
    table = Table(title=f"corpus store ({manifest.format}: {Path(manifest.input['path']).name})")
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, value in counts.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v:,}" for k, v in value.items()) or "0"
        else:
            value = f"{value:,}"
        table.add_row(key.replace("_", " "), value)
    if manifest.build_seconds is not None:
        table.add_row("seconds", f"{manifest.build_seconds:.1f}")
    console.print(table)


@corpus_app.command("info")
def info(store: Path = typer.Argument(..., help="A corpus store folder.")) -> None:
    """Print the counts of a built store (from its manifest)."""
    with stage():
        manifest = CorpusStore(store).manifest
    print_summary(manifest)


@corpus_app.command("formats")
def formats() -> None:
    """List the input formats and what each reads."""
    table = Table(title="input formats (--format)")
    for column in ("name", "reads", "links", "default --words"):
        table.add_column(column)
    for name, cls in FORMATS.items():
        table.add_row(name, cls.description, "yes" if cls.has_links else "no",
                      str(cls.default_words) if cls.default_words else "whole documents")
    console.print(table)
