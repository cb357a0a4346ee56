"""Stage 4: index. Dense (sentence-transformers + FAISS) and BM25 (bm25s) retrievers over a corpus store.

- :func:`pretriever.index.encode.run` encodes a store (sharded, checkpointed, resumable) and :func:`merge_index`
  gathers shards into an index folder; :func:`save_dense_index` writes one from (ids, vectors).
- :class:`DenseIndex` and :class:`BM25Index` implement :class:`pretriever.retrieval.Retriever`;
  :class:`HybridRetriever` fuses two retrievers.
- :class:`IndexFolder` reads any index folder's metadata once (:class:`IndexMeta`) and opens it (by the kind it
  records) as a :class:`System`, a :class:`pretriever.retrieval.Searcher` that also returns its passages;
  ``mode`` picks the index, its BM25, both fused, or the setting ``pretriever tune`` chose (``tuned``).
"""

from pretriever.index.bm25 import BM25Index, BM25Options
from pretriever.index.config import IndexConfig, SearchConfig, Shard, parse_shard
from pretriever.index.dense import DenseIndex, encoder_info, save_dense_index
from pretriever.index.encode import IndexResult, merge_index
from pretriever.index.errors import (EncodeStateError, IndexStageError, MergeError, NotAnIndexError,
                                     ShardSpecError)
from pretriever.index.faiss_index import FaissParams, build_faiss_index
from pretriever.index.hybrid import HybridOptions, HybridRetriever, choose_alpha, fuse
from pretriever.index.folder import SYSTEM_MODES, IndexFolder, bm25_system, register_retriever, registered_kinds
from pretriever.index.meta import EncoderInfo, IndexMeta, TunedRecord
from pretriever.index.system import System, VectorSystem
from pretriever.index.tuned import TUNED_KEY, TunedSetting

__all__ = [
    "BM25Index", "BM25Options", "IndexResult", "HybridOptions", "HybridRetriever", "choose_alpha", "fuse",
    "DenseIndex", "EncodeStateError", "EncoderInfo", "FaissParams", "IndexConfig", "IndexFolder", "IndexMeta",
    "IndexStageError", "MergeError", "SearchConfig", "NotAnIndexError", "Shard", "ShardSpecError", "build_faiss_index",
    "SYSTEM_MODES", "System", "VectorSystem", "bm25_system", "encoder_info", "merge_index", "parse_shard",
    "register_retriever", "registered_kinds", "save_dense_index", "TUNED_KEY", "TunedRecord", "TunedSetting",
]
