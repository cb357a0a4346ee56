"""``pretrain.json``, typed: :class:`PretrainManifest`, which a pre-training run writes into MODEL_DIR and the
command line's summary reads back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pretriever.pretrain.errors import PretrainError
from pretriever.stage import Manifest


@dataclass(frozen=True, kw_only=True)
class PretrainManifest(Manifest):
    """A run's report: the ``objective`` and the ``options`` it ran with; the ``pairs`` read (rows, per epoch by
    method, those left out as found by an earlier method, files read without a pairs.json naming them); the
    ``model`` (base, heads kept and discarded, a warning when a term scores fewer pairs); ``steps`` done of
    ``planned_steps`` and why it ``stopped`` early (None: it did not); pairs and word pieces seen; the
    ``loss_curve`` per term; with --eval-pairs, the ``held_out`` curve. Recorded as written: version, loss
    terms, device, precision, seconds and speed."""

    FILE = "pretrain.json"
    ERROR = PretrainError
    ORDER = ("pretriever_version", "objective", "terms", "options", "pairs", "model", "steps", "planned_steps",
             "stopped", "pairs_seen", "tokens_seen", "device", "precision", "train_seconds", "train_cpu_seconds",
             "pairs_per_second", "wall_seconds", "loss_curve", "held_out")
    FIX = "pre-train the model again"

    objective: str
    options: dict[str, Any]
    pairs: dict[str, Any]
    model: dict[str, Any]
    steps: int
    planned_steps: int
    stopped: str | None
    pairs_seen: int
    tokens_seen: int
    loss_curve: list[dict[str, Any]]
    held_out: dict[str, Any] | None = None
