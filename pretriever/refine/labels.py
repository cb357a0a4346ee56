"""Pseudo-labels (paper section 2.1): retrieve the top k for each feedback query and call each
retrieved passage relevant or irrelevant.

* ``answers``: relevant when the passage contains one of the query's answers (DPR matching,
  :class:`pretriever.data.qa.AnswerMatcher`), as in eq. 8;
* ``qrels``: relevant when the passage's document is judged relevant (grade >= 1);
* ``topk``: classic pseudo-relevance feedback without labels: the top ``k_pos`` are relevant,
  the rest of the top k irrelevant.

:class:`Labels` holds the edges (query, passage row, rank, score, positive) of one round; its
two views are the paper's Table 2 (passage-centric: each passage with its positive and
negative queries) and the query-centric one (each query with its positive and negative
passages), written as Parquet for inspection.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from pretriever.data import AnswerMatcher, load_qa_file, load_qrels, load_queries, queries_in_qrels, tokenize
from pretriever.refine.errors import RefineError
from pretriever.refine.search import PatchedSearcher

FEEDBACK_KINDS = ("answers", "qrels", "topk")


class Judge:
    """Relevance of retrieved (query index, passage row, 0-based rank) triples."""

    kind = "?"

    def __call__(self, queries: np.ndarray, rows: np.ndarray, ranks: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def ignored(self, queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Retrieved (query, passage row) pairs that are no label at all (default: none)."""
        return np.zeros(len(rows), dtype=bool)


class TopkJudge(Judge):
    """Label-free feedback (pseudo-relevance): the top ``k_pos`` retrieved passages of a query are
    positives, the rest of its retrieved passages negatives (``refine run -f topk``)."""

    kind = "topk"

    def __init__(self, k_pos: int):
        self.k_pos = int(k_pos)

    def __call__(self, queries, rows, ranks):
        return np.asarray(ranks) < self.k_pos


class QrelsJudge(Judge):
    """Relevant when the passage's document has grade >= 1 for the query. A query's own document
    (same id) is no label at all, as BEIR leaves it out of the results (``ignore_identical_ids``)."""

    kind = "qrels"

    def __init__(self, query_ids: Sequence[str], qrels: dict[str, dict[str, int]], passage_ids: np.ndarray,
                 doc_ids=None):
        self.passage_ids = passage_ids
        self.query_ids = list(query_ids)
        self.doc_ids = doc_ids  # callable: passage ids -> {passage id: doc id}; None: passages are documents
        self._doc_code: dict[str, int] = {}
        self._row_doc: dict[int, str | None] = {}
        pairs = [(qi, self._code(doc)) for qi, qid in enumerate(query_ids)
                 for doc, grade in (qrels.get(qid) or {}).items() if grade >= 1]
        self._stride = max(1, len(self._doc_code))
        self._keys = np.unique(np.array([q * self._stride + d for q, d in pairs], dtype=np.int64))
        self._row_code: dict[int, int] = {}

    def _code(self, doc: str) -> int:
        code = self._doc_code.get(doc)
        if code is None:
            code = self._doc_code[doc] = len(self._doc_code)
        return code

    def row_docs(self, rows: np.ndarray) -> np.ndarray:
        """Document code of each passage row (-1 when its document is judged for no query)."""
        todo = [int(r) for r in np.unique(rows) if int(r) not in self._row_code]
        if todo:
            pids = [self.passage_ids[r] for r in todo]
            docs = dict(zip(pids, pids)) if self.doc_ids is None else self.doc_ids(pids)
            for r, pid in zip(todo, pids):
                doc = self._row_doc[r] = docs.get(pid)
                self._row_code[r] = self._doc_code.get(doc, -1) if doc is not None else -1
        return np.fromiter((self._row_code[int(r)] for r in rows), dtype=np.int64, count=len(rows))

    def ignored(self, queries, rows):
        self.row_docs(np.asarray(rows))
        return np.fromiter((self._row_doc[int(r)] == self.query_ids[int(q)] for q, r in zip(queries, rows)),
                           dtype=bool, count=len(rows))

    def __call__(self, queries, rows, ranks):
        docs = self.row_docs(np.asarray(rows))
        keys = np.asarray(queries, np.int64) * self._stride + docs
        return (docs >= 0) & np.isin(keys, self._keys)


