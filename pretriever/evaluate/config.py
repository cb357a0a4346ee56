"""Settings of ``pretriever evaluate`` (also the ``[evaluate]`` table of a TOML config)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pretriever.config import batch_size_option, device_option, option
from pretriever.index.hybrid import HybridOptions
from pretriever.metrics import LENIENT_HELP, MAX_GRADE

MATCH_CHOICES = ("auto", "string", "regex")
DEFAULT_QA_KS = (1, 5, 20, 100)  # DPR's top-k accuracy table
DEFAULT_MULTIHOP_KS = (2, 10, 20, 100)  # MDR/HotpotQA: both gold passages in the top k
DEFAULT_QRELS_DEPTH = 1000  # documents kept per query, for Recall@1000 and MAP
DEFAULT_OVERLAP_K = 20  # HLP Fig. 4: top-20 accuracy per overlap bucket


@dataclass
class EvaluateConfig:
    """Settings of ``pretriever evaluate`` (stage 5: score indexes, BM25 and fusions on judgments, QA answers or
    multi-hop gold sets).

    Each field's help lives in its metadata (:func:`pretriever.config.option`), which ``--help`` and the TOML config
    read.
    """

    out: Path = option(help="EVAL_DIR: results.json and the plots are written here (created).")
    index: list[Path] = option(default_factory=list,
                               help="Index folders (dense from `pretriever index build`, refined, or BM25); several "
                                    "are compared side by side, each reported under its model's name. Each "
                                    "one's index.json names the corpus store that answers, titles and the passage -> "
                                    "document mapping come from.")
    bm25: bool = option(False, "Also evaluate BM25 over the same corpus store (reported as bm25): INDEX_DIR/bm25 when "
                               "the first index has one, else bm25_dir, else built for this run (bm25s Lucene, "
                               "English stop words, Snowball stemmer, title + text).")
    hybrid: bool = option(False, "Also evaluate each index fused with BM25 (label-free; see fusion).")
    fusion: HybridOptions = option(default_factory=HybridOptions,
                                   help="How hybrid fuses the rankings ([evaluate.fusion] in TOML).")
    tuned: bool = option(True, "Also evaluate each index the way `pretriever tune` chose for it (index.json's "
                               "\"tuned\"), as a row \"tuned: LABEL\"; --no-tuned leaves it out.")
    alpha_from: Path | None = option(None, "Judgments of validation queries (e.g. qrels/train.tsv, with the same "
                                           "queries file) on which the convex weight alpha is chosen; never the "
                                           "test split.")
    corpus: Path | None = option(None, "The corpus store, when it is not where index.json says (moved), or for BM25 "
                                       "without an index.", default_help="the store the first index names")
    queries: Path | None = option(None, "BEIR queries.jsonl ({\"_id\", \"text\"}) or a BEIR dataset folder (then "
                                        "the qrels default to its qrels/test.tsv); only the queries that the qrels "
                                        "judge are searched.")
    qrels: Path | None = option(None, "Judgments: a BEIR qrels TSV (header query-id, corpus-id, score) or TREC qrels; "
                                      f"judged ids are document ids; grades are integers up to {MAX_GRADE}, a "
                                      "negative one (TREC's junk, -2) counts as not relevant and results count them. "
                                      "Reports nDCG@10, MRR@10, Recall@20/100/1000 and MAP (pytrec_eval).")
    answers: Path | None = option(None, "Open-domain QA questions with answers: NQ-open JSONL ({\"question\", "
                                        "\"answer\": [...]}), DPR qas TSV (question<TAB>['a', 'b']) or DPR JSON. "
                                        "Reports top-k accuracy with DPR's answer matching.")
    multihop: Path | None = option(None, "Multi-hop questions (HotpotQA style JSONL): question plus gold_passages "
                                         "(passage ids) or gold_titles (or HotpotQA's supporting_facts). A question "
                                         "counts at k when ALL its gold are in the top k.")
    match: str = option("auto", "Answer matching: string (DPR: token sequence, case-insensitive), regex (CuratedTREC: "
                                "answers are regular expressions) or auto (regex when the file name contains 'trec').")
    ks: list[int] | None = option(None, "Accuracy cut-offs, comma-separated.",
                                  default_help="1,5,20,100 (multi-hop: 2,10,20,100)")
    depth: int | None = option(None, "Results kept per query.",
                               default_help="1000 documents with qrels (for Recall@1000 and MAP), else the largest k")
    maxp_factor: int = option(3, "When the store splits documents into passages, fetch depth x this many passages "
                                 "and score each document by its best passage (MaxP).")
    ignore_identical_ids: bool = option(True, "Leave out a document whose id equals the query id (as BEIR does).")
    overlap_k: int = option(DEFAULT_OVERLAP_K, "The top-k accuracy reported per question-passage overlap bucket "
                                               "(HLP Fig. 4: top-20).")
    overlap: bool = option(True, "The Q-P overlap analysis (table and overlap.png; needs passage texts from the "
                                 "store).")
    batch_size: int = batch_size_option(256, "Questions", "search call")
    limit: int | None = option(None, "Only the first N questions (a quick look).")
    plots: bool = option(True, "Write PNG plots beside results.json.")
    save_runs: bool = option(False, "Also write each system's ranking as a TREC run file under EVAL_DIR/runs/.")
    bm25_dir: Path | None = option(None, "A BM25 index folder for bm25: loaded when it holds one, else built and saved "
                                         "there for the next run.",
                                   default_help="INDEX_DIR/bm25 when the first index has one, else built in memory "
                                                "for this run")
    device: str | None = device_option("queries are encoded")
    reader: Path | None = option(None, "With answers: a READER_DIR (`pretriever reader train`) that reads the top "
                                       "reader_k passages of every system: end-to-end EM/F1 (SQuAD normalisation; "
                                       "regex answers in regex mode) beside top-k accuracy, and reader-only EM on "
                                       "the gold passages when the file gives them (DPR JSON).")
    reader_k: int = option(20, "Passages the reader reads per question.")
    lenient_match: bool = option(False, LENIENT_HELP)

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        if isinstance(self.index, (str, Path)):
            self.index = [self.index]
        self.index = [Path(p) for p in (self.index or [])]
        for name in ("corpus", "queries", "qrels", "answers", "multihop", "bm25_dir", "alpha_from", "reader"):
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
        if self.alpha_from is not None and not (self.hybrid and self.fusion.fusion == "convex" and self.queries):
            raise ValueError("alpha_from chooses the convex weight of hybrid: give hybrid, fusion convex and queries")
        if self.alpha_from is not None and self.fusion.prf_k:
            raise ValueError("alpha_from scores each weight without dense PRF: give alpha with prf_k, or leave prf_k out")
        if self.hybrid and not self.index:
            raise ValueError("hybrid fuses an index with BM25: give an index")
        if self.reader is not None and self.answers is None:
            raise ValueError("reader reads answers out of passages: give answers (questions with answers)")
        if self.reader_k < 1:
            raise ValueError(f"reader_k must be at least 1, got {self.reader_k}")
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
