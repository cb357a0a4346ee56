"""Settings of ``pretriever refine`` (also the ``[refine]`` table of a TOML config)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pretriever.config import batch_size_option, device_option, option, overwrite_option, seed_option
from pretriever.data.qa import guess_match_mode
from pretriever.index.hybrid import HybridOptions
from pretriever.refine.labels import FEEDBACK_KINDS

METHODS = ("linear", "aopt-passage", "aopt-query", "hybrid")
PASSAGE_METHODS = ("linear", "aopt-passage", "hybrid")  # methods that rewrite passage vectors
QUERY_METHODS = ("aopt-query", "hybrid")  # methods that refine query vectors


def _grid(step: float = 0.1, top: float = 0.9) -> list[float]:
    return [round(i * step, 10) for i in range(int(round(top / step)) + 1)]


# AOpt settings per preset; "default" was chosen on a 20% validation split of SciFact's training claims
# (bench/README.md, "Refine"), "paper" is Figure 5's
PRESETS: dict[str, dict[str, Any]] = {"default": {"learning_rate": 0.01, "normalize": True},
                                      "paper": {"learning_rate": 0.1, "normalize": False}}


@dataclass
class RefineConfig:
    """Settings of ``pretriever refine`` (pseudo-relevance feedback on an index's dense vectors: linear, AOpt).

    Each field's help lives in its metadata (:func:`pretriever.config.option`), which ``--help`` and the TOML config
    read.
    """

    index: Path = option(help="The dense index whose vectors are refined (`pretriever index build`).")
    out: Path = option(help="The refined index folder (a normal index folder; refine/ holds the labels) or, "
                            "for `refine grid`, the folder of grid.json and grid.png.")
    queries: Path | None = option(None, "Feedback queries: BEIR queries.jsonl (with qrels or topk feedback) or a "
                                        "QA file (topk).")
    feedback: str = option("qrels", "How retrieved passages are labelled: qrels (judged relevant, with --queries "
                                    "and --qrels), answers (contains an answer, DPR matching, with --answers), or "
                                    "topk (label-free PRF: the top --k-pos are relevant).")
    qrels: Path | None = option(None, "Judgments of the feedback queries (e.g. qrels/train.tsv).")
    answers: Path | None = option(None, "Feedback questions with answers (NQ-open JSONL, DPR TSV/JSON).")
    method: str = option("aopt-passage", "linear (eq. 9), aopt-passage, aopt-query or hybrid (passages, then "
                                         "queries).")
    k: int = option(100, "Passages retrieved and labelled per feedback query (the pseudo-label depth).")
    k_pos: int = option(5, "topk feedback (and test-time query refinement): the top k' that count as relevant.")
    fuse_bm25: bool = option(False, "Find the passages to label with BM25 fused with the dense ranking (see "
                                    "fusion), not with dense retrieval alone: cleaner label-free topk labels, more "
                                    "judged passages found for qrels/answers. Not --method hybrid (passages, then "
                                    "queries): this changes which passages are labelled, not the refined index's "
                                    "search, which stays dense (fuse it with BM25 at search time: `pretriever "
                                    "evaluate --hybrid`). Uses INDEX_DIR/bm25, else builds one from the store.")
    fusion: HybridOptions = option(default_factory=HybridOptions,
                                   help="How --fuse-bm25 fuses the rankings ([refine.fusion] in TOML).")
    match: str = option("auto", "Answer matching: string (DPR), regex (CuratedTREC: answers are patterns) or auto "
                                "(regex when the answers file's name contains 'trec', as evaluate does).")
    # linear re-weighting, eq. 9 (alpha fixed at 1; the paper's best NQ point is beta 0.6, gamma -0.1)
    beta: float = option(0.6, "linear: weight of the mean positive query.")
    gamma: float = option(-0.1, "linear: weight of the mean negative query.")
    # AOpt, eqs. 10-14
    preset: str = option("default", "default: AOpt settings that do no harm to a unit-norm model such as "
                                    "all-MiniLM-L6-v2 (lr 0.01, refined vectors renormalised; chosen on a "
                                    "validation split of SciFact's training claims); paper: the paper's (lr 0.1, "
                                    "no renormalisation), which lowers SciFact nDCG@10 from 0.650 to 0.581. "
                                    "--lr and --normalize override either.")
    learning_rate: float | None = option(None, "AOpt learning rate.", default_help="0.01 (preset paper: 0.1)",
                                         renamed_from=("lr",))
    max_epochs: int = option(100, "AOpt epochs per round, at most.")
    patience: int = option(5, "AOpt: stop a vector after this many epochs in a row without loss improvement.")
    min_delta: float = option(0.0, "AOpt: an epoch improves when its loss is below the best so far minus this.")
    restore_best: bool = option(True, "AOpt: end each vector at its lowest-loss epoch (no: at its last one).")
    rounds: int = option(1, "Passage side: retrieve-label-optimise-reindex rounds (Figure 5).")
    query_rounds: int = option(1, "Query side rounds (also at test time).")
    normalize: bool | None = option(None, "L2-normalise refined vectors (the paper does not).",
                                    default_help="yes for AOpt (preset paper: no), no for linear")
    test_time_queries: bool = option(True, "aopt-query/hybrid: refine unseen queries at search time with "
                                           "label-free topk feedback.")
    # protocol
    oracle: bool = option(False, "Allow feedback labels of the evaluation queries (the paper's protocol). This "
                                 "LEAKS the test labels into the index; results are labelled 'oracle'.")
    holdout: Path | None = option(None, "The evaluation queries (BEIR qrels/queries or a QA file): any of them "
                                        "among the feedback queries is dropped (unless --oracle).")
    limit: int | None = option(None, "Only the first N feedback queries.", default_help="all")
    # grid (`pretriever refine grid`)
    betas: list[float] = option(default_factory=_grid, help="grid: the beta values swept.")
    gammas: list[float] = option(default_factory=lambda: [-g if g else 0.0 for g in _grid()],
                                 help="grid: the gamma values swept.")
    validation: float = option(0.2, "grid: share of the feedback queries held out to score every point (honest "
                                    "protocol; not with --oracle).")
    seed: int = seed_option("the validation split (grid)")
    select_metric: str | None = option(None, "grid: the metric that picks the best point.",
                                       default_help="nDCG@10 (qrels), Acc@20 (answers)")
    # output and resources
    label_texts: bool = option(True, "Passage-centric labels carry title and text (from the corpus store).")
    device: str | None = device_option("queries are encoded, and AOpt runs when given (else on cpu)")
    threads: int | None = option(None, "torch threads for AOpt (1 is often fastest on a CPU shared with other "
                                       "jobs).", default_help="torch's")
    batch_size: int = batch_size_option(64, "Queries", "encoding batch")
    overwrite: bool = overwrite_option("an index already in --out")

    def __post_init__(self) -> None:
        self.index, self.out = Path(self.index), Path(self.out)
        for name in ("queries", "qrels", "answers", "holdout"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, Path(value))
        self.feedback = str(self.feedback).lower()
        self.method = str(self.method).lower()
        if self.feedback not in FEEDBACK_KINDS:
            raise ValueError(f"feedback must be one of {', '.join(FEEDBACK_KINDS)}, got {self.feedback!r}")
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.match == "auto":
            self.match = guess_match_mode(self.answers) if self.answers is not None else "string"
        if self.match not in ("string", "regex"):
            raise ValueError(f"match must be auto, string or regex, got {self.match!r}")
        for name in ("k", "k_pos", "rounds", "query_rounds", "patience", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if isinstance(self.fusion, dict):
            self.fusion = HybridOptions(**self.fusion)
        if self.fusion.prf_k:
            raise ValueError("fusion.prf_k is search-time PRF (`pretriever evaluate --hybrid --prf-k`); refine's label "
                             "search does not use it")
        if self.preset not in PRESETS:
            raise ValueError(f"preset must be one of {', '.join(PRESETS)}, got {self.preset!r}")
        for name, value in PRESETS[self.preset].items():
            if getattr(self, name) is None:  # given values win over the preset
                setattr(self, name, value if self.method != "linear" or name != "normalize" else False)
        if self.max_epochs < 0 or self.learning_rate < 0 or self.min_delta < 0:
            raise ValueError("max_epochs, learning_rate and min_delta must not be negative")
        if self.k_pos >= self.k and (self.feedback == "topk" or self.method in QUERY_METHODS):
            raise ValueError(f"k_pos ({self.k_pos}) must be below k ({self.k}): the rest of the top k are the "
                             "negatives")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be at least 1, got {self.limit}")
        if not 0 <= self.validation < 1:
            raise ValueError(f"validation must be a share in [0, 1), got {self.validation}")
        self.betas = [float(b) for b in self.betas]
        self.gammas = [float(g) for g in self.gammas]

    @property
    def rewrites_passages(self) -> bool:
        return self.method in PASSAGE_METHODS

    @property
    def refines_queries(self) -> bool:
        return self.method in QUERY_METHODS

    def aopt_params(self) -> dict[str, Any]:
        """The AOpt settings recorded in index.json (and used at test time; ``lr`` as index folders have always
        spelt it, and as :func:`~pretriever.refine.ops.aopt` takes it)."""
        return {"lr": self.learning_rate, "max_epochs": self.max_epochs, "patience": self.patience,
                "min_delta": self.min_delta, "restore_best": self.restore_best}

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
