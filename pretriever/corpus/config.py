"""Settings of ``pretriever corpus build`` (also the ``[corpus]`` table of a TOML config)."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any


@dataclass
class CorpusConfig:
    input: Path
    out: Path
    format: str = "auto"  # see `pretriever corpus formats`
    # passage length in words; None = the format's default (100 for wikis and JSONL,
    # whole documents for BEIR and DPR passages)
    words: int | None = None
    # drop documents whose title is shorter than this; None = 3 for wikis (HLP), 0 otherwise
    min_title_chars: int | None = None
    keep_blank: bool = False  # keep documents with no text (dropped by default, as in HLP)
    workers: int = max(1, os.cpu_count() or 1)
    # a chunk (the unit of parallel work, checkpoints and --resume) ends after this many
    # pages or this many MB of raw page data, whichever comes first
    chunk_pages: int = 5000
    chunk_mb: float = 4.0
    multistream_index: Path | None = None
    resume: bool = False
    overwrite: bool = False
    max_chunks: int | None = None  # stop after this many chunks (a partial build; finish with --resume)

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
        if self.words is not None and self.words < 0:
            raise ValueError(f"words must be 0 (whole documents) or more, got {self.words}")

    @property
    def chunk_bytes(self) -> int:
        return int(self.chunk_mb * 1024 * 1024)

    def to_json(self) -> dict[str, Any]:
        return {k: str(v) if isinstance(v, Path) else v for k, v in asdict(self).items()}
