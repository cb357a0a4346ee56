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

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pretriever.config import batch_size_option, device_option, option, overwrite_option, resume_option
from pretriever.data.passages import Shard, parse_shard
from pretriever.index.bm25 import BM25Options
from pretriever.index.faiss_index import DTYPES, FaissParams
from pretriever.index.hybrid import HybridOptions
from pretriever.training import check_precision


@dataclass
class IndexConfig:
    """Settings of ``pretriever index build`` (stage 4: encode a corpus store into a dense index, and BM25).

    Each field's help lives in its metadata (:func:`pretriever.config.option`), which ``--help`` and the TOML config
    read.
    """

    corpus: Path = option(help="A corpus store (`pretriever corpus build`).")
    out: Path = option(help="The index folder (created).")
    model: str | None = option(None, "sentence-transformers model: a local folder or a name.",
                               default_help="the packaged all-MiniLM-L6-v2")
    device: str | None = device_option("passages are encoded")
    batch_size: int = batch_size_option(64, "Passages")
    max_length: int | None = option(None, "Word pieces per passage; longer ones are cut.",
                                    default_help="the model's max_seq_length (256 for all-MiniLM-L6-v2)")
    normalize: bool = option(False, "L2-normalise passage and query vectors (all-MiniLM-L6-v2 normalises by itself).")
    prepend_title: bool = option(True, "Encode \"title text\" (BEIR practice) or the passage text alone.")
    passage_prompt: str = option("", "Text put before every passage, e.g. \"passage: \" for E5 models.")
    query_prompt: str = option("", "Text put before every query at search time, e.g. \"query: \".")
    # chunks are numbered over the whole corpus, so sharded and one-process runs encode the
    # very same batches and give identical vectors
    checkpoint_every: int = option(8192, "Passages per checkpoint chunk; each finished chunk is saved atomically.")
    shard: str | None = option(None, "Encode only shard i of n (i/n, counted from 0, e.g. 0/4) and stop; then "
                                     "`pretriever index merge`.")
    resume: bool = resume_option("an interrupted encode from its last finished chunk")
    overwrite: bool = overwrite_option("an existing index (or this shard's chunks) in --out")
    max_chunks: int | None = option(None, "Stop after encoding this many chunks; finish later with --resume.")
    keep_work: bool = option(False, "Keep the per-chunk files (OUT/_work) after merging.")
    dtype: str = option("float32", "float32 or float16 for the stored embeddings (and the flat/HNSW index).")
    precision: str = option("fp32", "The model's arithmetic while encoding: fp32, fp16, bf16 or auto (bf16 on a GPU "
                                    "that has it, else fp16 on a GPU, fp32 on a CPU). Half precision about doubles "
                                    "a GPU's throughput and moves the vectors slightly; an index is built once and "
                                    "searched often, so fp32 unless asked. Queries are encoded in fp32.")
    faiss: FaissParams = option(default_factory=FaissParams, help="The FAISS index ([index.faiss] in TOML).")
    build_bm25: bool = option(False, "Also build a BM25 index in OUT/bm25 (used by `pretriever search --bm25`).")
    bm25: BM25Options = option(default_factory=BM25Options, help="The BM25 index ([index.bm25] in TOML).")

    def __post_init__(self) -> None:
        self.corpus, self.out = Path(self.corpus), Path(self.out)
        self.shard_spec  # validates
        self.dtype = str(self.dtype).lower()
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        self.precision = check_precision(self.precision)
        for name in ("batch_size", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_chunks is not None and self.max_chunks < 0:
            raise ValueError(f"max_chunks must be 0 or more, got {self.max_chunks}")
        if self.max_length is not None and self.max_length < 1:
            raise ValueError(f"max_length must be at least 1, got {self.max_length}")

    @property
    def shard_spec(self) -> Shard | None:
        return parse_shard(self.shard)

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}


@dataclass
class SearchConfig:
    """Searching an index from the command line (``pretriever search``; the ``[search]`` table of a TOML file)."""

    index_dir: Path = option(help="An index folder: dense, refined or BM25.")
    queries: list[str] = option(help="One or more queries.")
    k: int = option(10, "Passages to show per query.")
    bm25: bool = option(False, "Show BM25's ranking beside the index's: INDEX_DIR/bm25 when present, else built on "
                               "the fly from the index's corpus store (default options).")
    hybrid: bool = option(False, "Show the fusion of the index with BM25 beside them (see --fusion).")
    fusion: HybridOptions = option(default_factory=HybridOptions,
                                   help="How hybrid fuses the rankings ([search.fusion] in TOML).")
    device: str | None = device_option("queries are encoded")
    tuned: bool = option(True, "Search the index the way `pretriever tune` chose (index.json's \"tuned\"); "
                               "--no-tuned: the index alone.")
    words: int = option(30, "Words of each passage to show (0: titles only).")

    def __post_init__(self) -> None:
        self.index_dir = Path(self.index_dir)
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")
        if self.words < 0:
            raise ValueError(f"words must be 0 or more, got {self.words}")
