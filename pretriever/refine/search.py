"""Search over passage vectors that are being rewritten, without rebuilding the whole index.

A refinement round changes only the passages that feedback touched (at most queries x k rows,
a few thousand for SciFact, a few million for NQ over 21M Wikipedia passages). Rebuilding the
FAISS index over every passage after each round would cost O(N) per round (hours for an HNSW
index of 21M passages), so :class:`PatchedSearcher` keeps

* the original FAISS index (flat, HNSW or IVF-PQ, with its search parameters), searched with an
  ``IDSelectorNot`` that hides the rewritten rows, and
* an exact flat index over the current vectors of the rewritten rows,

and merges the two top-k lists by score. For a flat original index this is exactly a search
over the rewritten vectors; for HNSW/IVF-PQ the untouched part is as approximate as the
original index was *in which rows it finds*, but every row found is re-scored exactly with its
stored vector: PQ codes (and fp16 codes) give biased scores, and merging them with the exact
scores of the rewritten rows would rank the two parts inconsistently. The refined index written at the end is a normal index folder, built once
over all vectors (:class:`PatchedVectors` streams them without holding N x dim in memory).
"""

from __future__ import annotations

import numpy as np

from pretriever.index.faiss_index import FaissParams
from pretriever.retrieval import RankedRows


class PatchedVectors:
    """The base vectors with some rows replaced, sliced by blocks (what ``save_dense_index`` reads).

    Args:
        base: the original vectors (N x dim; may be a memory map).
        rows: the replaced rows, sorted.
        vectors: their new vectors, in the same order.
    """

    def __init__(self, base: np.ndarray, rows: np.ndarray, vectors: np.ndarray):
        self.base, self.rows, self.vectors = base, np.asarray(rows, np.int64), np.asarray(vectors, np.float32)
        self.shape = base.shape
        self.ndim = 2

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key):
        if not isinstance(key, slice):
            raise TypeError("PatchedVectors supports row slices only")
        start, stop, step = key.indices(self.shape[0])
        if step != 1:
            raise TypeError("PatchedVectors supports contiguous slices only")
        block = np.array(self.base[start:stop], dtype=np.float32)
        lo, hi = np.searchsorted(self.rows, [start, stop])
        block[self.rows[lo:hi] - start] = self.vectors[lo:hi]
        return block


