"""Refine stage on small synthetic vectors: eq. 9 and AOpt by hand, early stopping, batching,
patched search, pseudo-labels, the refined index folder, protocol checks, grid and CLI."""

from __future__ import annotations

import json
import math

import numpy as np
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from helpers import cli_app
from pretriever.evaluate import QrelsTask, evaluate_retrievers
from refine_fixtures import toy_config
from pretriever.index import DenseIndex, FaissParams, build_faiss_index
from pretriever.refine import (PatchedSearcher, RefinedIndex, RefineError, aopt, build_labels,
                               linear_update)
from pretriever.refine import pipeline
from pretriever.refine.labels import FeedbackSet, QrelsJudge, TopkJudge
from pretriever.refine.ops import aopt_loss
from pretriever.retrieval import RankedRows

runner = CliRunner()


# --- eq. 9 -------------------------------------------------------------------------------------

def test_linear_update_matches_eq9_by_hand():
    passages = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]], dtype=np.float32)
    queries = np.array([[0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]], dtype=np.float32)
    # passage 0: positives q0, q1; negative q2.  passage 1: negative q1 only.  passage 2: no labels
    centre = np.array([0, 0, 0, 1])
    other = np.array([0, 1, 2, 1])
    positive = np.array([True, True, False, False])
    beta, gamma = 0.5, -0.2
    got = linear_update(passages, queries, centre, other, positive, beta, gamma)
    # p0' = (1,0) + 0.5*mean((0,1),(1,1)) - 0.2*(-1,0) = (1,0) + (0.25,0.5) + (0.2,0) = (1.45, 0.5)
    # p1' = (0,2) + 0 - 0.2*(1,1) = (-0.2, 1.8);  p2' = p2
    assert got == pytest.approx(np.array([[1.45, 0.5], [-0.2, 1.8], [3.0, 3.0]]), abs=1e-6)
    # alpha scales the passage itself
    assert linear_update(passages, queries, centre, other, positive, 0, 0, alpha=2.0)[0] == pytest.approx([2, 0])


# --- AOpt --------------------------------------------------------------------------------------

C0 = np.array([1.0, 0.0, 0.5])
POS_A, POS_B, NEG = np.array([1.0, 2.0, 0.0]), np.array([0.0, 1.0, 1.0]), np.array([2.0, -1.0, 0.0])


def _hand_step(c, lr):
    """L = -log((e^sa + e^sb) / (e^sa + e^sb + e^sn)); dL/dc = E_all[o] - E_pos[o] (softmax weights)."""
    sa, sb, sn = c @ POS_A, c @ POS_B, c @ NEG
    ea, eb, en = math.exp(sa), math.exp(sb), math.exp(sn)
    loss = -math.log((ea + eb) / (ea + eb + en))
    z_all, z_pos = ea + eb + en, ea + eb
    grad = (ea * POS_A + eb * POS_B + en * NEG) / z_all - (ea * POS_A + eb * POS_B) / z_pos
    return loss, c - lr * grad


def test_one_aopt_step_is_the_hand_derived_gradient_step():
    # c = (1, 0, 0.5): s_a = 1, s_b = 0.5, s_n = 2
    loss, expected = _hand_step(C0, 0.1)
    assert loss == pytest.approx(-math.log((math.e + math.exp(0.5)) / (math.e + math.exp(0.5) + math.exp(2))))
    others = np.stack([POS_A, POS_B, NEG]).astype(np.float32)
    res = aopt(C0[None].astype(np.float32), others, [0, 0, 0], [0, 1, 2], [True, True, False],
               lr=0.1, max_epochs=1, restore_best=False)
    assert res.vectors[0] == pytest.approx(expected, abs=1e-6)
    assert res.loss_start[0] == pytest.approx(loss, abs=1e-6)
    assert res.epochs[0] == 1
    # two steps, float64
    _, once = _hand_step(C0, 0.1)
    loss2, twice = _hand_step(once, 0.1)
    res2 = aopt(C0[None], others.astype(np.float64), [0, 0, 0], [0, 1, 2], [True, True, False], lr=0.1,
                max_epochs=2, restore_best=False, dtype="float64")
    assert res2.vectors[0] == pytest.approx(twice, abs=1e-6)
    assert loss2 < loss  # a descent step
    assert aopt_loss(C0[None], others, [0, 0, 0], [0, 1, 2], [True, True, False])[0] == pytest.approx(loss, abs=1e-6)


