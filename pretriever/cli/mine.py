"""``pretriever mine`` and ``pretriever pairs ...``: mine pseudo query-passage pairs, look at them, export them.

Wire into the main app with ``app.command("mine")(mine_command)`` and
``app.add_typer(pairs_app, name="pairs")``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.markup import escape

from pretriever.cli.common import fail, stage
from pretriever.cli.options import Flag, config_command
from pretriever.io import read_json
from pretriever.mine.config import MineConfig
from pretriever.data.pairs import PairsDir, PairsError
from pretriever.mine.export import DPR_N_DOCS, FORMATS, export_pairs
from pretriever.reader.negatives import PairsContexts
from pretriever import mine
from pretriever.mine.show import render_pair, stats_table
from pretriever.progress import RichReporter, console


@config_command(MineConfig, "mine", arguments=("corpus",), short={"max_pairs": "-n"},
                flags={"methods": Flag(("--method", "-m"), cli_type=str, extra_help="Example: --method dl,cm,ict,wlp,bfs."),
                       "max_pairs": Flag(extra_help="Example: --max-pairs 20000000."),
                       "cm_indegree_threshold": Flag(extra_help="Example: --cm-indegree-threshold 1000.")})
def mine_command(cfg: MineConfig) -> None:
    """Mine pseudo query-passage pairs from a corpus store.

    HLP (Zhou et al., 2022) pairs passages through hyperlinks: dual-link (passage q of document Q links to
    P, and passage p of P links back to Q) and co-mention (q and p both link to a third, not-too-common
    entity E, and p links to Q). The query is the sentence of q that holds the evidential anchor; the
    positive is p, without its title. The ICT, WLP and BFS baselines (Lee et al., 2019; Chang et al.,
    2020) are available too.

    Mining is relational (Ibis on DuckDB, or on local Spark with --engine spark) and every random choice
    is a hash of the seed, so a run is reproducible and both engines give the same pairs. Hub documents
    are capped, exact duplicates dropped. The output folder gets one Parquet file per method, pairs.json
    (manifest: options, counts, why a method found nothing), stats.json and overlap.png; a table of
    per-method statistics (pairs, distinct queries and positives, lengths, query-passage lexical overlap
    in BERT WordPiece tokens) ends the run.

    Exit status: 0 on success (also when a method finds no pairs: the reason is printed and kept in
    pairs.json); 2 for bad options or a folder that is not a corpus store.

    Examples:

      pretriever mine enwiki/ --out pairs/ --max-pairs 20000000 --seed 0 --cm-indegree-percentile 99
          (a small sample has few linked articles: raise the paper's 90, the default, kept on a full wiki)

      pretriever mine enwiki/ --method dl,cm,ict,wlp,bfs --negatives overlap --out pairs-all/

      pretriever mine enwiki/ --out pairs-spark/ --engine spark

      pretriever mine enwiki/ --method qac --references refs/ --out qac-pairs/
          (C-MORE triplets from the fetched references)

      pretriever mine enwiki/ --method qac --context links --out qac-links/
          (offline: contexts from linked articles)

      pretriever mine enwiki/ --method cc,qc --queries queries/ --out qc-pairs/
          (query-as-context pre-training pairs)

      pretriever mine enwiki/ --method cc --cc-max-tokens 128 --out cc-pairs/
          (context passages of whole sentences up to 128 tokens)
    """
    with RichReporter() as report, stage(report):
        report.message(f"mining {', '.join(cfg.methods)} on {cfg.engine}")
        result = mine.run(cfg, report)
    print_result(result)


def print_result(result: mine.MineResult) -> None:
    """The summary ``pretriever mine`` prints: the stats table, why a method gave no pairs, qac's funnel."""
    console.print(stats_table(result.stats, result.manifest))
    for name, r in result.methods.items():
        if r.reason:
            console.print(f"[yellow]{name}: no pairs[/yellow] - {escape(r.reason)}")
    for name, r in result.methods.items():
        funnel = (r.report or {}).get("funnel")
        if funnel:
            steps = " -> ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in funnel.items())
            console.print(f"{name} funnel: " + escape(steps))
            counts = {k: v for k, v in r.report.items() if isinstance(v, int) and not isinstance(v, bool)}
            if counts:  # qac: the block choice and the entities tried beside the funnel
                console.print(f"{name}: " + escape(", ".join(f"{k.replace('_', ' ')} {v:,}"
                                                             for k, v in counts.items())))
    for name, r in result.methods.items():
        if (r.report or {}).get("note"):
            console.print(escape(f"{name}: {r.report['note']}"))
    cm = result.manifest.cm_indegree_threshold
    if cm and "cm" in result.methods and result.methods["cm"].pairs:
        excluded = f", {cm['excluded']:,} of {cm['entities']:,} articles excluded" if cm.get("entities") else ""
        console.print(f"cm: co-mentioned entities have in-degree < K = {cm['k']} ({cm['rule']}{excluded})")
    flagged = result.manifest.flagged_sentences
    if flagged and flagged.get("excluded"):
        console.print(f"{flagged['excluded']:,} of {flagged['sentences']:,} sentences are never queries: "
                      f"{flagged['with_hole']:,} with a hole where markup stood, {flagged['list_items']:,} list items")
    console.print(escape(f"{result.total:,} pairs in {result.config.out}/ ({result.seconds:.1f} s); "
                         f"look at them with: pretriever pairs show {result.config.out}"))


pairs_app = typer.Typer(
    help=(
        "Look at mined pairs and export them for training.\n\n"
        "Example: pretriever pairs show pairs/ --method dl -n 5"
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

    The query's anchor (DL: the link to P; CM: the link to E) is yellow; the positive's anchor linking
    back to the query's document is green; for CM, the positive's anchor to the co-mentioned entity E is
    magenta. The first pairs of a file are a seeded random sample.

    Example:

      pretriever pairs show pairs/ --method dl -n 5
    """
    with stage():
        pairs = PairsDir(pairs_dir)
        methods = pairs.select(method) if method else pairs.methods[:1]
    if not methods:
        fail(f"{pairs_dir} holds no pairs (see why in {pairs_dir / 'pairs.json'})")
    for row in pairs.rows(methods, limit=n):
        console.print(render_pair(row))


@pairs_app.command("info")
def info(pairs_dir: Path = typer.Argument(..., help="A folder written by `pretriever mine`.", show_default=False)) -> None:
    """Print the statistics table of a pairs folder (from its stats.json), and why a method found no
    pairs.

    Example:

      pretriever pairs info pairs/
    """
    with stage():
        pairs = PairsDir(pairs_dir)
        stats = read_json(pairs.path / (pairs.manifest.stats or "stats.json"), PairsError)
    console.print(stats_table(stats, pairs.manifest))
    for name, info_ in pairs.manifest.methods.items():
        if info_.get("why_no_pairs"):
            console.print(f"[yellow]{name}: no pairs[/yellow] - {escape(info_['why_no_pairs'])}")


@pairs_app.command("export")
def export(
    pairs_dir: Path = typer.Argument(..., help="A folder written by `pretriever mine`.", show_default=False),
    format: str = typer.Option(..., "--format", "-f", help="dpr (DPR training JSON), sentence-transformers "
                               "(anchor/positive/negative: Parquet when --out ends in .parquet, else a "
                               "datasets.save_to_disk folder), jsonl (every column), squad (SQuAD v1.1 with "
                               "answer_start, for readers; qac pairs), dpr-reader (DPR's reader input: ctxs with "
                               "has_answer; qac pairs) or tevatron (Tevatron's training JSONL)."),
    out: Path = typer.Option(..., "--out", "-o", help="File (or, for a datasets folder, folder) to write."),
    method: Optional[str] = typer.Option(None, "--method", "-m", help="Comma-separated methods to export "
                                         "(default: all mined)."),
    negatives: int = typer.Option(DPR_N_DOCS, "--negatives", min=0, help="dpr-reader: BM25's top N passages per "
                                  "question from the store and the reference pages, each with has_answer by DPR's "
                                  "matching (the default is DPR's retriever output, n_docs; 0: the mined negative "
                                  "alone)."),
    corpus: Optional[Path] = typer.Option(None, "--corpus", help="dpr-reader: the corpus store, when it is not "
                                          "where pairs.json says (moved)."),
) -> None:
    """Export mined pairs for training code.

    dpr: the JSON list DPR's trainer reads (question, answers, positive_ctxs, negative_ctxs with the
    random negatives, hard_negative_ctxs with the overlap negatives; each context has title, text and
    passage_id). sentence-transformers: columns anchor, positive and negative (when mined with negatives),
    as Parquet or a datasets folder. jsonl: every column of every pair, one object a line. tevatron: one
    pair a line as Tevatron's trainers read it (query_id, query, answers, positive_passages and
    negative_passages of {docid, title, text}; the title is left empty because the texts are already what
    pretriever trains on and Tevatron would prepend it). dpr-reader: for each qac question, the positive,
    the mined negative and BM25's top --negatives passages (DPR's reader trains on 24 a question), each
    with its BM25 score and has_answer by DPR's rule, best first; BM25 is built over the store and the
    blocks of the reference pages (the qac positives' own ids).

    Examples:

      pretriever pairs export pairs/ --format dpr --out hlp-train.json

      pretriever pairs export pairs/ --format sentence-transformers --method dl --out hlp-st/

      pretriever pairs export qac-links/ --format squad --out qac-squad.json
          (question-answer-context triplets for a reader)

      pretriever pairs export qac-links/ --format dpr-reader --out qac-reader.json
          (DPR's reader input, for DPR's train_extractive_reader.py or `pretriever reader train`)

      pretriever pairs export pairs/ --format tevatron --out hlp-tevatron.jsonl
          (train with Tevatron main, v2 or v1.5: --dataset_name json --dataset_path hlp-tevatron.jsonl;
          pairs mined with --negatives none need --train_group_size 1)
    """
    if format not in FORMATS:
        fail(f"unknown format {format!r}; choose from {', '.join(FORMATS)}")
    with RichReporter() as report, stage(report):
        pairs = PairsDir(pairs_dir)
        methods = pairs.select(method)
        if not methods:
            raise PairsError(f"{pairs_dir} holds no pairs (see why in {pairs_dir / 'pairs.json'})")
        notes: list[str] = []
        contexts = PairsContexts(pairs, corpus, report) if format == "dpr-reader" else None
        try:
            n = export_pairs(pairs, format, out, methods, notes, contexts, negatives)
        finally:
            if contexts is not None:
                contexts.close()
    dropped = f"; {pairs.duplicates_dropped:,} found by two methods written once" if pairs.duplicates_dropped else ""
    console.print(escape(f"{n:,} pairs ({', '.join(methods)}) written to {out} as {format}{dropped}"))
    for note in notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}")
