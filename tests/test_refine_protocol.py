"""The honest refine protocol is enforced by the data: evaluation questions are compared with the feedback
queries by id and by text, whatever the files are called."""

from __future__ import annotations

import pytest

from pretriever.evaluate import EvaluationError
from pretriever.evaluate.pipeline import Systems, check_protocols
from pretriever.refine import RefinedIndex
from pretriever.refine import pipeline
from refine_fixtures import toy_config


def _systems(index) -> Systems:
    systems = Systems()
    systems.retrievers.append(index)
    systems.described[index.name] = {}
    return systems


def _qrels_data(toy, qids):
    return {"queries": {q: toy["texts"][q] for q in qids}, "qrels": {q: toy["qrels"][q] for q in qids}}


def test_evaluating_on_the_feedback_queries_is_refused_unless_oracle(toy, tmp_path):
    pipeline.run(toy_config(toy, tmp_path / "honest", method="aopt-passage"), query_vectors=toy["train_vectors"])
    honest = RefinedIndex.load(tmp_path / "honest", model=toy["model"])
    train = [f"q{i}" for i in range(40)]
    with pytest.raises(EvaluationError, match="40 of the 40 evaluation questions were feedback queries"):
        check_protocols(_systems(honest), _qrels_data(toy, train))
    # the same questions under other ids are caught by their text
    renamed = {"queries": {f"x{i}": toy["texts"][f"q{i}"] for i in range(3)}, "qrels": {f"x{i}": {} for i in range(3)}}
    with pytest.raises(EvaluationError, match="3 of the 3"):
        check_protocols(_systems(honest), renamed)
    systems = _systems(honest)
    assert check_protocols(systems, _qrels_data(toy, [f"q{i}" for i in range(40, 60)])) == []  # held out: fine
    assert systems.described[honest.name]["refine_protocol"]["evaluation_queries_in_feedback"] == 0

    pipeline.run(toy_config(toy, tmp_path / "oracle", method="aopt-passage", oracle=True), query_vectors=toy["train_vectors"])
    oracle = RefinedIndex.load(tmp_path / "oracle", model=toy["model"])
    notes = check_protocols(_systems(oracle), _qrels_data(toy, train))
    assert "ORACLE" in notes[0] and oracle.name.endswith("+oracle")


def test_topk_feedback_on_the_evaluation_queries_is_reported_as_transductive(toy, tmp_path):
    cfg = toy_config(toy, tmp_path / "prf", method="aopt-passage", feedback="topk", qrels=None)
    vectors = [toy["model"].vectors[toy["texts"][f"q{i}"]] for i in range(60)]
    pipeline.run(cfg, query_vectors=vectors)
    prf = RefinedIndex.load(tmp_path / "prf", model=toy["model"])
    notes = check_protocols(_systems(prf), _qrels_data(toy, [f"q{i}" for i in range(40, 60)]))
    assert notes and "transductive" in notes[0] and "20 of these very questions" in notes[0]


def test_stored_refined_query_vectors_serve_only_the_oracle_protocol(toy, tmp_path):
    pipeline.run(toy_config(toy, tmp_path / "honest", method="aopt-query"), query_vectors=toy["train_vectors"])
    pipeline.run(toy_config(toy, tmp_path / "oracle", method="aopt-query", oracle=True), query_vectors=toy["train_vectors"])
    feedback_query = [toy["texts"]["q0"]]
    honest = RefinedIndex.load(tmp_path / "honest", model=toy["model"])
    honest.encode_queries(feedback_query)
    assert honest.last_stats["stored"] == 0  # honestly, a searched query is never a labelled one
    oracle = RefinedIndex.load(tmp_path / "oracle", model=toy["model"])
    oracle.encode_queries(feedback_query)
    assert oracle.last_stats["stored"] == 1


def test_answer_matching_defaults_to_auto_like_evaluate(tmp_path):
    from pretriever.refine import RefineConfig

    base = dict(index=tmp_path / "i", out=tmp_path / "o", feedback="answers")
    assert RefineConfig(**base, answers=tmp_path / "curatedtrec-train.jsonl").match == "regex"
    assert RefineConfig(**base, answers=tmp_path / "nq-train.jsonl").match == "string"
    assert RefineConfig(**base, answers=tmp_path / "curatedtrec-train.jsonl", match="string").match == "string"
