"""Refine on real data: a 200-abstract slice of SciFact encoded with the packaged all-MiniLM-L6-v2
(the one real index this file builds, about half a minute), refined through the CLI with
training claims and scored on test claims through DenseIndex.load / RefinedIndex + evaluate_retrievers."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import SCIFACT, shared
from helpers import cli_app
from pretriever.data import load_qrels, load_queries
from pretriever.evaluate import QrelsTask, evaluate_retrievers

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def slice_index(tmp_path_factory):
    shared(SCIFACT)
    from pretriever.corpus import build
    from pretriever.corpus.config import CorpusConfig
    from pretriever.index import IndexConfig, encode

    root = tmp_path_factory.mktemp("scifact-slice")
    data = root / "beir"
    (data / "qrels").mkdir(parents=True)
    queries = load_queries(SCIFACT / "queries.jsonl")
    train = dict(list(load_qrels(SCIFACT / "qrels" / "train.tsv").items())[:60])
    test = dict(list(load_qrels(SCIFACT / "qrels" / "test.tsv").items())[:20])
    wanted = {d for q in (*train.values(), *test.values()) for d in q}
    kept = []
    with open(SCIFACT / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            if doc["_id"] in wanted or len(kept) < 200 - len(wanted):
                kept.append(line)
    (data / "corpus.jsonl").write_text("".join(kept), encoding="utf-8")
    with open(data / "queries.jsonl", "w", encoding="utf-8") as f:
        for q in (*train, *test):
            f.write(json.dumps({"_id": q, "text": queries[q]}) + "\n")
    for name, judged in (("train", train), ("test", test)):
        with open(data / "qrels" / f"{name}.tsv", "w") as f:
            f.write("query-id\tcorpus-id\tscore\n")
            for q, docs in judged.items():
                for d, g in docs.items():
                    f.write(f"{q}\t{d}\t{g}\n")
    build.run(CorpusConfig(input=data, out=root / "store", workers=1))
    encode.run(IndexConfig(corpus=root / "store", out=root / "index"))
    return root, data, {q: queries[q] for q in test}, test


@pytest.mark.parametrize("method", ["linear", "hybrid"])
def test_cli_refine_then_evaluate_on_held_out_claims(slice_index, method):
    from pretriever.cli.refine import refine_app
    from pretriever.index import DenseIndex
    from pretriever.refine import RefinedIndex

    root, data, test_queries, test_qrels = slice_index
    app = cli_app(refine=refine_app)
    out = root / f"refined-{method}"
    result = CliRunner().invoke(app, ["refine", str(root / "index"), "--queries", str(data / "queries.jsonl"),
                                      "--feedback", "qrels", "--qrels", str(data / "qrels" / "train.tsv"),
                                      "--holdout", str(data / "qrels" / "test.tsv"), "--method", method,
                                      "--lr", "0.01", "--k-pos", "3", "--out", str(out), "--threads", "1"])
    assert result.exit_code == 0, result.output
    meta = json.loads((out / "index.json").read_text())
    assert meta["refine"]["protocol"]["name"] == "honest"
    assert meta["refine"]["protocol"]["feedback_queries_in_holdout"] == 0
    assert meta["refine"]["queries"]["count"] == 60 and meta["refine"]["passages_changed"] > 0
    labels = root / f"refined-{method}" / "refine" / "labels_passages.parquet"
    import pyarrow.parquet as pq

    table = pq.read_table(labels)
    assert {"title", "text", "positive_queries", "negative_queries"} <= set(table.column_names)
    base = DenseIndex.load(root / "index")
    refined = RefinedIndex.load(out, model=base.model) if method == "hybrid" else DenseIndex.load(out, model=base.model)
    res = evaluate_retrievers([base, refined], QrelsTask(test_queries, test_qrels))
    for name in (base.name, refined.name):
        assert res.systems[name]["queries"] == 20
        assert 0.3 < res.systems[name]["nDCG@10"] <= 1.0


def test_fuse_bm25_labels_what_evaluate_hybrid_ranks_and_differs_from_dense(slice_index):
    """`refine --fuse-bm25`: the passages labelled in round 1 are exactly the top k that `evaluate --hybrid`
    (HybridRetriever, RRF k = 60) ranks on the unrefined index, not the dense top k, and index.json says so."""
    import pyarrow.parquet as pq

    from pretriever.cli.refine import refine_app
    from pretriever.data import PassageLookup
    from pretriever.index import DenseIndex, HybridRetriever, bm25_system

    root, data, _, _ = slice_index
    app = cli_app(refine=refine_app)
    out = root / "refined-fused"
    result = CliRunner().invoke(app, ["refine", str(root / "index"), "--queries", str(data / "queries.jsonl"),
                                      "--qrels", str(data / "qrels" / "train.tsv"), "--feedback", "topk",
                                      "--fuse-bm25", "-k", "20", "--k-pos", "3", "--out", str(out),
                                      "--threads", "1"])
    assert result.exit_code == 0, result.output
    assert "labelled passages found by: dense+bm25 (rrf" in " ".join(result.output.split())
    meta = json.loads((out / "index.json").read_text())
    assert meta["refine"]["params"]["label_search"]["retrieval"] == "dense+bm25"
    assert meta["refine"]["params"]["label_search"]["fusion"]["rrf_k"] == 60
    assert meta["name"] == "all-MiniLM-L6-v2+aopt-passage[labels dense+bm25 rrf k=60]"
    labels = pq.read_table(out / "refine" / "labels_queries.parquet").to_pylist()
    assert len(labels) == 60
    base = DenseIndex.load(root / "index")
    bm25 = bm25_system(PassageLookup(root / "store"), [])[0].retriever
    texts = [row["query"] for row in labels]
    fused = HybridRetriever(base, bm25).search(texts, 20)
    dense = base.search(texts, 20)
    differs = 0
    for row, f, d in zip(labels, fused, dense):
        assert row["positive_passages"] == [h.passage_id for h in f[:3]], row["query_id"]
        assert row["negative_passages"] == [h.passage_id for h in f[3:20]], row["query_id"]
        differs += [h.passage_id for h in d[:3]] != row["positive_passages"]
    assert differs >= 10  # BM25 changes the pseudo-relevant top 3 of many claims
