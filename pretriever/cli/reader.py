"""``pretriever reader ...`` (train, prepare, evaluate) and ``pretriever answer``: DPR's extractive reader.

Wire into the main app with ``app.add_typer(reader_app, name="reader")`` and
``app.command("answer")(answer_command)``.
"""

from __future__ import annotations

import inspect
import json

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pretriever.cli.common import fail, stage
from pretriever.cli.options import Flag, config_command
from pretriever.progress import RichReporter, console
from pretriever.reader import prepare
from pretriever.reader import train as reader_training
from pretriever.reader.config import AnswerConfig, PrepareConfig, ReaderConfig, ReaderEvaluateConfig
from pretriever.reader import evaluate as reader_evaluation
from pretriever.reader.predict import load_reader
from pretriever.reader.prepare import answer_questions, open_for_reading

reader_app = typer.Typer(
    help=(
        "Reader (after index): DPR's extractive reader. `reader train` learns to pick the passage and the answer "
        "span from SQuAD v1.1 JSON (qac triplets: `pretriever pairs export --format squad`) or DPR reader JSON; "
        "`reader prepare` retrieves and labels passages for a QA set as DPR reader JSON; `reader evaluate` scores "
        "end-to-end exact match and F1. Then `pretriever answer INDEX_DIR --reader READER_DIR \"question\"`."
    ),
    no_args_is_help=True,
)


def _retrieval(bm25: bool, hybrid: bool) -> str | None:
    if bm25 and hybrid:
        fail("give --bm25 or --hybrid, not both")
    return "bm25" if bm25 else "hybrid" if hybrid else None


@config_command(ReaderConfig, "reader", arguments=("data",), short={"model": "-m", "limit": "-n"}, nested=("read",),
                flags={"learning_rate": Flag("--lr"), "gradient_accumulation": Flag("--grad-accum")})
def train_command(cfg: ReaderConfig) -> None:
    """Train a reader: 1 positive + (passages-1) negatives per question, drawn anew each epoch (a
    positive among all of the question's, its own negatives reshuffled first); passage-selection
    cross-entropy plus the span loss marginalised over every occurrence of the answer (DPR; C-MORE
    pre-trains it on qac triplets). Reads SQuAD v1.1/v2.0 (unanswerable questions skipped and
    counted), DPR reader JSON or a qac pairs folder.

    The defaults are sized for a CPU (4 passages of 256 tokens, batch 4); --preset dpr or --preset
    cmore sets the papers' settings (24 passages of 350 tokens, batch 16, lr 2e-5; cmore: 3 epochs)
    on the options you leave at their defaults.

    Writes READER_DIR: a transformers question-answering folder, selection_head.safetensors and
    reader.json (data counts, loss and dev EM curves). The best checkpoint by dev EM is kept.

    Examples:

      pretriever reader train qac-squad.json --out qac-reader/ --passages 2 --batch-size 2 --max-steps 4
          (C-MORE pre-training on qac triplets; a real run: --passages 4 --max-steps 2000)

      pretriever reader train nq-reader.json --model qac-reader/ --dev trec-reader.json --out nq-reader/
          --max-steps 4 --eval-steps 2 --batch-size 2 --passages 2
          (then fine-tuning on NQ)
    """
    with RichReporter() as report, stage(report):
        result = reader_training.run(cfg, report)
    dev_text = ""
    if result.dev:
        start = result.dev_before
        dev_text = (f"dev EM {start['EM']:.3f} -> " if start else "dev EM ") + f"{result.dev['EM']:.3f}, F1 " \
            + (f"{start['F1']:.3f} -> " if start else "") + f"{result.dev['F1']:.3f} on {result.dev['questions']} " \
            "questions (held out by document); "
    console.print(f"{dev_text}{result.seconds:.0f} s; reader written to {result.out}")


def _retrieval_flags(values: dict, extras: dict) -> None:
    chosen = _retrieval(extras.pop("bm25"), extras.pop("hybrid"))
    if chosen:
        values["retrieval"] = chosen


_BM25 = inspect.Parameter("bm25", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                          default=typer.Option(False, "--bm25", help="Retrieve with the BM25 beside the index."))
_HYBRID = inspect.Parameter("hybrid", inspect.Parameter.KEYWORD_ONLY, annotation=bool,
                            default=typer.Option(False, "--hybrid", help="Retrieve with the index fused with its "
                                                                         "BM25 (RRF)."))


