"""A dense index folder and the :class:`DenseIndex` that searches it.

An index folder holds::

    index.json           what was encoded and how (model, corpus store, dim, dtype, index type
                         and parameters, max_length, normalize, title, prompts, counts, version);
                         written last, so its presence means the folder is complete
    passage_ids.parquet  passage_id of row r (one column, index order)
    embeddings.npy       the passage vectors, N x dim, float32 (or float16); np.load(mmap_mode="r")
    index.faiss          the FAISS inner-product index over those rows (faiss.read_index)
    bm25/                optional BM25 index of the same store (see pretriever.index.bm25)

:func:`save_dense_index` writes such a folder from (ids, vectors, parameters) alone, so a
stage that rewrites passage vectors (AOpt refinement) re-indexes with one call.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pretriever import __version__
from pretriever.index.errors import NotAnIndexError
from pretriever.index.faiss_index import FaissParams, build_faiss_index, set_search_params
from pretriever.index.meta import DENSE_FORMAT, EMBEDDINGS_FILE, FAISS_FILE, IDS_FILE, INDEX_JSON, EncoderInfo, IndexMeta
from pretriever.io import atomic_path, write_parquet
from pretriever.models import DEFAULT_MODEL, is_packaged, load_model, model_label
from pretriever.retrieval import Hit, RankedRows

WRITE_BLOCK = 65536


def encoder_info(model: str | None, max_length: int, normalize: bool, prepend_title: bool,
                 passage_prompt: str = "", query_prompt: str = "") -> EncoderInfo:
    """How passages were (and queries must be) encoded; stored under ``encoder`` in index.json.

    Args:
        model: the model's local path or name (None: the packaged MiniLM).
        max_length: word pieces per text.
        normalize: L2-normalise the vectors.
        prepend_title: encode "title text".
        passage_prompt: text put before every passage.
        query_prompt: text put before every query.

    Returns:
        The encoder's settings (a local path made absolute).
    """
    packaged = is_packaged(model)
    reference = DEFAULT_MODEL if packaged else str(model)
    if not packaged and Path(reference).exists():
        reference = str(Path(reference).resolve())
    return EncoderInfo(model=reference, model_label=model_label(model), max_length=int(max_length),
                       normalize=bool(normalize), prepend_title=bool(prepend_title), passage_prompt=passage_prompt,
                       query_prompt=query_prompt)


def write_embeddings(path: Path, blocks, n: int, dim: int, dtype: str) -> None:
    """Write N x dim vectors, given as an iterable of row blocks, to ``path`` (.npy) atomically."""
    with atomic_path(path) as tmp:
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.dtype(dtype), shape=(n, dim))
        row = 0
        for block in blocks:
            out[row:row + len(block)] = block
            row += len(block)
        if row != n:
            raise ValueError(f"expected {n} vectors, got {row}")
        out.flush()
        del out


def save_dense_index(out: Path | str, passage_ids: Sequence[str], vectors: np.ndarray, encoder: EncoderInfo,
                     params: FaissParams | None = None, dtype: str = "float32", on_add=None,
                     **fields: Any) -> IndexMeta:
    """Write a complete index folder (embeddings, ids, FAISS index, index.json) from vectors.

    ``encoder`` says how queries must be encoded (:func:`encoder_info`; copy it from the
    index whose vectors you rewrite); ``fields`` are more :class:`IndexMeta` fields (``store``,
    ``name``, ``retriever``, ``refine``, ...). Returns the metadata written.

    Args:
        out: the index folder (created; an index.json there is removed first).
        passage_ids: the passages, by row.
        vectors: one row per passage.
        encoder: how queries must be encoded.
        params: the FAISS index (default: flat).
        dtype: ``float32`` or ``float16`` for the stored vectors.
        on_add: called with the count added to FAISS so far (progress).
        **fields: more :class:`IndexMeta` fields.

    Returns:
        The metadata written.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / INDEX_JSON).unlink(missing_ok=True)
    n, dim = vectors.shape
    if len(passage_ids) != n:
        raise ValueError(f"{len(passage_ids)} passage ids for {n} vectors")
    write_embeddings(out / EMBEDDINGS_FILE, (vectors[i:i + WRITE_BLOCK] for i in range(0, n, WRITE_BLOCK)),
                     n, dim, dtype)
    return finish_dense_index(out, passage_ids, encoder, params, dtype, on_add, **fields)


