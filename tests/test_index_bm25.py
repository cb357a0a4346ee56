"""BM25 (bm25s) over the whole SciFact store: phrase lookup, the BEIR figure, save/load, options, CLI."""

from __future__ import annotations

import csv
import json
import math

import pytest
from typer.testing import CliRunner

from conftest import SCIFACT, shared
from helpers import cli_app
from pretriever.cli.index import index_app
from pretriever.index import BM25Index, BM25Options, NotAnIndexError
from pretriever.retrieval import RankedRows


@pytest.fixture(scope="module")
def bm25(scifact_store) -> BM25Index:
    return BM25Index.build(scifact_store)


@pytest.fixture(scope="module")
def corpus_docs() -> list[dict]:
    return [json.loads(line) for line in (shared(SCIFACT) / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]


def ndcg_at_10(run: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> float:
    """Mean nDCG@10 (gain = relevance grade, log2 discount), over the queries with judgments."""
    total = 0.0
    for qid, judged in qrels.items():
        dcg = sum(judged.get(pid, 0) / math.log2(rank + 2) for rank, pid in enumerate(run.get(qid, [])[:10]))
        ideal = sum(g / math.log2(rank + 2) for rank, g in enumerate(sorted(judged.values(), reverse=True)[:10]))
        total += dcg / ideal if ideal else 0.0
    return total / len(qrels)


def test_finds_a_document_by_a_distinctive_phrase(bm25, corpus_docs):
    assert len(bm25) == len(corpus_docs) == 5183
    picks = [corpus_docs[i] for i in (0, 1234, 2500, 4000, 5182)]
    queries = [" ".join(doc["text"].split()[20:34]) for doc in picks]
    hits = bm25.search(queries, k=5)
    assert [h[0].passage_id for h in hits] == [doc["_id"] for doc in picks]
    assert all(h[0].score > h[1].score for h in hits)


def test_scifact_test_ndcg_matches_the_beir_figure(bm25):
    root = shared(SCIFACT)
    qrels: dict[str, dict[str, int]] = {}
    with open(root / "qrels" / "test.tsv", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    claims = {q["_id"]: q["text"] for q in map(json.loads, (root / "queries.jsonl").read_text(encoding="utf-8").splitlines())}
    qids = sorted(qrels)
    assert len(qids) == 300
    hits = bm25.search([claims[q] for q in qids], k=10, n_threads=2)
    score = ndcg_at_10({q: [h.passage_id for h in hs] for q, hs in zip(qids, hits)}, qrels)
    assert abs(score - 0.686) < 0.01, score


def test_save_load_round_trip(bm25, tmp_path):
    bm25.save(tmp_path / "bm25")
    meta = json.loads((tmp_path / "bm25" / "bm25.json").read_text(encoding="utf-8"))
    assert meta["options"] == {"k1": 1.5, "b": 0.75, "delta": 0.5, "method": "lucene", "stopwords": "en",
                               "stemmer": "english", "prepend_title": True, "lowercase": True}
    assert meta["count"] == 5183 and meta["name"] == "bm25"
    loaded = BM25Index.load(tmp_path / "bm25")
    queries = ["vitamin D and multiple sclerosis", "microRNA regulates tumor suppressor genes", "zzzz qqqq"]
    assert loaded.search(queries, 20) == bm25.search(queries, 20)
    assert bm25.search(queries, 20)[2] == []  # nothing matches: no hits rather than zero-score noise
    with pytest.raises(NotAnIndexError, match="bm25.json is missing"):
        BM25Index.load(tmp_path)


def test_search_arrays_returns_named_rows_in_the_order_of_search(bm25):
    """``search_arrays`` returns a RankedRows (fields by name, or unpacked as FAISS's pair), the rows of
    ``search``'s hits; with nothing to search, empty arrays of the same shape."""
    queries = ["vitamin D and multiple sclerosis", "microRNA regulates tumor suppressor genes"]
    found = bm25.search_arrays(queries, 5)
    assert isinstance(found, RankedRows) and found.scores.shape == found.rows.shape == (2, 5)
    scores, rows = found
    hits = bm25.search(queries, 5)
    assert [[bm25.passage_ids[r] for r in row] for row in rows] == [[h.passage_id for h in hs] for hs in hits]
    assert scores[:, 0].tolist() == pytest.approx([hs[0].score for hs in hits])
    assert isinstance(bm25.search_arrays([], 5), RankedRows)


def test_batch_search_with_threads_equals_sequential(bm25, corpus_docs):
    queries = [doc["title"] for doc in corpus_docs[:200]]
    assert bm25.search(queries, 50, n_threads=2) == bm25.search(queries, 50)


def test_options_stemming_stopwords_title():
    texts = ["Running shoes for marathon runners", "The cat sat on the mat", "Volcanic ash clouds"]
    stemmed = BM25Index.build_from_texts(["a", "b", "c"], texts)
    assert stemmed.search(["runs"], 3)[0][0].passage_id == "a"  # Snowball: runs -> run, running -> run
    assert stemmed.search(["the on"], 3) == [[]]  # stop words only
    plain = BM25Index.build_from_texts(["a", "b", "c"], texts, BM25Options(stemmer="none", stopwords="none"))
    assert plain.search(["runs"], 3) == [[]]
    assert plain.search(["the"], 3)[0][0].passage_id == "b"
    assert len(stemmed.search(["ash"], 100)[0]) == 1  # k larger than the corpus is fine
    with pytest.raises(ValueError, match="unknown stemmer"):
        BM25Options(stemmer="klingon")
    with pytest.raises(ValueError, match="method"):
        BM25Options(method="tfidf")


def test_title_option_changes_what_is_indexed(scifact_store, bm25, corpus_docs):
    doc = corpus_docs[42]
    no_title = BM25Index.build(scifact_store, BM25Options(prepend_title=False))
    with_title = bm25.search([doc["title"]], 1)[0][0]
    assert with_title.passage_id == doc["_id"]
    assert no_title.search([doc["title"]], 1)[0][0].score < with_title.score


def test_cli_bm25_command(scifact_store, tmp_path):
    app = cli_app(index=index_app)
    out = tmp_path / "bm25"
    result = CliRunner().invoke(app, ["index", "bm25", str(scifact_store), "--out", str(out), "--k1", "1.2",
                                      "--stemmer", "porter"])
    assert result.exit_code == 0, result.output
    assert BM25Index.load(out).options.k1 == 1.2 and BM25Index.load(out).options.stemmer == "porter"
    result = CliRunner().invoke(app, ["index", "bm25", str(scifact_store), "--out", str(out), "--stemmer", "klingon"])
    assert result.exit_code == 2 and "unknown stemmer" in result.output
