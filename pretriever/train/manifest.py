"""``train.json``, typed: :class:`TrainManifest`, which a training run writes into MODEL_DIR and the summary table
and ``finetune`` (a finished stage is skipped when its settings match) read back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pretriever.stage import Manifest
from pretriever.train.errors import TrainError


@dataclass(frozen=True, kw_only=True)
class TrainManifest(Manifest):
    """A run's report: the ``config`` it ran with; the ``data`` (pairs, per method, negatives and where they came
    from); the ``model`` (base, pooling, encoders, similarity and scale); the ``training`` (steps, batch, loss,
    where a resumed run started); the ``loss_curve``; the ``seconds`` (train, total, train_cpu) and the speed;
    with held-out pairs, the check before and after (``heldout``). Recorded as written: the version."""

    FILE = "train.json"
    ERROR = TrainError
    ORDER = ("pretriever_version", "config", "data", "model", "training", "loss_curve", "seconds", "pairs_trained",
             "pairs_per_second", "heldout")
    FIX = "train the model again"

    config: dict[str, Any]
    data: dict[str, Any]
    model: dict[str, Any]
    training: dict[str, Any]
    loss_curve: list[dict[str, Any]]
    seconds: dict[str, float]
    pairs_trained: int
    pairs_per_second: float | None
    heldout: dict[str, Any] | None = None


@dataclass(frozen=True, kw_only=True)
class FinetuneManifest(Manifest):
    """FINETUNE_DIR/finetune.json: the ``config`` and each stage (store, retriever 1, its index, retriever 2) with
    its folder, whether it ran now or was kept from an earlier run, and its seconds."""

    FILE = "finetune.json"
    ERROR = TrainError
    ORDER = ("config", "stages")
    FIX = "run `pretriever finetune` again"

    config: dict[str, Any]
    stages: list[dict[str, Any]]
