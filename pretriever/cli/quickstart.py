"""``pretriever quickstart``: the pipeline on a small real Wikipedia dump, offline."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from pretriever.progress import console

DEMO_DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"


def demo_dump_path() -> Path:
    """The shortened enwiki dump (106 articles, 100 redirects) that the gensim package ships."""
    try:
        from importlib.resources import files

        path = Path(str(files("gensim") / "test" / "test_data" / DEMO_DUMP))
    except ModuleNotFoundError as err:
        raise FileNotFoundError("the demo dump comes with the gensim package: pip install 'pretriever[demo]'") from err
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the installed gensim package")
    return path


def quickstart(
    out: Path = typer.Option(Path("pretriever-quickstart"), "--out", "-o", help="Folder for everything the demo writes."),
    workers: int = typer.Option(2, "--workers", "-w", help="Worker processes."),
) -> None:
    """Run the pipeline end to end on the demo enwiki dump shipped with gensim (no network).

    Today this builds the corpus store (documents, passages, sentences, links resolved through redirects, citations) and prints its summary; each later stage adds itself here.
    """
    from pretriever.cli.corpus import print_summary, run_build
    from pretriever.corpus.build import build_corpus
    from pretriever.corpus.config import CorpusConfig

    try:
        dump = demo_dump_path()
    except FileNotFoundError as err:
        console.print(f"[red]error:[/red] {err}")
        raise typer.Exit(2) from err
    started = time.perf_counter()
    corpus_dir = out / "corpus"
    console.rule("[bold]1/1 corpus: parse the demo dump into a linked passage store")
    result = run_build(CorpusConfig(input=dump, out=corpus_dir, workers=workers, overwrite=True), build_corpus)
    print_summary(result.manifest)
    console.print(f"\nDone in {time.perf_counter() - started:.1f} s. Written: {corpus_dir}/ "
                  "(Parquet tables + manifest.json).")
    console.print(
        "Look inside:  duckdb -c \"SELECT anchor, target_title FROM '"
        f"{corpus_dir}/links/*.parquet' LIMIT 5\"\n"
        "On a real dump:  pretriever corpus build enwiki-latest-pages-articles-multistream.xml.bz2 "
        "--out enwiki/ --workers 16"
    )
