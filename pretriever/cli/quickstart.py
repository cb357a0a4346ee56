"""``pretriever quickstart``: the whole pipeline on a small real Wikipedia dump, offline.

It runs the same commands a user would type (and prints each one), so the demo
doubles as a recipe: copy the printed commands and point them at a real dump.
"""

from __future__ import annotations

import shlex
import time
from pathlib import Path

import click
import typer

from pretriever.cli.common import fail
from pretriever.progress import console
from pretriever.tune import TuneError
from pretriever.tune.manifest import TuneManifest

DEMO_DUMP = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
PSEUDO_QUERIES = 200  # masked-ICT pseudo-queries of the before/after: enough for an interval of about +-0.05
DEMO_QUERIES = [
    "Who wrote the novel Atlas Shrugged?",
    "What fraction of sunlight does fresh snow reflect?",
]


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


def _run(root: click.Command, step: str, args: list[str]) -> None:
    """Run one pretriever command in this process, after printing it, through ``root``: the command line
    that is running (``ctx.find_root().command``), so this module needs no import of the package that
    registers it. A step that fails ends the demo with its exit code."""
    console.rule(f"[bold]{step}")
    console.print(f"[dim]$ pretriever {shlex.join(args)}[/dim]")
    try:
        code = root.main(args, prog_name="pretriever", standalone_mode=False)
    except SystemExit as done:
        code = done.code
    if isinstance(code, int) and code:  # not standalone, click returns a failed step's code instead of exiting
        raise typer.Exit(code)


def quickstart(
    ctx: typer.Context,
    out: Path = typer.Option(Path("pretriever-quickstart"), "--out", "-o", help="Folder for everything the demo writes."),
    workers: int = typer.Option(2, "--workers", "-w", help="Worker processes for parsing."),
    pairs: int = typer.Option(192, "--pairs", help="Pairs to mine and train on (about 4 pairs/s on 2 CPU cores)."),
    pages: int = typer.Option(0, "--pages", min=0, help="Keep only the dump's first PAGES pages (articles and redirects) "
                                                        "for a faster run: 100 hold 29 articles, 1,272 passages, and "
                                                        "the before/after nears its ceiling there. 0 keeps all 206."),
) -> None:
    """Run the whole pipeline on the demo enwiki dump shipped with gensim, offline, in a few minutes.

    Steps: build the corpus store (passages, sentences, links resolved through redirects, citations); mine
    dual-link (DL), co-mention (CM) and ICT pairs; train the packaged all-MiniLM-L6-v2 on them for one
    short epoch; encode the corpus into a FAISS index with a BM25 index beside it, and again with the
    starting model; tune on pseudo-queries made from the corpus (a sentence is the query, its passage
    without it the positive): the trained and the starting model's dense retrieval on the same queries,
    with the change's 95% interval, beside BM25 and the fusions, one of which is chosen for the index;
    search with the choice and BM25 and print the rankings side by side.
    """
    try:
        dump = demo_dump_path()
    except FileNotFoundError as err:
        fail(err)
    started = time.perf_counter()
    root = ctx.find_root().command
    corpus, pair_dir, model, index, start = (str(out / name) for name in ("corpus", "pairs", "model", "index",
                                                                          "start-index"))
    _run(root, "1/7 corpus: parse the demo dump into a linked passage store",
         ["corpus", "build", str(dump), "--out", corpus, "--workers", str(workers), "--overwrite",
          *(["--chunk-pages", str(pages), "--max-chunks", "1", "--sample"] if pages else [])])
    # Co-mention needs an entity E that is an article of the store linked from both sides: on this
    # 105-article sample no such pair exists, and `mine` says why (a full wiki has plenty).
    _run(root, "2/7 mine: dual-link, co-mention and ICT pairs",
         ["mine", corpus, "--method", "dl,cm,ict", "--max-pairs", str(pairs), "--cm-indegree-percentile", "99",
          "--out", pair_dir, "--overwrite"])
    _run(root, "3/7 train: all-MiniLM-L6-v2 on the mined pairs (one short epoch; 32 pairs held out to check it)",
         ["train", pair_dir, "--out", model, "--epochs", "1", "--batch-size", "16", "--heldout-pairs", "32",
          "--max-query-length", "64", "--max-passage-length", "128", "--overwrite"])
    _run(root, "4/7 index: encode every passage with the trained model; BM25 beside it",
         ["index", "build", corpus, "--model", model, "--out", index, "--max-length", "128", "--bm25", "--overwrite"])
    _run(root, "5/7 index: the same passages with the starting model, for a before/after",
         ["index", "build", corpus, "--out", start, "--max-length", "128", "--overwrite"])
    _run(root, "6/7 tune: before/after on pseudo-queries from the corpus (no labels): a sentence of a passage is "
               "the query, the passage without it the positive; dense, BM25 and fusions scored, one chosen",
         ["tune", index, "--compare", start, "--queries-from", "masked-ict", "-n", str(PSEUDO_QUERIES),
          "--no-prf"])
    _run(root, "7/7 search: the tuned setting and BM25 side by side",
         ["search", index, *DEMO_QUERIES, "-k", "5", "--bm25", "--words", "12"])
    console.rule("[bold]done")
    console.print(f"Finished in {time.perf_counter() - started:.0f} s. " + what_moved(Path(index)))
    console.print(f"Everything is under {out}/:\n"
                  f"  {corpus}/  corpus store (Parquet tables + manifest.json)\n"
                  f"  {pair_dir}/  mined pairs (Parquet), stats.json, overlap.png\n"
                  f"  {model}/  the trained sentence-transformers model, train.json\n"
                  f"  {index}/  FAISS index, embeddings, BM25 index, tune.json (the before/after and the choice)\n"
                  f"  {start}/  the starting model's index (the 'before')")
    console.print("Next, on a real dump (see README.md for the scale plan):\n"
                  "  pretriever corpus build enwiki-latest-pages-articles-multistream.xml.bz2 --out enwiki/ --workers 16\n"
                  "  pretriever mine enwiki/ --method dl,cm --out enwiki-pairs/\n"
                  "  pretriever train enwiki-pairs/ --model bert-base-uncased --pooling cls --batch-size 400 "
                  "--mini-batch-size 32 --out hlp-model/\n"
                  "  pretriever evaluate --index scifact-index/ --bm25 --queries queries.jsonl --qrels qrels/test.tsv --out eval/")


def what_moved(index: Path) -> str:
    """The before/after in plain words, from the index's tune.json: dense before and after training, BM25
    and the tuned choice on the same pseudo-queries, and whether the change's 95% interval excludes none."""
    tuned = TuneManifest.read(index)
    if tuned.compare is None:
        raise TuneError(f"{index / TuneManifest.FILE} holds no comparison; run `pretriever tune --compare` first")
    change = tuned.compare["difference"]
    before, after = tuned.compare["dense"]["pseudo_nDCG@10"], tuned.compare["this_dense"]["pseudo_nDCG@10"]
    low, high = change["interval"]
    moved = ("went up" if low > 0 else "went down" if high < 0 else "did not move clearly (the interval holds 0)")
    score = tuned.pseudo_scores()
    chosen = tuned.label
    return (f"On {tuned.generators['masked-ict']['queries']} pseudo-queries (nDCG@10): the starting model "
            f"{before:.3f}, the trained model {after:.3f}: dense retrieval {moved}, {change['pseudo_nDCG@10']:+.3f} "
            f"(95% interval {low:+.3f} to {high:+.3f}); BM25 {score['bm25']:.3f}; the tuned choice, {chosen}, "
            f"{score[chosen]:.3f}.")
