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
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pretriever.config import (batch_size_option, dataloader_workers_option, option, overwrite_option,
                               refuse_resume_with_overwrite, resume_option, seed_option)
from pretriever.training import PRECISION_HELP, check_precision

SIMILARITIES = ("cos", "dot")
POOLINGS = ("cls", "mean", "max")
HARD_NEGATIVES = ("bm25", "file", "none")

# Settings that decide what a run computes; a --resume must not change them.
RUN_KEYS = ("pairs", "model", "beir", "split", "dpr", "corpus", "hard_negatives", "bm25_depth", "bm25_negatives",
            "negatives_from",
            "negative_depth", "negatives_per_query", "prepend_title",
            "limit", "mix", "use_negatives", "pooling", "normalize", "shared_encoder", "similarity", "scale",
            "max_query_length", "max_passage_length", "epochs", "max_steps", "batch_size", "mini_batch_size",
            "learning_rate", "warmup_ratio", "weight_decay", "seed", "no_duplicates", "precision", "heldout_pairs",
            "gather_across_devices", "save_steps")


def parse_mix(value: str | dict[str, Any] | None) -> dict[str, float] | None:
    """``"dl:0.5,cm:0.5"`` (or a TOML table ``{dl = 0.5, cm = 0.5}``) -> weights summing to 1.

    Args:
        value: the ``--mix`` text, a TOML table, or None.

    Returns:
        Method -> weight (normalised), or None for no mix.

    Raises:
        ValueError: a malformed or non-positive weight.
    """
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
    """Settings of ``pretriever train`` (stage 3: a bi-encoder on mined pairs, or fine-tuned on BEIR or DPR data).

    Each field's help lives in its metadata (:func:`pretriever.config.option`), which ``--help`` and the TOML config
    read.
    """

    out: Path = option(help="MODEL_DIR: the trained sentence-transformers model, plus train.json (config, pairs per "
                            "method, loss curve, time, pairs/s), loss.png and, while training, checkpoints/.")
    # --- training data: exactly one of pairs / beir / dpr ---
    pairs: Path | None = option(None, "Mined pairs: a folder from `pretriever mine` (or any folder of Parquet files "
                                      "with query and positive_text, optionally method and negative_text).")
    beir: Path | None = option(None, "Fine-tune on a BEIR dataset folder (queries.jsonl, qrels/SPLIT.tsv, "
                                     "corpus.jsonl): one example per relevant (query, passage), BM25 hard negatives "
                                     "mined here.")
    split: str = option("train", "BEIR qrels split to train on.")
    dpr: Path | None = option(None, "Fine-tune on a DPR training JSON file (question, answers, positive_ctxs, "
                                    "hard_negative_ctxs), e.g. from `pretriever pairs export --format dpr`.")
    corpus: Path | None = option(None, "A corpus store with the passages for BEIR/DPR data; its BM25 index gives the "
                                       "hard negatives.",
                                 default_help="BEIR's corpus.jsonl, or the contexts of the DPR file")
    hard_negatives: str = option("bm25", "BEIR/DPR data: bm25 (the best BM25 passage that is not a positive and, for "
                                         "DPR, holds no answer: DPR's recipe), file (DPR's own hard_negative_ctxs) or "
                                         "none (in-batch negatives only).")
    bm25_depth: int = option(10, "BM25 hits looked at for each query's hard negatives (never a positive).")
    bm25_negatives: int = option(1, "BM25 hard negatives per query: 1 is the best hit that is not a positive "
                                    "(DPR); more are drawn with the seed from the top --bm25-depth hits that are not "
                                    "positives, each its own column (query-as-context stage 1: 15 of the top 200).")
    negatives_from: Path | None = option(None, "BEIR data: mine the hard negatives with this index (any folder "
                                               "`pretriever search` opens; in two-stage fine-tuning the index of "
                                               "retriever 1) instead of BM25. Each query is searched to "
                                               "--negative-depth and --negatives-per-query of the hits that are not "
                                               "judged relevant (qrels score > 0) are drawn with the seed: "
                                               "retriever 2 of the query-as-context paper (Figure 3).")
    negative_depth: int = option(200, "Negatives mined with an index (--negatives-from; retriever 2 of "
                                      "`finetune --two-stage`): hits searched per query (paper: 200).")
    negatives_per_query: int = option(15, "Negatives mined with an index: how many per query, each its own column "
                                          "beside the in-batch negatives (paper: 15). The cost of a step grows "
                                          "with it: a batch encodes (2 + this) x batch-size texts.")
    prepend_title: bool = option(True, "BEIR/DPR data: passages as \"title text\", as the index stage encodes them.")
    limit: int | None = option(None, "Few-shot: train on this many queries (labelled data) or pairs (mined), a "
                                     "sample drawn with the seed. HLP's few-shot runs use m = 16, 128 (256 in its "
                                     "text) and 1024.")
    mix: dict[str, float] | str | None = option(
        None, "Mined pairs: share of each method in the training set, e.g. dl:0.5,cm:0.5 (HLP: 10M DL + 10M CM). "
              "The budget is the limit, or the most pairs the methods allow with these shares; each method's pairs "
              "are a seeded sample.")
    use_negatives: bool = option(True, "Use each pair's extra negative passage (HLP: one random negative) on top of "
                                       "the in-batch negatives.")
    # --- model ---
    model: str | None = option(None, "Model to start from: a local sentence-transformers or Hugging Face folder, or a "
                                     "name in the local Hugging Face cache (no downloads). HLP starts from "
                                     "bert-base-uncased.", default_help="the packaged all-MiniLM-L6-v2")
    pooling: str | None = option(None, "cls (HLP, DPR) | mean | max.",
                                 default_help="keep the model's own (the packaged model: mean, then normalize); a "
                                              "plain Hugging Face checkpoint gets cls")
    normalize: bool | None = option(None, "L2-normalise embeddings.",
                                    default_help="keep the model's own (packaged model: yes; a plain checkpoint: no, "
                                                 "as in HLP)")
    shared_encoder: bool = option(True, "One encoder for queries and passages (HLP pre-training) or two, DPR-style "
                                        "(HLP fine-tuning); two are saved as a sentence-transformers Router: use "
                                        "encode_query / encode_document.")
    similarity: str = option("cos", "cos (sentence-transformers' default) or dot (HLP: inner product of the [CLS] "
                                    "vectors).")
    scale: float = option(20.0, "Logits = scale x similarity. HLP: 1 with dot; sentence-transformers: 20 with cos.",
                          default_help="20")
    max_query_length: int = option(150, "Word pieces per query. HLP: 150 pre-training, 256 fine-tuning.")
    max_passage_length: int = option(256, "Word pieces per passage. HLP: 256.")
    # --- optimisation ---
    epochs: float = option(1.0, "Passes over the data. HLP: 5 pre-training, 40 fine-tuning.", default_help="1")
    max_steps: int | None = option(None, "Stop after this many optimizer steps (overrides the epochs).")
    batch_size: int = batch_size_option(32, "Pairs", "step per device", "; every other passage in the batch is a "
                                         "negative. HLP: 400 pre-training, 256 fine-tuning")
    mini_batch_size: int | None = option(None, "Use GradCache (CachedMultipleNegativesRankingLoss): encode this many "
                                               "texts at a time, so a batch of 400 fits in the memory of this many. "
                                               "Same loss, about 20-30% slower.", default_help="off")
    learning_rate: float = option(2e-5, "Peak learning rate (AdamW). HLP: 2e-5.", default_help="2e-5")
    warmup_ratio: float = option(0.1, "Share of the steps with a linear warm-up; then linear decay to 0. HLP: 0.1.")
    weight_decay: float = option(0.0, "AdamW weight decay.", default_help="0")
    seed: int = seed_option("the data sample (limit, mix), the batch order, dropout and the initialisation of new "
                             "layers")
    no_duplicates: bool = option(True, "Never put the same text twice in a batch (a duplicate would be a false "
                                       "in-batch negative).")
    precision: str = option("auto", PRECISION_HELP)
    gather_across_devices: bool = option(False, "Multi-GPU: every device's passages are negatives for every query "
                                                "(a global batch of batch size x GPUs).")
    dataloader_workers: int = dataloader_workers_option("reads pairs and tokenises them")
    # --- checkpoints and logging ---
    save_steps: int = option(1000, "Checkpoint every N steps into MODEL_DIR/checkpoints.")
    save_total_limit: int | None = option(2, "Keep only the newest N checkpoints.")
    logging_steps: int | None = option(None, "Record the loss every N steps.",
                                       default_help="about 50 points over the run")
    resume: bool = resume_option("an interrupted run from the newest checkpoint in MODEL_DIR (same options as the "
                                  "interrupted run)")
    overwrite: bool = overwrite_option("a model already in MODEL_DIR")
    keep_checkpoints: bool = option(False, "Keep MODEL_DIR/checkpoints after a successful run.")
    heldout_pairs: int = option(0, "Pairs kept out of training (at most a fifth of them) to check the model a person "
                                   "can read: their loss, and how often a query ranks its own positive first among "
                                   "the held-out positives, before and after training (0: off).")

    def __post_init__(self) -> None:
        self.out = Path(self.out)
        for name in ("pairs", "beir", "dpr", "corpus", "negatives_from"):
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
        self.precision = check_precision(self.precision)
        if self.pooling is not None:
            self.pooling = str(self.pooling).lower()
        checks = [("similarity", self.similarity, SIMILARITIES), ("hard_negatives", self.hard_negatives, HARD_NEGATIVES)]
        if self.pooling is not None:
            checks.append(("pooling", self.pooling, POOLINGS))
        for name, value, allowed in checks:
            if value not in allowed:
                raise ValueError(f"{name} must be one of {', '.join(allowed)}, got {value!r}")
        if self.hard_negatives == "file" and self.dpr is None:
            raise ValueError("hard_negatives = 'file' reads DPR's hard_negative_ctxs; it needs --dpr")
        if self.negatives_from is not None:
            if self.beir is None:
                raise ValueError("--negatives-from mines negatives against the judgments of a BEIR dataset; "
                                 "give --beir DIR")
            if not self.use_negatives or self.hard_negatives == "none":
                raise ValueError("--negatives-from gives hard negatives; it cannot go with --no-negatives or "
                                 "--hard-negatives none")
            if self.negatives_per_query > self.negative_depth:
                raise ValueError(f"--negatives-per-query ({self.negatives_per_query}) cannot exceed "
                                 f"--negative-depth ({self.negative_depth})")
        if self.bm25_negatives > 1 and self.dpr is not None:
            raise ValueError("--bm25-negatives above 1 draws negatives for judged BEIR queries; DPR data gets DPR's "
                             "one BM25 negative that holds no answer")
        if self.hard_negatives == "bm25" and self.bm25_negatives > self.bm25_depth:
            raise ValueError(f"--bm25-negatives ({self.bm25_negatives}) cannot exceed --bm25-depth "
                             f"({self.bm25_depth})")
        if self.heldout_pairs < 0:
            raise ValueError(f"heldout_pairs must be 0 (off) or more, got {self.heldout_pairs}")
        for name in ("batch_size", "max_query_length", "max_passage_length", "save_steps", "bm25_depth",
                     "bm25_negatives", "negative_depth", "negatives_per_query"):
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
        refuse_resume_with_overwrite(self.resume, self.overwrite, "MODEL_DIR")

    @property
    def source(self) -> str:
        return "pairs" if self.pairs is not None else "beir" if self.beir is not None else "dpr"

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}

    def run_settings(self) -> dict[str, Any]:
        """The settings a resumed run must share with the interrupted one."""
        data = self.to_json()
        unused = () if self.negatives_from is not None else ("negative_depth", "negatives_per_query")
        return {k: data[k] for k in RUN_KEYS if k not in unused}