def test_gradient_matches_finite_differences():
    rng = np.random.default_rng(3)
    c = rng.standard_normal(4)
    others = rng.standard_normal((5, 4))
    edges = dict(centre=[0] * 5, other=list(range(5)), positive=[True, False, True, False, False])

    def loss(x):
        return aopt_loss(x[None], others, **edges)[0]

    res = aopt(c[None], others, lr=1.0, max_epochs=1, restore_best=False, dtype="float64", **edges)
    grad = c - res.vectors[0]  # lr 1: one step is c - grad
    eps = 1e-5
    numeric = np.array([(loss(c + eps * e) - loss(c - eps * e)) / (2 * eps) for e in np.eye(4)])
    assert grad == pytest.approx(numeric, abs=1e-3)  # float32 output


def test_early_stopping_after_exactly_five_non_improving_epochs():
    o = np.array([1.0, 0.0], dtype=np.float32)
    # centre 0: its positive and negative are the same vector -> loss log 2 every epoch, gradient 0:
    # epoch 1 sets the best loss, epochs 2..6 do not improve -> stops after 6 epochs.
    # centre 1: a real problem that keeps improving -> runs all 100 epochs.
    others = np.stack([o, o, np.array([1.0, 0.0]), np.array([0.0, 1.0])]).astype(np.float32)
    centres = np.array([[0.3, 0.2], [0.1, 0.1]], dtype=np.float32)
    res = aopt(centres, others, [0, 0, 1, 1], [0, 1, 2, 3], [True, False, True, False], lr=0.1, max_epochs=100,
               patience=5)
    assert res.epochs.tolist() == [6, 100]
    assert res.stopped_early.tolist() == [True, False]
    assert res.loss_end[0] == pytest.approx(math.log(2))
    assert res.vectors[0] == pytest.approx(centres[0])
    assert res.loss_end[1] < res.loss_start[1]
    # patience 3 -> 4 epochs
    assert aopt(centres[:1], others, [0, 0], [0, 1], [True, False], patience=3).epochs[0] == 4
    # min_delta: the loss falls, but never by more than 10 -> 1 + 5 epochs, and the best (first) vector is kept
    res = aopt(centres[1:], others, [0, 0], [2, 3], [True, False], lr=0.1, min_delta=10.0)
    assert res.epochs[0] == 6 and res.stopped_early[0]
    assert res.vectors[0] == pytest.approx(centres[1])
    # restore_best=False keeps the last vector instead
    last = aopt(centres[1:], others, [0, 0], [2, 3], [True, False], lr=0.1, min_delta=10.0, restore_best=False)
    assert not np.allclose(last.vectors[0], centres[1])


def test_batched_aopt_equals_one_vector_at_a_time():
    rng = np.random.default_rng(0)
    n, m, dim = 24, 30, 8
    centres = rng.standard_normal((n, dim)).astype(np.float32) * 0.3
    others = rng.standard_normal((m, dim)).astype(np.float32) * 0.3
    centre, other, positive = [], [], []
    for c in range(n):
        picked = rng.choice(m, size=rng.integers(1, 12), replace=False)
        centre += [c] * len(picked)
        other += picked.tolist()
        positive += (rng.random(len(picked)) < 0.3).tolist()
    centre, other, positive = np.array(centre), np.array(other), np.array(positive)
    batched = aopt(centres, others, centre, other, positive, lr=0.5, max_epochs=40, min_delta=1e-2, dtype="float64")
    blocks = aopt(centres, others, centre, other, positive, lr=0.5, max_epochs=40, min_delta=1e-2, dtype="float64", max_edges=7)
    sparse = aopt(centres, others, centre, other, positive, lr=0.5, max_epochs=40, min_delta=1e-2, dtype="float64",
                  sparse=True)  # the SDDMM/SpMM kernels used for big blocks give the same result
    assert sparse.vectors == pytest.approx(batched.vectors, abs=1e-9)
    assert sparse.epochs.tolist() == batched.epochs.tolist()
    assert batched.trainable.sum() > 8 and (~batched.trainable).sum() > 0  # some have no positive/negative
    assert len(set(batched.epochs[batched.trainable].tolist())) > 1  # different stopping epochs
    for c in range(n):
        mine = centre == c
        single = aopt(centres[c:c + 1], others, np.zeros(mine.sum(), int), other[mine], positive[mine],
                      lr=0.5, max_epochs=40, min_delta=1e-2, dtype="float64")
        assert batched.vectors[c] == pytest.approx(single.vectors[0], abs=1e-5)
        assert batched.epochs[c] == single.epochs[0]
        assert blocks.vectors[c] == pytest.approx(single.vectors[0], abs=1e-5)
    untouched = ~batched.trainable
    assert np.array_equal(batched.vectors[untouched], centres[untouched])


