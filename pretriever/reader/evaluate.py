"""Scoring a reader: on gold passages (reader only) and end to end behind a retriever.

* :func:`evaluate_gold`: each question's positive with negatives (the training instance shape);
  the reader picks the passage and the span; EM/F1 against the answers. This is the dev metric
  of ``pretriever reader train`` and the "reader EM on gold blocks" of the issue.
* :func:`evaluate_reader`: retrieve the top k for each question (any :class:`Searcher`), report
  retrieval top-k accuracy (DPR's answer matching) beside end-to-end EM/F1 of the reader's answer
  (SQuAD v1.1's normalisation, or ``lenient``: NFKC and Unicode punctuation too, named so in the
  metrics; regex answers for CuratedTREC), and reader-only EM on the gold passages
  when the QA file gives them (DPR JSON ``positive_ctxs``). C-MORE Table 3 reports this EM.

Example::

    with IndexFolder("nq-index/").open() as system:
        result = evaluate_reader(system, load_qa_file("nq-dev.jsonl"), Reader.load("reader/"), k=20)
    result.metrics  # {"EM": ..., "F1": ..., "top-20 accuracy": ..., "gold EM": ...}
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pretriever.data import AnswerMatcher, QAExample, load_qa_file
from pretriever.data.qa import guess_match_mode
from pretriever.io import write_json
from pretriever.metrics import exact_match, f1_score, normalisation_name
from pretriever.progress import QUIET, Reporter
from pretriever.reader.config import ReaderEvaluateConfig
from pretriever.reader.errors import ReaderError
from pretriever.reader.predict import Reader, load_reader, passages_for
from pretriever.reader.prepare import open_for_reading
from pretriever.reader.samples import Sample, instance
from pretriever.retrieval import Passage, Searcher
from pretriever.stage import StageResult


def evaluate_gold(reader: Reader, samples: list[Sample], pool: list[Passage], passages: int, seed: int,
                  regex: bool = False, lenient: bool = False) -> dict[str, Any]:
    """Mean EM and F1 of the reader over ``samples``, each read as its positive plus ``passages - 1`` negatives
    (SQuAD v1.1 normalisation unless ``lenient``; the result names it)."""
    name = normalisation_name(lenient)
    if not samples:
        return {"EM": 0.0, "F1": 0.0, "questions": 0, "normalisation": name}
    em = f1 = 0.0
    for i, sample in enumerate(samples):
        inst = instance(sample, pool, passages, seed, i)
        answer = reader.read(sample.question, inst.passages)
        em += exact_match(answer.text, sample.answers, regex, lenient)
        f1 += f1_score(answer.text, sample.answers, regex, lenient)
    return {"EM": em / len(samples), "F1": f1 / len(samples), "questions": len(samples), "normalisation": name}


@dataclass
class ReaderEvaluation:
    """What :func:`evaluate_reader` gives: the metrics (EM, F1, top-k accuracy, counts) and each question's
    prediction, scores and whether an answer was retrieved."""

    metrics: dict[str, Any]  # EM, F1, top-k accuracy, counts, and "normalisation" (its name)
    per_question: list[dict] = field(default_factory=list)


def evaluate_reader(system: Searcher, examples: list[QAExample], reader: Reader, k: int,
                    match: str = "string", batch_size: int = 64, lenient: bool = False,
                    report: Reporter = QUIET) -> ReaderEvaluation:
    """End-to-end EM/F1 of ``reader`` over the top ``k`` of ``system``, with retrieval top-k accuracy and,
    for questions with gold passages, reader-only EM on them (see the module docstring). Answers are
    normalised as SQuAD v1.1 does unless ``lenient`` (NFKC and Unicode punctuation too); the metrics name it."""
    if not examples:
        raise ReaderError("no questions to evaluate")
    regex = match == "regex"
    matcher = AnswerMatcher(match)
    em = f1 = found = 0.0
    gold_em, gold_n = 0.0, 0
    rows = []
    for lo in range(0, len(examples), batch_size):
        chunk = examples[lo:lo + batch_size]
        for ex, hits in zip(chunk, system.search([e.question for e in chunk], k)):
            passages = passages_for(system, hits)
            row = {"qid": ex.qid, "question": ex.question, "answers": ex.answers}
            if passages:
                answer = reader.read(ex.question, passages)
                row.update(prediction=answer.text, passage_id=answer.passage.passage_id)
                em_q = exact_match(answer.text, ex.answers, regex, lenient)
                f1_q = f1_score(answer.text, ex.answers, regex, lenient)
            else:
                row.update(prediction=None, passage_id=None)
                em_q = f1_q = 0.0
            hit = any(matcher.has_answer(ex.answers, p.text) for p in passages)
            row.update(EM=em_q, F1=f1_q, retrieved_answer=hit)
            em, f1, found = em + em_q, f1 + f1_q, found + hit
            gold = [Passage(str(g.get("passage_id", "")), g.get("title"), g["text"]) for g in ex.gold
                    if isinstance(g.get("text"), str)]
            if gold:
                gold_answer = reader.read(ex.question, gold)
                row["gold_EM"] = exact_match(gold_answer.text, ex.answers, regex, lenient)
                gold_em, gold_n = gold_em + row["gold_EM"], gold_n + 1
            rows.append(row)
        report.progress("reading", min(lo + batch_size, len(examples)), len(examples), unit="questions")
    n = len(examples)
    metrics: dict[str, Any] = {"EM": em / n, "F1": f1 / n, f"top-{k} accuracy": found / n, "questions": n}
    if gold_n:
        metrics.update({"gold EM": gold_em / gold_n, "gold questions": gold_n})
    metrics["normalisation"] = normalisation_name(lenient)
    return ReaderEvaluation(metrics, rows)


def read_behind(systems: Sequence[Searcher], examples: list[QAExample], reader: Reader, k: int,
                match: str = "string", lenient: bool = False, report: Reporter = QUIET) -> dict[str, dict[str, Any]]:
    """The reader behind each of ``systems``: :func:`evaluate_reader`'s metrics by system name, the systems
    searched as they are (``pretriever evaluate --reader`` passes the ones it has just scored, still open)."""
    scores = {}
    for system in systems:
        report.message(f"reading the top {k} of {system.name}")
        scores[system.name] = evaluate_reader(system, examples, reader, k, match, lenient=lenient,
                                              report=report).metrics
    return scores


@dataclass(kw_only=True)
class ReaderEvaluateResult(StageResult):
    """``pretriever reader evaluate``: the system read behind and the evaluation; ``manifest`` is what
    ``out`` holds (when given): system, reader, k, match, metrics and per_question."""

    system: str
    evaluation: ReaderEvaluation


def run(cfg: ReaderEvaluateConfig, report: Reporter = QUIET) -> ReaderEvaluateResult:
    """The whole of ``pretriever reader evaluate``: the questions read, the system opened as ``cfg`` says, the
    reader on its device, :func:`evaluate_reader`, and ``cfg.out`` written when given.

    Args:
        cfg: the index, the questions (and their matching), the reader, k and where to write.
        report: hears the questions read.

    Returns:
        The system's name, the evaluation and the JSON written (``manifest``).
    """
    examples = load_qa_file(cfg.questions)[:cfg.limit]
    mode = cfg.match or guess_match_mode(cfg.questions)
    with open_for_reading(cfg, report) as system:
        evaluation = evaluate_reader(system, examples, load_reader(cfg), cfg.k, mode, lenient=cfg.lenient_match,
                                     report=report)
        name = system.name
    manifest = {"system": name, "reader": str(cfg.reader), "k": cfg.k, "match": mode,
                "metrics": evaluation.metrics, "per_question": evaluation.per_question}
    if cfg.out is not None:
        write_json(cfg.out, manifest)
    return ReaderEvaluateResult(out=cfg.out, manifest=manifest, system=name, evaluation=evaluation)
