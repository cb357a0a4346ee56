"""Hybrid retrieval: BM25 fused with a dense index, without labels.

Two fusions of the same top-``depth`` lists of both systems:

* ``rrf``: reciprocal rank fusion (Cormack, Clarke and Buettcher, SIGIR 2009),
  ``score(p) = sum over systems of 1 / (rrf_k + rank(p))`` with ``rrf_k = 60``; a passage one
  system did not return adds nothing from it.
* ``convex``: ``alpha * dense' + (1 - alpha) * bm25'`` where each system's scores are min-max
  normalised over its own top ``depth`` for the query (a passage it did not return counts 0).
  ``alpha`` is given, or chosen on labelled validation queries with :func:`choose_alpha`.

Optionally (``prf_k`` > 0), label-free pseudo-relevance feedback on the dense side: Rocchio
(1971) on the query vector, ``q' = q + prf_weight * mean(top prf_k fused passages' vectors)``, as in dense-retriever PRF (Li et al., "Pseudo
Relevance Feedback with Deep Language Models and Dense Retrievers: Successes and Pitfalls",
TOIS 2023); the feedback passages are the *fused* top ``prf_k``, so BM25 helps choose them.
The dense side is searched again with ``q'`` and fused again with the same BM25 list. It
needs a dense side that searches by vector (:class:`pretriever.retrieval.VectorSearch`: a dense
or refined index, or a system wrapping one): the passage vectors are read from it.

Example::

    from pretriever.index import HybridOptions, IndexFolder
    hybrid = IndexFolder("scifact-index/").open("hybrid", fusion=HybridOptions(fusion="convex", alpha=0.5))
    hits = hybrid.search(["vitamin D and bone fractures"], k=10)

``IndexFolder.open`` takes the dense index's BM25 beside it (``INDEX_DIR/bm25``, ``pretriever index build
--bm25``), or builds one from the store the index names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from pretriever.config import option
from pretriever.data import PassageLookup
from pretriever.metrics import qrels_metrics, trec_order
from pretriever.retrieval import Hit, Retriever, VectorSearch

FUSIONS = ("rrf", "convex")
MIN_DEPTH = 100


@dataclass
class HybridOptions:
    """How BM25 and a dense index are fused (``[evaluate.hybrid]`` and the like in TOML)."""

    fusion: str = option("rrf", "rrf (reciprocal rank fusion) or convex (a weighted sum of min-max normalised "
                                "scores).")
    rrf_k: int = option(60, "RRF: the constant k in 1 / (k + rank).")
    alpha: float = option(0.5, "convex: the weight of the dense score; BM25 gets 1 - alpha.")
    depth: int | None = option(None, "Passages taken from each system before fusing (the same for both).",
                               default_help=f"the k asked for, at least {MIN_DEPTH}")
    prf_k: int = option(0, "Label-free dense PRF: move each query vector towards the mean vector of the fused "
                           "top prf_k passages (Rocchio), search the dense side again and fuse again; 0: off.")
    prf_weight: float = option(1.0, "Dense PRF: the weight of the feedback mean (the query's own vector has "
                                    "weight 1).")

    def __post_init__(self) -> None:
        self.fusion = str(self.fusion).lower()
        if self.fusion not in FUSIONS:
            raise ValueError(f"fusion must be one of {', '.join(FUSIONS)}, got {self.fusion!r}")
        if self.rrf_k < 0:
            raise ValueError(f"rrf_k must be 0 or more, got {self.rrf_k}")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must be between 0 and 1, got {self.alpha}")
        if self.depth is not None and self.depth < 1:
            raise ValueError(f"depth must be at least 1, got {self.depth}")
        if self.prf_k < 0 or self.prf_weight < 0:
            raise ValueError(f"prf_k and prf_weight must not be negative, got {self.prf_k} and {self.prf_weight}")

    def depth_for(self, k: int) -> int:
        """Passages taken from each system for a fused top ``k``.

        Args:
            k: the fused list's length.

        Returns:
            The depth.
        """
        return self.depth or max(k, MIN_DEPTH)

    @property
    def label(self) -> str:
        label = f"rrf k={self.rrf_k}" if self.fusion == "rrf" else f"convex alpha={self.alpha:g}"
        return label + (f", dense prf k={self.prf_k} w={self.prf_weight:g}" if self.prf_k else "")


def fuse(dense: Sequence[Hit], lexical: Sequence[Hit], options: HybridOptions, k: int) -> list[Hit]:
    """One query's fused top ``k`` from the two ranked lists (best first; ties by passage id).

    Args:
        dense: the dense side's hits, best first.
        lexical: the BM25 side's hits, best first.
        options: RRF or convex, and their settings.
        k: how many to keep.

    Returns:
        The fused hits, best first.
    """
    scores: dict[str, float] = {}
    if options.fusion == "rrf":
        for hits in (dense, lexical):
            for rank, hit in enumerate(hits, 1):
                scores[hit.passage_id] = scores.get(hit.passage_id, 0.0) + 1.0 / (options.rrf_k + rank)
    else:
        for hits, weight in ((dense, options.alpha), (lexical, 1.0 - options.alpha)):
            if not hits:
                continue
            top, bottom = max(h.score for h in hits), min(h.score for h in hits)
            span = top - bottom
            for hit in hits:
                normalised = (hit.score - bottom) / span if span > 0 else 1.0
                scores[hit.passage_id] = scores.get(hit.passage_id, 0.0) + weight * normalised
    ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:k]
    return [Hit(pid, score) for pid, score in ranked]


class HybridRetriever:
    """BM25 and a dense retriever fused (a :class:`~pretriever.retrieval.Retriever`).

    Each side is searched to the same depth (``HybridOptions.depth``; by default the k asked for, at
    least ``MIN_DEPTH``) and :func:`fuse` merges the lists: reciprocal rank fusion (``rrf``, k = 60) or a
    convex combination of min-max normalised scores (``convex``, ``alpha`` on the dense side). With
    ``prf_k`` each query vector first moves towards the fused top ``prf_k`` passages (Rocchio,
    label-free) and the dense side is searched again. The name says the fusion, so tables keep systems apart:
    ``hybrid[rrf k=60](all-MiniLM-L6-v2+bm25)``.

    Requirements:
        Two retrievers over the same passage ids (a dense or refined index and the BM25 of its store);
        dense PRF needs a dense side that offers :class:`~pretriever.retrieval.VectorSearch`.

    Example::

        from pretriever.index import BM25Index, DenseIndex, HybridOptions, HybridRetriever

        dense, bm25 = DenseIndex.load("scifact-index/"), BM25Index.load("scifact-index/bm25")
        hybrid = HybridRetriever(dense, bm25, HybridOptions(fusion="convex", alpha=0.5))
        print(hybrid.name)  # hybrid[convex alpha=0.5](...+bm25)
        hits = hybrid.search(["vitamin D deficiency increases the risk of fractures"], k=5)[0]

    ``IndexFolder("scifact-index/").open("hybrid")`` builds the same from one folder, with the store.

    References:
        Cormack et al., "Reciprocal Rank Fusion outperforms Condorcet and individual Rank Learning
        Methods", SIGIR 2009 (RRF); Rocchio, "Relevance feedback in information retrieval", 1971 (PRF).

    Relations:
        One of the searchers behind :class:`pretriever.retrieval.Retriever`: :class:`~pretriever.index.DenseIndex`,
        :class:`~pretriever.index.BM25Index`, :class:`~pretriever.refine.RefinedIndex` search one index; this
        fuses two of them; :class:`~pretriever.index.System` adds the store's passages to any of them.

    Args:
        dense: the dense (or refined) side.
        lexical: the BM25 side.
        options: the fusion (default: RRF, k = 60).
    """

    def __init__(self, dense: Retriever, lexical: Retriever, options: HybridOptions | None = None):
        self.dense, self.lexical = dense, lexical
        self.options = options or HybridOptions()
        self.name = f"hybrid[{self.options.label}]({dense.name}+{lexical.name})"

    def __len__(self) -> int:
        return len(self.dense)  # type: ignore[arg-type]

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """Each query's fused top ``k`` (:class:`~pretriever.retrieval.Retriever`'s ``search``).

        Args:
            queries: the query texts.
            k: hits per query.

        Returns:
            One list of hits per query, best first.
        """
        depth = self.options.depth_for(k)
        lexical = self.lexical.search(queries, depth)
        if not self.options.prf_k:
            return [fuse(d, b, self.options, k) for d, b in zip(self.dense.search(queries, depth), lexical)]
        dense = self.dense
        if not isinstance(dense, VectorSearch):
            raise ValueError(f"dense PRF (prf_k) needs a dense index on the dense side, not {dense.name}")
        vectors = dense.encode_queries(list(queries))  # a refined index: its refined query side
        first = [fuse(d, b, self.options, self.options.prf_k)
                 for d, b in zip(dense.search_vectors(vectors, depth), lexical)]
        moved = rocchio(vectors, [[h.passage_id for h in hits] for hits in first], dense, self.options.prf_weight)
        return [fuse(d, b, self.options, k) for d, b in zip(dense.search_vectors(moved, depth), lexical)]


def rocchio(vectors: np.ndarray, feedback: Sequence[Sequence[str]], index: VectorSearch, weight: float) -> np.ndarray:
    """Each query vector plus ``weight`` times the mean stored vector of its feedback passages (ids of ``index``,
    which stores passage vectors); a query without feedback keeps its vector. Not renormalised: an
    inner-product ranking (and min-max fusion) is the same for any positive scale of the query."""
    out = np.array(vectors, dtype=np.float32, copy=True)
    for i, ids in enumerate(feedback):
        found = index.vectors_of(ids)
        if len(found):
            out[i] += weight * found.mean(axis=0)
    return out


def choose_alpha(hybrid: HybridRetriever, queries: Mapping[str, str], qrels: Mapping[str, Mapping[str, int]],
                 grid: Sequence[float] = tuple(i / 10 for i in range(11)), metric: str = "nDCG@10",
                 k: int = 100, lookup: PassageLookup | None = None) -> tuple[float, dict[float, float]]:
    """The convex weight that scores best on labelled validation queries, and the score of every weight.

    Both systems are searched once; each weight only re-fuses. Judged ids are documents: passages
    map to their documents through ``lookup``, the store of the passages (MaxP; without it, ids are
    taken as documents). Use training queries, never the test queries.

    Args:
        hybrid: the two systems (its fusion settings other than ``alpha`` are kept).
        queries: validation query texts by id.
        qrels: their judgments.
        grid: the weights tried.
        metric: what is maximised (a :mod:`pretriever.metrics` name).
        k: the depth scored.
        lookup: the store of the passages (None: passage ids are document ids).

    Returns:
        ``(best_alpha, score_by_alpha)``.
    """
    qids = [q for q in qrels if q in queries]
    texts = [queries[q] for q in qids]
    depth = hybrid.options.depth_for(k)
    dense, lexical = hybrid.dense.search(texts, depth), hybrid.lexical.search(texts, depth)
    ids = {h.passage_id for rows in (dense, lexical) for row in rows for h in row}
    doc_of = lookup.doc_ids(ids) if lookup is not None else {i: i for i in ids}
    scores: dict[float, float] = {}
    for alpha in grid:
        options = replace(hybrid.options, fusion="convex", alpha=alpha)
        run: dict[str, dict[str, float]] = {}
        for qid, d, b in zip(qids, dense, lexical):
            docs: dict[str, float] = {}
            for hit in fuse(d, b, options, k):
                doc = doc_of.get(hit.passage_id) or hit.passage_id
                if doc != qid and hit.score > docs.get(doc, float("-inf")):
                    docs[doc] = hit.score
            run[qid] = dict(trec_order(docs))
        scores[alpha] = qrels_metrics({q: dict(qrels[q]) for q in qids}, run)[0][metric]
    best = max(scores, key=lambda a: (scores[a], -abs(a - 0.5)))
    return best, scores
