"""Search-time dense PRF in hybrid retrieval (HybridOptions.prf_k): Rocchio on the query vector, checked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from pretriever.index import DenseIndex, HybridOptions, HybridRetriever, encoder_info, save_dense_index
from pretriever.index.hybrid import rocchio
from pretriever.retrieval import Hit


class _Model:
    max_seq_length = 256

    def encode_query(self, texts, **kwargs):
        q = np.array([0.8, 0.6], dtype=np.float32)
        return np.stack([q for _ in texts])


class _BM25:
    name = "bm25"

    def search(self, queries, k):
        return [[Hit("d2", 3.0)] for _ in queries]


@pytest.fixture()
def index(tmp_path):
    vectors = np.array([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], dtype=np.float32)
    save_dense_index(tmp_path / "i", ["d0", "d1", "d2"], vectors, encoder_info(None, 256, False, True))
    return DenseIndex.load(tmp_path / "i", model=_Model())


def test_rocchio_by_hand(index):
    q = np.array([[0.8, 0.6], [0.8, 0.6]], dtype=np.float32)
    moved = rocchio(q, [["d2", "d0"], []], index, 0.5)
    # q + 0.5 * mean((0, 1), (1, 0)) = (1.05, 0.85); no feedback: unchanged
    assert moved[0] == pytest.approx([1.05, 0.85])
    assert moved[1] == pytest.approx([0.8, 0.6])
    assert index.vectors_of(["d1", "nope"]).tolist() == [[pytest.approx(0.6), pytest.approx(0.8)]]


def test_prf_searches_the_dense_side_again_with_the_moved_vector(index):
    # dense: d1 0.96, d0 0.8, d2 0.6; BM25: d2. RRF: d2 1/63 + 1/61, d1 1/61, d0 1/62
    plain = HybridRetriever(index, _BM25()).search(["q"], 3)[0]
    assert [h.passage_id for h in plain] == ["d2", "d1", "d0"]
    assert plain[0].score == pytest.approx(1 / 63 + 1 / 61) and plain[2].score == pytest.approx(1 / 62)
    # prf_k 1: the fused top 1 is d2; q' = (0.8, 0.6) + (0, 1) = (0.8, 1.6): dense d1 1.76, d2 1.6, d0 0.8, so d2 climbs to dense rank 2 and d0 falls to 3: d2 1/62 + 1/61, d1 1/61, d0 1/63
    prf = HybridRetriever(index, _BM25(), HybridOptions(prf_k=1, prf_weight=1.0))
    assert prf.name == "hybrid[rrf k=60, dense prf k=1 w=1](all-MiniLM-L6-v2+bm25)"
    hits = prf.search(["q"], 3)[0]
    assert [h.passage_id for h in hits] == ["d2", "d1", "d0"]
    assert hits[0].score == pytest.approx(1 / 62 + 1 / 61) and hits[2].score == pytest.approx(1 / 63)


def test_alpha_is_not_chosen_without_the_prf_it_would_be_used_with(tmp_path):
    from pretriever.evaluate.config import EvaluateConfig

    with pytest.raises(ValueError, match="alpha_from scores each weight without dense PRF"):
        EvaluateConfig(out=tmp_path, index=[tmp_path], hybrid=True, queries=tmp_path / "q.jsonl", qrels=tmp_path / "t",
                       alpha_from=tmp_path / "train.tsv", fusion=HybridOptions(fusion="convex", prf_k=3))


def test_prf_needs_a_dense_side():
    with pytest.raises(ValueError, match="needs a dense index"):
        HybridRetriever(_BM25(), _BM25(), HybridOptions(prf_k=2)).search(["q"], 3)
    with pytest.raises(ValueError, match="must not be negative"):
        HybridOptions(prf_k=-1)
