"""Hybrid retrieval: reciprocal rank fusion and the convex combination, checked by hand."""

from __future__ import annotations

import pytest

from pretriever.config import ConfigError, build_config
from pretriever.index import HybridOptions, HybridRetriever, choose_alpha, fuse
from pretriever.retrieval import Hit

DENSE = [Hit("a", 0.9), Hit("b", 0.7), Hit("c", 0.5)]
BM25 = [Hit("c", 12.0), Hit("d", 8.0), Hit("a", 4.0)]


def test_rrf_by_hand():
    fused = fuse(DENSE, BM25, HybridOptions(fusion="rrf", rrf_k=60), k=4)
    # a: 1/61 + 1/63; c: 1/63 + 1/61 (a tie, broken by id); b: 1/62; d: 1/62 (tie: b first)
    assert [h.passage_id for h in fused] == ["a", "c", "b", "d"]
    assert fused[0].score == pytest.approx(1 / 61 + 1 / 63)
    assert fused[2].score == pytest.approx(1 / 62)


def test_convex_min_max_by_hand():
    fused = fuse(DENSE, BM25, HybridOptions(fusion="convex", alpha=0.25), k=4)
    # dense normalised: a 1, b 0.5, c 0; bm25 normalised: c 1, d 0.5, a 0
    expected = {"a": 0.25 * 1 + 0.75 * 0, "b": 0.25 * 0.5, "c": 0.25 * 0 + 0.75 * 1, "d": 0.75 * 0.5}
    assert {h.passage_id: h.score for h in fused} == pytest.approx(expected)
    assert [h.passage_id for h in fused] == ["c", "d", "a", "b"]
    assert fuse([Hit("x", 3.0)], [], HybridOptions(fusion="convex", alpha=0.5), 5) == [Hit("x", 0.5)]


class _Fixed:
    def __init__(self, name, hits):
        self.name, self.hits, self.meta, self.asked = name, hits, {}, []

    def search(self, queries, k):
        self.asked.append(k)
        return [self.hits[q][:k] for q in queries]


def test_both_systems_are_searched_to_the_same_depth_and_alpha_is_chosen_on_validation():
    # normalised: dense d1 1, d2 0; bm25 d2 1, d1 8/9. Only a weight below 0.2 ranks d2 (the relevant one) first
    dense = _Fixed("dense", {"q1": [Hit("d1", 1.0), Hit("d2", 0.0)], "q2": [Hit("d3", 1.0), Hit("d4", 0.0)]})
    lexical = _Fixed("bm25", {"q1": [Hit("d2", 9.0), Hit("d1", 8.0), Hit("d6", 0.0)],
                              "q2": [Hit("d4", 9.0), Hit("d3", 8.0), Hit("d7", 0.0)]})
    hybrid = HybridRetriever(dense, lexical, HybridOptions(fusion="convex", alpha=0.5, depth=7))
    assert hybrid.name == "hybrid[convex alpha=0.5](dense+bm25)"
    hybrid.search(["q1"], 2)
    assert dense.asked == lexical.asked == [7]
    # BM25 is right on both queries: the best weight gives the dense score little say
    alpha, scores = choose_alpha(hybrid, {"q1": "q1", "q2": "q2"}, {"q1": {"d2": 1}, "q2": {"d4": 1}})
    assert alpha < 0.5 and scores[0.0] == pytest.approx(1.0) and scores[1.0] < 1.0


def test_options_are_checked():
    with pytest.raises(ConfigError, match="fusion must be one of rrf, convex"):
        build_config(HybridOptions, None, "hybrid", fusion="max")
    with pytest.raises(ConfigError, match="alpha"):
        build_config(HybridOptions, None, "hybrid", alpha=1.5)