# --- search over rewritten vectors -----------------------------------------------------------------

@pytest.mark.parametrize("kind", ["flat", "hnsw"])
def test_patched_searcher_equals_an_index_rebuilt_over_the_new_vectors(kind):
    import faiss

    rng = np.random.default_rng(1)
    base = rng.standard_normal((500, 12)).astype(np.float32)
    searcher = PatchedSearcher(build_faiss_index(base, FaissParams(type=kind)), base, FaissParams(type=kind))
    rows = rng.choice(500, 80, replace=False)
    searcher.set_rows(rows[:40], rng.standard_normal((40, 12)).astype(np.float32))
    new = rng.standard_normal((80, 12)).astype(np.float32) * 2
    searcher.set_rows(rows, new)  # later writes win
    expected = base.copy()
    expected[rows] = new
    flat = faiss.IndexFlatIP(12)
    flat.add(expected)
    queries = rng.standard_normal((20, 12)).astype(np.float32)
    found = searcher.search_arrays(queries, 10)
    assert isinstance(found, RankedRows)
    scores, got = found
    ref_scores, ref = flat.search(queries, 10)
    assert (got == ref).mean() > 0.98  # HNSW over 500 vectors with efSearch 128 is as good as exact
    assert scores[got == ref] == pytest.approx(ref_scores[got == ref], abs=1e-5)
    assert searcher.current(rows) == pytest.approx(new)
    patched = searcher.patched()
    assert np.vstack([patched[0:250], patched[250:500]]) == pytest.approx(expected)


def test_ivfpq_base_hits_are_rescored_exactly_before_merging_with_rewritten_rows():
    """PQ scores are approximate; merged with the exact scores of rewritten rows they would rank the two
    parts inconsistently, so every base hit is re-scored with its stored vector."""
    rng = np.random.default_rng(2)
    base = rng.standard_normal((2000, 16)).astype(np.float32)
    params = FaissParams(type="ivfpq", ivf_nlist=8, ivf_nprobe=8, pq_m=4, pq_nbits=4)
    searcher = PatchedSearcher(build_faiss_index(base, params), base, params)
    queries = rng.standard_normal((10, 16)).astype(np.float32)
    for rewritten in (False, True):
        if rewritten:
            rows = rng.choice(2000, 50, replace=False)
            searcher.set_rows(rows, rng.standard_normal((50, 16)).astype(np.float32))
        scores, got = searcher.search_arrays(queries, 20)
        current = searcher.current(got.ravel()).reshape(10, 20, 16)
        assert scores == pytest.approx(np.einsum("qd,qkd->qk", queries, current), abs=1e-4)
        assert (np.diff(scores, axis=1) <= 1e-6).all()  # best first


# --- pseudo-labels --------------------------------------------------------------------------------

