"""Settings of ``pretriever train`` (also the ``[train]`` table of a TOML config).

Defaults and what the papers used (HLP, Zhou et al. 2022, section 3.3 and Appendix A):

| setting | default here | HLP pre-training | HLP fine-tuning |
| --- | --- | --- | --- |
| loss | in-batch negatives + the pair's negative, NLL of the positive | same | same |
| similarity, scale | cosine, 20 (sentence-transformers) | inner product, 1 | inner product, 1 |
| pooling | the model's own (packaged model: mean + normalize); CLS for a plain checkpoint | CLS | CLS |
| shared encoder | yes | yes | no (separate query and passage encoders) |
| max query / passage length | 150 / 256 word pieces | 150 / 256 | 256 / 256 |
| learning rate, warm-up, decay | 2e-5, 10%, linear | same | same |
| epochs | 1 | 5 | 40 |
| batch size | 32 | 400 | 256 |

The similarity default differs from the paper on purpose: the packaged all-MiniLM-L6-v2
normalises its output, so a raw inner product with scale 1 would give logits in [-1, 1]
and almost no training signal. To reproduce the paper from a BERT checkpoint use
``pooling = "cls"``, ``similarity = "dot"``, ``scale = 1.0``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

SIMILARITIES = ("cos", "dot")
POOLINGS = ("cls", "mean", "max")
HARD_NEGATIVES = ("bm25", "file", "none")
PRECISIONS = ("fp32", "fp16", "bf16")

# Settings that decide what a run computes; a --resume must not change them.
RUN_KEYS = ("pairs", "model", "beir", "split", "dpr", "corpus", "hard_negatives", "bm25_depth", "prepend_title",
            "limit", "mix", "use_negatives", "pooling", "normalize", "shared_encoder", "similarity", "scale",
            "max_query_length", "max_passage_length", "epochs", "max_steps", "batch_size", "mini_batch_size",
            "learning_rate", "warmup_ratio", "weight_decay", "seed", "no_duplicates", "precision",
            "gather_across_devices", "save_steps")


def parse_mix(value: str | dict[str, Any] | None) -> dict[str, float] | None:
    """``"dl:0.5,cm:0.5"`` (or a TOML table ``{dl = 0.5, cm = 0.5}``) -> weights summing to 1."""
    if value is None or value == "" or value == {}:
        return None
    if isinstance(value, str):
        weights: dict[str, Any] = {}
        for part in value.split(","):
            if not part.strip():
                continue
            if not re.fullmatch(r"\s*[\w.+-]+\s*:\s*[^:,]+\s*", part):
                raise ValueError(f"--mix must look like dl:0.5,cm:0.5 (method:weight, comma-separated), "
                                 f"got {value!r}")
            method, weight = part.split(":")
            method = method.strip().lower()
            if method in weights:
                raise ValueError(f"--mix names method {method!r} twice")
            weights[method] = weight.strip()
    elif isinstance(value, dict):
        weights = {str(k).strip().lower(): v for k, v in value.items()}
    else:
        raise ValueError(f"mix must be a string like 'dl:0.5,cm:0.5' or a table, got {value!r}")
    out: dict[str, float] = {}
    for method, weight in weights.items():
        try:
            w = float(weight)
        except (TypeError, ValueError):
            raise ValueError(f"--mix weight of {method!r} is not a number: {weight!r}") from None
        if not w > 0:
            raise ValueError(f"--mix weight of {method!r} must be positive, got {weight!r} "
                             "(leave a method out to exclude it)")
        out[method] = w
    total = sum(out.values())
    return {m: w / total for m, w in out.items()}


@dataclass
class TrainConfig:
    out: Path  # MODEL_DIR: the trained sentence-transformers model, train.json, loss.png, checkpoints/
    # --- training data: exactly one of pairs / beir / dpr ---
    pairs: Path | None = None  # a pairs folder from `pretriever mine` (or any folder of Parquet pair files)
    beir: Path | None = None  # a BEIR dataset folder (queries.jsonl, qrels/<split>.tsv, corpus.jsonl)
    split: str = "train"  # BEIR qrels split
    dpr: Path | None = None  # a DPR training JSON file (question, answers, positive_ctxs, hard_negative_ctxs)
    corpus: Path | None = None  # a corpus store: passages for BEIR/DPR and the BM25 index for hard negatives
    hard_negatives: str = "bm25"  # labelled data: bm25 (mined here) | file (DPR's hard_negative_ctxs) | none
    bm25_depth: int = 10  # BM25 hits looked at for a hard negative (the best one that is not a positive)
    prepend_title: bool = True  # labelled data: passages as "title text" (as the index stage encodes them)
    limit: int | None = None  # few-shot: keep this many queries (labelled) or pairs (mined), seeded sample
    mix: dict[str, float] | str | None = None  # mined pairs: share of each method, e.g. "dl:0.5,cm:0.5"
    use_negatives: bool = True  # use the pair's extra negative passage when the data has one
    # --- model ---
    model: str | None = None  # local path or name; None = the packaged all-MiniLM-L6-v2
    pooling: str | None = None  # cls | mean | max; None keeps the model's (CLS for a plain checkpoint)
    normalize: bool | None = None  # L2-normalise embeddings; None keeps the model's (off for a plain checkpoint)
    shared_encoder: bool = True  # one encoder for queries and passages; False: two (DPR-style, a Router)
    similarity: str = "cos"  # cos | dot (the paper's inner product)
    scale: float = 20.0  # logits = scale * similarity; paper: dot with scale 1
    max_query_length: int = 150  # word pieces
    max_passage_length: int = 256
    # --- optimisation ---
    epochs: float = 1.0
    max_steps: int | None = None  # stop after this many optimizer steps (overrides epochs)
    batch_size: int = 32  # pairs per step (per device); in-batch negatives come from the same batch
    mini_batch_size: int | None = None  # set: GradCache (CachedMultipleNegativesRankingLoss), this many per forward
    learning_rate: float = 2e-5
    warmup_ratio: float = 0.1  # share of the steps with a linear warm-up, then linear decay to 0
    weight_decay: float = 0.0
    seed: int = 0  # data sampling (--limit, --mix), batch order, dropout, initialisation of new layers
    no_duplicates: bool = True  # no repeated text inside a batch (a repeat would be a false in-batch negative)
    precision: str = "fp32"  # fp32 | fp16 | bf16 (mixed precision on GPUs)
    gather_across_devices: bool = False  # multi-GPU: in-batch negatives from every device
    dataloader_workers: int = 0
    # --- checkpoints and logging ---
    save_steps: int = 1000  # checkpoint every N steps into MODEL_DIR/checkpoints
    save_total_limit: int | None = 2  # keep only the newest N checkpoints
    logging_steps: int | None = None  # loss logged every N steps; None: about 50 points over the run
    resume: bool = False  # continue from the last checkpoint in MODEL_DIR/checkpoints
    overwrite: bool = False  # replace a model already in MODEL_DIR
    keep_checkpoints: bool = False  # keep MODEL_DIR/checkpoints after a successful run

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        for name in ("pairs", "beir", "dpr", "corpus"):
            value = getattr(self, name)
            if value is not None:
                setattr(self, name, Path(value))
        if self.model is not None:
            self.model = str(self.model)
        sources = [name for name in ("pairs", "beir", "dpr") if getattr(self, name) is not None]
        if len(sources) != 1:
            raise ValueError("give exactly one source of training data: PAIRS_DIR (mined pairs), --beir DIR or "
                             f"--dpr FILE (got {', '.join(sources) or 'none'})")
        self.mix = parse_mix(self.mix)
        if self.mix is not None and self.pairs is None:
            raise ValueError("--mix selects mined methods; it only applies to PAIRS_DIR")
        self.similarity = {"cosine": "cos", "dot_product": "dot", "ip": "dot"}.get(str(self.similarity).lower(),
                                                                              str(self.similarity).lower())
        self.hard_negatives = str(self.hard_negatives).lower()
        self.precision = str(self.precision).lower()
        if self.pooling is not None:
            self.pooling = str(self.pooling).lower()
        checks = [("similarity", self.similarity, SIMILARITIES), ("hard_negatives", self.hard_negatives, HARD_NEGATIVES),
                  ("precision", self.precision, PRECISIONS)]
        if self.pooling is not None:
            checks.append(("pooling", self.pooling, POOLINGS))
        for name, value, allowed in checks:
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
        if self.hard_negatives == "file" and self.dpr is None:
            raise ValueError("hard_negatives = 'file' reads DPR's hard_negative_ctxs; it needs --dpr")
        for name in ("batch_size", "max_query_length", "max_passage_length", "save_steps", "bm25_depth"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("limit", "max_steps", "mini_batch_size", "logging_steps", "save_total_limit"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"{name} must be at least 1, got {value}")
        if not self.scale > 0:
            raise ValueError(f"scale must be positive, got {self.scale}")
        if not self.epochs > 0:
            raise ValueError(f"epochs must be positive, got {self.epochs}")
        if not 0 <= self.warmup_ratio < 1:
            raise ValueError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be positive, got {self.learning_rate}")
        if self.resume and self.overwrite:
            raise ValueError("--resume continues the run in MODEL_DIR and --overwrite replaces it: pick one")

    @property
    def source(self) -> str:
        return "pairs" if self.pairs is not None else "beir" if self.beir is not None else "dpr"

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}

    def run_settings(self) -> dict[str, Any]:
        """The settings a resumed run must share with the interrupted one."""
        data = self.to_json()
        return {k: data[k] for k in RUN_KEYS}


FIELD_NAMES = tuple(f.name for f in fields(TrainConfig))
