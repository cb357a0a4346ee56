"""``tune.json``, typed: :class:`TuneManifest`, which ``pretriever tune`` writes beside the index.json it tuned and
the quickstart's before/after reads back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pretriever.index.tuned import TUNE_JSON
from pretriever.stage import Manifest
from pretriever.tune.generators import TuneError


@dataclass(frozen=True, kw_only=True)
class TuneManifest(Manifest):
    """A tune's report: the ``choice`` (label, setting, best, whether dense was kept, and why); every candidate
    with its pseudo-nDCG@10, interval and per-generator scores (``candidates``); the pseudo-query ``generators``
    and those ``left_out`` (why); with --compare, the other index's dense row and the paired difference
    (``compare``). Recorded as written: the BM25 source, the rank agreement, the real nDCG@10 of --qrels
    (``validation``), the seconds and the config."""

    FILE = TUNE_JSON
    ERROR = TuneError
    ORDER = ("choice", "candidates", "generators", "left_out", "bm25", "compare", "agreement", "validation",
             "seconds", "config")
    FIX = "run `pretriever tune` again"

    choice: dict[str, Any]
    candidates: list[dict[str, Any]]
    generators: dict[str, dict[str, Any]]
    left_out: dict[str, str] | None = None
    compare: dict[str, Any] | None = None

    @property
    def label(self) -> str:
        """The chosen setting's label."""
        return str(self.choice["label"])

    def pseudo_scores(self) -> dict[str, float]:
        """Each candidate's pseudo-nDCG@10, by label."""
        return {c["label"]: c["pseudo_nDCG@10"] for c in self.candidates}
