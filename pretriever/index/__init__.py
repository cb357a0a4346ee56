"""Stage 4: index. Dense (sentence-transformers + FAISS) and BM25 (bm25s) retrievers over a corpus store.

- :func:`build_index` encodes a store (sharded, checkpointed, resumable) and :func:`merge_index`
  gathers shards into an index folder; :func:`save_dense_index` writes one from (ids, vectors).
- :class:`DenseIndex` and :class:`BM25Index` implement :class:`pretriever.retrieval.Retriever`.
"""

from pretriever.index.bm25 import BM25Index, BM25Options
from pretriever.index.config import IndexConfig, SearchConfig, Shard, parse_shard
from pretriever.index.dense import DenseIndex, encoder_info, read_index_meta, save_dense_index
from pretriever.index.encode import BuildResult, build_index, merge_index
from pretriever.index.errors import (EncodeStateError, IndexStageError, MergeError, NotAnIndexError,
                                     ShardSpecError)
from pretriever.index.faiss_index import FaissParams, build_faiss_index
from pretriever.index.hybrid import HybridOptions, HybridRetriever, choose_alpha, fuse, open_hybrid
from pretriever.index.open import bm25_beside, open_retriever, register_retriever, retriever_kind

__all__ = [
    "BM25Index", "BM25Options", "BuildResult", "HybridOptions", "HybridRetriever", "choose_alpha", "fuse",
    "open_hybrid", "DenseIndex", "EncodeStateError", "FaissParams", "IndexConfig",
    "IndexStageError", "MergeError", "SearchConfig", "NotAnIndexError", "Shard", "ShardSpecError", "build_faiss_index",
    "bm25_beside", "build_index", "encoder_info", "merge_index", "open_retriever", "parse_shard", "read_index_meta",
    "register_retriever", "retriever_kind", "save_dense_index",
]
