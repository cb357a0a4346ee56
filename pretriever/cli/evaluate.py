"""``pretriever evaluate``: score dense indexes and BM25 side by side.

Wire into the main app with ``app.command("evaluate")(evaluate_command)``.
"""

from __future__ import annotations

from rich.markup import escape

from pretriever.cli.common import fail, stage
from pretriever.cli.options import Flag, config_command
from pretriever.evaluate import pipeline as evaluation
from pretriever.evaluate.config import EvaluateConfig
from pretriever.evaluate.report import metrics_table, overlap_table, reader_table
from pretriever.progress import RichReporter, console


def _ks(value: str) -> list[int]:
    """--k 1,5,20,100 -> [1, 5, 20, 100]."""
    try:
        return [int(k) for k in value.replace(" ", "").split(",") if k]
    except ValueError:
        fail(f"--k takes comma-separated numbers such as 1,5,20,100; got {value!r}")


@config_command(EvaluateConfig, "evaluate", nested=("fusion",),
                short={"index": "-i", "queries": "-q", "answers": "-a", "limit": "-n"},
                flags={"index": Flag(extra_help="Repeat --index for each (e.g. the base model and the pre-trained "
                                                "one)."),
                       "ks": Flag("--k", parse=_ks, cli_type=str),
                       "ignore_identical_ids": Flag("--ignore-identical-ids/--keep-identical-ids")})
def evaluate_command(cfg: EvaluateConfig) -> None:
    """Evaluate retrievers: dense indexes (--index, repeatable), BM25 (--bm25) and their fusion
    (--hybrid), side by side.

    Give exactly one kind of question set. Judgments (--queries with --qrels, BEIR or TREC): nDCG@10,
    MRR@10, Recall@20/100/1000 and MAP via pytrec_eval; judged ids are documents, so when the store splits
    documents into passages each document scores its best passage (MaxP), and a result whose id is the
    query's own id is left out (as in BEIR). Open-domain QA (--answers): the share of questions with an
    answer in the top 1, 5, 20, 100 passages, matched as DPR does (NFD, simple tokenizer,
    case-insensitive; regex mode for CuratedTREC). Multi-hop (--multihop): the share of questions with ALL
    gold passages or titles in the top k.

    With --answers and --reader READER_DIR (`pretriever reader train`), each system's top --reader-k
    passages are also read: end-to-end exact match and F1 beside top-k accuracy, and reader-only EM on
    gold passages when the file gives them; added to results.json under "reader".

    --hybrid adds each index fused with BM25: reciprocal rank fusion (k = 60), or --fusion convex, a
    weighted sum of min-max normalised scores with --alpha given or chosen on validation judgments
    (--alpha-from qrels/train.tsv). On SciFact test with all-MiniLM-L6-v2 this gives nDCG@10 0.722 (RRF)
    and 0.731 (convex, alpha 0.5), against BM25 0.686 and dense 0.649. --prf-k K adds label-free dense
    pseudo-relevance feedback: each query vector moves towards the mean of the fused top K passages
    (Rocchio, --prf-weight), the dense side is searched again and fused again.

    An index tuned by `pretriever tune` adds a row "tuned: LABEL" (e.g. "tuned: hybrid convex 0.4"): the
    index searched the way the tune chose, beside the index alone; --no-tuned leaves it out.

    The questions are checked against the corpus searched: judgments (or gold passages) that name none of
    its documents are refused; when only some are missing a warning counts them. A refined index
    (`pretriever refine`) is never scored on the questions whose labels refined it (compared by id and
    normalised text): when some questions repeat its feedback queries they are left out for every system,
    listed in results.json (dataset.left_out) and stated in every row's name ("[298/300 scored: 2 repeat
    feedback queries]"); when all do, evaluate refuses (unless it was refined with --oracle, then reported
    as ORACLE).

    A Q-P overlap analysis (HLP section 6.2) buckets questions by the share of their words found in the
    gold or answer-bearing passage and reports each system's accuracy per bucket.

    Prints a table per analysis and writes EVAL_DIR/results.json ({"systems": {name: {metric: value}},
    "per_query", "config", "dataset", "overlap", "curves"}; see `pydoc pretriever.evaluate`) with
    accuracy_at_k.png or recall_at_k.png and overlap.png.

    Exit status: 0 on success; 2 for bad options, unreadable inputs (the message names the file and
    line), judgments of another corpus, or questions that all refined the index.

    Examples:

      pretriever evaluate --index scifact-index/ --bm25 --queries scifact/queries.jsonl --qrels
          scifact/qrels/test.tsv --out eval-scifact/

      pretriever evaluate --index scifact-index/ --bm25 --queries scifact/ --out eval-scifact/
          (BEIR folder: test split)

      pretriever evaluate --index scifact-index/ --hybrid --fusion convex --alpha-from
          scifact/qrels/train.tsv --queries scifact/ --out eval-hybrid/

      pretriever evaluate --index scifact-index/ --hybrid --fusion convex --alpha 0.5 --prf-k 3 --queries
          scifact/ --out eval-prf/

      pretriever evaluate --index enwiki-index/ --bm25 --answers nq-open-dev.jsonl --limit 500 --out
          eval-nq/

      pretriever evaluate --index enwiki-index/ --answers curatedtrec-test.jsonl --match regex --out
          eval-trec/
    """
    with RichReporter() as report, stage(report):
        evaluated = evaluation.run(cfg, report)
    result, written = evaluated.evaluation, evaluated.written

    console.print(metrics_table(result))
    table = overlap_table(result)
    if table is not None:
        console.print(table)
    if result.kind == "answers":
        console.print(f"answer matching: {result.config.get('match')}")
    if result.reader is not None:
        console.print(reader_table(result.reader))
    for note in result.dataset.get("notes", []):
        console.print(f"[yellow]{escape(note)}[/yellow]")
    console.print(f"results: {written['results']}" + "".join(f", {p.name}" for key, p in written.items()
                                                              if key in ("curve", "overlap")))
