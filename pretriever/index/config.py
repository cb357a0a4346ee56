"""Settings of ``pretriever index`` (also the ``[index]`` table of a TOML config).

The defaults reproduce the usual BEIR zero-shot setting: passages are encoded as
``title + " " + text`` with the model's own maximum length (256 word pieces for
all-MiniLM-L6-v2) and its own output (all-MiniLM-L6-v2 ends in a Normalize layer,
so inner product is cosine), searched exactly (``flat``). BM25 is bm25s' Lucene
variant with k1=1.5, b=0.75, bm25s' English stop words and the Snowball English
stemmer over ``title + " " + text``. On SciFact (test) these give nDCG@10 0.649
(dense) and 0.686 (BM25).
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NamedTuple

from pretriever.index.errors import ShardSpecError

INDEX_TYPES = ("flat", "hnsw", "ivfpq")
DTYPES = ("float32", "float16")
BM25_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


class Shard(NamedTuple):
    """Shard ``index`` of ``count`` (0-based): a contiguous run of checkpoint chunks."""

    index: int
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def parse_shard(spec: str | Shard | None) -> Shard | None:
    """``"2/8"`` -> Shard(2, 8); None stays None; anything else is a :class:`ShardSpecError`."""
    if spec is None or isinstance(spec, Shard):
        return spec
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(spec))
    if not match:
        raise ShardSpecError(f"--shard must look like i/n (shard i of n, counted from 0, e.g. 0/4), got {spec!r}")
    index, count = int(match.group(1)), int(match.group(2))
    if count < 1:
        raise ShardSpecError(f"--shard {spec}: the number of shards must be at least 1")
    if index >= count:
        raise ShardSpecError(f"--shard {spec}: shards are counted from 0, so i must be below n "
                             f"(0/{count} ... {count - 1}/{count})")
    return Shard(index, count)


@dataclass
class IndexConfig:
    corpus: Path  # a corpus store (`pretriever corpus build`)
    out: Path  # the index folder (created)
    model: str | None = None  # local path or name; None = the packaged all-MiniLM-L6-v2
    device: str | None = None  # cpu, cuda, cuda:1, mps; None = sentence-transformers' choice
    batch_size: int = 64
    max_length: int | None = None  # word pieces per passage; None = the model's max_seq_length
    normalize: bool = False  # L2-normalise passage and query vectors (on top of what the model does)
    prepend_title: bool = True  # encode "title text" (BEIR practice); False encodes the passage text alone
    passage_prompt: str = ""  # prefix for passages, e.g. "passage: " for E5 models
    query_prompt: str = ""  # prefix for queries, e.g. "query: "
    # encoding is checkpointed in chunks of this many passages (files written atomically);
    # chunks are numbered over the whole corpus, so sharded and one-process runs encode the
    # very same batches and give identical vectors
    checkpoint_every: int = 8192
    shard: str | None = None  # "i/n": encode only shard i of n (0-based), merge later
    resume: bool = False  # continue an interrupted encode from its last finished chunk
    overwrite: bool = False  # replace an existing index (or this shard's chunks) in out
    max_chunks: int | None = None  # stop after encoding this many chunks (finish later with --resume)
    keep_work: bool = False  # keep the per-chunk files (out/_work) after the merge
    dtype: str = "float32"  # float32 | float16: stored embeddings (and flat/HNSW codes)
    index_type: str = "flat"  # flat (exact) | hnsw | ivfpq
    hnsw_m: int = 32
    hnsw_ef_construction: int = 200
    hnsw_ef_search: int = 128
    ivf_nlist: int | None = None  # None: 4 * sqrt(N), at most N / 39
    ivf_nprobe: int = 16
    pq_m: int | None = None  # sub-quantizers; None: dim / 8 (must divide dim)
    pq_nbits: int = 8
    train_size: int | None = None  # IVF-PQ training vectors (an even sample); None: all, up to 1,000,000
    rerank: int = 0  # HNSW/IVF-PQ: re-score rerank * k candidates exactly with the stored embeddings (0: off)
    bm25: bool = False  # also build a BM25 index in out/bm25
    bm25_k1: float = 1.5
    bm25_b: float = 0.75
    bm25_delta: float = 0.5  # bm25l and bm25+ only
    bm25_method: str = "lucene"  # lucene | robertson | atire | bm25l | bm25+
    bm25_stopwords: str = "en"  # bm25s stop-word list (en, de, fr, ...) or "none"
    bm25_stemmer: str = "english"  # Snowball stemmer (PyStemmer algorithm name) or "none"
    bm25_prepend_title: bool = True
    bm25_threads: int = 0  # query threads for BM25 search (0: one; -1: all cores)

    def __post_init__(self) -> None:
        self.corpus, self.out = Path(self.corpus), Path(self.out)
        self.shard_spec  # validates
        self.dtype = str(self.dtype).lower()
        self.index_type = str(self.index_type).lower()
        self.bm25_method = str(self.bm25_method).lower()
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        if self.index_type not in INDEX_TYPES:
            raise ValueError(f"index_type must be one of {', '.join(INDEX_TYPES)}, got {self.index_type!r}")
        if self.bm25_method not in BM25_METHODS:
            raise ValueError(f"bm25_method must be one of {', '.join(BM25_METHODS)}, got {self.bm25_method!r}")
        for name in ("batch_size", "checkpoint_every", "hnsw_m", "hnsw_ef_construction", "hnsw_ef_search",
                     "ivf_nprobe", "pq_nbits"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_chunks is not None and self.max_chunks < 0:
            raise ValueError(f"max_chunks must be 0 or more, got {self.max_chunks}")
        if self.rerank < 0:
            raise ValueError(f"rerank must be 0 (off) or more, got {self.rerank}")
        for name in ("max_length", "ivf_nlist", "pq_m", "train_size"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")

    @property
    def shard_spec(self) -> Shard | None:
        return parse_shard(self.shard)

    def faiss_params(self):
        from pretriever.index.faiss_index import FaissParams

        return FaissParams(type=self.index_type, hnsw_m=self.hnsw_m, hnsw_ef_construction=self.hnsw_ef_construction,
                           hnsw_ef_search=self.hnsw_ef_search, ivf_nlist=self.ivf_nlist, ivf_nprobe=self.ivf_nprobe,
                           pq_m=self.pq_m, pq_nbits=self.pq_nbits, train_size=self.train_size,
                           rerank=self.rerank)

    def bm25_options(self):
        from pretriever.index.bm25 import BM25Options

        return BM25Options(k1=self.bm25_k1, b=self.bm25_b, delta=self.bm25_delta, method=self.bm25_method,
                           stopwords=self.bm25_stopwords, stemmer=self.bm25_stemmer,
                           prepend_title=self.bm25_prepend_title)

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
