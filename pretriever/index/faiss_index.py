"""FAISS inner-product indexes built from (vectors, parameters): flat, HNSW, IVF-PQ.

:func:`build_faiss_index` knows nothing about corpora or models, so any stage that
has vectors (the encoder, AOpt refinement rewriting passage vectors) builds its
index the same way.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np

from pretriever.config import option
from pretriever.errors import ConfigError

INDEX_TYPES = ("flat", "hnsw", "ivfpq")
DTYPES = ("float32", "float16")

ADD_BATCH = 65536  # vectors handed to faiss at a time (bounds the float32 copy of a float16 memmap)
MAX_TRAIN = 1_000_000


@dataclass
class FaissParams:
    """How the inner-product index is built and searched ([index.faiss] in TOML)."""

    type: str = option("flat", "Index type: flat (exact inner product), hnsw or ivfpq.")
    hnsw_m: int = option(32, "HNSW: links per node.")
    hnsw_ef_construction: int = option(200, "HNSW: candidate list size while building.")
    hnsw_ef_search: int = option(128, "HNSW: candidate list size while searching.")
    ivf_nlist: int | None = option(None, "IVF-PQ: inverted lists.", default_help="4*sqrt(N), at most N/39")
    ivf_nprobe: int = option(16, "IVF-PQ: lists visited per query.")
    pq_m: int | None = option(None, "IVF-PQ: sub-quantizers; must divide the dimension.", default_help="dim/8")
    pq_nbits: int = option(8, "IVF-PQ: bits per sub-quantizer code.")
    train_size: int | None = option(None, "IVF-PQ: training vectors, an even sample.",
                                    default_help="all, up to 1,000,000")
    # repairs most of what PQ compression loses
    rerank: int = option(0, "HNSW/IVF-PQ: fetch RERANK x k candidates and re-score them exactly with the "
                            "stored embeddings (0: off; 4 lifts IVF-PQ's recall a lot).")

    def __post_init__(self) -> None:
        self.type = str(self.type).lower()
        if self.type not in INDEX_TYPES:
            raise ValueError(f"index type must be one of {', '.join(INDEX_TYPES)}, got {self.type!r}")
        if self.rerank < 0:
            raise ValueError(f"rerank must be 0 (off) or more, got {self.rerank}")
        for name in ("hnsw_m", "hnsw_ef_construction", "hnsw_ef_search", "ivf_nprobe", "pq_nbits"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("ivf_nlist", "pq_m", "train_size"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")

    def resolved(self, n: int, dim: int) -> FaissParams:
        """The parameters with the automatic values (nlist, PQ m, training size) filled in for N x dim.

        Args:
            n: the number of vectors.
            dim: their dimension.

        Returns:
            The parameters, complete.

        Raises:
            ConfigError: settings that cannot fit ``n`` x ``dim`` (the message says which to lower).
        """
        if self.type != "ivfpq":
            return self
        nlist = self.ivf_nlist or max(1, min(int(4 * math.sqrt(n)), n // 39))
        pq_m = self.pq_m or default_pq_m(dim)
        train = min(n, self.train_size or MAX_TRAIN)
        if dim % pq_m:
            raise ConfigError(f"IVF-PQ: pq_m={pq_m} must divide the vector dimension {dim}")
        if train < nlist:
            raise ConfigError(f"IVF-PQ: {train} training vectors cannot make {nlist} lists; lower ivf_nlist")
        if train < 2 ** self.pq_nbits:
            raise ConfigError(f"IVF-PQ: {train} training vectors cannot train {2 ** self.pq_nbits} centroids per "
                             f"sub-quantizer (pq_nbits={self.pq_nbits}); lower pq_nbits or use a flat index")
        return replace(self, ivf_nlist=nlist, pq_m=pq_m, train_size=train)

    def to_json(self) -> dict[str, Any]:
        """The parameters that matter for this index type."""
        data = asdict(self)
        keep = {"flat": ("type",), "hnsw": ("type", "hnsw_m", "hnsw_ef_construction", "hnsw_ef_search", "rerank"),
                "ivfpq": ("type", "ivf_nlist", "ivf_nprobe", "pq_m", "pq_nbits", "train_size", "rerank")}[self.type]
        return {k: data[k] for k in keep}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FaissParams:
        """The parameters as :meth:`to_json` wrote them (in index.json).

        Args:
            data: the JSON object.

        Returns:
            The parameters.
        """
        return cls(**data)


def default_pq_m(dim: int) -> int:
    """dim / 8 sub-quantizers (8 dimensions each), or the largest divisor of dim below that."""
    target = max(1, dim // 8)
    return next(m for m in range(target, 0, -1) if dim % m == 0)


def build_faiss_index(vectors: np.ndarray, params: FaissParams | None = None, dtype: str = "float32",
                      on_add: Callable[[int], None] | None = None):
    """An inner-product FAISS index over ``vectors`` (N x dim; float32 or float16, may be a memmap).

    ``flat`` is exact (``IndexFlatIP``; ``IndexScalarQuantizer`` fp16 when ``dtype`` is
    float16, which is exact for float16 vectors); ``hnsw`` is ``IndexHNSWFlat`` (``IndexHNSWSQ``
    fp16); ``ivfpq`` trains ``IndexIVFPQ`` on an even sample of the vectors. Row ``r`` of
    ``vectors`` is FAISS id ``r``. ``on_add`` is called with the number of vectors added so far.

    Args:
        vectors: the passage vectors, row ``r`` being passage ``r``.
        params: the index type and its settings (default: flat).
        dtype: ``float32`` or ``float16``: how vectors are stored in the flat and HNSW indexes.
        on_add: called with the count added so far (progress).

    Returns:
        The FAISS index.
    """
    import faiss

    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if vectors.ndim != 2:
        raise ValueError(f"vectors must be a 2-d array, got shape {vectors.shape}")
    n, dim = vectors.shape
    params = (params or FaissParams()).resolved(n, dim)
    ip = faiss.METRIC_INNER_PRODUCT
    if params.type == "flat":
        index = faiss.IndexFlatIP(dim) if dtype == "float32" else \
            faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, ip)
    elif params.type == "hnsw":
        if dtype == "float32":
            index = faiss.IndexHNSWFlat(dim, params.hnsw_m, ip)
        else:
            index = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_fp16, params.hnsw_m, ip)
        index.hnsw.efConstruction = params.hnsw_ef_construction
        index.hnsw.efSearch = params.hnsw_ef_search
    else:
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFPQ(quantizer, dim, params.ivf_nlist, params.pq_m, params.pq_nbits, ip)
        rows = np.linspace(0, n - 1, params.train_size).round().astype(np.int64) if params.train_size < n \
            else np.arange(n)
        index.train(np.ascontiguousarray(vectors[rows], dtype=np.float32))
        index.nprobe = params.ivf_nprobe
    if not index.is_trained:  # scalar quantizer fp16 needs no data but a train call
        index.train(np.zeros((1, dim), dtype=np.float32))
    for start in range(0, n, ADD_BATCH):
        index.add(np.ascontiguousarray(vectors[start:start + ADD_BATCH], dtype=np.float32))
        if on_add is not None:
            on_add(min(n, start + ADD_BATCH))
    return index


def set_search_params(index, params: FaissParams) -> None:
    """Apply the search-time parameters (HNSW efSearch, IVF nprobe) to a loaded index."""
    import faiss

    if params.type == "hnsw":
        faiss.downcast_index(index).hnsw.efSearch = params.hnsw_ef_search
    elif params.type == "ivfpq":
        faiss.extract_index_ivf(index).nprobe = params.ivf_nprobe
