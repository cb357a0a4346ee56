"""Retrieval for the reader: open an index as the reader needs it, label retrieved passages, answer questions.

* :func:`open_system`: the index folder as it is (dense, refined or BM25, via ``open_retriever``),
  the BM25 beside it, or both fused (``open_hybrid``); with the store that holds its passages.
* :func:`prepare_reader_data` (``pretriever reader prepare``): the top k of every question of a
  QA set, each marked ``has_answer`` by DPR's answer matching, written as DPR reader JSON
  (``[{"question", "answers", "ctxs": [{"id", "title", "text", "score", "has_answer"}]}]``),
  the file DPR's ``train_extractive_reader.py`` reads and ``pretriever reader train`` too.
* :func:`answer_questions` (``pretriever answer``): retrieve, then read.

Example::

    system = open_system("nq-index/", "hybrid")
    answers = answer_questions(system, Reader.load("reader/"), ["who wrote hamlet"], k=20)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pretriever.data import AnswerMatcher, PassageLookup, load_qa_file
from pretriever.data.qa import guess_match_mode
from pretriever.index import BM25Index, HybridOptions, bm25_beside, open_hybrid, open_retriever
from pretriever.index.dense import BM25_DIR
from pretriever.io import write_json
from pretriever.reader.config import PrepareConfig
from pretriever.reader.errors import ReaderError
from pretriever.reader.evaluate import passages_for
from pretriever.reader.predict import Answer, Reader
from pretriever.retrieval import Retriever


@dataclass
class System:
    retriever: Retriever
    lookup: PassageLookup
    label: str


def open_system(index_dir: Path | str, retrieval: str = "index", device: str | None = None,
                hybrid: HybridOptions | None = None, say: Callable[[str], None] = lambda message: None) -> System:
    """The retriever of ``index_dir`` for ``retrieval`` (index, bm25, hybrid) and a lookup on its store."""
    index_dir = Path(index_dir)
    if retrieval == "hybrid":
        retriever = open_hybrid(index_dir, hybrid or HybridOptions(), device=device, say=say)
    else:
        retriever = open_retriever(index_dir, device=device)
        if retrieval == "bm25" and not isinstance(retriever, BM25Index):
            store = (getattr(retriever, "meta", {}).get("corpus") or {}).get("store")
            retriever, _ = bm25_beside(store, [index_dir / BM25_DIR], say=say)
    store = (getattr(retriever, "meta", {}).get("corpus") or {}).get("store")
    if not store or not Path(store).exists():
        raise ReaderError(f"{index_dir}: the corpus store its passages come from ({store or 'not recorded'}) is "
                          "not there; the reader needs the passage texts")
    if len(retriever) == 0:
        raise ReaderError(f"{index_dir}: the index holds no passages")
    return System(retriever, PassageLookup(store), getattr(retriever, "name", retrieval))


def answer_questions(system: System, reader: Reader, questions: list[str], k: int) -> list[Answer]:
    """Retrieve the top ``k`` passages of each question and read them into an answer."""
    out = []
    for question, hits in zip(questions, system.retriever.search(questions, k)):
        passages = passages_for(system.lookup, hits)
        if not passages:
            raise ReaderError(f"no passage was retrieved for {question!r} (an empty index, or no term of the "
                              "question in a BM25 index)")
        out.append(reader.read(question, passages))
    return out


def prepare_reader_data(cfg: PrepareConfig, say: Callable[[str], None] = lambda message: None,
                        progress: Callable[[int, int], None] = lambda done, total: None) -> dict:
    """Write DPR reader JSON for ``cfg.questions`` (see the module docstring); returns the counts."""
    examples = load_qa_file(cfg.questions)
    if cfg.limit is not None:
        examples = examples[:cfg.limit]
    mode = cfg.match or guess_match_mode(cfg.questions)
    matcher = AnswerMatcher(mode)
    system = open_system(cfg.index, cfg.retrieval, cfg.device, say=say)
    items, with_positive, no_hits = [], 0, 0
    for lo in range(0, len(examples), cfg.batch_size):
        chunk = examples[lo:lo + cfg.batch_size]
        for ex, hits in zip(chunk, system.retriever.search([e.question for e in chunk], cfg.k)):
            scores = {h.passage_id: h.score for h in hits}
            ctxs = [{"id": p.passage_id, "title": p.title or "", "text": p.text, "score": float(scores[p.passage_id]),
                     "has_answer": matcher.has_answer(ex.answers, p.text)}
                    for p in passages_for(system.lookup, hits)]
            no_hits += not ctxs
            with_positive += any(c["has_answer"] for c in ctxs)
            items.append({"question": ex.question, "answers": ex.answers, "id": ex.qid, "ctxs": ctxs})
        progress(min(lo + cfg.batch_size, len(examples)), len(examples))
    write_json(cfg.out, items)
    return {"questions": len(items), "with_positive": with_positive, "without_positive": len(items) - with_positive,
            "no_passage_retrieved": no_hits, "k": cfg.k, "retriever": system.label, "match": mode}
