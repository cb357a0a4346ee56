"""``reader.json``, typed: :class:`ReaderManifest`, which ``pretriever reader train`` writes into READER_DIR and the
answer server's ``/answer`` info reads back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pretriever.reader.errors import ReaderError
from pretriever.reader.model import READER_JSON
from pretriever.stage import Manifest


@dataclass(frozen=True, kw_only=True)
class ReaderManifest(Manifest):
    """A reader's training report: the ``base_model`` and the ``config``; the ``data`` counts; the dev EM and F1
    after training (``dev``; None without dev questions); the ``steps`` and the ``loss_curve``. Recorded as
    written: the match mode, precision, dev data and question counts, dev figures before training, the best
    checkpoint, the dev curve, the seconds and speed."""

    FILE = READER_JSON
    ERROR = ReaderError
    ORDER = ("base_model", "config", "match", "precision", "data", "dev_data", "train_questions", "dev_questions",
             "dev_before", "dev", "best_checkpoint", "steps", "loss_curve", "dev_curve", "seconds",
             "questions_per_second")
    FIX = "train the reader again"

    base_model: str
    config: dict[str, Any]
    data: dict[str, Any]
    dev: dict[str, float] | None
    steps: int
    loss_curve: list[dict[str, Any]]
