"""Partial overlap between the evaluation questions and a refinement's labelled feedback queries (issue 26):
the repeated questions are left out for every system, said by count, ids and row names; complete overlap is
still refused; the oracle protocol is unchanged."""

from __future__ import annotations

import pytest
from refine_fixtures import toy_config
from test_refine_protocol import _qrels_data, _systems

from pretriever.evaluate import EvaluationError
from pretriever.evaluate.pipeline import check_protocols
from pretriever.refine import RefinedIndex
from pretriever.refine import pipeline


class Plain:
    """A system that was not refined, scored beside the refined one."""

    name = "plain"


@pytest.fixture
def honest(toy, tmp_path):  # noqa: F811
    pipeline.run(toy_config(toy, tmp_path / "honest", method="aopt-passage"), query_vectors=toy["train_vectors"])
    return RefinedIndex.load(tmp_path / "honest", model=toy["model"])


def test_repeated_feedback_queries_are_left_out_for_every_system(toy, honest):  # noqa: F811
    systems = _systems(honest)
    systems.retrievers.append(Plain())
    systems.described["plain"] = {}
    name = honest.name
    data = _qrels_data(toy, [f"q{i}" for i in range(38, 60)])  # q38, q39 were feedback queries
    data["queries"]["x1"] = toy["texts"]["q5"]  # a feedback query's text under another id
    data["qrels"]["x1"] = toy["qrels"]["q5"]
    notes = check_protocols(systems, data)
    assert sorted(data["qrels"]) == sorted(f"q{i}" for i in range(40, 60))
    suffix = " [20/23 scored: 3 repeat feedback queries]"
    assert [r.name for r in systems.retrievers] == [name + suffix, "plain" + suffix]
    assert set(systems.described) == {name + suffix, "plain" + suffix}
    left = data["dataset"]["left_out"]
    assert left["ids"] == ["q38", "q39", "x1"] and left["scored"] == 20 and left["of"] == 23
    assert left["repeats"] == {"q38": "q38", "q39": "q39", "x1": "q5"} and left["feedback_of"] == [name + suffix]
    assert "left out for every system" in notes[0] and "x1 (repeats q5)" in notes[0]


def test_complete_overlap_is_still_refused_and_oracle_unchanged(toy, honest, tmp_path):  # noqa: F811
    train = [f"q{i}" for i in range(40)]
    with pytest.raises(EvaluationError, match="40 of the 40 evaluation questions were feedback queries"):
        check_protocols(_systems(honest), _qrels_data(toy, train))
    pipeline.run(toy_config(toy, tmp_path / "oracle", method="aopt-passage", oracle=True), query_vectors=toy["train_vectors"])
    oracle = RefinedIndex.load(tmp_path / "oracle", model=toy["model"])
    data = _qrels_data(toy, [f"q{i}" for i in range(38, 60)])
    systems = _systems(oracle)
    notes = check_protocols(systems, data)
    assert len(data["qrels"]) == 22 and "left_out" not in data.get("dataset", {})
    assert systems.retrievers[0].name == oracle.name and "ORACLE" in notes[0]


def test_tables_print_system_names_with_brackets_as_they_are():
    """Rich would read "[prf k'=1]" in a row name as markup and drop it."""
    from rich.console import Console

    from pretriever.evaluate.core import EvaluationResult
    from pretriever.evaluate.report import metrics_table

    name = "all-MiniLM-L6-v2+aopt-query[prf k'=1] [298/300 scored: 2 repeat feedback queries]"
    result = EvaluationResult("qrels", {name: {"nDCG@10": 0.5, "queries": 298}}, {}, {"queries": 298})
    console = Console(width=300, record=True)
    console.print(metrics_table(result))
    assert name in console.export_text()
