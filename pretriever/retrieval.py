"""The interfaces every retrieval system offers: BM25, dense, refined and hybrid indexes.

* :class:`Retriever` - ``name`` and ``search(queries, k)``: all that evaluation needs to rank.
* :class:`Searcher` - a retriever that also returns its passages (``passages(ids)``), as pyserini's
  ``LuceneSearcher.doc(id)`` does: what :meth:`pretriever.index.IndexFolder.open` returns.
* :class:`PassageStore` - what a searcher's ``lookup`` offers: the opened corpus store, read by id
  (:class:`pretriever.data.PassageLookup` is the one implementation; the data layer sits above this module).
* :class:`VectorSearch` - optional: search by query vector (a dense index, a refined one, and a
  searcher wrapping either), so a caller can batch query encoding apart from searching (the
  server) or move query vectors before searching (dense PRF).
* :class:`RankedRows` - the top k as arrays of row numbers, what the ``search_arrays`` of an index
  returns before its rows become :class:`Hit` lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np


class Hit(NamedTuple):
    """One ranked passage: its id and the retriever's score (higher is better; scores of different retrievers do not
    compare).
    """

    passage_id: str
    score: float


class RankedRows(NamedTuple):
    """The top k of each query as arrays, best first: what ``search_arrays`` returns (a dense index, a BM25
    index, a :class:`pretriever.refine.PatchedSearcher`), unpacked as ``scores, rows = ...`` as FAISS's own.

    ``scores``: float32, one row per query, best first. ``rows``: the row numbers of the passages found (the
    positions in the index's ``passage_ids``), the same shape; a vector search gives row -1 (score -inf, or
    FAISS's filler) where fewer than k were found, a BM25 search has min(k, N) columns.
    """

    scores: np.ndarray
    rows: np.ndarray


@dataclass(frozen=True)
class Passage:
    """One passage: what a searcher returns by id, and what the reader reads.

    ``title``, ``text`` and ``doc_id`` are None when a searcher does not know the id (not in the store, or no
    store is known); a passage given to the reader has a text, and a document only when it came from a store.
    """

    passage_id: str
    title: str | None
    text: str | None
    doc_id: str | None = None


@runtime_checkable
class Retriever(Protocol):
    """A retrieval system that ranks passages for text queries.

    Requirements: ``name`` (the key of the system in result tables and JSON) and ``search``, which
    returns one list of :class:`Hit` per query, best first, at most ``k`` long.

    Example::

        class Fixed:
            name = "fixed"

            def search(self, queries, k):
                return [[Hit("doc-0", 1.0)][:k] for _ in queries]

        evaluate_retrievers([Fixed()], QrelsTask(queries, qrels))  # pretriever.evaluate

    Relations:
        Implemented by :class:`~pretriever.index.DenseIndex`, :class:`~pretriever.index.BM25Index`,
        :class:`~pretriever.index.HybridRetriever` and :class:`~pretriever.refine.RefinedIndex`;
        :class:`~pretriever.index.System` (a :class:`Searcher`) wraps any of them with its store.
    """

    name: str

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """The top ``k`` passages for each query, best first.

        Args:
            queries: the query texts.
            k: hits per query, at most.

        Returns:
            One list of :class:`Hit` per query, best first.
        """
        ...


@runtime_checkable
class PassageStore(Protocol):
    """An opened corpus store, read by passage and document id: what evaluation reads through a searcher's
    ``lookup`` (texts, titles, documents, gold checks).

    Requirements: the members below, with :class:`pretriever.data.PassageLookup`'s meaning (it is the
    implementation; see it for each one). An id that is not in the store maps to None, or is left out of
    sets and of maps by title or document.
    """

    @property
    def path(self) -> Path:
        """The store's folder."""
        ...

    @property
    def documents_whole(self) -> bool:
        """True when every passage id is its document id."""
        ...

    def passages(self, ids: Iterable[str]) -> dict[str, Passage]:
        ...

    def texts(self, ids: Iterable[str]) -> dict[str, str | None]:
        ...

    def titles(self, ids: Iterable[str]) -> dict[str, str | None]:
        ...

    def doc_ids(self, ids: Iterable[str]) -> dict[str, str | None]:
        ...

    def document_texts(self, doc_ids: Iterable[str]) -> dict[str, str]:
        ...

    def known_passages(self, ids: Iterable[str]) -> set[str]:
        ...

    def known_documents(self, doc_ids: Iterable[str]) -> set[str]:
        ...

    def title_documents(self, titles: Iterable[str]) -> dict[str, str]:
        ...

    def sample(self, n: int, seed: int, prepend_title: bool) -> list[tuple[str, str]]:
        ...

    def close(self) -> None:
        ...


@runtime_checkable
class Searcher(Retriever, Protocol):
    """A retriever that owns its passages: it searches, then returns the passages it found by id.

    Modelled on pyserini's ``LuceneSearcher`` (``searcher.search(q)``, then ``searcher.doc(id)``), so a
    consumer never digs the corpus store out of an index's metadata itself.

    Requirements: what :class:`Retriever` needs, plus ``passages(ids)``, a dict from each id asked for
    (in the order asked, duplicates once) to its :class:`Passage` (fields None for an id that is not in
    the store, or when no store is known), and ``lookup``, the opened store its passages come from (a
    :class:`PassageStore`, for document ids, whole documents and titles; None when no store is known),
    and ``close()``.

    Example::

        from pretriever.index import IndexFolder

        with IndexFolder("scifact-index/").open("hybrid") as searcher:
            hits = searcher.search(["vitamin D and bone fractures"], k=10)[0]
            best = searcher.passages([h.passage_id for h in hits])
            print(next(iter(best.values())).title)
    """

    @property
    def lookup(self) -> PassageStore | None:
        """The opened store the passages come from (None when no store is known)."""
        ...

    def passages(self, ids: Iterable[str]) -> dict[str, Passage]:
        """Title, text and document of each passage id.

        Args:
            ids: passage ids.

        Returns:
            A :class:`Passage` by id, in the order asked.
        """
        ...

    def close(self) -> None:
        """Release the store connection."""
        ...


@runtime_checkable
class VectorSearch(Protocol):
    """Search by query vector, for systems built on stored passage vectors.

    Requirements: ``encode_queries`` (the vectors that ``search`` would use for these queries: a refined
    index returns its refined ones), ``search_vectors`` (the top ``k`` for each vector, as ``search``) and
    ``vectors_of`` (the stored vectors of passages, float32, in the given order; unknown ids skipped).
    A wrapper (a :class:`Searcher` over a dense index, a refined index) offers them when what it wraps does.

    Example::

        if isinstance(searcher, VectorSearch):
            vectors = searcher.encode_queries(["query one", "query two"])  # one batch, encoded once
            hits = searcher.search_vectors(vectors, k=10)
    """

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        """The vectors ``search`` would use for ``queries``.

        Args:
            queries: the query texts.

        Returns:
            One float32 row per query.
        """
        ...

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        """The top ``k`` for each query vector, as ``search`` gives them.

        Args:
            vectors: one row per query.
            k: hits per query, at most.

        Returns:
            One list of :class:`Hit` per query, best first.
        """
        ...

    def vectors_of(self, passage_ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of passages.

        Args:
            passage_ids: the passages (unknown ids are skipped).

        Returns:
            One float32 row per id found, in the order given.
        """
        ...