class PatchedSearcher:
    """Inner-product top-k over ``base_vectors`` with some rows replaced (see the module doc).

    Args:
        index: the original FAISS index over ``base_vectors``.
        base_vectors: the original vectors (N x dim; may be a memory map).
        params: the index's FAISS settings (default: flat).
    """

    def __init__(self, index, base_vectors: np.ndarray, params: FaissParams | None = None):
        self.index = index
        self.base = base_vectors
        self.params = params or FaissParams()
        self.dim = base_vectors.shape[1]
        self.rows = np.zeros(0, np.int64)  # rewritten rows, sorted
        self.vectors = np.zeros((0, self.dim), np.float32)
        self._delta = None
        self._search_params = None
        self._keep = None  # python references the FAISS selector needs alive

    @classmethod
    def of(cls, dense) -> PatchedSearcher:
        """A searcher over a :class:`pretriever.index.DenseIndex`'s own FAISS index and vectors.

        Args:
            dense: the index.

        Returns:
            The searcher, nothing replaced yet.
        """
        return cls(dense.index, dense.embeddings, dense.params)

    def __len__(self) -> int:
        return self.base.shape[0]

    def current(self, rows: np.ndarray) -> np.ndarray:
        """The current vectors of ``rows`` (float32).

        Args:
            rows: passage rows.

        Returns:
            One vector per row: replaced where it was, else the original.
        """
        rows = np.asarray(rows, np.int64)
        out = np.array(self.base[rows] if len(rows) else np.zeros((0, self.dim)), dtype=np.float32)
        if len(self.rows) and len(rows):
            at = np.searchsorted(self.rows, rows)
            hit = (at < len(self.rows)) & (self.rows[np.minimum(at, len(self.rows) - 1)] == rows)
            out[hit] = self.vectors[at[hit]]
        return out

    def patched(self) -> PatchedVectors:
        """All vectors as they are now, without copying them (what the refined index is written from)."""
        return PatchedVectors(self.base, self.rows, self.vectors)

    def set_rows(self, rows: np.ndarray, vectors: np.ndarray) -> None:
        """Replace the vectors of ``rows`` (later calls win over earlier ones).

        Args:
            rows: passage rows.
            vectors: their new vectors, in the same order.
        """
        rows = np.asarray(rows, np.int64)
        vectors = np.asarray(vectors, np.float32)
        if not len(rows):
            return
        all_rows = np.r_[self.rows, rows]
        all_vecs = np.concatenate([self.vectors, vectors])
        # np.unique keeps the first occurrence: look at the reversed arrays so the newest wins
        uniq, first = np.unique(all_rows[::-1], return_index=True)
        self.rows = uniq
        self.vectors = np.ascontiguousarray(all_vecs[::-1][first])
        self._rebuild()

    def reset(self) -> None:
        """Forget every replaced row: the searcher searches the original vectors again."""
        self.rows = np.zeros(0, np.int64)
        self.vectors = np.zeros((0, self.dim), np.float32)
        self._rebuild()

    def _rebuild(self) -> None:
        import faiss

        if not len(self.rows):
            self._delta = self._search_params = self._keep = None
            return
        self._delta = faiss.IndexFlatIP(self.dim)
        self._delta.add(self.vectors)
        batch = faiss.IDSelectorBatch(len(self.rows), faiss.swig_ptr(self.rows))
        hide = faiss.IDSelectorNot(batch)
        if self.params.type == "hnsw":
            sp = faiss.SearchParametersHNSW()
            sp.efSearch = self.params.hnsw_ef_search
        elif self.params.type == "ivfpq":
            sp = faiss.SearchParametersIVF()
            sp.nprobe = self.params.ivf_nprobe
        else:
            sp = faiss.SearchParameters()
        sp.sel = hide
        self._search_params = sp
        self._keep = (batch, hide, self.rows)

    def search_arrays(self, queries: np.ndarray, k: int) -> RankedRows:
        """The top ``k`` rows of each query vector over the current vectors, best first, as
        :meth:`pretriever.index.DenseIndex.search_arrays`; row -1 where fewer than k exist.

        Unlike a :class:`~pretriever.retrieval.Retriever`'s ``search``, this takes query vectors and gives FAISS's
        arrays: refinement's inner loop, which labels rows, not passages.

        Args:
            queries: query vectors, one row each.
            k: hits per query.

        Returns:
            ``RankedRows(scores, rows)``, each len(queries) x k.
        """
        queries = np.ascontiguousarray(np.atleast_2d(queries), dtype=np.float32)
        exact = self.params.type == "flat"
        if self._delta is None and exact:
            return RankedRows(*self.index.search(queries, k))
        if self._delta is None:
            scores, rows = self.index.search(queries, k)
            return self._merge(self._rescore(queries, rows), rows, k)
        scores, rows = self.index.search(queries, k, params=self._search_params)
        if not exact:
            scores = self._rescore(queries, rows)
        k2 = min(k, len(self.rows))
        d_scores, d_local = self._delta.search(queries, k2)
        d_rows = np.where(d_local >= 0, self.rows[np.maximum(d_local, 0)], -1)
        return self._merge(np.concatenate([scores, d_scores], axis=1), np.concatenate([rows, d_rows], axis=1), k)

    def _rescore(self, queries: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """Exact inner products of each query with the stored vectors of its rows (-inf for row -1)."""
        valid = rows >= 0
        vectors = np.asarray(self.base[np.where(valid, rows, 0).ravel()], np.float32).reshape(*rows.shape, self.dim)
        return np.where(valid, np.einsum("qd,qkd->qk", queries, vectors), -np.inf).astype(np.float32)

    @staticmethod
    def _merge(all_scores: np.ndarray, all_rows: np.ndarray, k: int) -> RankedRows:
        """The best ``k`` of each query's candidates by score (row -1 where there are fewer)."""
        all_scores = np.where(all_rows >= 0, all_scores, -np.inf)
        order = np.argsort(-all_scores, axis=1, kind="stable")[:, :k]
        out_scores = np.take_along_axis(all_scores, order, axis=1).astype(np.float32)
        out_rows = np.take_along_axis(all_rows, order, axis=1)
        out_rows[~np.isfinite(out_scores)] = -1
        return RankedRows(out_scores, out_rows)