class AnswersJudge(Judge):
    """Relevant when the passage text contains an answer (DPR string matching, or regex)."""

    kind = "answers"

    def __init__(self, answers: Sequence[Sequence[str]], passage_ids: np.ndarray, texts, match: str = "string"):
        self.answers = [list(a) for a in answers]
        self.passage_ids = passage_ids
        self.texts = texts  # callable: passage ids -> {passage id: text}
        self.matcher = AnswerMatcher(match)
        self._tokenize = tokenize
        self._cache: dict[tuple[int, int], bool] = {}
        self._row_text: dict[int, tuple[str | None, list[str] | None]] = {}

    def __call__(self, queries, rows, ranks):
        rows = np.asarray(rows)
        todo = [int(r) for r in np.unique(rows) if int(r) not in self._row_text]
        if todo:
            found = self.texts([self.passage_ids[r] for r in todo])
            for r in todo:
                text = found.get(self.passage_ids[r])
                self._row_text[r] = (text, self._tokenize(text) if text is not None and
                                     self.matcher.mode == "string" else None)
        out = np.zeros(len(rows), dtype=bool)
        for i, (q, r) in enumerate(zip(queries, rows)):
            key = (int(q), int(r))
            hit = self._cache.get(key)
            if hit is None:
                text, tokens = self._row_text[int(r)]
                hit = self._cache[key] = self.matcher.has_answer(self.answers[int(q)], text, tokens)
            out[i] = hit
        return out


@dataclass
class FeedbackSet:
    """The feedback queries of a refinement and how their retrieved passages are judged."""

    kind: str  # answers | qrels | topk
    ids: list[str]
    texts: list[str]
    qrels: dict[str, dict[str, int]] | None = None
    answers: list[list[str]] | None = None
    sources: dict[str, str] = field(default_factory=dict)  # input files

    def __len__(self) -> int:
        return len(self.ids)

    def subset(self, positions: Sequence[int]) -> FeedbackSet:
        """The feedback queries at ``positions`` (a grid's split), with their judgments or answers.

        Args:
            positions: indices into the queries.

        Returns:
            The smaller set.
        """
        positions = list(positions)
        ids = [self.ids[i] for i in positions]
        return FeedbackSet(self.kind, ids, [self.texts[i] for i in positions],
                           None if self.qrels is None else {q: self.qrels[q] for q in ids if q in self.qrels},
                           None if self.answers is None else [self.answers[i] for i in positions], dict(self.sources))

    def judge(self, passage_ids: np.ndarray, lookup=None, k_pos: int = 5, match: str = "string") -> Judge:
        """The :class:`Judge` for this feedback (``lookup``: a PassageLookup for documents and texts).

        Args:
            passage_ids: the index's passage ids, by row.
            lookup: the store (qrels over split documents, answers).
            k_pos: ``topk``: the top k' that count as relevant.
            match: ``answers``: ``string`` or ``regex``.

        Returns:
            The judge.
        """
        if self.kind == "topk":
            return TopkJudge(k_pos)
        if self.kind == "qrels":
            doc_ids = None if lookup is None or lookup.documents_whole else lookup.doc_ids
            return QrelsJudge(self.ids, self.qrels or {}, passage_ids, doc_ids)
        if lookup is None:
            raise RefineError("answer feedback needs passage texts: the index must name its corpus store")
        return AnswersJudge(self.answers or [], passage_ids, lookup.texts, match)


