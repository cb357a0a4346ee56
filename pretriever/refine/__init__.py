"""Refine (after index): pseudo-relevance feedback on dense vectors, after "Improving Dense
Retrieval ... AOpt" (pseudo-labels section 2.1, linear re-weighting eq. 9, AOpt eqs. 10-14).

``pretriever refine run INDEX_DIR --queries Q --feedback qrels --qrels train.tsv --method aopt-passage
--out REFINED_DIR`` writes a normal index folder (``DenseIndex.load`` reads it, ``pretriever
evaluate`` scores it) whose ``index.json`` records the refinement under ``refine``.

Modules
-------
* :mod:`~pretriever.refine.labels` - feedback queries, pseudo-labels (answers / qrels / topk),
  the passage-centric (paper Table 2) and query-centric views;
* :mod:`~pretriever.refine.ops` - eq. 9 and batched AOpt with per-vector early stopping;
* :mod:`~pretriever.refine.search` - top-k over partly rewritten vectors without a rebuild;
* :mod:`~pretriever.refine.fusion` - ``--fuse-bm25``: the passages to label found by dense + BM25;
* :mod:`~pretriever.refine.pipeline` - the Figure 5 loop and the output folder;
* :mod:`~pretriever.refine.retriever` - :class:`RefinedIndex`, a Retriever with the query side
  (stored refined vectors of feedback queries; label-free topk refinement of any other query);
* :mod:`~pretriever.refine.grid` - the beta x gamma sweep (Figure 6) on a validation split.

Output folder
-------------
``index.json``, ``passage_ids.parquet``, ``embeddings.npy``, ``index.faiss`` as any index, plus::

    refine/labels_passages.parquet  side, round, passage_id, title, text, n_positive, n_negative,
                                    positive_queries, negative_queries (+ their ids)
    refine/labels_queries.parquet   side, round, query_id, query, n_positive, n_negative,
                                    positive_passages, negative_passages (best first)
    refine/feedback_queries.parquet query_id, query: the queries whose labels were used
    refine/query_vectors.parquet    query_id, query, refined, vector (aopt-query / hybrid)

``index.json["refine"]``: method, params, feedback (kind, files), protocol (``honest`` or
``oracle``, holdout checks), queries (count), query_side (stored vectors, test-time topk
settings), passages_changed, rounds (label stats, loss, epochs and seconds per round).

Protocol
--------
By default feedback labels must not come from the evaluation queries: a labels file named
``*test*`` is refused, and queries listed in ``--holdout`` are dropped from the feedback.
``--oracle`` allows it (the paper's setting) with a warning, and labels everything ``oracle``.
"""

from pretriever.refine.config import METHODS, RefineConfig
from pretriever.refine.labels import FeedbackSet, Labels, build_labels, load_feedback
from pretriever.refine.ops import AOptResult, aopt, aopt_loss, linear_update
from pretriever.refine.errors import RefineError
from pretriever.refine.pipeline import RefineResult
from pretriever.refine.retriever import RefinedIndex, open_refined, topk_refine
from pretriever.refine.search import PatchedSearcher, PatchedVectors

__all__ = [
    "AOptResult", "FeedbackSet", "Labels", "METHODS", "PatchedSearcher", "PatchedVectors", "RefineConfig",
    "RefineError", "RefineResult", "RefinedIndex", "aopt", "aopt_loss", "build_labels", "linear_update",
    "load_feedback", "open_refined", "topk_refine",
]
