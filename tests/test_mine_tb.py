"""Title-body pairs (mine --method tb) on a real SciFact slice, checked against corpus.jsonl by hand."""

from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest

from conftest import SCIFACT, build, shared
from pretriever import mine
from pretriever.mine import MineConfig
from pretriever.testing import beir_subset


@pytest.fixture(scope="module")
def tb_pairs(tmp_path_factory):
    root = tmp_path_factory.mktemp("tb")
    beir = beir_subset(root / "beir", shared(SCIFACT), n_docs=30)
    store = build(beir, root / "store", workers=1)
    result = mine.run(MineConfig(corpus=store.path, out=root / "pairs", methods="tb", negatives="random", stats_sample=10))
    docs = {d["_id"]: d for d in map(json.loads, (beir / "corpus.jsonl").read_text().splitlines())}
    return pq.read_table(root / "pairs" / "tb.parquet").to_pylist(), docs, result


def test_query_is_the_title_and_positive_the_text_without_it(tb_pairs):
    rows, docs, _ = tb_pairs
    by_doc = {r["query_doc_id"]: r for r in rows}
    # the first SciFact abstract: a 15-word title, a 200-word abstract
    first = by_doc["4983"]
    assert first["query"] == ("Microstructural development of human newborn cerebral white matter assessed in vivo by "
                              "diffusion tensor magnetic resonance imaging.")
    assert first["positive_text"].startswith("Alterations of the architecture of cerebral white matter")
    for r in rows:
        doc = docs[r["query_doc_id"]]
        assert r["query"] == doc["title"] and r["positive_doc_id"] == r["query_doc_id"]
        assert r["positive_text"] == doc["text"].strip() and doc["title"] not in r["positive_text"]
        assert r["negative_doc_id"] != r["query_doc_id"]


def test_titles_too_short_to_be_queries_give_nothing(tb_pairs):
    rows, docs, _ = tb_pairs
    assert "70490" in docs and docs["70490"]["title"] == "Simplifying likelihood ratios"  # 3 words < 5
    kept = {r["query_doc_id"] for r in rows}
    assert "70490" not in kept
    assert kept == {d for d, doc in docs.items() if len(doc["title"].split()) >= 5}
