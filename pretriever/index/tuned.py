"""The retrieval setting ``pretriever tune`` chose for an index, as its ``index.json`` records it.

``pretriever tune INDEX_DIR`` scores dense, BM25 and their fusions on pseudo-queries made from the corpus
and writes the winner under ``tuned`` in ``INDEX_DIR/index.json``::

    "tuned": {"label": "hybrid convex 0.3", "mode": "hybrid",
              "fusion": {"fusion": "convex", "alpha": 0.3, "rrf_k": 60, "prf_k": 0, ...},
              "from": "tune.json", "created": "..."}

``search``, ``evaluate``, ``serve`` and ``answer`` open an index with :meth:`pretriever.index.IndexFolder.open`'s
``tuned`` mode (the recorded setting, or the index as it is when none is recorded) unless told ``--no-tuned``.
:class:`pretriever.index.meta.TunedRecord` is the record, :meth:`pretriever.index.IndexFolder.record_tuned` writes
it; choosing is ``pretriever.tune``'s work.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from pretriever.index.hybrid import HybridOptions

TUNED_KEY = "tuned"
TUNE_JSON = "tune.json"  # tune's report, beside index.json in the index folder it tuned
TUNED_MODES = ("index", "bm25", "hybrid")


@dataclass(frozen=True)
class TunedSetting:
    """How to search an index: ``mode`` as :meth:`IndexFolder.open` takes it and, for ``hybrid``, the fusion.

    ``label`` names it in tables ("dense", "bm25", "hybrid convex 0.3", "hybrid rrf k=60 + prf 3").
    """

    label: str
    mode: str
    fusion: HybridOptions | None = None

    def __post_init__(self) -> None:
        if self.mode not in TUNED_MODES:
            raise ValueError(f"a tuned mode is one of {', '.join(TUNED_MODES)}, got {self.mode!r}")
        if (self.mode == "hybrid") != (self.fusion is not None):
            raise ValueError("a hybrid setting needs its fusion options, and only a hybrid one has them")

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "mode": self.mode,
                "fusion": asdict(self.fusion) if self.fusion is not None else None}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TunedSetting:
        """The setting as :meth:`to_json` wrote it.

        Args:
            data: the JSON object (index.json's ``tuned``, tune.json's choice).

        Returns:
            The setting.
        """
        fusion = data.get("fusion")
        return cls(str(data["label"]), str(data["mode"]), HybridOptions(**fusion) if fusion else None)