def test_labels_qrels_topk_and_both_views():
    passages = np.eye(4, dtype=np.float32)
    ids = np.array(["d0", "d1", "d2", "d3"], dtype=object)
    searcher = PatchedSearcher(build_faiss_index(passages), passages)
    queries = np.array([[1.0, 0.5, 0.1, 0.0], [0.0, 0.2, 1.0, 0.6]], dtype=np.float32)
    fb = FeedbackSet("qrels", ["q1", "q2"], ["first", "second"], {"q1": {"d1": 1}, "q2": {"d2": 2, "d0": 0}})
    labels = build_labels(queries, searcher, 3, QrelsJudge(fb.ids, fb.qrels, ids))
    # q1 ranks d0, d1, d2; q2 ranks d2, d3, d1
    assert labels.row.tolist() == [0, 1, 2, 2, 3, 1]
    assert labels.positive.tolist() == [False, True, False, True, False, False]
    qv = labels.query_view(fb, ids).to_pylist()
    assert qv[0]["positive_passages"] == ["d1"] and qv[0]["negative_passages"] == ["d0", "d2"]
    assert qv[1]["positive_passages"] == ["d2"] and qv[1]["negative_passages"] == ["d3", "d1"]
    pv = {r["passage_id"]: r for r in labels.passage_view(fb, ids, texts={"d1": ("T1", "text one")}).to_pylist()}
    assert pv["d1"]["positive_queries"] == ["first"] and pv["d1"]["negative_queries"] == ["second"]
    assert pv["d1"]["title"] == "T1" and pv["d2"]["positive_query_ids"] == ["q2"]
    assert pv["d2"]["negative_query_ids"] == ["q1"]
    assert labels.stats()["passages_trainable"] == 2  # d1 and d2 have a positive and a negative
    topk = build_labels(queries, searcher, 3, TopkJudge(1))
    assert topk.positive.tolist() == [True, False, False, True, False, False]
    # a query's own document is no label at all (BEIR's ignore_identical_ids): q "d0" retrieves d0 first
    own = FeedbackSet("qrels", ["d0", "q2"], ["first", "second"], {"d0": {"d1": 1}, "q2": {"d2": 2}})
    labels = build_labels(queries, searcher, 3, QrelsJudge(own.ids, own.qrels, ids))
    assert labels.row.tolist() == [1, 2, 2, 3, 1] and labels.positive.tolist() == [True, False, True, False, False]


# --- the refined index folder ---------------------------------------------------------------------

@pytest.mark.parametrize("method", ["linear", "aopt-passage", "aopt-query", "hybrid"])
def test_refined_index_reloads_and_evaluates(toy, tmp_path, method):
    out = tmp_path / f"refined-{method}"
    meta = pipeline.run(toy_config(toy, out, method=method, rounds=2),
                        query_vectors=toy["train_vectors"]).manifest
    ref = meta.refine
    assert ref["method"] == method and ref["protocol"]["name"] == "honest"
    label = method + ("[prf k'=2]" if method in ("aopt-query", "hybrid") else "")  # honest query side: label-free PRF
    assert ref["queries"]["count"] == 40 and meta.name == f"all-MiniLM-L6-v2+{label}"
    passage_side = method != "aopt-query"
    assert [r["side"] for r in ref["rounds"]] == ["passage"] * (2 * passage_side) + \
        ["query"] * (method in ("aopt-query", "hybrid"))
    base = DenseIndex.load(toy["index"], model=toy["model"])
    dense = DenseIndex.load(out, model=toy["model"])  # a normal index folder
    assert dense.passage_ids.tolist() == base.passage_ids.tolist()
    changed = ~np.all(np.isclose(np.asarray(dense.embeddings), np.asarray(base.embeddings)), axis=1)
    assert changed.sum() == ref["passages_changed"] and (changed.sum() > 0) == passage_side
    refined = RefinedIndex.load(out, model=toy["model"])
    result = evaluate_retrievers([base, refined], QrelsTask(toy["test"], toy["test_qrels"]))
    assert set(result.systems) == {"all-MiniLM-L6-v2", meta.name}
    assert result.systems[meta.name]["queries"] == 20
    if method in ("aopt-query", "hybrid"):
        assert ref["query_side"]["test_time"]["feedback"] == "topk"
        assert refined.last_stats["test_time_refined"] > 0  # test queries were not feedback queries
        stored = pq.read_table(out / "refine" / "query_vectors.parquet")
        assert stored.num_rows == 40 and "refined" in stored.column_names
        refined.encode_queries([toy["texts"]["q0"]])
        assert refined.last_stats["stored"] == 0  # honest protocol: stored feedback vectors serve no search
    else:
        assert ref["query_side"]["test_time"] is None
    labels = pq.read_table(out / "refine" / ("labels_passages.parquet")).to_pylist()
    assert labels and {"positive_queries", "negative_queries", "round", "side"} <= set(labels[0])
    assert pq.read_table(out / "refine" / "labels_queries.parquet").num_rows >= 40


def test_aopt_passage_pulls_passages_towards_their_positive_queries(toy, tmp_path):
    cfg = toy_config(toy, tmp_path / "r", method="aopt-passage", rounds=1, max_epochs=100)
    meta = pipeline.run(cfg, query_vectors=toy["train_vectors"]).manifest
    opt = meta.refine["rounds"][0]["optimise"]
    assert opt["trained"] > 0 and opt["loss_end"] < opt["loss_start"]
    # on the feedback (training) queries themselves the refined index ranks relevant passages higher
    base = DenseIndex.load(toy["index"], model=toy["model"])
    refined = DenseIndex.load(tmp_path / "r", model=toy["model"])
    train = {f"q{i}": toy["texts"][f"q{i}"] for i in range(40)}
    train_qrels = {q: toy["qrels"][q] for q in train}
    res = evaluate_retrievers([base, refined], QrelsTask(train, train_qrels))
    assert res.systems[refined.name]["nDCG@10"] > res.systems[base.name]["nDCG@10"]