@dataclass
class Labels:
    """One round's pseudo-labels: edges between feedback queries and their top-k passages."""

    query: np.ndarray  # int64, index into the feedback queries
    row: np.ndarray  # int64, passage row in the index
    rank: np.ndarray  # int32, 0-based rank in the query's top k
    score: np.ndarray  # float32, the inner product at retrieval time
    positive: np.ndarray  # bool

    def __len__(self) -> int:
        return len(self.row)

    def passages(self) -> np.ndarray:
        """The distinct passage rows that carry labels (sorted)."""
        return np.unique(self.row)

    def stats(self) -> dict:
        pos = self.positive
        rows_pos = np.unique(self.row[pos])
        queries_pos = np.unique(self.query[pos])
        n_q = len(np.unique(self.query))
        return {"edges": int(len(self)), "positive_edges": int(pos.sum()), "queries": n_q,
                "queries_with_positive": int(len(queries_pos)), "passages": int(len(self.passages())),
                "passages_with_positive": int(len(rows_pos)),
                "passages_trainable": int(len(np.intersect1d(rows_pos, np.unique(self.row[~pos]))))}

    def query_view(self, feedback: FeedbackSet, passage_ids: np.ndarray, round_no: int = 0) -> pa.Table:
        """One row per feedback query: its positive and negative passages (ids, best first).

        Args:
            feedback: the feedback queries.
            passage_ids: the index's passage ids, by row.
            round_no: the round, recorded in each row.

        Returns:
            The table (``refine/labels_queries.parquet``).
        """
        order = np.lexsort((self.rank, self.query))
        q, r, pos = self.query[order], self.row[order], self.positive[order]
        ids = np.asarray(passage_ids, dtype=object)[r]
        uq, starts = np.unique(q, return_index=True)
        ends = np.r_[starts[1:], len(q)]
        pos_lists, neg_lists = [], []
        for s, e in zip(starts, ends):
            m = pos[s:e]
            pos_lists.append(ids[s:e][m].tolist())
            neg_lists.append(ids[s:e][~m].tolist())
        return pa.table({
            "round": pa.array([round_no] * len(uq), pa.int32()),
            "query_id": pa.array([feedback.ids[i] for i in uq], pa.string()),
            "query": pa.array([feedback.texts[i] for i in uq], pa.string()),
            "n_positive": pa.array([len(x) for x in pos_lists], pa.int32()),
            "n_negative": pa.array([len(x) for x in neg_lists], pa.int32()),
            "positive_passages": pa.array(pos_lists, pa.list_(pa.string())),
            "negative_passages": pa.array(neg_lists, pa.list_(pa.string())),
        })

    def passage_view(self, feedback: FeedbackSet, passage_ids: np.ndarray, round_no: int = 0,
                     texts: dict[str, tuple[str | None, str | None]] | None = None) -> pa.Table:
        """One row per labelled passage: its positive and negative queries (the paper's Table 2);
        ``texts``: passage id -> (title, text) to show beside them.

        Args:
            feedback: the feedback queries.
            passage_ids: the index's passage ids, by row.
            round_no: the round, recorded in each row.
            texts: passage id -> (title, text) (None: no texts).

        Returns:
            The table (``refine/labels_passages.parquet``).
        """
        order = np.lexsort((self.rank, self.row))
        q, r, pos = self.query[order], self.row[order], self.positive[order]
        ur, starts = np.unique(r, return_index=True)
        ends = np.r_[starts[1:], len(r)]
        qtexts = np.asarray(feedback.texts, dtype=object)
        qids = np.asarray(feedback.ids, dtype=object)
        cols: dict[str, list] = {"pos_ids": [], "neg_ids": [], "pos_q": [], "neg_q": []}
        for s, e in zip(starts, ends):
            m = pos[s:e]
            qq = q[s:e]
            cols["pos_ids"].append(qids[qq[m]].tolist())
            cols["neg_ids"].append(qids[qq[~m]].tolist())
            cols["pos_q"].append(qtexts[qq[m]].tolist())
            cols["neg_q"].append(qtexts[qq[~m]].tolist())
        pids = np.asarray(passage_ids, dtype=object)[ur].tolist()
        data = {"round": pa.array([round_no] * len(ur), pa.int32()), "passage_id": pa.array(pids, pa.string())}
        if texts is not None:
            data["title"] = pa.array([(texts.get(p) or (None, None))[0] for p in pids], pa.string())
            data["text"] = pa.array([(texts.get(p) or (None, None))[1] for p in pids], pa.string())
        data.update({
            "n_positive": pa.array([len(x) for x in cols["pos_ids"]], pa.int32()),
            "n_negative": pa.array([len(x) for x in cols["neg_ids"]], pa.int32()),
            "positive_queries": pa.array(cols["pos_q"], pa.list_(pa.string())),
            "negative_queries": pa.array(cols["neg_q"], pa.list_(pa.string())),
            "positive_query_ids": pa.array(cols["pos_ids"], pa.list_(pa.string())),
            "negative_query_ids": pa.array(cols["neg_ids"], pa.list_(pa.string())),
        })
        return pa.table(data)


