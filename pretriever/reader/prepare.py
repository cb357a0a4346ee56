"""Retrieval for the reader: open an index as the reader needs it, label retrieved passages, answer questions.

* :func:`open_for_reading`: the index folder as it is (dense, refined or BM25), the BM25 beside it,
  or both fused (:meth:`pretriever.index.IndexFolder.open`), refusing an index whose store (the passage
  texts) is not there or that holds no passages.
* :func:`run` (``pretriever reader prepare``): the top k of every question of a
  QA set, each marked ``has_answer`` by DPR's answer matching, written as DPR reader JSON
  (``[{"question", "answers", "ctxs": [{"id", "title", "text", "score", "has_answer"}]}]``),
  the file DPR's ``train_extractive_reader.py`` reads and ``pretriever reader train`` too. A qac
  question's own source passage (``source_passage_id``) is left out unless ``keep_source``.
* :func:`answer_questions` (``pretriever answer``): retrieve, then read.

Example::

    with IndexFolder("nq-index/").open("hybrid") as system:
        answers = answer_questions(system, Reader.load("reader/"), ["who wrote hamlet"], k=20)
"""

from __future__ import annotations

from dataclasses import dataclass

from pretriever.data import AnswerMatcher, load_qa_file
from pretriever.data.qa import guess_match_mode
from pretriever.index import IndexFolder, System
from pretriever.io import write_json
from pretriever.progress import QUIET, Reporter
from pretriever.reader.config import PrepareConfig, RetrievalSource
from pretriever.reader.errors import ReaderError
from pretriever.reader.predict import Answer, Reader, passages_for
from pretriever.retrieval import Searcher
from pretriever.stage import StageResult


def open_for_reading(source: RetrievalSource, report: Reporter = QUIET) -> System:
    """The system ``source`` names (its index, as ``source.retrieval`` says), reading passage texts from the
    index's store (or ``source.corpus``)."""
    mode = "tuned" if source.tuned and source.retrieval == "index" else source.retrieval
    system = IndexFolder(source.index, source.corpus).open(mode, device=source.device, require_store=True,
                                                           report=report)
    if len(system) == 0:
        system.close()
        raise ReaderError(f"{source.index}: the index holds no passages")
    return system


def answer_questions(system: Searcher, reader: Reader, questions: list[str], k: int) -> list[Answer]:
    """Retrieve the top ``k`` passages of each question and read them into an answer."""
    out = []
    for question, hits in zip(questions, system.search(questions, k)):
        passages = passages_for(system, hits)
        if not passages:
            raise ReaderError(f"no passage was retrieved for {question!r} (an empty index, or no term of the "
                              "question in a BM25 index)")
        out.append(reader.read(question, passages))
    return out


@dataclass(frozen=True)
class PrepareCounts:
    """What a prepare run wrote (it has no file of its own: the DPR reader JSON is DPR's format): the questions,
    those with an answer in their top k and those without, those no passage was retrieved for, k, the retriever,
    the answer matching, and the questions whose own source passage was left out of their top k."""

    questions: int
    with_positive: int
    without_positive: int
    no_passage_retrieved: int
    k: int
    retriever: str
    match: str
    source_left_out: int


@dataclass(kw_only=True)
class PrepareResult(StageResult):
    """The DPR reader JSON written (``out``) and its counts (``manifest``)."""

    manifest: PrepareCounts


def run(cfg: PrepareConfig, report: Reporter = QUIET) -> PrepareResult:
    """Write DPR reader JSON for ``cfg.questions`` (see the module docstring); ``report`` hears how many
    questions are done (task ``retrieving``)."""
    examples = load_qa_file(cfg.questions)
    if cfg.limit is not None:
        examples = examples[:cfg.limit]
    mode = cfg.match or guess_match_mode(cfg.questions)
    matcher = AnswerMatcher(mode)
    items, with_positive, no_hits, left_out = [], 0, 0, 0
    drop_source = not cfg.keep_source and any(e.source_passage_id for e in examples)
    with open_for_reading(cfg, report) as system:
        for lo in range(0, len(examples), cfg.batch_size):
            chunk = examples[lo:lo + cfg.batch_size]
            for ex, hits in zip(chunk, system.search([e.question for e in chunk], cfg.k + drop_source)):
                if drop_source:  # the statement's own passage gives the answer away (see PrepareConfig)
                    kept = [h for h in hits if h.passage_id != ex.source_passage_id]
                    left_out += len(kept) < len(hits)
                    hits = kept[:cfg.k]
                scores = {h.passage_id: h.score for h in hits}
                ctxs = [{"id": p.passage_id, "title": p.title or "", "text": p.text,
                         "score": float(scores[p.passage_id]), "has_answer": matcher.has_answer(ex.answers, p.text)}
                        for p in passages_for(system, hits)]
                no_hits += not ctxs
                with_positive += any(c["has_answer"] for c in ctxs)
                items.append({"question": ex.question, "answers": ex.answers, "id": ex.qid, "ctxs": ctxs})
            report.progress("retrieving", min(lo + cfg.batch_size, len(examples)), len(examples), unit="questions")
    write_json(cfg.out, items)
    return PrepareResult(out=cfg.out, manifest=PrepareCounts(
        questions=len(items), with_positive=with_positive, without_positive=len(items) - with_positive,
        no_passage_retrieved=no_hits, k=cfg.k, retriever=system.name, match=mode, source_left_out=left_out))
