"""Refine on real data: a 200-abstract slice of SciFact encoded with the packaged all-MiniLM-L6-v2
(the one real index this file builds, about half a minute), refined through the CLI with
training claims and scored on test claims through DenseIndex.load / RefinedIndex + evaluate_retrievers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from pretriever.data import load_qrels, load_queries
from pretriever.evaluate import evaluate_retrievers

SCIFACT = Path(__file__).resolve().parents[2] / "shared" / "data" / "beir" / "scifact"

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def slice_index(tmp_path_factory):
    if not SCIFACT.exists():
        pytest.skip(f"real test data not found: {SCIFACT}")
    from pretriever.corpus.build import build_corpus
    from pretriever.corpus.config import CorpusConfig
    from pretriever.index import IndexConfig, build_index

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
    build_corpus(CorpusConfig(input=data, out=root / "store", workers=1))
    build_index(IndexConfig(corpus=root / "store", out=root / "index"))
    return root, data, {q: queries[q] for q in test}, test


@pytest.mark.parametrize("method", ["linear", "hybrid"])
def test_cli_refine_then_evaluate_on_held_out_claims(slice_index, method):
    from pretriever.cli.refine import refine_app
    from pretriever.index import DenseIndex
    from pretriever.refine import RefinedIndex

    root, data, test_queries, test_qrels = slice_index
    app = typer.Typer()
    app.add_typer(refine_app, name="refine")

    @app.callback()
    def _main() -> None:
        """test app"""

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
    res = evaluate_retrievers([base, refined], test_queries, test_qrels)
    for name in (base.name, refined.name):
        assert res.systems[name]["queries"] == 20
        assert 0.3 < res.systems[name]["nDCG@10"] <= 1.0
