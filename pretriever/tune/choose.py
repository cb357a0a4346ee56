"""The choice and its uncertainty: a paired bootstrap over pseudo-queries, agreement between generators, and
Kendall's tau between two rankings of the candidates.

A candidate's score is the mean over generators of its mean nDCG@10 on that generator's queries (each generator
counts alike, whatever its size). The bootstrap resamples each generator's queries with replacement, the same
draw for every candidate, and recomputes every score; a candidate's interval is the 2.5th and 97.5th
percentiles. The best candidate is chosen only when it is *clearly* better than dense retrieval:

* its interval lies wholly above dense's (no overlap), and
* no generator, taken alone, scores it below dense (a tie, such as both perfect, is no evidence against).

Otherwise dense stays the choice, and the reason says which test failed. Ties go to dense, then to the earlier
candidate of the list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pretriever.tune.candidates import DENSE


@dataclass
class Scored:
    """One candidate on the pseudo-queries: the score, its interval and each generator's mean."""

    mean: float
    low: float
    high: float
    per_generator: dict[str, float] = field(default_factory=dict)


@dataclass
class Choice:
    """What ``pretriever tune`` keeps and why: the kept label, the best on the pseudo-queries, whether dense was kept
    for want of a clear win, and every candidate's scores.
    """

    label: str  # what is kept
    best: str  # the best on the pseudo-queries
    kept_dense: bool  # best was not clearly better than dense
    reason: str
    scores: dict[str, Scored]
    agreement: dict[str, Any]


def bootstrap(per_query: Mapping[str, Mapping[str, Sequence[float]]], rounds: int = 1000,
              seed: int = 0) -> dict[str, Scored]:
    """``per_query[generator][candidate]`` (per-query nDCG@10, queries in one order for all candidates) ->
    each candidate's score and 95% interval.

    Args:
        per_query: per-query scores by generator, then candidate.
        rounds: bootstrap resamples.
        seed: the resamples' seed.

    Returns:
        Each candidate's mean, interval and per-generator score.
    """
    generators = [g for g in per_query if per_query[g]]
    names = list(per_query[generators[0]]) if generators else []
    rng = np.random.default_rng(seed)
    means = {c: float(np.mean([np.mean(per_query[g][c]) for g in generators])) for c in names}
    draws = np.zeros((rounds, len(names)))
    for g in generators:
        matrix = np.array([per_query[g][c] for c in names], dtype=np.float64)  # candidates x queries
        n = matrix.shape[1]
        picks = rng.integers(0, n, size=(rounds, n))
        draws += np.stack([matrix[:, row].mean(axis=1) for row in picks]) / len(generators)
    out = {}
    for i, c in enumerate(names):
        low, high = np.percentile(draws[:, i], [2.5, 97.5]) if rounds else (means[c], means[c])
        out[c] = Scored(means[c], float(low), float(high),
                        {g: float(np.mean(per_query[g][c])) for g in generators})
    return out


def paired(per_query: Mapping[str, Mapping[str, Sequence[float]]], a: str, b: str, rounds: int = 1000,
           seed: int = 0) -> Scored:
    """The difference ``a`` - ``b`` between two systems scored on the same queries, with the 95% interval of the
    paired bootstrap (each resample draws the queries once for both), in :func:`bootstrap`'s weighting."""
    differences = {g: {"difference": [x - y for x, y in zip(scores[a], scores[b])]}
                   for g, scores in per_query.items()}
    return bootstrap(differences, rounds, seed)["difference"]


def ranking(scores: Mapping[str, float]) -> list[str]:
    """Names best first (ties: dense first, then the given order)."""
    order = {name: i for i, name in enumerate(scores)}
    return sorted(scores, key=lambda c: (-round(scores[c], 12), c != DENSE, order[c]))


def tau(a: Mapping[str, float], b: Mapping[str, float]) -> float | None:
    """Kendall's tau-b between two scorings of the same candidates (None when it is undefined)."""
    from scipy.stats import kendalltau  # scipy.stats takes a second to import: not for every `pretriever --help`

    names = [c for c in a if c in b]
    if len(names) < 2:
        return None
    value = kendalltau([a[c] for c in names], [b[c] for c in names]).statistic
    return None if value is None or np.isnan(value) else float(value)


def choose(per_query: Mapping[str, Mapping[str, Sequence[float]]], rounds: int = 1000, seed: int = 0) -> Choice:
    """The candidate to keep (see the module docstring), from per-query pseudo nDCG@10 alone.

    Args:
        per_query: per-query scores by generator, then candidate.
        rounds: bootstrap resamples.
        seed: the resamples' seed.

    Returns:
        The choice.
    """
    scores = bootstrap(per_query, rounds, seed)
    best = ranking({c: s.mean for c, s in scores.items()})[0]
    generators = list(next(iter(scores.values())).per_generator) if scores else []
    gen_scores = {g: {c: s.per_generator[g] for c, s in scores.items()} for g in generators}
    agreement: dict[str, Any] = {"winners": {g: ranking(v)[0] for g, v in gen_scores.items()},
                                 "tau": {f"{a} ~ {b}": tau(gen_scores[a], gen_scores[b])
                                         for i, a in enumerate(generators) for b in generators[i + 1:]}}
    if best == DENSE:
        return Choice(DENSE, best, False, "dense retrieval scores best on the pseudo-queries", scores, agreement)
    won, dense = scores[best], scores[DENSE]
    behind = [g for g in generators if won.per_generator[g] < dense.per_generator[g]]
    if won.low <= dense.high:
        reason = (f"{best} scores best ({won.mean:.3f}, 95% interval {won.low:.3f}-{won.high:.3f}) but its interval "
                  f"overlaps dense's ({dense.mean:.3f}, {dense.low:.3f}-{dense.high:.3f}): not clearly better, "
                  "so dense is kept")
    elif behind:
        reason = (f"{best} scores best ({won.mean:.3f} against dense {dense.mean:.3f}) but the generators disagree: "
                  f"on {', '.join(behind)} it scores below dense, so dense is kept")
    else:
        return Choice(best, best, False, f"{best} is clearly better than dense: {won.mean:.3f} "
                      f"({won.low:.3f}-{won.high:.3f}) against {dense.mean:.3f} ({dense.low:.3f}-{dense.high:.3f}), "
                      "and no generator puts it below dense", scores, agreement)
    return Choice(DENSE, best, True, reason, scores, agreement)
