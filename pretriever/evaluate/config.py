"""Settings of ``pretriever evaluate`` (also the ``[evaluate]`` table of a TOML config)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MATCH_CHOICES = ("auto", "string", "regex")
DEFAULT_QA_KS = (1, 5, 20, 100)  # DPR's top-k accuracy table
DEFAULT_MULTIHOP_KS = (2, 10, 20, 100)  # MDR/HotpotQA: both gold passages in the top k
DEFAULT_QRELS_DEPTH = 1000  # documents kept per query, for Recall@1000 and MAP


@dataclass
class EvaluateConfig:
    out: Path  # EVAL_DIR: results.json, plots
    index: list[Path] = field(default_factory=list)  # dense index folders (each an index.json naming its store)
    bm25: bool = False  # also evaluate BM25 over the same corpus store
    corpus: Path | None = None  # the corpus store (default: the one the first --index names)
    queries: Path | None = None  # BEIR queries.jsonl, or a BEIR dataset folder (qrels default: its qrels/test.tsv)
    qrels: Path | None = None  # BEIR qrels TSV (or TREC qrels); judged ids are document ids
    answers: Path | None = None  # open-domain QA answers: NQ-open JSONL, DPR qas TSV or DPR JSON
    multihop: Path | None = None  # HotpotQA-style JSONL: question + gold passage ids or gold titles
    match: str = "auto"  # answer matching: string (DPR), regex (CuratedTREC) or auto (regex for *trec* files)
    ks: list[int] | None = None  # accuracy cut-offs (default 1,5,20,100; multi-hop 2,10,20,100)
    depth: int | None = None  # results kept per query (default: 1000 documents with qrels, else the largest k)
    maxp_factor: int = 3  # passages split from documents: fetch depth * this many passages, then MaxP
    ignore_identical_ids: bool = True  # BEIR: never count a query's own id among its results
    overlap_k: int = 20  # the accuracy the Q-P overlap buckets report (HLP Fig. 4: top-20)
    overlap: bool = True  # the Q-P overlap analysis (needs passage texts from the store)
    batch_size: int = 256  # queries per search call
    limit: int | None = None  # only the first N queries/questions (a quick look)
    plots: bool = True  # PNG plots beside results.json
    save_runs: bool = False  # also write each system's ranking as a TREC run file
    # a BM25 index folder for --bm25: loaded when it holds one, else built there (default: INDEX_DIR/bm25
    # when the index has one, else built in memory for this run)
    bm25_dir: Path | None = None
    device: str | None = None  # where dense indexes encode queries: cpu, cuda, ... (default: automatic)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if isinstance(self.index, (str, Path)):
            self.index = [self.index]
        self.index = [Path(p) for p in (self.index or [])]
        for name in ("corpus", "queries", "qrels", "answers", "multihop", "bm25_dir"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, Path(value))
        self.match = str(self.match).lower()
        if self.match not in MATCH_CHOICES:
            raise ValueError(f"match must be one of {', '.join(MATCH_CHOICES)}, got {self.match!r}")
        if (self.queries is not None and self.queries.is_dir() and self.qrels is None and self.answers is None
                and self.multihop is None):
            self.qrels = self.queries / "qrels" / "test.tsv"  # a BEIR folder: its test split
        given = [n for n in ("qrels", "answers", "multihop") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError("give exactly one of qrels (with queries), answers or multihop"
                             + (f"; got {', '.join(given)}" if given else ""))
        if self.qrels is not None and self.queries is None:
            raise ValueError("qrels need the queries they judge: give queries (a BEIR queries.jsonl)")
        if self.qrels is None and self.queries is not None:
            raise ValueError("queries go with qrels; answers and multihop files hold their own questions")
        if not self.index and not self.bm25:
            raise ValueError("nothing to evaluate: give at least one index, or bm25 (with corpus)")
        if not self.index and self.corpus is None:
            raise ValueError("bm25 without an index needs the corpus store to search: give corpus")
        if self.ks is not None:
            if isinstance(self.ks, (int, str)):
                self.ks = [int(k) for k in str(self.ks).split(",") if k.strip()]
            self.ks = sorted({int(k) for k in self.ks})
            if not self.ks or self.ks[0] < 1:
                raise ValueError(f"ks must be positive cut-offs, got {self.ks}")
        for name in ("depth", "limit"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        for name in ("maxp_factor", "overlap_k", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")

    @property
    def kind(self) -> str:
        return "qrels" if self.qrels is not None else "answers" if self.answers is not None else "multihop"

    def to_json(self) -> dict[str, Any]:
        def plain(v):
            if isinstance(v, Path):
                return str(v)
            if isinstance(v, list):
                return [plain(x) for x in v]
            return v
        return {k: plain(v) for k, v in asdict(self).items()}
