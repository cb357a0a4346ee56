"""``pretriever mine`` and ``pretriever pairs ...``: mine pseudo query-passage pairs, look at them, export them.

Wire into the main app with ``app.command("mine")(mine_command)`` and
``app.add_typer(pairs_app, name="pairs")``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from pretriever.config import ConfigError, build_config, help_for
from pretriever.mine.config import MineConfig
from pretriever.corpus.store import StoreError
from pretriever.progress import console

EXIT_USAGE = 2  # bad options, or a folder that is not a store / pairs folder


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    console.print(f"[red]error:[/red] {escape(message)}")
    return typer.Exit(code)


def mine_command(
    corpus: Path = typer.Argument(..., help="A corpus store folder (from `pretriever corpus build`).", show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the pairs: one METHOD.parquet per method, "
                             "pairs.json (manifest), stats.json and overlap.png."),
    method: Optional[str] = typer.Option(
        None, "--method", "-m",
        help="Comma-separated strategies: dl (dual-link: q links to P and p links to Q), cm (co-mention: q and p "
             "link to a third entity E and p links to Q), ict (inverse cloze task), wlp (wiki link prediction), "
             "bfs (body first selection), cc (two passages of one document: coCondenser), qc (a passage and its "
             "generated queries; needs --queries). Default: dl,cm (HLP). Example: --method dl,cm,ict,wlp,bfs"),
    negatives: Optional[str] = typer.Option(
        None, "--negatives",
        help="One extra negative passage per pair: random (the paper's choice: any passage of another document), "
             "overlap (shares a linked entity with the query but is neither DL nor CM; falls back to random) or "
             "none. Default: random."),
    max_pairs: Optional[int] = typer.Option(
        None, "--max-pairs", "-n",
        help="Total number of pairs, split evenly over the methods (a method that has fewer gives the rest to "
             "the others); each keeps a seeded random sample. Default: no limit. Example: --max-pairs 20000000"),
    seed: Optional[int] = typer.Option(None, "--seed", help="Seed of every sampling decision; the same seed "
                                       "gives the same pairs on either engine. Default: 0."),
    engine: Optional[str] = typer.Option(None, "--engine", help="duckdb (default: one machine, out-of-core) or "
                                         "spark (local PySpark; same pairs as duckdb for the same seed)."),
    prepend_title: Optional[bool] = typer.Option(
        None, "--prepend-title/--no-prepend-title",
        help="Prepend the document title to positive and negative passages (\"Title. text\"). HLP does not "
             "(default), to avoid superficial entity overlap."),
    cm_indegree_percentile: Optional[float] = typer.Option(
        None, "--cm-indegree-percentile",
        help="CM: co-mentioned entities must have an in-degree (documents linking to them) below the top "
             "(100 - this)% of all link targets. Paper: 90 (the top 10% are excluded). On a small sample almost "
             "every target is linked once, so try 99."),
    cm_indegree_threshold: Optional[int] = typer.Option(
        None, "--cm-indegree-threshold",
        help="CM: an absolute in-degree threshold K instead of the percentile (entities with in-degree >= K are "
             "excluded). Example: --cm-indegree-threshold 1000"),
    ict_keep_fraction: Optional[float] = typer.Option(
        None, "--ict-keep-fraction", help="ICT: share of pairs whose positive keeps the query sentence. Default: 0.1."),
    max_per_doc_pair: Optional[int] = typer.Option(
        None, "--max-per-doc-pair",
        help="DL/CM/WLP: at most this many pairs per (query document, positive document), so hub documents do "
             "not dominate. Default: 4."),
    max_per_query_passage: Optional[int] = typer.Option(
        None, "--max-per-query-passage",
        help="At most this many pairs whose query comes from the same passage. Default: 2."),
    min_query_words: Optional[int] = typer.Option(None, "--min-query-words",
                                                  help="Shortest query sentence, in words. Default: 5."),
    min_passage_words: Optional[int] = typer.Option(None, "--min-passage-words",
                                                    help="Shortest positive or negative passage, in words. Default: 20."),
    queries: Optional[Path] = typer.Option(None, "--queries", help=help_for(MineConfig, "queries")),
    threads: Optional[int] = typer.Option(None, "--threads", help="Cores to use (default: all)."),
    memory_limit: Optional[str] = typer.Option(None, "--memory-limit",
                                               help="DuckDB memory before it spills to disk, e.g. 16GB."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace pairs already in --out."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file whose [mine] table sets any of these "
                                          "options (keys as in MineConfig, e.g. methods = [\"dl\", \"cm\"])."),
) -> None:
    """Mine pseudo query-passage pairs from a corpus store.

    HLP (Zhou et al., 2022) pairs passages through hyperlinks: dual-link (passage q of document Q links to P, and passage p of P links back to Q) and co-mention (q and p both link to a third, not-too-common entity E, and p links to Q). The query is the sentence of q that holds the evidential anchor; the positive is p, without its title. The ICT, WLP and BFS baselines (Lee et al., 2019; Chang et al., 2020) are available too.

    Mining is relational (Ibis on DuckDB, or on local Spark with --engine spark) and every random choice is a hash of the seed, so a run is reproducible and both engines give the same pairs. Hub documents are capped, exact duplicates dropped. The output folder gets one Parquet file per method, pairs.json (manifest: options, counts, why a method found nothing), stats.json and overlap.png; a table of per-method statistics (pairs, distinct queries and positives, lengths, query-passage lexical overlap in BERT WordPiece tokens) ends the run.

    Exit status: 0 on success (also when a method finds no pairs: the reason is printed and kept in pairs.json); 2 for bad options or a folder that is not a corpus store.

    Examples:

      pretriever mine enwiki/ --out pairs/ --max-pairs 20000000 --seed 0

      pretriever mine enwiki/ --method dl,cm,ict,wlp,bfs --negatives overlap --out pairs-all/

      pretriever mine enwiki/ --out pairs/ --engine spark
    """
    from pretriever.mine.pipeline import MineError, mine

    if max_pairs is not None and max_pairs <= 0:
        raise _fail(f"--max-pairs {max_pairs} leaves nothing to mine: give a positive number of pairs, or leave "
                    "the option out to keep every pair that passes the caps")
    try:
        cfg = build_config(MineConfig, config, "mine", corpus=corpus, out=out, methods=method, negatives=negatives,
                           max_pairs=max_pairs, seed=seed, engine=engine, prepend_title=prepend_title,
                           cm_indegree_percentile=cm_indegree_percentile,
                           cm_indegree_threshold=cm_indegree_threshold, ict_keep_fraction=ict_keep_fraction,
                           max_per_doc_pair=max_per_doc_pair, max_per_query_passage=max_per_query_passage,
                           min_query_words=min_query_words, min_passage_words=min_passage_words,
                           queries=queries, threads=threads, memory_limit=memory_limit, overwrite=overwrite or None)
    except (ConfigError, ValueError, TypeError) as err:
        raise _fail(str(err)) from err

    with Progress(SpinnerColumn(), TextColumn("[bold]{task.description}"), TimeElapsedColumn(),
                  console=console, transient=True) as progress:
        task = progress.add_task(f"mining {', '.join(cfg.methods)} on {cfg.engine}", total=None)
        try:
            result = mine(cfg, step=lambda message: progress.update(task, description=message))
        except (StoreError, MineError) as err:
            progress.stop()
            raise _fail(str(err)) from err
    print_result(result)


def print_result(result) -> None:
    from pretriever.mine.show import stats_table

    console.print(stats_table(result.stats, result.manifest))
    for name, r in result.methods.items():
        if r.reason:
            console.print(f"[yellow]{name}: no pairs[/yellow] - {escape(r.reason)}")
    cm = result.manifest.get("cm_indegree_threshold")
    if cm and "cm" in result.methods and result.methods["cm"].pairs:
        excluded = f", {cm['excluded']:,} of {cm['entities']:,} link targets excluded" if cm.get("entities") else ""
        console.print(f"cm: co-mentioned entities have in-degree < K = {cm['k']} ({cm['rule']}{excluded})")
    console.print(escape(f"{result.total:,} pairs in {result.config.out}/ ({result.seconds:.1f} s); "
                         f"look at them with: pretriever pairs show {result.config.out}"))


pairs_app = typer.Typer(
    help=(
        "Look at mined pairs and export them for training.\n\n"
        "Example: pretriever pairs show pairs/ --method cm -n 5"
    ),
    no_args_is_help=True,
)


@pairs_app.command("show")
def show(
    pairs_dir: Path = typer.Argument(..., help="A folder written by `pretriever mine`.", show_default=False),
    method: Optional[str] = typer.Option(None, "--method", "-m", help="Only this method's pairs (e.g. cm); "
                                         "default: the first mined method."),
    n: int = typer.Option(5, "-n", help="How many pairs (the first pairs of a file are a seeded random sample)."),
) -> None:
    """Print pairs with their evidence highlighted, like the HLP paper's Tables 9-10.

    The query's anchor (DL: the link to P; CM: the link to E) is yellow; the positive's anchor linking back to the query's document is green; for CM, the positive's anchor to the co-mentioned entity E is magenta. The first pairs of a file are a seeded random sample.

    Example:

      pretriever pairs show pairs/ --method cm -n 5
    """
    from pretriever.mine.export import PairsDir, PairsError
    from pretriever.mine.show import render_pair

    try:
        pairs = PairsDir(pairs_dir)
        methods = pairs.select(method) if method else pairs.methods[:1]
    except PairsError as err:
        raise _fail(str(err)) from err
    if not methods:
        raise _fail(f"{pairs_dir} holds no pairs (see why in {pairs_dir / 'pairs.json'})")
    for row in pairs.rows(methods, limit=n):
        console.print(render_pair(row))


@pairs_app.command("info")
def info(pairs_dir: Path = typer.Argument(..., help="A folder written by `pretriever mine`.", show_default=False)) -> None:
    """Print the statistics table of a pairs folder (from its stats.json), and why a method found no pairs.

    Example:

      pretriever pairs info pairs/
    """
    import json

    from pretriever.mine.export import PairsDir, PairsError
    from pretriever.mine.show import stats_table

    try:
        pairs = PairsDir(pairs_dir)
        stats = json.loads((pairs.path / pairs.manifest.get("stats", "stats.json")).read_text(encoding="utf-8"))
    except (PairsError, OSError, ValueError) as err:
        raise _fail(str(err)) from err
    console.print(stats_table(stats, pairs.manifest))
    for name, info_ in pairs.manifest.get("methods", {}).items():
        if info_.get("why_no_pairs"):
            console.print(f"[yellow]{name}: no pairs[/yellow] - {escape(info_['why_no_pairs'])}")


@pairs_app.command("export")
def export(
    pairs_dir: Path = typer.Argument(..., help="A folder written by `pretriever mine`.", show_default=False),
    format: str = typer.Option(..., "--format", "-f", help="dpr (DPR training JSON), sentence-transformers "
                               "(anchor/positive/negative: Parquet when --out ends in .parquet, else a "
                               "datasets.save_to_disk folder) or jsonl (every column)."),
    out: Path = typer.Option(..., "--out", "-o", help="File (or, for a datasets folder, folder) to write."),
    method: Optional[str] = typer.Option(None, "--method", "-m", help="Comma-separated methods to export "
                                         "(default: all mined)."),
) -> None:
    """Export mined pairs for training code.

    dpr: the JSON list DPR's trainer reads (question, answers, positive_ctxs, negative_ctxs with the random negatives, hard_negative_ctxs with the overlap negatives; each context has title, text and passage_id). sentence-transformers: columns anchor, positive and negative (when mined with negatives), as Parquet or a datasets folder. jsonl: every column of every pair, one object a line.

    Examples:

      pretriever pairs export pairs/ --format dpr --out hlp-train.json

      pretriever pairs export pairs/ --format sentence-transformers --method dl,cm --out hlp-st/
    """
    from pretriever.mine.export import FORMATS, PairsDir, PairsError, export_pairs

    if format not in FORMATS:
        raise _fail(f"unknown format {format!r}; choose from {', '.join(FORMATS)}")
    try:
        pairs = PairsDir(pairs_dir)
        methods = pairs.select(method)
        if not methods:
            raise PairsError(f"{pairs_dir} holds no pairs (see why in {pairs_dir / 'pairs.json'})")
        n = export_pairs(pairs, format, out, methods)
    except PairsError as err:
        raise _fail(str(err)) from err
    console.print(escape(f"{n:,} pairs ({', '.join(methods)}) written to {out} as {format}"))