def finish_dense_index(out: Path, passage_ids: Sequence[str] | pa.Array, encoder: EncoderInfo,
                       params: FaissParams | None, dtype: str, on_add=None, *, name: str | None = None,
                       recorded: dict[str, Any] | None = None, **fields: Any) -> IndexMeta:
    """Build the FAISS index over ``out/embeddings.npy``, write the ids and then index.json (``fields``: more
    :class:`IndexMeta` fields; ``recorded``: keys kept as given, such as encode statistics)."""
    import faiss

    params = params or FaissParams()
    vectors = np.load(out / EMBEDDINGS_FILE, mmap_mode="r")
    n, dim = vectors.shape
    started = time.perf_counter()
    resolved = params.resolved(n, dim)
    index = build_faiss_index(vectors, resolved, dtype, on_add=on_add)
    with atomic_path(out / FAISS_FILE) as tmp:
        faiss.write_index(index, str(tmp))
    ids = passage_ids if isinstance(passage_ids, (pa.Array, pa.ChunkedArray)) else pa.array(list(passage_ids), pa.string())
    write_parquet(pa.table({"passage_id": ids}), out / IDS_FILE)
    meta = IndexMeta(
        format=DENSE_FORMAT, name=name or encoder.model_label, count=int(n), encoder=encoder, dim=int(dim),
        dtype=dtype, faiss=resolved.to_json(), **fields,
        recorded={"pretriever_version": __version__,
                  "files": {"embeddings": EMBEDDINGS_FILE, "passage_ids": IDS_FILE, "faiss": FAISS_FILE},
                  **(recorded or {}), "index_seconds": round(time.perf_counter() - started, 3),
                  "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")})
    meta.write(out)
    return meta


