"""Settings of ``pretriever mine`` (also the ``[mine]`` table of a TOML config).

Defaults follow the HLP paper where it says something (dual-link and co-mention pairs,
sentence-level queries holding the evidential anchor, no title prepended to the positive,
co-mentioned entities in the top 10% of in-degree excluded, one random negative per
query, ICT keeping the sentence in 10% of cases); the caps and length filters are
pretriever's own choices, as the paper gives no numbers for them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pretriever.config import option
from pretriever.generate.run import QUERIES_FILE

ENGINES = ("duckdb", "spark")
NEGATIVES = ("random", "overlap", "none")
DEFAULT_METHODS = ("dl", "cm")


@dataclass
class MineConfig:
    corpus: Path
    out: Path
    # which strategies to run, in this order: dl, cm, ict, wlp, bfs (a list or "dl,cm")
    methods: list[str] = field(default_factory=lambda: list(DEFAULT_METHODS))
    negatives: str = "random"  # random | overlap | none: one extra negative passage per pair
    max_pairs: int | None = None  # total budget over all methods (None: every pair that passes the caps)
    seed: int = 0  # every sampling decision is a hash of (seed, key): same seed, same pairs
    engine: str = "duckdb"  # duckdb (out-of-core, one machine) | spark (local PySpark)
    prepend_title: bool = False  # HLP: the positive's title is NOT prepended to its text
    # co-mention: entities whose in-degree (number of documents linking to them) is in the
    # top (100 - percentile)% of all link targets are not used as co-mentioned entities ...
    cm_indegree_percentile: float = 90.0
    # ... or, when set, an absolute threshold K: only entities with in-degree < K are used
    cm_indegree_threshold: int | None = None
    ict_keep_fraction: float = 0.1  # ICT: share of pairs whose positive keeps the query sentence
    max_per_doc_pair: int = 4  # DL/CM/WLP: at most this many pairs per (query document, positive document)
    max_per_query_passage: int = 2  # at most this many pairs whose query comes from the same passage
    min_query_words: int = 5  # query sentences shorter than this are not used
    min_passage_words: int = 20  # positives and negatives shorter than this are not used
    skip_disambiguation: bool = True  # disambiguation pages give neither queries nor passages
    overlap_candidates: int = 16  # overlap negatives: passages sampled per shared entity
    stats_sample: int = 10000  # pairs per method tokenized for the Q-P lexical overlap statistic
    overwrite: bool = False
    threads: int | None = None  # DuckDB threads / Spark local cores (None: all)
    memory_limit: str | None = None  # DuckDB memory limit before spilling to disk, e.g. "8GB"
    spark_master: str | None = None  # default local[THREADS or *]
    tokenizer: Path | None = None  # a tokenizer.json (default: all-MiniLM-L6-v2's BERT uncased WordPiece)
    queries: Path | None = option(None, "QUERIES_DIR from `pretriever generate` (or its generated_queries.parquet): "
                                        "the generated queries that method qc pairs with their passages.")

    def __post_init__(self) -> None:
        self.corpus, self.out = Path(self.corpus), Path(self.out)
        if self.tokenizer is not None:
            self.tokenizer = Path(self.tokenizer)
        self.methods = parse_methods(self.methods)
        if self.queries is not None:
            self.queries = Path(self.queries)
        if "qc" in self.methods and (self.queries is None or not queries_table(self.queries).is_file()):
            raise ValueError(f"method qc needs generated queries: give --queries QUERIES_DIR written by `pretriever "
                             f"generate CORPUS --model NAME --out QUERIES_DIR` (got {self.queries or 'none'})")
        self.engine = str(self.engine).lower()
        self.negatives = str(self.negatives).lower()
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.negatives not in NEGATIVES:
            raise ValueError(f"negatives must be one of {', '.join(NEGATIVES)}, got {self.negatives!r}")
        if self.max_pairs is not None and self.max_pairs <= 0:
            raise ValueError(f"max_pairs must be a positive number of pairs (or left out for no limit), "
                             f"got {self.max_pairs}: there would be nothing to mine")
        if not 0.0 < self.cm_indegree_percentile <= 100.0:
            raise ValueError(f"cm_indegree_percentile must be in (0, 100], got {self.cm_indegree_percentile}")
        if self.cm_indegree_threshold is not None and self.cm_indegree_threshold < 1:
            raise ValueError(f"cm_indegree_threshold must be at least 1, got {self.cm_indegree_threshold}")
        if not 0.0 <= self.ict_keep_fraction <= 1.0:
            raise ValueError(f"ict_keep_fraction must be between 0 and 1, got {self.ict_keep_fraction}")
        for name in ("max_per_doc_pair", "max_per_query_passage", "overlap_candidates"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("min_query_words", "min_passage_words", "stats_sample"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 or more, got {getattr(self, name)}")

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}


def queries_table(queries: Path) -> Path:
    """The generated_queries.parquet of a QUERIES_DIR (or the file itself)."""
    return queries / QUERIES_FILE if queries.is_dir() else queries


def parse_methods(value: Any) -> list[str]:
    """``"dl,cm"`` or ``["dl", "cm"]`` -> ``["dl", "cm"]``, checked against the registry."""
    from pretriever.mine.methods import METHODS

    if isinstance(value, str):
        items = [v.strip().lower() for v in value.split(",")]
    else:
        items = [str(v).strip().lower() for v in value]
    items = [v for v in items if v]
    if not items:
        raise ValueError(f"no mining method given; choose from {', '.join(METHODS)}")
    unknown = [v for v in items if v not in METHODS]
    if unknown:
        raise ValueError(f"unknown mining method(s) {', '.join(unknown)}; choose from {', '.join(METHODS)}")
    return list(dict.fromkeys(items))
