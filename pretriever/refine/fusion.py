"""``refine --fuse-bm25``: find the passages to label with BM25 fused with the dense ranking.

Refinement labels what retrieval finds (paper section 2.1): the top k of each feedback
query. With ``--fuse-bm25`` that top k is the dense ranking over the *current* (partly
refined) vectors fused with BM25's ranking of the same query text (:func:`pretriever.index.fuse`:
RRF k = 60 or convex; both systems to the same depth), so

* label-free ``--feedback topk`` calls the top k' of the fused ranking relevant: hybrid
  retrieval is better than dense alone on SciFact (nDCG@10 0.722-0.731 against 0.649), so the
  pseudo-labels are cleaner;
* ``--feedback qrels``/``answers`` find judged or answer-bearing passages that the dense
  ranking alone misses, so more passages get a positive.

This is not ``--method hybrid`` (AOpt on the passages, then on the queries). It changes which
passages are labelled, never the search of the refined index: that index is dense, and
``pretriever evaluate --hybrid`` / ``pretriever search --hybrid`` fuse it with BM25 at search
time. Queries refined at search time (``test_time``) use dense labels, since BM25 is not part
of an index folder's query side.

Example::

    ranking = LexicalRanking.of(bm25, feedback.texts, dense.passage_ids, HybridOptions(), k=100)
    labels = build_labels(query_vectors, searcher, 100, TopkJudge(5), lexical=ranking)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pretriever.index.hybrid import HybridOptions, fuse
from pretriever.retrieval import Hit, RankedRows, Retriever


class LexicalRanking:
    """BM25's top ``depth`` of each feedback query, as rows of the dense index, computed once (passage texts
    never change while vectors move) and fused with each round's dense ranking by :meth:`fuse`."""

    def __init__(self, hits: list[list[Hit]], passage_ids: Sequence[str], options: HybridOptions, depth: int):
        self.passage_ids = passage_ids  # of the dense index's rows
        self.row_of = {pid: i for i, pid in enumerate(passage_ids)}
        self.hits = [[h for h in found if h.passage_id in self.row_of] for found in hits]  # BM25's, best first
        self.options = options
        self.depth = depth

    @classmethod
    def of(cls, bm25: Retriever, texts: Sequence[str], passage_ids: Sequence[str], options: HybridOptions,
           k: int) -> LexicalRanking:
        """Search ``texts`` with ``bm25`` (BM25, or a system over it, over the same passages as the
        dense index whose ids are ``passage_ids``) to the fusion depth for a top ``k``."""
        depth = options.depth_for(k)
        return cls(bm25.search(list(texts), depth), passage_ids, options, depth)

    def __len__(self) -> int:
        return len(self.hits)

    def fuse(self, first: int, scores: np.ndarray, rows: np.ndarray, k: int) -> RankedRows:
        """Dense (scores, rows) of queries ``first, first + 1, ...`` (searched to ``depth``) fused with their BM25
        hits: the fused top ``k`` as (fused scores, rows), row -1 where fewer than ``k`` exist. Ties break by
        passage id, as in ``pretriever evaluate --hybrid``."""
        out_scores = np.full((len(rows), k), -np.inf, dtype=np.float32)
        out_rows = np.full((len(rows), k), -1, dtype=np.int64)
        for i, (srow, rrow) in enumerate(zip(scores, rows)):
            dense = [Hit(self.passage_ids[r], float(s)) for s, r in zip(srow, rrow) if r >= 0]
            for j, hit in enumerate(fuse(dense, self.hits[first + i], self.options, k)):
                out_scores[i, j], out_rows[i, j] = hit.score, self.row_of[hit.passage_id]
        return RankedRows(out_scores, out_rows)
