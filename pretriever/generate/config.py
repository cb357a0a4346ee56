"""Settings of ``pretriever generate`` (also the ``[generate]`` table of a TOML config).

Defaults follow query-as-context pre-training (Wu et al., 2023, section 3.1, after
Nogueira and Lin's docTTTTTquery): nucleus sampling with top-k 25 and top-p 0.95, several
candidate queries per passage.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pretriever.config import (batch_size_option, device_option, option, overwrite_option,
                               refuse_resume_with_overwrite, resume_option, seed_option)
from pretriever.training import PRECISION_HELP, check_precision
from pretriever.data.passages import Shard, parse_shard

KEYS = ("auto", "passage", "doc")


@dataclass
class GenerateConfig:
    """Settings of ``pretriever generate`` (doc2query candidate queries per passage, for query-as-context).

    Each field's help lives in its metadata (:func:`pretriever.config.option`), which ``--help`` and the TOML config
    read.
    """

    corpus: Path = option(help="A corpus store (`pretriever corpus build`) whose passages get queries.")
    out: Path = option(help="QUERIES_DIR: generated_queries.parquet (passage_id, candidate, text) and manifest.json.")
    model: str | None = option(None, "A Hugging Face seq2seq model (local folder or cached name), e.g. "
                                     "doc2query/all-with-prefix-t5-base-v1. Required unless --from is given.")
    per_passage: int = option(5, "Candidate queries per passage (C; the paper's Table 3 finds 5 best).")
    prefix: str | None = option(None, "Text put before every passage, e.g. 'text2query: ' for the doc2query "
                                      "*-with-prefix-* models; '' for none.",
                                default_help="the model's: 'text2query: ' when its name says with-prefix, what its "
                                             "config names, else none (with a warning for an unknown model)")
    top_k: int = option(25, "Nucleus sampling: keep the k most likely tokens (paper: 25).")
    top_p: float = option(0.95, "Nucleus sampling: keep the smallest set of tokens with this total probability "
                                "(paper: 0.95).")
    max_input_length: int = option(256, "Passage tokens given to the model (longer passages are cut).")
    max_output_length: int = option(64, "Tokens per generated query.")
    batch_size: int = batch_size_option(16, "Passages", "generate() call", " (each gives --per-passage sequences)")
    seed: int = seed_option("every passage's own generator, which also takes the passage id and the candidate, so "
                             "the queries do not depend on batching, sharding or resuming")
    prepend_title: bool = option(False, "Give the model 'title text' instead of the passage text alone.")
    shard: Shard | str | None = option(None, "Generate only shard i of n (e.g. 0/4) of the checkpoint chunks; run "
                                             "every shard into the same QUERIES_DIR and the last one writes the table.")
    checkpoint_every: int = option(1000, "Passages per checkpoint part (a part is written atomically and skipped "
                                         "on --resume).")
    device: str | None = device_option("the query generator runs")
    precision: str = option("auto", PRECISION_HELP)
    limit: int | None = option(None, "Only the first N passages of the store (for trials).")
    from_file: Path | None = option(None, "Import queries generated elsewhere instead: a TSV (id<TAB>query"
                                          "[<TAB>query...]) or JSONL ({id, queries|predicted_queries|query|text}).")
    skip_bad_lines: bool = option(False, "With --from: leave out lines that cannot be read (no tab, bad JSON, "
                                         "no id or queries), counted as bad_lines, instead of stopping.")
    key: str = option("auto", "What the ids of --from name: passage | doc (a doc's queries go to its first "
                              "passage) | auto (whichever matches more ids).")
    resume: bool = resume_option("an interrupted run in QUERIES_DIR (parts already written are kept)")
    overwrite: bool = overwrite_option("what QUERIES_DIR holds")

    def __post_init__(self) -> None:
        self.corpus, self.out = Path(self.corpus), Path(self.out)
        if self.from_file is not None:
            self.from_file = Path(self.from_file)
        self.shard = parse_shard(self.shard)
        self.key = str(self.key).lower()
        if self.key not in KEYS:
            raise ValueError(f"key must be one of {', '.join(KEYS)}, got {self.key!r}")
        if self.model is None and self.from_file is None:
            raise ValueError("give --model (a seq2seq model to generate with) or --from FILE (queries to import)")
        for name in ("per_passage", "top_k", "max_input_length", "max_output_length", "batch_size",
                     "checkpoint_every"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"limit must be at least 1, got {self.limit}")
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        self.precision = check_precision(self.precision)
        refuse_resume_with_overwrite(self.resume, self.overwrite, "QUERIES_DIR")

    def to_json(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, (Path, Shard)) else v) for k, v in asdict(self).items()}

    def run_settings(self) -> dict[str, Any]:
        """What a resumed run or another shard must share with the first (so its parts fit together)."""
        data = self.to_json()
        return {k: data[k] for k in ("corpus", "model", "per_passage", "prefix", "top_k", "top_p",
                                     "max_input_length", "max_output_length", "seed", "prepend_title",
                                     "checkpoint_every", "limit")}
