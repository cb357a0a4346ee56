"""Settings of ``pretriever refine`` (also the ``[refine]`` table of a TOML config)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pretriever.refine.labels import FEEDBACK_KINDS

METHODS = ("linear", "aopt-passage", "aopt-query", "hybrid")
PASSAGE_METHODS = ("linear", "aopt-passage", "hybrid")  # methods that rewrite passage vectors
QUERY_METHODS = ("aopt-query", "hybrid")  # methods that refine query vectors


def _grid(step: float = 0.1, top: float = 0.9) -> list[float]:
    return [round(i * step, 10) for i in range(int(round(top / step)) + 1)]


@dataclass
class RefineConfig:
    index: Path  # the dense index whose vectors are refined (`pretriever index build`)
    out: Path  # the refined index folder (a normal index folder) or, for `grid`, the grid folder
    queries: Path | None = None  # BEIR queries.jsonl (with qrels or topk) or a QA file (topk)
    feedback: str = "qrels"  # answers | qrels | topk: how retrieved passages are labelled
    qrels: Path | None = None  # judgments of the feedback queries (feedback qrels)
    answers: Path | None = None  # questions + answers (feedback answers): NQ-open JSONL, DPR TSV/JSON
    method: str = "aopt-passage"  # linear | aopt-passage | aopt-query | hybrid
    k: int = 100  # passages retrieved per feedback query (the pseudo-label depth)
    k_pos: int = 5  # topk feedback (training and test-time query refinement): the top k_pos are relevant
    match: str = "string"  # answer matching: string (DPR) or regex (CuratedTREC)
    # linear re-weighting, eq. 9 (alpha fixed at 1; the paper's best NQ point is beta 0.6, gamma -0.1)
    beta: float = 0.6
    gamma: float = -0.1
    # AOpt, eqs. 10-14
    lr: float = 0.1
    max_epochs: int = 100
    patience: int = 5  # stop a vector after this many epochs in a row without loss improvement
    min_delta: float = 0.0  # an epoch improves when its loss is below the best so far minus this
    restore_best: bool = True  # end each vector at its lowest-loss epoch (False: at its last one)
    rounds: int = 1  # passage side: retrieve -> label -> optimise -> re-index rounds (Figure 5)
    query_rounds: int = 1  # query side: rounds of the same loop (also at test time)
    normalize: bool = False  # L2-normalise refined vectors (the paper does not)
    # test-time query refinement (aopt-query, hybrid): label-free topk feedback on each incoming query
    test_time_queries: bool = True
    # protocol
    oracle: bool = False  # allow feedback labels of the evaluation queries (the paper's setting; leaks)
    holdout: Path | None = None  # qrels/QA/queries file of the evaluation queries: never used as feedback
    limit: int | None = None  # only the first N feedback queries
    # grid (`pretriever refine grid`)
    betas: list[float] = field(default_factory=_grid)
    gammas: list[float] = field(default_factory=lambda: [-g if g else 0.0 for g in _grid()])
    validation: float = 0.2  # share of the feedback queries held out to score the grid (not with oracle)
    seed: int = 0
    select_metric: str | None = None  # grid: the metric that picks the best point (nDCG@10 / Acc@20)
    # output and resources
    label_texts: bool = True  # passage-centric labels carry title and text (from the corpus store)
    device: str | None = None  # torch/encoder device: cpu, cuda, ...
    threads: int | None = None  # torch threads for AOpt (None: torch's default; 1 is fastest on a busy CPU)
    batch_size: int = 64  # query encoding batch
    overwrite: bool = False

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
        if self.match not in ("string", "regex"):
            raise ValueError(f"match must be string or regex, got {self.match!r}")
        for name in ("k", "k_pos", "rounds", "query_rounds", "patience", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.max_epochs < 0 or self.lr < 0 or self.min_delta < 0:
            raise ValueError("max_epochs, lr and min_delta must not be negative")
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
        """The AOpt settings recorded in index.json (and used at test time)."""
        return {"lr": self.lr, "max_epochs": self.max_epochs, "patience": self.patience,
                "min_delta": self.min_delta, "restore_best": self.restore_best}

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
