"""``results.json``, typed: :class:`EvaluationManifest`, which an evaluation writes into EVAL_DIR
(:func:`pretriever.evaluate.report.write_results`) and reads back as its stage manifest."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pretriever.evaluate.tasks import EvaluationError
from pretriever.stage import Manifest

RESULTS_JSON = "results.json"


@dataclass(frozen=True, kw_only=True)
class EvaluationManifest(Manifest):
    """An evaluation's results: per system its mean metrics (``systems``) and the values of every query
    (``per_query``); the ``config`` and the ``dataset`` (name, queries, systems opened, notes, what was left out);
    the answer-overlap buckets (``overlap``; None unless asked) and the metric-at-k ``curves``; the ``plots`` and
    TREC ``runs`` written beside it; with --reader, the ``reader``'s scores behind every system."""

    FILE = RESULTS_JSON
    ERROR = EvaluationError
    ORDER = ("systems", "per_query", "config", "dataset", "overlap", "curves", "plots", "runs", "reader")
    FIX = "run `pretriever evaluate` again"

    systems: dict[str, dict[str, Any]]
    per_query: dict[str, dict[str, Any]]
    config: dict[str, Any]
    dataset: dict[str, Any]
    overlap: dict[str, Any] | None
    curves: dict[str, Any]
    plots: dict[str, str] | None = None
    runs: dict[str, str] | None = None
    reader: dict[str, Any] | None = None
