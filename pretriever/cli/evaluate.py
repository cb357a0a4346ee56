"""``pretriever evaluate``: score dense indexes and BM25 side by side.

Wire into the main app with ``app.command("evaluate")(evaluate_command)``.
"""

from __future__ import annotations

from pathlib import Path
from typing import List, Optional

import typer

from pretriever.config import ConfigError, build_config
from pretriever.progress import console, count_progress

EXIT_USAGE = 2  # bad options, unreadable inputs, a folder that is not an index or store


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    console.print(f"[red]error:[/red] {message}")
    return typer.Exit(code)


def _ks(value: Optional[str]) -> Optional[list[int]]:
    if value is None:
        return None
    try:
        return [int(k) for k in value.replace(" ", "").split(",") if k]
    except ValueError:
        raise _fail(f"--k takes comma-separated numbers such as 1,5,20,100; got {value!r}") from None


def evaluate_command(
    index: Optional[List[Path]] = typer.Option(
        None, "--index", "-i", show_default=False,
        help="A dense index folder (from `pretriever index build`); repeat it to compare several (the base "
             "model and the pre-trained one). Each is reported under its model's name. Its index.json names "
             "the corpus store that answers, titles and passage -> document mapping come from."),
    bm25: bool = typer.Option(False, "--bm25", help="Also evaluate BM25 over the same corpus store (reported "
                              "as bm25): INDEX_DIR/bm25 when the first index has one, else --bm25-dir, else "
                              "built for this run (bm25s Lucene, English stop words, Snowball stemmer, "
                              "title + text)."),
    queries: Optional[Path] = typer.Option(
        None, "--queries", "-q", show_default=False,
        help="BEIR queries.jsonl ({\"_id\", \"text\"}) or a BEIR dataset folder (then --qrels defaults to its "
             "qrels/test.tsv); only the queries that --qrels judges are searched."),
    qrels: Optional[Path] = typer.Option(
        None, "--qrels", show_default=False,
        help="Judgments: a BEIR qrels TSV (header query-id, corpus-id, score) or TREC qrels. Reports "
             "nDCG@10, MRR@10, Recall@20/100/1000 and MAP (pytrec_eval)."),
    answers: Optional[Path] = typer.Option(
        None, "--answers", "-a", show_default=False,
        help="Open-domain QA questions with answers: NQ-open JSONL ({\"question\", \"answer\": [...]}), "
             "DPR qas TSV (question<TAB>['a', 'b']) or DPR JSON. Reports top-k accuracy with DPR's answer "
             "matching."),
    multihop: Optional[Path] = typer.Option(
        None, "--multihop", show_default=False,
        help="Multi-hop questions (HotpotQA style JSONL): question plus gold_passages (passage ids) or "
             "gold_titles (or HotpotQA's supporting_facts). A question counts at k when ALL its gold are "
             "in the top k."),
    out: Optional[Path] = typer.Option(None, "--out", "-o", show_default=False,
                                       help="EVAL_DIR: results.json and the plots are written here (created)."),
    corpus: Optional[Path] = typer.Option(
        None, "--corpus", show_default=False,
        help="The corpus store, when it is not where index.json says (moved), or for --bm25 without --index."),
    match: Optional[str] = typer.Option(
        None, "--match", help="Answer matching: string (DPR: token sequence, case-insensitive), regex "
                              "(CuratedTREC: answers are regular expressions) or auto (regex when the file "
                              "name contains 'trec'). Default: auto."),
    k: Optional[str] = typer.Option(None, "--k", help="Accuracy cut-offs, comma-separated. Default: 1,5,20,100 "
                                    "(multi-hop: 2,10,20,100)."),
    depth: Optional[int] = typer.Option(None, "--depth", help="Results kept per query. Default: 1000 documents "
                                        "with --qrels (for Recall@1000 and MAP), else the largest k."),
    maxp_factor: Optional[int] = typer.Option(
        None, "--maxp-factor", help="When the store splits documents into passages, fetch depth x this many "
                                    "passages and score each document by its best passage (MaxP). Default: 3."),
    keep_identical_ids: bool = typer.Option(
        False, "--keep-identical-ids", help="Count a document whose id equals the query id (BEIR leaves such "
                                            "results out; so does pretriever unless this is given)."),
    overlap_k: Optional[int] = typer.Option(None, "--overlap-k", help="The top-k accuracy reported per "
                                            "question-passage overlap bucket. Default: 20 (HLP Fig. 4)."),
    overlap: Optional[bool] = typer.Option(None, "--overlap/--no-overlap", help="The Q-P overlap analysis "
                                           "(table and overlap.png). Default: on."),
    plots: Optional[bool] = typer.Option(None, "--plots/--no-plots", help="Write PNG plots. Default: on."),
    save_runs: bool = typer.Option(False, "--save-runs", help="Also write each system's ranking as a TREC "
                                   "run file under EVAL_DIR/runs/."),
    bm25_dir: Optional[Path] = typer.Option(None, "--bm25-dir", help="A BM25 index folder: loaded when it "
                                            "holds one, else built and saved there for the next run."),
    limit: Optional[int] = typer.Option(None, "--limit", "-n", help="Only the first N questions (a quick look)."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Questions per search call. Default: 256."),
    device: Optional[str] = typer.Option(None, "--device", help="Where queries are encoded: cpu, cuda, "
                                         "cuda:1, mps. Default: automatic."),
    reader: Optional[Path] = typer.Option(None, "--reader", help="With --answers: also read the top --reader-k "
                                          "passages of every system with this READER_DIR (`pretriever reader "
                                          "train`) and report end-to-end EM/F1 (SQuAD normalisation; regex "
                                          "answers in regex mode) beside top-k accuracy, and reader-only EM on "
                                          "the gold passages when the file gives them (DPR JSON)."),
    reader_k: int = typer.Option(20, "--reader-k", help="Passages the reader reads per question."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file whose [evaluate] table sets any "
                                          "of these options (keys as in EvaluateConfig, e.g. index = [\"a\", "
                                          "\"b\"], ks = [1, 5, 20, 100])."),
) -> None:
    """Evaluate retrievers: dense indexes (--index, repeatable) and BM25 (--bm25), side by side.

    Give exactly one kind of question set. Judgments (--queries with --qrels, BEIR or TREC): nDCG@10, MRR@10, Recall@20/100/1000 and MAP via pytrec_eval; judged ids are documents, so when the store splits documents into passages each document scores its best passage (MaxP), and a result whose id is the query's own id is left out (as in BEIR). Open-domain QA (--answers): the share of questions with an answer in the top 1, 5, 20, 100 passages, matched as DPR does (NFD, simple tokenizer, case-insensitive; regex mode for CuratedTREC). Multi-hop (--multihop): the share of questions with ALL gold passages or titles in the top k.

    With --answers and --reader READER_DIR (`pretriever reader train`), each system's top --reader-k passages are also read: end-to-end exact match and F1 beside top-k accuracy, and reader-only EM on gold passages when the file gives them; added to results.json under "reader".

    A Q-P overlap analysis (HLP section 6.2) buckets questions by the share of their words found in the gold or answer-bearing passage and reports each system's accuracy per bucket.

    Prints a table per analysis and writes EVAL_DIR/results.json ({"systems": {name: {metric: value}}, "per_query", "config", "dataset", "overlap", "curves"}; see `pydoc pretriever.evaluate`) with accuracy_at_k.png or recall_at_k.png and overlap.png.

    Exit status: 0 on success; 2 for bad options or unreadable inputs (the message names the file and line).

    Examples:

      pretriever evaluate --index scifact-minilm/ --bm25 --queries scifact/queries.jsonl --qrels scifact/qrels/test.tsv --out eval-scifact/

      pretriever evaluate --index scifact-minilm/ --bm25 --queries scifact/ --out eval-scifact/     (BEIR folder: test split)

      pretriever evaluate --index dpr-base/ --index hlp/ --bm25 --answers nq-open-dev.jsonl --out eval-nq/

      pretriever evaluate --index hlp/ --answers curatedtrec-test.jsonl --match regex --out eval-trec/
    """
    from pretriever.data.store import StoreError
    from pretriever.data.qa import QAFileError
    from pretriever.evaluate.config import EvaluateConfig
    from pretriever.evaluate.core import EvaluationError
    from pretriever.data.beir import DatasetError
    from pretriever.evaluate.pipeline import run_evaluation
    from pretriever.evaluate.report import metrics_table, overlap_table

    try:
        cfg = build_config(EvaluateConfig, config, "evaluate", out=out, index=index or None, bm25=bm25 or None,
                           corpus=corpus, queries=queries, qrels=qrels, answers=answers, multihop=multihop,
                           match=match, ks=_ks(k), depth=depth, maxp_factor=maxp_factor,
                           ignore_identical_ids=False if keep_identical_ids else None, overlap=overlap,
                           overlap_k=overlap_k, batch_size=batch_size, limit=limit, plots=plots,
                           save_runs=save_runs or None, bm25_dir=bm25_dir, device=device)
    except TypeError as err:
        if "out" in str(err):
            raise _fail("--out EVAL_DIR is required (or `out` in the [evaluate] table of --config)") from err
        raise _fail(str(err)) from err
    except (ConfigError, ValueError) as err:
        raise _fail(str(err)) from err

    errors = (ConfigError, DatasetError, QAFileError, EvaluationError, StoreError, ValueError, OSError)
    try:
        from pretriever.index.errors import IndexStageError

        errors = errors + (IndexStageError,)
    except ImportError:  # pragma: no cover - the index stage is part of the package
        pass

    with count_progress() as progress:
        tasks: dict[str, int] = {}

        def on_batch(system: str, done: int, total: int) -> None:
            if system not in tasks:
                tasks[system] = progress.add_task(f"searching: {system}", total=total, rate="")
            elapsed = progress.tasks[tasks[system]].elapsed or 0
            progress.update(tasks[system], completed=done,
                            rate=f"{done / elapsed:,.0f} q/s" if elapsed > 0 else "")

        def on_step(message: str) -> None:
            progress.console.print(f"[dim]{message}[/dim]")

        try:
            result, written = run_evaluation(cfg, progress=on_batch, step=on_step)
        except errors as err:
            progress.stop()
            raise _fail(str(err)) from err

    console.print(metrics_table(result))
    table = overlap_table(result)
    if table is not None:
        console.print(table)
    if result.kind == "answers":
        console.print(f"answer matching: {result.config.get('match')}")
    if reader is not None:
        if result.kind != "answers":
            raise _fail("--reader needs --answers (questions with answers)")
        _evaluate_reader(cfg, reader, reader_k, result.config.get("match") or "string", written["results"])
    for note in result.dataset.get("notes", []):
        console.print(f"[yellow]{note}[/yellow]")
    console.print(f"results: {written['results']}" + "".join(f", {p.name}" for key, p in written.items()
                                                              if key in ("curve", "overlap")))


def _evaluate_reader(cfg, reader_dir: Path, k: int, match: str, results_json: Path) -> None:
    """End-to-end EM/F1 of a reader behind every evaluated system, printed and added to results.json."""
    from rich.table import Table

    from pretriever.cli.common import stage
    from pretriever.data import PassageLookup, load_qa_file
    from pretriever.evaluate.pipeline import open_systems
    from pretriever.io import read_json, write_json
    from pretriever.reader.evaluate import evaluate_reader
    from pretriever.reader.predict import Reader

    with stage():
        examples = load_qa_file(cfg.answers)[:cfg.limit]
        systems = open_systems(cfg)
        reader = Reader.load(reader_dir)
        scores = {}
        for retriever in systems.retrievers:
            lookup = PassageLookup(systems.stores[retriever.name])
            scores[retriever.name] = evaluate_reader(retriever, lookup, examples, reader, k, match).metrics
        data = read_json(results_json, ValueError)
        data["reader"] = {"reader": str(reader_dir), "k": k, "match": match, "systems": scores}
        write_json(results_json, data)
    table = Table(title=f"end-to-end QA: reader {reader_dir} over the top {k}")
    columns = list(next(iter(scores.values())))
    table.add_column("system")
    for name in columns:
        table.add_column(name, justify="right")
    for name, metrics in scores.items():
        table.add_row(name, *(f"{metrics[c]:.4f}" if isinstance(metrics[c], float) else str(metrics[c])
                              for c in columns))
    console.print(table)
