"""Settings of the reader stage: training (``[reader]``), preparing reader data (``[reader.prepare]``)
and reading (``[answer]``). Defaults and help live here once; the CLI shows them with ``help_for``."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

from pretriever.config import (batch_size_option, dataloader_workers_option, device_option, option, overwrite_option,
                               resume_option, seed_option)
from pretriever.index import SYSTEM_MODES
from pretriever.metrics import LENIENT_HELP
from pretriever.training import PRECISION_HELP, check_precision

RANKINGS = ("passage", "span")
# Reader training settings of the papers. DPR (Karpukhin et al., 2020; the figures issue 22 gives): 24
# passages per question, 350 tokens, batch 16, lr 2e-5. C-MORE (Yue et al., ACL 2022, section 3.1): reader
# pre-training for 3 epochs, batch 16, lr 2e-5, otherwise DPR's reader (passages, length).
PRESETS: dict[str, dict[str, object]] = {
    "dpr": {"passages": 24, "max_length": 350, "batch_size": 16, "learning_rate": 2e-5},
    "cmore": {"passages": 24, "max_length": 350, "batch_size": 16, "learning_rate": 2e-5, "epochs": 3.0},
}


@dataclass
class ReadOptions:
    """How a trained reader picks answers from the passages it is given."""

    rank: str = option("passage", "passage: the best span of the passage with the highest selection score "
                                  "(C-MORE and DPR); span: the highest span score over all passages.")
    max_answer_length: int = option(10, "Longest answer, in tokens (DPR: 10).")
    n_best: int = option(5, "Spans kept per passage and answers listed per question.")
    max_length: int = option(256, "Tokens per `question [SEP] title [SEP] passage` input; the passage is cut to "
                                  "fit (DPR: 350).")
    batch_size: int = batch_size_option(32, "Passages")
    device: str | None = device_option("the reader runs")

    def __post_init__(self) -> None:
        if self.rank not in RANKINGS:
            raise ValueError(f"rank must be one of {', '.join(RANKINGS)}, got {self.rank!r}")
        for name in ("max_answer_length", "n_best", "max_length", "batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


@dataclass
class ReaderConfig:
    """Training a reader (``pretriever reader train``; the ``[reader]`` table of a TOML file).

    The defaults are small enough for a CPU (4 passages of 256 tokens, batch 4); ``preset`` sets the
    papers' settings (:data:`PRESETS`) on every field left at its default.
    """

    data: Path = option(help="Training data: a qac pairs folder (`pretriever mine --method qac`), SQuAD v1.1 JSON "
                             "(qac `pairs export --format squad`) or DPR reader JSON (`pretriever reader prepare`, "
                             "or DPR's positive_ctxs/hard_negative_ctxs files).")
    out: Path = option(help="READER_DIR: a transformers question-answering folder plus reader.json.")
    model: str | None = option(None, "Encoder to start from: a Hugging Face name or folder, or a reader folder "
                                     "(to fine-tune a pre-trained reader).", default_help="all-MiniLM-L6-v2")
    dev: Path | None = option(None, "Dev data in the same formats; without it --dev-share of the training "
                                    "documents are held out.")
    dev_share: float = option(0.1, "Share of the training documents (titles) held out as the dev split when "
                                   "--dev is not given; 0 for none.")
    passages: int = option(4, "Passages per training question: 1 positive and passages-1 negatives (DPR: 24).")
    max_length: int = option(256, "Tokens per input; a passage is cut to fit and an answer cut off is dropped.")
    epochs: float = option(2.0, "Passes over the training questions.")
    max_steps: int | None = option(None, "Stop after this many optimizer steps (overrides --epochs).")
    batch_size: int = batch_size_option(4, "Questions", "device batch", " (each brings --passages passages)")
    gradient_accumulation: int = option(1, "Gradient accumulation steps.", renamed_from=("grad_accum",))
    group_by_length: bool = option(True, "Batch questions whose inputs (question with its positive) are of similar "
                                         "length, as transformers' LengthGroupedSampler does (shuffled, then sorted "
                                         "within mega-batches of up to 50 batches): less padding to compute (SQuAD: "
                                         "30% fewer tokens). --no-group-by-length: plain random batches, as DPR.")
    learning_rate: float = option(2e-5, "Peak learning rate (linear warm-up and decay).", renamed_from=("lr",))
    warmup_ratio: float = option(0.1, "Share of the steps spent warming up.")
    weight_decay: float = option(0.0, "AdamW weight decay.")
    precision: str = option("auto", PRECISION_HELP)
    dataloader_workers: int = dataloader_workers_option("draws each question's passages and tokenises them")
    eval_steps: int = option(100, "Measure dev EM every N steps, save a checkpoint then, keep the best.")
    dev_limit: int = option(500, "Dev questions read at each evaluation.")
    save_total_limit: int = option(2, "Checkpoints kept (the best is always kept).")
    seed: int = seed_option("the negatives, the dev split and the training order", 13)
    lenient_match: bool = option(False, LENIENT_HELP + " Here: the dev EM that picks the best checkpoint.")
    limit: int | None = option(None, "Only the first N training questions.")
    resume: bool = resume_option("the interrupted run in READER_DIR/checkpoints")
    overwrite: bool = overwrite_option("an existing READER_DIR")
    read: ReadOptions = option(default_factory=ReadOptions, help="How answers are picked at dev time.")
    preset: str | None = option(None, "The papers' settings on every option left at its default: dpr (24 passages, "
                                      "length 350, batch 16, lr 2e-5) or cmore (dpr's, 3 epochs: C-MORE's reader "
                                      "pre-training). These want a GPU.",
                                default_help="none: CPU-sized (4 passages, length 256, batch 4)")

    def __post_init__(self) -> None:
        self.data, self.out = Path(self.data), Path(self.out)
        if self.preset is not None:
            if self.preset not in PRESETS:
                raise ValueError(f"preset must be one of {', '.join(PRESETS)}, got {self.preset!r}")
            defaults = {f.name: f.default for f in fields(self)}
            for name, value in PRESETS[self.preset].items():
                if getattr(self, name) == defaults[name]:
                    setattr(self, name, value)
        if self.dev is not None:
            self.dev = Path(self.dev)
        if self.passages < 1:
            raise ValueError(f"passages must be at least 1, got {self.passages}")
        if not 0.0 <= self.dev_share < 1.0:
            raise ValueError(f"dev_share must be in [0, 1), got {self.dev_share}")
        self.precision = check_precision(self.precision)
        for name in ("max_length", "batch_size", "gradient_accumulation", "eval_steps", "dev_limit"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


@dataclass(kw_only=True)
class RetrievalSource:
    """Where the passages for a question come from (shared by ``reader prepare``, ``reader evaluate`` and
    ``answer``)."""

    index: Path = option(help="INDEX_DIR: a dense, refined or BM25 index folder.")
    k: int = option(20, "Passages retrieved per question (DPR reads 100 at test time, trains on the top 100).")
    retrieval: str = option("index", "index (the folder as it is), bm25 (the BM25 beside it) or hybrid "
                                     "(the index fused with its BM25, RRF).")
    tuned: bool = option(True, "Unless BM25 or hybrid retrieval is asked for: retrieve the way `pretriever tune` "
                               "chose for the index (index.json's \"tuned\"); --no-tuned: the index alone.")
    device: str | None = device_option("queries are encoded (and, when reading, the reader runs)")
    corpus: Path | None = option(None, "The corpus store the passage texts come from, when it is not where the "
                                       "index says (moved).", default_help="the store the index names")

    def _check_source(self) -> None:
        self.index = Path(self.index)
        self.corpus = Path(self.corpus) if self.corpus is not None else None
        if self.retrieval not in SYSTEM_MODES:
            raise ValueError(f"retrieval must be one of {', '.join(SYSTEM_MODES)}, got {self.retrieval!r}")
        if self.k < 1:
            raise ValueError(f"k must be at least 1, got {self.k}")


@dataclass(kw_only=True)
class QASetSource(RetrievalSource):
    """A QA file whose questions are retrieved for (``reader prepare`` and ``reader evaluate``)."""

    questions: Path = option(help="QA set: NQ-open/WebQ/CuratedTREC JSONL, DPR qas TSV or DPR JSON.")
    match: str | None = option(None, "string (DPR's token matching) or regex (CuratedTREC).",
                               default_help="regex when the file name contains 'trec'")
    limit: int | None = option(None, "Only the first N questions.")

    def _check_source(self) -> None:
        super()._check_source()
        self.questions = Path(self.questions)


READER_HELP = "READER_DIR from `pretriever reader train`."


@dataclass(kw_only=True)
class PrepareConfig(QASetSource):
    """Retrieving passages for a QA set and labelling them (``pretriever reader prepare``)."""

    out: Path = option(help="DPR reader JSON written here: question, answers, ctxs (id, title, text, score, "
                            "has_answer).")
    batch_size: int = batch_size_option(256, "Questions", "search call")
    keep_source: bool = option(False, "Keep a qac question's own source among its passages: the passage of the "
                                      "statement it was made from (source_passage_id in `pairs export --format "
                                      "dpr`), which holds the question's words and its answer. Left out by "
                                      "default (k passages are still retrieved), and counted.")

    def __post_init__(self) -> None:
        self._check_source()
        self.out = Path(self.out)


@dataclass(kw_only=True)
class ReaderEvaluateConfig(QASetSource):
    """End-to-end QA over an index (``pretriever reader evaluate``; the ``[reader_evaluate]`` table)."""

    reader: Path = option(help=READER_HELP)
    read: ReadOptions = option(default_factory=ReadOptions,
                               help="How the reader picks answers ([reader_evaluate.read] in TOML).")
    out: Path | None = option(None, "Write results.json (metrics and per-question predictions) here.")
    lenient_match: bool = option(False, LENIENT_HELP)

    def __post_init__(self) -> None:
        self._check_source()
        self.reader = Path(self.reader)


@dataclass(kw_only=True)
class AnswerConfig(RetrievalSource):
    """Answering questions over an index (``pretriever answer``; the ``[answer]`` table)."""

    questions: list[str] = option(help="One or more questions.")
    reader: Path = option(help=READER_HELP)
    read: ReadOptions = option(default_factory=ReadOptions, help="How the reader picks answers ([answer.read] in TOML).")
    as_json: bool = option(False, "One JSON object per question on stdout.")

    def __post_init__(self) -> None:
        self._check_source()
        self.reader = Path(self.reader)
