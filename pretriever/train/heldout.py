"""A check a person can read: do pairs the model never trained on retrieve their positive better?

A training loss logged every few steps is noisy and on small data can go up while the model
improves (later batches are harder, warm-up ends). Held-out pairs answer the question directly:
for each held-out query, is its own positive ranked first among all held-out positives?
"""

from __future__ import annotations

from typing import Any

import numpy as np


def split_heldout(dataset, wanted: int, seed: int):
    """(training part, held-out part) of a datasets.Dataset; at most a fifth is held out; (dataset, None) when off."""
    n = min(wanted, len(dataset) // 5)
    if n < 2:
        return dataset, None
    parts = dataset.train_test_split(test_size=n, seed=seed, shuffle=True)
    return parts["train"], parts["test"]


def retrieval_check(model, anchors: list[str], positives: list[str]) -> dict[str, float]:
    """Accuracy@1 and MRR of each anchor's own positive among all the positives (queries encoded as queries,
    passages as documents, scored with the model's similarity)."""
    queries = model.encode_query(anchors, convert_to_numpy=True, show_progress_bar=False)
    passages = model.encode_document(positives, convert_to_numpy=True, show_progress_bar=False)
    scores = np.asarray(model.similarity(queries, passages))
    own = np.diag(scores)
    ranks = (scores > own[:, None]).sum(axis=1) + 1
    return {"acc@1": float(np.mean(ranks == 1)), "mrr": float(np.mean(1.0 / ranks))}


MIN_TREND_POINTS = 25  # a fifth of these is 5 logged losses a side: fewer is one noisy batch against another


def smoothed(curve: list[dict[str, Any]], share: float = 0.2) -> tuple[float, float] | None:
    """Mean logged loss over the first and the last ``share`` of the logged points; None under
    :data:`MIN_TREND_POINTS`, where the two means are a few batches each and rise or fall by chance (a
    12-step run "rose" from 0.30 to 0.68 while its held-out loss fell)."""
    losses = [point["loss"] for point in curve]
    if len(losses) < MIN_TREND_POINTS:
        return None
    width = max(1, round(len(losses) * share))
    return float(np.mean(losses[:width])), float(np.mean(losses[-width:]))