class DenseIndex:
    """A dense index folder opened for search: a bi-encoder's passage vectors in FAISS; implements
    :class:`pretriever.retrieval.Retriever` and :class:`pretriever.retrieval.VectorSearch`.

    ``search`` encodes the queries with the index's model (loaded on first use; pass ``model=`` to share
    one, whose ``max_seq_length`` is then set to the index's) and returns hits best first, by inner
    product with the stored vectors (exact with ``flat``; HNSW or IVF-PQ approximate). ``encode_queries``
    and ``search_vectors`` split the two steps (the server batches encoding; dense PRF moves vectors).

    Requirements:
        A folder written by ``pretriever index build`` (or ``index merge``): index.json, the vectors and
        the FAISS index. The model named in index.json must be loadable (a local path or the packaged
        MiniLM; nothing is downloaded).

    Example::

        from pretriever.index import DenseIndex

        index = DenseIndex.load("scifact-index/")  # from pretriever index build scifact-store/ ...
        hits = index.search(["vitamin D deficiency increases the risk of fractures"], k=3)[0]
        vectors = index.encode_queries(["vitamin D deficiency increases the risk of fractures"])
        assert [h.passage_id for h in index.search_vectors(vectors, k=3)[0]] == [h.passage_id for h in hits]

    ``pretriever.index.IndexFolder("scifact-index/").open()`` opens the same index with its store, to read the
    passages found.

    References:
        Karpukhin et al., "Dense Passage Retrieval for Open-Domain Question Answering", EMNLP 2020;
        Johnson et al., "Billion-scale similarity search with GPUs", 2017 (FAISS).

    Relations:
        One of the searchers behind :class:`pretriever.retrieval.Retriever`, beside
        :class:`~pretriever.index.BM25Index`, :class:`~pretriever.index.HybridRetriever` (which fuses two) and
        :class:`~pretriever.refine.RefinedIndex` (which searches these vectors, refined);
        :class:`~pretriever.index.System` adds a store's passages to any of them.

    Args:
        path: the index folder.
        meta: its metadata (:meth:`load` reads it).
        model: an encoder already loaded, shared (None: load the recorded one on first use).
        device: where queries are encoded (None: :func:`~pretriever.models.resolve_device` picks).
    """

    def __init__(self, path: Path, meta: IndexMeta, model=None, device: str | None = None):
        import faiss

        if meta.encoder is None or meta.faiss is None or meta.dim is None:
            raise NotAnIndexError(f"{path}: {INDEX_JSON} is not a dense index's (no encoder or FAISS settings)")
        self.path = Path(path)
        self.meta = meta
        self.name: str = meta.name
        self.encoder: EncoderInfo = meta.encoder
        self.params = FaissParams.from_json(meta.faiss)
        self.index = faiss.read_index(str(self.path / FAISS_FILE))
        set_search_params(self.index, self.params)
        self.device = device
        self._model = model
        if model is not None:  # queries must be cut like the passages were
            model.max_seq_length = self.encoder.max_length
        self._ids: np.ndarray | None = None
        self._embeddings: np.ndarray | None = None
        self._row_of: dict[str, int] | None = None
        if self.index.ntotal != meta.count:
            raise NotAnIndexError(f"{self.path}: {FAISS_FILE} holds {self.index.ntotal} vectors, index.json says "
                                  f"{meta.count}; rebuild the index")

    @classmethod
    def load(cls, path: Path | str, model=None, device: str | None = None) -> DenseIndex:
        """Open the dense index folder ``path``.

        Args:
            path: the index folder.
            model: an encoder already loaded, shared.
            device: where queries are encoded.

        Returns:
            The index.
        """
        return cls(Path(path), IndexMeta.read(path, dense=True), model=model, device=device)

    def __len__(self) -> int:
        return self.meta.count

    @property
    def dim(self) -> int:
        return int(self.meta.dim)  # type: ignore[arg-type]  # checked in __init__

    @property
    def passage_ids(self) -> np.ndarray:
        """passage_id of each row (object array, index order)."""
        if self._ids is None:
            column = pq.read_table(self.path / IDS_FILE, columns=["passage_id"]).column(0)
            self._ids = np.array(column.to_pylist(), dtype=object)
        return self._ids

    @property
    def embeddings(self) -> np.ndarray:
        """The stored passage vectors (N x dim, float32 or float16, memory-mapped read-only)."""
        if self._embeddings is None:
            self._embeddings = np.load(self.path / EMBEDDINGS_FILE, mmap_mode="r")
        return self._embeddings

    def vectors_of(self, passage_ids: Sequence[str]) -> np.ndarray:
        """The stored vectors of these passages (float32, in the given order; ids not in the index are skipped).

        Args:
            passage_ids: the passages.

        Returns:
            One row per id found.
        """
        if self._row_of is None:
            self._row_of = {pid: i for i, pid in enumerate(self.passage_ids)}
        rows = [self._row_of[p] for p in passage_ids if p in self._row_of]
        return np.asarray(self.embeddings[rows], dtype=np.float32).reshape(len(rows), self.dim)

    @property
    def model(self):
        if self._model is None:
            reference = self.encoder.model
            try:
                self._model = load_model(reference, device=self.device)
            except Exception as err:  # noqa: BLE001 - any loading failure gets the same advice
                raise NotAnIndexError(f"{self.path}: cannot load the index's model {reference!r} ({err}); "
                                      "pass model= to DenseIndex.load") from err
            self._model.max_seq_length = self.encoder.max_length
        return self._model

    def encode_queries(self, queries: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Query vectors (float32), encoded as the index says (prompt, max length, normalisation).

        Args:
            queries: the query texts.
            batch_size: queries encoded at once.

        Returns:
            One row per query.
        """
        vectors = self.model.encode_query(list(queries), batch_size=batch_size, convert_to_numpy=True,
                                          show_progress_bar=False, normalize_embeddings=self.encoder.normalize,
                                          prompt=self.encoder.query_prompt or None)
        return np.asarray(vectors, dtype=np.float32)

    def set_search_params(self, ef_search: int | None = None, nprobe: int | None = None,
                          rerank: int | None = None) -> None:
        """Change HNSW efSearch, IVF nprobe or the exact re-ranking factor for later searches.

        Args:
            ef_search: HNSW's efSearch (None: unchanged).
            nprobe: IVF's nprobe (None: unchanged).
            rerank: candidates re-scored exactly, as a multiple of k (None: unchanged).
        """
        if ef_search is not None:
            self.params.hnsw_ef_search = ef_search
        if nprobe is not None:
            self.params.ivf_nprobe = nprobe
        if rerank is not None:
            self.params.rerank = rerank
        set_search_params(self.index, self.params)

    def search_arrays(self, vectors: np.ndarray, k: int) -> RankedRows:
        """FAISS search: the top ``k`` rows of each vector (len(vectors) x k).

        With ``rerank`` (HNSW, IVF-PQ), ``rerank * k`` candidates are re-scored exactly
        against the stored embeddings and the best ``k`` kept.

        Args:
            vectors: one row per query.
            k: hits per query.

        Returns:
            ``(scores, rows)``.
        """
        vectors = np.ascontiguousarray(np.atleast_2d(vectors), dtype=np.float32)
        if vectors.shape[1] != self.dim:
            raise ValueError(f"query vectors have dimension {vectors.shape[1]}, the index {self.dim}")
        factor = self.params.rerank if self.params.type != "flat" else 0
        if factor == 0:
            return RankedRows(*self.index.search(vectors, k))
        _, candidates = self.index.search(vectors, k * factor)
        scores = np.full((len(vectors), k), -np.inf, dtype=np.float32)
        rows = np.full((len(vectors), k), -1, dtype=np.int64)
        for i, (query, cand) in enumerate(zip(vectors, candidates)):
            cand = cand[cand >= 0]
            order = np.sort(cand)  # sorted rows read a memory map sequentially
            exact = np.asarray(self.embeddings[order], dtype=np.float32) @ query
            best = np.argsort(-exact, kind="stable")[:k]
            scores[i, :len(best)], rows[i, :len(best)] = exact[best], order[best]
        return RankedRows(scores, rows)

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        """The top ``k`` passages for each query vector, best first.

        Args:
            vectors: one row per query.
            k: hits per query.

        Returns:
            One list of hits per query.
        """
        scores, rows = self.search_arrays(vectors, k)
        ids = self.passage_ids
        return [[Hit(ids[r], float(s)) for s, r in zip(srow, rrow) if r >= 0] for srow, rrow in zip(scores, rows)]

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """The top ``k`` passages for each query, best first (Retriever protocol).

        Args:
            queries: the query texts.
            k: hits per query.

        Returns:
            One list of hits per query.
        """
        if not queries:
            return []
        return self.search_vectors(self.encode_queries(queries), k)

    def reindex(self, out: Path | str, params: FaissParams | None = None, dtype: str | None = None,
                vectors: np.ndarray | None = None) -> DenseIndex:
        """A new index folder over these passages: other FAISS parameters, dtype, or new ``vectors``.

        Args:
            out: the new index folder.
            params: its FAISS index (None: this one's).
            dtype: its stored vectors' type (None: this one's).
            vectors: new vectors, one row per passage (None: these).

        Returns:
            The new index, sharing this one's model.
        """
        save_dense_index(out, pa.array(self.passage_ids.tolist(), pa.string()),
                         self.embeddings if vectors is None else vectors, self.encoder,
                         params or self.params, dtype or self.meta.dtype, store=self.meta.store,
                         n_passages=self.meta.n_passages)
        return DenseIndex.load(out, model=self._model, device=self.device)