def build_labels(query_vectors: np.ndarray, searcher: PatchedSearcher, k: int, judge: Judge, batch_size: int = 4096,
                 lexical=None) -> Labels:
    """Retrieve the top ``k`` of each query with ``searcher`` and judge every (query, passage) pair.

    ``lexical``: a :class:`pretriever.refine.fusion.LexicalRanking` of the same queries (``refine --fuse-bm25``):
    the dense ranking, searched to its depth, is fused with BM25's and the fused top ``k`` is labelled.

    Args:
        query_vectors: the feedback queries' vectors, one row each.
        searcher: searches vectors for ``(scores, rows)`` (a :class:`~pretriever.refine.search.PatchedSearcher`).
        k: passages labelled per query.
        judge: says which (query, passage) pairs are positive.
        batch_size: queries searched at once.
        lexical: BM25's ranking to fuse with (None: dense alone).

    Returns:
        The labelled edges.
    """
    n = len(query_vectors)
    qs, rows, ranks, scores = [], [], [], []
    for lo in range(0, n, batch_size):
        if lexical is None:
            s, r = searcher.search_arrays(query_vectors[lo:lo + batch_size], k)
        else:
            s, r = lexical.fuse(lo, *searcher.search_arrays(query_vectors[lo:lo + batch_size], lexical.depth), k)
        q = np.repeat(np.arange(lo, lo + len(r), dtype=np.int64), r.shape[1])
        rk = np.tile(np.arange(r.shape[1], dtype=np.int32), len(r))
        keep = r.ravel() >= 0
        qs.append(q[keep])
        rows.append(r.ravel()[keep].astype(np.int64))
        ranks.append(rk[keep])
        scores.append(s.ravel()[keep].astype(np.float32))
    q = np.concatenate(qs) if qs else np.zeros(0, np.int64)
    r = np.concatenate(rows) if rows else np.zeros(0, np.int64)
    rk = np.concatenate(ranks) if ranks else np.zeros(0, np.int32)
    sc = np.concatenate(scores) if scores else np.zeros(0, np.float32)
    keep = ~judge.ignored(q, r)
    q, r, rk, sc = q[keep], r[keep], rk[keep], sc[keep]
    return Labels(q, r, rk, sc, judge(q, r, rk))


def load_feedback(kind: str, queries: Path | None = None, qrels: Path | None = None,
                  answers: Path | None = None) -> FeedbackSet:
    """Feedback queries from files: BEIR queries (+ qrels) or a QA file (questions + answers).

    Args:
        kind: ``qrels``, ``answers`` or ``topk``.
        queries: BEIR queries (qrels, topk) or a QA file (topk).
        qrels: the judgments (``qrels``).
        answers: the QA file (``answers``).

    Returns:
        The feedback set.

    Raises:
        RefineError: a file the kind needs is not given.
    """
    if kind not in FEEDBACK_KINDS:
        raise RefineError(f"feedback must be one of {', '.join(FEEDBACK_KINDS)}, got {kind!r}")
    sources = {k: str(v) for k, v in (("queries", queries), ("qrels", qrels), ("answers", answers)) if v is not None}
    if kind == "qrels":
        if qrels is None or queries is None:
            raise RefineError("--feedback qrels needs --queries (BEIR queries.jsonl) and --qrels (judgments)")
        judged = load_qrels(qrels)
        texts = queries_in_qrels(load_queries(queries), judged, queries, qrels)
        return FeedbackSet("qrels", list(texts), list(texts.values()), judged, None, sources)
    if kind == "answers":
        if answers is None:
            raise RefineError("--feedback answers needs --answers (NQ-open JSONL, DPR qas TSV or DPR JSON)")
        examples = load_qa_file(answers)
        return FeedbackSet("answers", [e.qid for e in examples], [e.question for e in examples], None,
                           [list(e.answers) for e in examples], sources)
    # topk: any questions; qrels/answers only choose which
    if answers is not None and queries is None:
        examples = load_qa_file(answers)
        return FeedbackSet("topk", [e.qid for e in examples], [e.question for e in examples], None, None, sources)
    if queries is None:
        raise RefineError("--feedback topk needs --queries (BEIR queries.jsonl or a QA file)")
    if Path(queries).suffix in (".tsv", ".json") or (Path(queries).is_file() and _looks_like_qa(Path(queries))):
        examples = load_qa_file(queries)
        return FeedbackSet("topk", [e.qid for e in examples], [e.question for e in examples], None, None, sources)
    texts = load_queries(queries)
    if qrels is not None:
        texts = queries_in_qrels(texts, load_qrels(qrels), queries, qrels)
    return FeedbackSet("topk", list(texts), list(texts.values()), None, None, sources)


def _looks_like_qa(path: Path) -> bool:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError:
                    return False
                return isinstance(obj, dict) and "question" in obj
    return False
