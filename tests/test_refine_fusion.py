"""refine --fuse-bm25 on a hand-checked example: the labelled top k is the RRF of dense and BM25."""

from __future__ import annotations

import numpy as np
import pytest

from pretriever.index import HybridOptions, build_faiss_index
from pretriever.refine import PatchedSearcher, RefineConfig, build_labels
from pretriever.refine.fusion import LexicalRanking
from pretriever.refine.labels import TopkJudge
from pretriever.retrieval import Hit


def test_labels_come_from_the_fused_ranking_by_hand():
    passages = np.eye(4, dtype=np.float32)
    ids = ["d0", "d1", "d2", "d3"]
    searcher = PatchedSearcher(build_faiss_index(passages), passages)
    query = np.array([[1.0, 0.5, 0.1, 0.0]], dtype=np.float32)  # dense ranks d0, d1, d2, d3
    # BM25 ranks d3, then d2 (d0 and d1 share no word with the query)
    lexical = LexicalRanking([[Hit("d3", 5.0), Hit("d2", 1.0), Hit("unknown", 0.5)]], ids, HybridOptions(), depth=4)
    dense = build_labels(query, searcher, 3, TopkJudge(1))
    assert dense.row.tolist() == [0, 1, 2] and dense.positive.tolist() == [True, False, False]
    fused = build_labels(query, searcher, 3, TopkJudge(1), lexical=lexical)
    # RRF k=60: d3 1/64 + 1/61 = 0.03202 > d2 1/63 + 1/62 = 0.03200 > d0 1/61 > d1 1/62
    assert fused.row.tolist() == [3, 2, 0] and fused.positive.tolist() == [True, False, False]
    assert fused.score.tolist() == pytest.approx([1 / 64 + 1 / 61, 1 / 63 + 1 / 62, 1 / 61], abs=1e-6)
    # the same lists with a convex fusion that trusts dense alone keep the dense order
    dense_only = LexicalRanking(lexical.hits, ids, HybridOptions(fusion="convex", alpha=1.0), depth=4)
    assert build_labels(query, searcher, 3, TopkJudge(1), lexical=dense_only).row.tolist() == [0, 1, 2]


def test_fuse_bm25_is_its_own_option_and_reads_fusion_settings(tmp_path):
    cfg = RefineConfig(index=tmp_path / "i", out=tmp_path / "o", method="hybrid", fuse_bm25=True,
                       fusion=HybridOptions(fusion="convex", alpha=0.3))
    assert cfg.method == "hybrid" and cfg.fuse_bm25 and cfg.fusion.label == "convex alpha=0.3"
    assert not RefineConfig(index=tmp_path / "i", out=tmp_path / "o", method="hybrid").fuse_bm25