def test_protocol_test_labels_need_oracle_and_holdout_drops_queries(toy, tmp_path):
    test_qrels = toy["data"] / "qrels" / "test.tsv"
    with pytest.raises(RefineError, match="--oracle"):
        pipeline.run(toy_config(toy, tmp_path / "leak", qrels=test_qrels), query_vectors=np.zeros((20, 8)))
    meta = pipeline.run(toy_config(toy, tmp_path / "oracle", qrels=test_qrels, oracle=True, method="linear"),
                        query_vectors=np.stack([toy["model"].vectors[t] for t in toy["test"].values()])).manifest
    assert meta.refine["protocol"]["name"] == "oracle" and "ORACLE" in meta.refine["protocol"]["warning"]
    assert meta.name.endswith("+oracle")
    # training labels, but a holdout list that overlaps: the overlapping queries are dropped
    holdout = toy["data"] / "overlap.tsv"
    holdout.write_text("query-id\tcorpus-id\tscore\nq0\td1\t1\nq1\td2\t1\n")
    vectors = toy["train_vectors"][2:]
    meta = pipeline.run(toy_config(toy, tmp_path / "held", holdout=holdout, method="linear"),
                        query_vectors=vectors).manifest
    assert meta.refine["protocol"]["dropped_from_feedback"] == 2 and meta.refine["queries"]["count"] == 38


def test_grid_scores_a_validation_split_and_draws_heat_maps(toy, tmp_path):
    from pretriever.refine import grid

    cfg = toy_config(toy, tmp_path / "grid", method="linear", validation=0.25)
    result = grid.run(cfg, query_vectors=toy["train_vectors"]).manifest
    assert result["protocol"] == "honest" and result["split"] == {
        "fit": 30, "validation": 10, "seed": 0, "scored_on": "a held-out validation split of the feedback queries"}
    ndcg = np.array(result["metrics"]["nDCG@10"])
    assert ndcg.shape == (10, 10)
    assert result["best"]["nDCG@10"] == pytest.approx(ndcg.max(), abs=1e-6)
    assert result["base"]["nDCG@10"] == pytest.approx(ndcg[0, 0], abs=1e-6)
    assert (tmp_path / "grid" / "grid.png").stat().st_size > 10_000
    assert json.loads((tmp_path / "grid" / "grid.json").read_text())["select_metric"] == "nDCG@10"
    # beta = gamma = 0 on the validation queries equals the base index on them
    from pretriever.refine.grid import split_queries

    _, val = split_queries(40, 0.25, 0)
    val_ids = [f"q{i}" for i in val]
    base = DenseIndex.load(toy["index"], model=toy["model"])
    res = evaluate_retrievers([base], QrelsTask({q: toy["texts"][q] for q in val_ids},
                                                {q: toy["qrels"][q] for q in val_ids}))
    assert res.systems[base.name]["nDCG@10"] == pytest.approx(ndcg[0, 0], abs=1e-6)


# --- command line ---------------------------------------------------------------------------------