@dataclass
class FinetuneConfig(TrainConfig):
    """Settings of ``pretriever finetune`` (the ``[finetune]`` table): those of ``train`` for both stages, plus
    the stage plan. Both retrievers start from ``model`` (the paper initialises both with the pre-trained
    model); retriever 2 differs only in its negatives."""

    bm25_negatives: int = option(15, "Retriever 1: BM25 negatives per query, drawn with the seed from BM25's top "
                                     "--bm25-depth hits that are not judged positives (the paper and caskcsg's "
                                     "eval_msmarco.sh: 15, as retriever 2's --negatives-per-query).")
    bm25_depth: int = option(200, "Retriever 1: BM25 hits its negatives are drawn from (as retriever 2's "
                                  "--negative-depth).")
    out: Path = option(help="FINETUNE_DIR: stage1/ (retriever 1), and with --two-stage stage1-index/ (the corpus "
                            "indexed with retriever 1), stage2/ (retriever 2), store/ (the corpus store, when no "
                            "--corpus is given) and finetune.json (where each stage's output is).")
    overwrite: bool = overwrite_option("FINETUNE_DIR: every stage runs again (the folder is cleared first). Without "
                                       "it, the finished stages are kept and an interrupted one continues")
    two_stage: bool = option(False, "Train retriever 2 as well: index the corpus with retriever 1, mine "
                                    "--negatives-per-query negatives per query from its top --negative-depth, "
                                    "train again from --model with them (query-as-context, Figure 3).")
    index_batch_size: int = option(64, "Passages per forward pass when the corpus is indexed with retriever 1.")

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.beir is None:
            raise ValueError("finetune trains on judged queries: give --beir DIR (queries.jsonl, qrels/SPLIT.tsv, "
                             "corpus.jsonl)")
        if self.negatives_from is not None:
            raise ValueError("finetune mines retriever 2's negatives itself; leave negatives_from out")
        if self.index_batch_size < 1:
            raise ValueError(f"index_batch_size must be at least 1, got {self.index_batch_size}")
