"""``pretriever corpus ...``: build a linked passage store and look at it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from pretriever.config import ConfigError, build_config
from pretriever.corpus.config import CorpusConfig
from pretriever.corpus.model import InputError
from pretriever.data.store import CorpusStore, StoreError
from pretriever.progress import byte_progress, console

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
EXIT_INPUT_ERROR = 4  # the input is unusable past some point; finished chunks are kept for --resume


@corpus_app.command("build")
def build(
    input: Path = typer.Argument(..., help="Dump file, BEIR folder or corpus file.", show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the store (created)."),
    format: Optional[str] = typer.Option(None, "--format", help="Input format; default: detect from content. See `pretriever corpus formats`."),
    words: Optional[int] = typer.Option(None, "--words", help="Passage length in words (DPR: 100). 0 keeps documents whole. Default: 100 for wikis/JSONL, whole documents for BEIR and DPR passages."),
    min_title_chars: Optional[int] = typer.Option(None, "--min-title-chars", help="Drop documents with shorter titles (HLP: 3). Default: 3 for wikis, 0 otherwise."),
    keep_blank: Optional[bool] = typer.Option(None, "--keep-blank/--drop-blank", help="Keep documents whose clean text is empty (dropped by default, as in HLP)."),
    workers: Optional[int] = typer.Option(None, "--workers", "-w", help="Worker processes (default: all cores)."),
    chunk_pages: Optional[int] = typer.Option(None, "--chunk-pages", help="A chunk (the unit of parallel work and of --resume) ends after this many pages (default 5000) ..."),
    chunk_mb: Optional[float] = typer.Option(None, "--chunk-mb", help="... or this many MB of page data, whichever comes first (default 4)."),
    multistream_index: Optional[Path] = typer.Option(None, "--multistream-index", help="Index of a multistream dump (found automatically beside it when named like Wikipedia's)."),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted build from its last completed chunk."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing store in --out."),
    max_chunks: Optional[int] = typer.Option(None, "--max-chunks", help="Stop after this many chunks (a sample); finish later with --resume."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file whose [corpus] table sets any of these options."),
) -> None:
    """Build a corpus store from INPUT.

    Streams the input page by page on all cores, writes each chunk of pages atomically, then resolves redirects and link targets over the whole corpus with DuckDB. The store is a folder of Parquet tables plus manifest.json (see docs/architecture.md).

    Exit status: 0 on success; 3 when some pages could not be parsed (they are listed under "errors" in manifest.json); 4 when the input is unreadable past some point (what was parsed is kept: fix the input and run again with --resume).

    Examples:

      pretriever corpus build enwiki-20241101-pages-articles-multistream.xml.bz2 --out enwiki/ --workers 16

      pretriever corpus build scifact/ --out scifact-store/
    """
    from pretriever.corpus.build import build_corpus

    try:
        cfg = build_config(CorpusConfig, config, "corpus", input=input, out=out, format=format, words=words,
                           min_title_chars=min_title_chars, keep_blank=keep_blank, workers=workers,
                           chunk_pages=chunk_pages, chunk_mb=chunk_mb, multistream_index=multistream_index,
                           resume=resume or None, overwrite=overwrite or None, max_chunks=max_chunks)
    except (ConfigError, ValueError) as err:
        console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(2) from err
    result = run_build(cfg, build_corpus)
    if result.manifest is None:
        console.print(f"Stopped after {result.chunks_done} chunk(s) as asked (--max-chunks); "
                      f"continue with: pretriever corpus build {cfg.input} --out {cfg.out} --resume")
        return
    print_summary(result.manifest)
    errors = result.manifest["counts"]["errors"]
    if errors:
        console.print(f"[yellow]{errors} page(s) could not be parsed; they are listed under \"errors\" "
                      f"in {cfg.out / 'manifest.json'}[/yellow]")
        raise typer.Exit(EXIT_PAGE_ERRORS)


def run_build(cfg: CorpusConfig, build_corpus):
    """Run a build under a progress bar; turn input errors into a clear message and exit status 4."""
    from pretriever.corpus.formats.base import resolve_input

    source = resolve_input(cfg.input)
    size = source.stat().st_size if source.is_file() else None
    with byte_progress() as progress:
        task = progress.add_task(f"parsing {cfg.input.name}", total=size, items="")
        pages = 0

        def on_chunk(summary, position):
            nonlocal pages
            pages += summary.pages
            progress.update(task, completed=position if position is not None else 0, items=f"{pages:,} pages")

        try:
            result = build_corpus(cfg, on_chunk)
        except (InputError, StoreError) as err:
            progress.stop()
            console.print(f"[red]error:[/red] {err}")
            raise typer.Exit(EXIT_INPUT_ERROR) from err
        if size:
            progress.update(task, completed=size)
    return result


def print_summary(manifest: dict) -> None:
    """The store's counts as a table (the same numbers are in manifest.json)."""
    counts = manifest["counts"]
    table = Table(title=f"corpus store ({manifest['input']['format']}: {Path(manifest['input']['path']).name})")
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, value in counts.items():
        if isinstance(value, dict):
            value = ", ".join(f"{k} {v:,}" for k, v in value.items()) or "0"
        else:
            value = f"{value:,}"
        table.add_row(key.replace("_", " "), value)
    if "build_seconds" in manifest:
        table.add_row("seconds", f"{manifest['build_seconds']:.1f}")
    console.print(table)


@corpus_app.command("info")
def info(store: Path = typer.Argument(..., help="A corpus store folder.")) -> None:
    """Print the counts of a built store (from its manifest)."""
    try:
        print_summary(CorpusStore(store).manifest)
    except StoreError as err:
        console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(2) from err


@corpus_app.command("formats")
def formats() -> None:
    """List the input formats and what each reads."""
    from pretriever.corpus.formats import FORMATS

    table = Table(title="input formats (--format)")
    for column in ("name", "reads", "links", "default --words"):
        table.add_column(column)
    for name, cls in FORMATS.items():
        table.add_row(name, cls.description, "yes" if cls.has_links else "no",
                      str(cls.default_words) if cls.default_words else "whole documents")
    console.print(table)
