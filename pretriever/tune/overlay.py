"""The index as a generator's pseudo-queries must see it: its masked passages re-encoded and re-indexed, the rest
unchanged, and every search remembered so each candidate pays only for what is new to it.

* :class:`MaskedDense` searches a dense (or refined) index whose masked passages have new vectors: the index is
  searched deeper (k more; ``len(masked)`` more for a query whose list the masked passages crowd), the masked
  passages' stored rows are dropped from its lists, and their new vectors are scored exactly and merged in.
  Only the masked passages are encoded again. Query vectors and searches are cached by text, so the
  twenty-two candidates encode each query once.
* :func:`masked_bm25` indexes the store again with the masked passages' texts in place (same BM25 options); the
  other passages' texts are unchanged (their scores move only by what masking does to the collection's
  statistics). :class:`Remembered` caches a retriever's searches.

Example::

    dense = MaskedDense(system, {"4983": "Title body without the sentence"})
    dense.vectors_of(["4983"])   # the masked passage's new vector
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from pretriever.data import PassageLookup
from pretriever.data.passages import PassageSource, passage_text
from pretriever.index import BM25Index, BM25Options
from pretriever.index.encode import encode_texts
from pretriever.retrieval import Hit, Retriever, VectorSearch
from pretriever.tune.generators import Masked


def encoder_model(dense: VectorSearch):
    """The sentence-transformers model that encoded ``dense``'s passages (a refined index: its dense side's)."""
    inner = getattr(dense, "retriever", dense)  # a System wraps the index
    return inner.model if hasattr(inner, "model") else inner.dense.model


class MaskedDense:
    """``dense`` with the passages of ``masked`` ({passage_id: text to encode}) encoded again; a
    :class:`~pretriever.retrieval.VectorSearch` (dense PRF reads the new vectors too)."""

    def __init__(self, dense: VectorSearch, masked: Mapping[str, str], batch_size: int = 64):
        self.dense = dense
        self.name = "dense"
        encoder = getattr(getattr(dense, "retriever", dense), "encoder", None)  # an EncoderInfo, or None
        self.ids = list(masked)
        self.row = {pid: i for i, pid in enumerate(self.ids)}
        texts = [masked[p] for p in self.ids]
        normalize, prompt = (encoder.normalize, encoder.passage_prompt) if encoder is not None else (False, "")
        self.vectors = (encode_texts(encoder_model(dense), texts, batch_size, normalize, prompt)
                        if texts else np.zeros((0, 1), np.float32))
        self._queries: dict[str, np.ndarray] = {}
        self._searched: dict[tuple[str, int], list[Hit]] = {}

    def __len__(self) -> int:
        return len(self.dense)  # type: ignore[arg-type]

    def encode_queries(self, queries: Sequence[str]) -> np.ndarray:
        todo = [q for q in dict.fromkeys(queries) if q not in self._queries]
        if todo:
            self._queries.update(zip(todo, self.dense.encode_queries(todo)))
        return np.stack([self._queries[q] for q in queries]) if queries else np.zeros((0, 1), np.float32)

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        vectors = np.asarray(vectors, np.float32)
        if not self.ids:
            return self.dense.search_vectors(vectors, k)
        # deep enough to keep k unmasked hits in most rows; a row that loses too many is searched again
        # len(masked) deeper, which always is
        found = self.dense.search_vectors(vectors, k + min(len(self.ids), k))
        short = [i for i, row in enumerate(found) if sum(h.passage_id not in self.row for h in row) < k
                 and len(row) == k + min(len(self.ids), k)]
        if short:
            for i, row in zip(short, self.dense.search_vectors(vectors[short], k + len(self.ids))):
                found[i] = row
        scores = vectors @ self.vectors.T
        out = []
        for row, own in zip(found, scores):
            kept = [h for h in row if h.passage_id not in self.row][:k]
            best = np.argpartition(-own, min(k, len(own)) - 1)[:k] if len(own) > k else np.arange(len(own))
            merged = kept + [Hit(self.ids[i], float(own[i])) for i in best]
            out.append(sorted(merged, key=lambda h: (-h.score, h.passage_id))[:k])
        return out

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        todo = [q for q in dict.fromkeys(queries) if (q, k) not in self._searched]
        if todo:
            self._searched.update(((q, k), hits) for q, hits in zip(todo, self.search_vectors(
                self.encode_queries(todo), k)))
        return [self._searched[(q, k)] for q in queries]

    def vectors_of(self, passage_ids: Sequence[str]) -> np.ndarray:
        ids = list(passage_ids)
        stored = self.dense.vectors_of([p for p in ids if p not in self.row])
        rows, at = [], 0
        for pid in ids:
            if pid in self.row:
                rows.append(self.vectors[self.row[pid]])
            elif at < len(stored):
                rows.append(stored[at])
                at += 1
        return np.asarray(rows, np.float32).reshape(len(rows), -1)


class Remembered:
    """A retriever whose searches are cached by (query, k): candidates that fuse the same BM25 lists read them
    once."""

    def __init__(self, retriever: Retriever, name: str | None = None):
        self.retriever = retriever
        self.name = name or retriever.name
        self._searched: dict[tuple[str, int], list[Hit]] = {}

    def __len__(self) -> int:
        return len(self.retriever)  # type: ignore[arg-type]

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        todo = [q for q in dict.fromkeys(queries) if (q, k) not in self._searched]
        if todo:
            self._searched.update(((q, k), hits) for q, hits in zip(todo, self.retriever.search(todo, k)))
        return [self._searched[(q, k)] for q in queries]


def masked_texts(masked: Mapping[str, Masked], prepend_title: bool) -> dict[str, str]:
    """The text each masked passage is encoded or tokenized as (``prepend_title`` as the index was built)."""
    return {pid: passage_text(m.title, m.body, prepend_title) for pid, m in masked.items()}


def masked_bm25(lookup: PassageLookup, masked: Mapping[str, Masked], options: BM25Options) -> BM25Index:
    """BM25 over ``lookup``'s store with the ``masked`` passages' texts in place of their own."""
    replaced = masked_texts(masked, options.prepend_title)
    ids: list[str] = []
    texts: list[str] = []
    source = PassageSource(lookup.store)
    try:
        for part_ids, part_texts in source.iter_parts(options.prepend_title):
            ids.extend(part_ids)
            texts.extend(replaced.get(pid, text) for pid, text in zip(part_ids, part_texts))
    finally:
        source.close()
    return BM25Index.build_from_texts(ids, texts, options)
