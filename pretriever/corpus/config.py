"""Settings of ``pretriever corpus build`` (also the ``[corpus]`` table of a TOML config)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from pretriever.config import option, overwrite_option, resume_option

ENGINES = ("local", "spark")


@dataclass
class CorpusConfig:
    """Settings of ``pretriever corpus build`` (stage 1: a dump or a corpus file into a passage store).

    Each field's help lives in its metadata (:func:`pretriever.config.option`), which ``--help`` and the TOML
    config read.
    """

    input: Path = option(help="Dump file, BEIR folder or corpus file.")
    out: Path = option(help="Folder for the store (created).")
    format: str = option("auto", "Input format; auto detects it from the content. See `pretriever corpus formats`.")
    words: int | None = option(None, "Passage length in words (DPR: 100). 0 keeps documents whole.",
                               default_help="100 for wikis/JSONL, whole documents for BEIR and DPR passages")
    min_title_chars: int | None = option(None, "Drop documents with shorter titles (HLP: 3).",
                                         default_help="3 for wikis, 0 otherwise")
    keep_blank: bool = option(False, "Keep documents whose clean text is empty (HLP drops them).")
    keep_lists: bool = option(False, "Keep list and indented lines (wikitext * # : ;) in passages, as "
                                     "WikiExtractor and DPR do not. Their sentences are flagged is_list_item and "
                                     "never become queries.")
    workers: int = option(max(1, os.cpu_count() or 1), "Worker processes (with --engine spark and no "
                                                        "--spark-master: local Spark's cores).",
                          default_help="all cores")
    engine: str = option("local", "Where the build runs. local: worker processes parse, DuckDB finalizes. spark: "
                                  "Spark tasks parse the byte ranges of a multistream dump and Spark SQL finalizes; "
                                  "the dump and --out must be on a filesystem every executor sees (same path). "
                                  "The store is the same, byte for byte.")
    spark_master: str | None = option(None, "Spark master URL for --engine spark, e.g. spark://HOST:7077, yarn.",
                                      default_help="local[WORKERS], or the master given to spark-submit")
    chunk_pages: int = option(5000, "A chunk (the unit of parallel work, checkpoints and --resume) ends after "
                                    "this many pages ...")
    chunk_mb: float = option(4.0, "... or this many MB of raw page data, whichever comes first.")
    multistream_index: Path | None = option(None, "Index of a multistream dump (found automatically beside it "
                                                  "when named like Wikipedia's).")
    resume: bool = resume_option("an interrupted build from its last completed chunk")
    overwrite: bool = overwrite_option("an existing store in --out")
    max_chunks: int | None = option(None, "Stop after this many chunks (a sample); finish later with --resume.")
    sample: bool = option(False, "With --max-chunks: finish the store from the chunks read, a complete smaller "
                                 "store to try things on (links to later pages count as dangling; manifest.json "
                                 "says 'sample'). Without it the build stops unfinished, for --resume.")

    def __post_init__(self) -> None:
        self.input, self.out = Path(self.input), Path(self.out)
        if self.multistream_index is not None:
            self.multistream_index = Path(self.multistream_index)
        if self.chunk_pages < 1:
            raise ValueError(f"chunk_pages must be at least 1, got {self.chunk_pages}")
        if self.chunk_mb <= 0:
            raise ValueError(f"chunk_mb must be positive, got {self.chunk_mb}")
        if self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.spark_master and self.engine != "spark":
            raise ValueError(f"spark_master ({self.spark_master}) is only used with engine spark")
        if self.sample and self.max_chunks is None:
            raise ValueError("sample needs max_chunks: the number of chunks the sample keeps")
        if self.words is not None and self.words < 0:
            raise ValueError(f"words must be 0 (whole documents) or more, got {self.words}")

    @property
    def chunk_bytes(self) -> int:
        return int(self.chunk_mb * 1024 * 1024)

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
