""":class:`System`: an opened index together with the store its passages come from.

A :class:`pretriever.retrieval.Searcher`: it searches (text, and vectors when what it wraps can) and
returns passages by id, as pyserini's ``LuceneSearcher`` does. :meth:`pretriever.index.IndexFolder.open`
builds one from an index folder; a stage that composes systems (evaluate: one BM25 beside several
indexes) builds the others from it with :meth:`System.fused` and :meth:`System.renamed`, so every
system of a run reads passages through the same store.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
import numpy as np

from pretriever.data import PassageLookup
from pretriever.index.hybrid import HybridOptions, HybridRetriever
from pretriever.index.meta import IndexMeta
from pretriever.retrieval import Hit, Passage, Retriever, VectorSearch


class System:
    """``retriever`` with the store its passages come from (``lookup``; None when no store is known):
    the :class:`pretriever.retrieval.Searcher` that :meth:`pretriever.index.IndexFolder.open` returns.

    ``meta`` is what the index folder records (its :class:`~pretriever.index.meta.IndexMeta`); ``name`` is the retriever's
    unless given. Use :meth:`of`, which returns a :class:`VectorSystem` when ``retriever`` searches by
    vector, so the vector protocol passes through.

    Requirements:
        Any :class:`pretriever.retrieval.Retriever`, and the :class:`pretriever.data.PassageLookup` of the
        store it indexes (or None: then ``passages`` gives ids only).

    Example::

        from pretriever.data import PassageLookup
        from pretriever.index import BM25Index, System

        bm25 = BM25Index.load("scifact-index/bm25")
        with System.of(bm25, PassageLookup("scifact-store/"), bm25.meta) as system:
            hits = system.search(["vitamin D deficiency increases the risk of fractures"], k=3)[0]
            for passage in system.passages([h.passage_id for h in hits]).values():
                print(passage.title)

    Relations:
        Wraps any of the searchers (:class:`~pretriever.index.DenseIndex`, :class:`~pretriever.index.BM25Index`,
        :class:`~pretriever.index.HybridRetriever`, :class:`~pretriever.refine.RefinedIndex`);
        :class:`VectorSystem` is the one that also searches by vector.

    Args:
        retriever: the searcher.
        lookup: the store's passages (None: not known).
        meta: the index folder's metadata.
        name: the name in tables (None: the retriever's).
    """

    def __init__(self, retriever: Retriever, lookup: PassageLookup | None, meta: IndexMeta,
                 name: str | None = None):
        self.retriever = retriever
        self.lookup = lookup
        self.meta = meta
        self.name = name or retriever.name

    @staticmethod
    def of(retriever: Retriever, lookup: PassageLookup | None, meta: IndexMeta,
           name: str | None = None) -> System:
        """A :class:`VectorSystem` when ``retriever`` offers :class:`VectorSearch`, else a :class:`System`.

        Args:
            retriever: the searcher.
            lookup: the store's passages (None: not known).
            meta: the index folder's metadata.
            name: the name in tables (None: the retriever's).

        Returns:
            The system.
        """
        kind = VectorSystem if isinstance(retriever, VectorSearch) else System
        return kind(retriever, lookup, meta, name)

    def __len__(self) -> int:
        return len(self.retriever)  # type: ignore[arg-type]

    def __enter__(self) -> System:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """The retriever's hits (:class:`~pretriever.retrieval.Retriever`'s ``search``).

        Args:
            queries: the query texts.
            k: hits per query.

        Returns:
            One list of hits per query, best first.
        """
        return self.retriever.search(queries, k)

    def passages(self, ids: Iterable[str]) -> dict[str, Passage]:
        """Title, text and document of each passage id, in the order asked (None fields without a store).

        Args:
            ids: passage ids.

        Returns:
            A :class:`~pretriever.retrieval.Passage` by id.
        """
        if self.lookup is None:
            return {i: Passage(i, None, None, None) for i in dict.fromkeys(ids)}
        return self.lookup.passages(ids)

    def renamed(self, name: str) -> System:
        """The same system under another name (two indexes of one model side by side).

        Args:
            name: the new name.

        Returns:
            The renamed system.
        """
        return System.of(self.retriever, self.lookup, self.meta, name)

    def fused(self, lexical: Retriever, options: HybridOptions | None = None) -> System:
        """This system fused with ``lexical`` (its BM25), reading passages from the same store.

        Args:
            lexical: the BM25 side.
            options: the fusion (default: RRF).

        Returns:
            The hybrid system.
        """
        return System.of(HybridRetriever(self, lexical, options), self.lookup, self.meta)

    def close(self) -> None:
        if self.lookup is not None:
            self.lookup.close()


class VectorSystem(System):
    """A :class:`System` over a retriever that searches by vector (a dense or refined index): the
    :class:`pretriever.retrieval.VectorSearch` methods pass through to it."""

    retriever: VectorSearch  # type: ignore[assignment]

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        """The retriever's query vectors (:class:`~pretriever.retrieval.VectorSearch`).

        Args:
            queries: the query texts.

        Returns:
            One row per query.
        """
        return self.retriever.encode_queries(queries)

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        """The retriever's hits for query vectors.

        Args:
            vectors: one row per query.
            k: hits per query.

        Returns:
            One list of hits per query, best first.
        """
        return self.retriever.search_vectors(vectors, k)

    def vectors_of(self, passage_ids: Sequence[str]) -> np.ndarray:
        """The retriever's stored passage vectors.

        Args:
            passage_ids: the passages.

        Returns:
            One row per id, in the order given.
        """
        return self.retriever.vectors_of(passage_ids)
