"""Stage 4: index. Dense (sentence-transformers + FAISS) and BM25 (bm25s) retrievers over a corpus store.

- :func:`pretriever.index.encode.run` encodes a store (sharded, checkpointed, resumable) and :func:`merge_index`
  gathers shards into an index folder; :func:`save_dense_index` writes one from (ids, vectors).
- :class:`DenseIndex` and :class:`BM25Index` implement :class:`pretriever.retrieval.Retriever`;
  :class:`HybridRetriever` fuses two retrievers.
- :func:`open_system` opens any index folder (by the kind it records) as a :class:`System`, a
  :class:`pretriever.retrieval.Searcher` that also returns its passages; ``mode`` picks the index,
  its BM25, both fused, or the setting ``pretriever tune`` chose (``tuned``).
"""

from pretriever.index.bm25 import BM25Index, BM25Options
from pretriever.index.config import IndexConfig, SearchConfig, Shard, parse_shard
from pretriever.index.dense import DenseIndex, encoder_info, read_index_meta, save_dense_index
from pretriever.index.encode import IndexResult, merge_index
from pretriever.index.errors import (EncodeStateError, IndexStageError, MergeError, NotAnIndexError,
                                     ShardSpecError)
from pretriever.index.faiss_index import FaissParams, build_faiss_index
from pretriever.index.hybrid import HybridOptions, HybridRetriever, choose_alpha, fuse
from pretriever.index.open import (SYSTEM_MODES, bm25_beside, bm25_system, index_meta, open_retriever, open_system,
                                   recorded_store, register_retriever, retriever_kind, store_lookup, tuned_of)
from pretriever.index.system import System, VectorSystem
from pretriever.index.tuned import TUNED_KEY, TunedSetting, record_tuned, tuned_setting

__all__ = [
    "BM25Index", "BM25Options", "IndexResult", "HybridOptions", "HybridRetriever", "choose_alpha", "fuse",
    "DenseIndex", "EncodeStateError", "FaissParams", "IndexConfig",
    "IndexStageError", "MergeError", "SearchConfig", "NotAnIndexError", "Shard", "ShardSpecError", "build_faiss_index",
    "SYSTEM_MODES", "System", "VectorSystem", "bm25_beside", "bm25_system", "encoder_info",
    "index_meta", "merge_index", "open_retriever", "open_system", "parse_shard", "read_index_meta", "recorded_store",
    "register_retriever", "retriever_kind", "save_dense_index", "store_lookup", "TUNED_KEY", "TunedSetting",
    "record_tuned", "tuned_of", "tuned_setting",
]