def test_cli_refine_and_grid(toy, tmp_path, monkeypatch):
    from pretriever.cli.refine import refine_app

    monkeypatch.setattr("pretriever.index.dense.load_model", lambda *a, **k: toy["model"])
    app = cli_app(refine=refine_app)
    common = ["--queries", str(toy["data"] / "queries.jsonl"), "--qrels", str(toy["data"] / "qrels" / "train.tsv")]
    out = tmp_path / "cli-refined"
    result = runner.invoke(app, ["refine", str(toy["index"]), *common, "--method", "aopt-passage", "-k", "10",
                                 "--rounds", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "passage vectors changed" in result.output
    meta = json.loads((out / "index.json").read_text())
    assert meta["refine"]["params"]["rounds"] == 2 and meta["refine"]["feedback"]["kind"] == "qrels"
    # explicit sub-command name, and a TOML config
    config = tmp_path / "r.toml"
    config.write_text(f'[refine]\nmethod = "linear"\nbeta = 0.3\ngamma = -0.2\nk = 10\nout = "{tmp_path / "lin"}"\n')
    result = runner.invoke(app, ["refine", "run", str(toy["index"]), *common, "--config", str(config)])
    assert result.exit_code == 0, result.output
    params = json.loads((tmp_path / "lin" / "index.json").read_text())["refine"]["params"]
    assert params["beta"] == 0.3 and params["gamma"] == -0.2
    # leaking without --oracle is refused with exit 2
    result = runner.invoke(app, ["refine", str(toy["index"]), "--queries", str(toy["data"] / "queries.jsonl"),
                                 "--qrels", str(toy["data"] / "qrels" / "test.tsv"), "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "--oracle" in result.output
    result = runner.invoke(app, ["refine", str(toy["index"]), "--queries", str(toy["data"] / "queries.jsonl"),
                                 "--qrels", str(toy["data"] / "qrels" / "test.tsv"), "--oracle", "--method",
                                 "linear", "--out", str(tmp_path / "o")])
    assert result.exit_code == 0 and "ORACLE" in result.output
    result = runner.invoke(app, ["refine", "grid", str(toy["index"]), *common, "-k", "10", "--out",
                                 str(tmp_path / "g")])
    assert result.exit_code == 0, result.output
    assert "best: beta" in result.output and (tmp_path / "g" / "grid.png").exists()
    result = runner.invoke(app, ["refine", str(toy["index"]), *common, "--method", "nope", "--out", str(tmp_path / "y")])
    assert result.exit_code == 2 and "method must be one of" in result.output


def test_cli_refine_errors_name_the_missing_setting_and_notes_point_to_index_folder(toy, tmp_path, monkeypatch):
    from pretriever.cli.refine import refine_app

    monkeypatch.setattr("pretriever.index.dense.load_model", lambda *a, **k: toy["model"])
    app = cli_app(refine=refine_app)
    queries = ["--queries", str(toy["data"] / "queries.jsonl")]
    for command in ("run", "grid"):  # no --out: the config names the key, not a TypeError turned into a guess
        result = runner.invoke(app, ["refine", command, str(toy["index"]), *queries], env={"COLUMNS": "200"})
        assert result.exit_code == 2 and "out is required (give --out" in result.output, result.output
    # qrels feedback without --qrels: a RefineError (exit 2), not a traceback
    result = runner.invoke(app, ["refine", "run", str(toy["index"]), *queries, "--out", str(tmp_path / "x")])
    assert result.exit_code == 2 and "--feedback qrels needs --queries" in result.output, result.output
    assert not (tmp_path / "x" / "index.json").exists()
    # the defaults shown in --help come from RefineConfig
    result = runner.invoke(app, ["refine", "run", "--help"], env={"COLUMNS": "300"})
    assert "Default: aopt-passage." in result.output and "Default: auto." in result.output
    # a refined query side: the note names the openers that use it
    result = runner.invoke(app, ["refine", "run", str(toy["index"]), *queries, "--qrels",
                                 str(toy["data"] / "qrels" / "train.tsv"), "--method", "aopt-query", "-k", "10",
                                 "--max-epochs", "2", "--out", str(tmp_path / "q")], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "pretriever.index.IndexFolder" in result.output and "pretriever.refine.open_index" not in result.output


def test_answer_feedback_uses_dpr_matching_and_scores_accuracy():
    from pretriever.refine.labels import AnswersJudge
    from pretriever.refine.scoring import Scorer

    ids = np.array(["p0", "p1", "p2"], dtype=object)
    texts = {"p0": "The Eiffel Tower is in Paris.", "p1": "Born on May 18, 2018 in U. S. cities", "p2": "nothing"}
    judge = AnswersJudge([["paris"], ["May 18 , 2018", "U.S."]], ids, lambda pids: {p: texts[p] for p in pids})
    # question 0 x p0, p1; question 1 x p1, p2
    assert judge(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 2]), np.zeros(4)).tolist() == [True, False, True, False]
    fb = FeedbackSet("answers", ["0", "1"], ["where", "when"], answers=[["paris"], ["May 18 , 2018"]])
    scorer = Scorer(fb, ids, judge)
    rows = np.array([[2, 0, 1], [2, 0, 1]])  # q0: answer at rank 2; q1: answer at rank 3
    acc = scorer.score(np.zeros(rows.shape), rows)
    assert acc == {"Acc@1": 0.0, "Acc@5": 1.0, "Acc@20": 1.0, "Acc@100": 1.0}


def test_search_on_a_refined_index_uses_its_query_side_and_agrees_with_evaluate(toy, tmp_path, monkeypatch):
    """`pretriever search` opens the folder by its recorded kind (IndexFolder), so an aopt-query index
    refines each query at search time (label-free top-k feedback), exactly as `evaluate` ranks it."""
    from pretriever.cli.index import search_command
    from pretriever.index import IndexFolder

    out = tmp_path / "refined-query"
    pipeline.run(toy_config(toy, out, method="aopt-query", learning_rate=1.0), query_vectors=toy["train_vectors"])
    assert IndexFolder(out).kind == "refined" and IndexFolder(toy["index"]).kind == "dense"
    monkeypatch.setattr("pretriever.index.dense.load_model", lambda *a, **k: toy["model"])
    refined = IndexFolder(out).retriever()
    assert isinstance(refined, RefinedIndex)
    plain = DenseIndex.load(out, model=toy["model"])
    # queries whose search-time refinement changes the top 5
    moved = [toy["texts"][f"q{i}"] for i in range(40, 60)
             if [h.passage_id for h in refined.search([toy["texts"][f"q{i}"]], 5)[0]]
             != [h.passage_id for h in plain.search([toy["texts"][f"q{i}"]], 5)[0]]]
    assert moved, "refinement moved no query's top 5"
    query = moved[0]

    app = cli_app(search=search_command)
    result = runner.invoke(app, ["search", str(out), query, "-k", "5"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    shown = [w for line in result.output.splitlines() for w in line.split() if w.startswith("d") and w[1:].isdigit()]
    qid = next(q for q, t in toy["texts"].items() if t == query)
    evaluated = evaluate_retrievers([IndexFolder(out).retriever()], QrelsTask({qid: query}, {qid: toy["qrels"][qid]}, depth=5))
    assert shown == [h.passage_id for h in evaluated.runs[refined.name][0]]
    assert shown != [h.passage_id for h in plain.search([query], 5)[0]]


def test_aopt_loss_is_finite_when_positives_score_far_below_a_negative():
    """Each log-sum-exp uses its own maximum: with one shared maximum, exp(-200) underflows to 0 in
    float32, the loss is infinite and the gradient nan."""
    c = np.array([[1.0, 0.0]], dtype=np.float32)
    others = np.array([[-100.0, 0.0], [100.0, 0.0]], dtype=np.float32)  # a positive at -100, a negative at +100
    loss = aopt_loss(c, others, [0, 0], [0, 1], [True, False], dtype="float32")
    assert loss[0] == pytest.approx(200.0, rel=1e-4)  # -log(e^-100 / (e^-100 + e^100))
    res = aopt(c, others, [0, 0], [0, 1], [True, False], lr=1e-3, max_epochs=3, restore_best=False)
    assert np.isfinite(res.vectors).all() and res.loss_end[0] < 200.0


def test_an_overflowing_vector_is_never_written():
    c = np.array([[1.0, 0.0]], dtype=np.float32)
    others = np.array([[-1e20, 0.0], [1e20, 0.0]], dtype=np.float32)  # gradient ~ 2e20: one step overflows float32
    res = aopt(c, others, [0, 0], [0, 1], [True, False], lr=1e20, max_epochs=3, restore_best=False)
    assert np.isfinite(res.vectors).all()
    assert res.vectors[0] == pytest.approx([1.0, 0.0])  # kept where it started


def test_presets_default_does_no_harm_and_paper_is_the_papers(toy, tmp_path):
    default = toy_config(toy, tmp_path / "a")
    assert (default.preset, default.learning_rate, default.normalize) == ("default", 0.01, True)
    paper = toy_config(toy, tmp_path / "b", preset="paper")
    assert (paper.learning_rate, paper.normalize) == (0.1, False)
    given = toy_config(toy, tmp_path / "c", preset="paper", learning_rate=0.05, normalize=True)  # given values win
    assert (given.learning_rate, given.normalize) == (0.05, True)
    assert toy_config(toy, tmp_path / "d", method="linear").normalize is False  # eq. 9 as the paper writes it
    with pytest.raises(ValueError, match="preset must be one of default, paper"):
        toy_config(toy, tmp_path / "e", preset="fast")