_SOURCE = dict(short={"limit": "-n", "reader": "-r"}, skip=("retrieval",), flags={"k": Flag(("-k", "--k"))},
               extra=[_BM25, _HYBRID], before=_retrieval_flags, nested=("read",))


@config_command(PrepareConfig, "reader_prepare", arguments=("index", "questions"),
                **{**_SOURCE, "nested": ()})
def prepare_command(cfg: PrepareConfig) -> None:
    """Retrieve the top k passages of each question, mark those holding an answer (DPR's matching), write
    DPR reader JSON for `reader train` and `reader evaluate`.

    Examples:

      pretriever reader prepare enwiki-index/ nq-open-dev.jsonl --bm25 -k 20 --limit 300 --out
          nq-reader.json

      pretriever reader prepare enwiki-index/ curatedtrec-test.jsonl --hybrid --match regex --limit 50
          --out trec-reader.json
    """
    with RichReporter() as report, stage(report):
        counts = prepare.run(cfg, report).manifest
    console.print(f"{counts.questions:,} questions, {counts.with_positive:,} with an answer in the top "
                  f"{counts.k} of {escape(counts.retriever)} ({counts.match} matching); written to {cfg.out}")


@config_command(ReaderEvaluateConfig, "reader_evaluate", arguments=("index", "questions"), **_SOURCE)
def evaluate_command(cfg: ReaderEvaluateConfig) -> None:
    """End-to-end open-domain QA: exact match and F1 of the reader's answers over the top k (SQuAD
    v1.1's normalize_answer, or --lenient-match: NFKC and Unicode punctuation too, named so in the
    results; regex answers for CuratedTREC), beside retrieval top-k accuracy and, when the file gives
    gold passages (DPR JSON positive_ctxs), reader-only EM on them.

    Examples:

      pretriever reader evaluate enwiki-index/ nq-open-dev.jsonl --reader nq-reader/ --bm25 -k 5 --limit
          20
    """
    with RichReporter() as report, stage(report):
        result = reader_evaluation.run(cfg, report)
    metrics = result.evaluation.metrics
    table = Table(title=f"{result.system} + reader, {metrics['questions']} questions")
    for name in metrics:
        table.add_column(name, justify="right")
    table.add_row(*(f"{v:.4f}" if isinstance(v, float) else str(v) for v in metrics.values()))
    console.print(table)


@config_command(AnswerConfig, "answer", arguments=("index", "questions"),
                **{**_SOURCE, "flags": {**_SOURCE["flags"], "as_json": Flag("--json")}})
def answer_command(cfg: AnswerConfig) -> None:
    """Answer questions: retrieve the top k passages, read them, print the answer with its passage title
    and the evidence, the span highlighted.

    The answer is the best span of the passage with the highest selection score (C-MORE); --rank span
    takes the best span score over all passages.

    Examples:

      pretriever answer enwiki-index/ --reader nq-reader/ "who founded the Academy Awards" -k 5 --bm25

      pretriever answer enwiki-index/ --reader nq-reader/ "when did Alexander the Great die" -k 5 --hybrid
          --json
    """
    with stage(), open_for_reading(cfg) as system:
        answers = answer_questions(system, load_reader(cfg), list(cfg.questions), cfg.k)
    stdout = Console()
    for answer in answers:
        if cfg.as_json:
            typer.echo(json.dumps(answer.to_json(), ensure_ascii=False))
            continue
        text = answer.passage.text
        evidence = (escape(text[:answer.start]) + "[bold black on yellow]" + escape(text[answer.start:answer.end])
                    + "[/]" + escape(text[answer.end:]))
        stdout.print(f"[bold]Q:[/bold] {escape(answer.question)}\n[bold green]A:[/bold green] {escape(answer.text)}"
                      f"   [dim](span {answer.score:.2f}, selection {answer.relevance:.2f}, passage "
                      f"#{answer.passage_rank + 1} {escape(answer.passage.passage_id)})[/dim]\n"
                      f"[bold]{escape(answer.passage.title or '')}[/bold]\n{evidence}")
        others = [s.text for s in answer.n_best[1:]]
        if others:
            stdout.print(f"[dim]also: {escape(' | '.join(others))}[/dim]")
        stdout.print()


reader_app.command("prepare")(prepare_command)  # in the order they are used
reader_app.command("train")(train_command)
reader_app.command("evaluate")(evaluate_command)
