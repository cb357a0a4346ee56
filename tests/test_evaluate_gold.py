"""Judgments and gold passages are checked against the corpus searched (issue 24, item 14): a file that names
none of the store's documents is refused before any search (it would score 0.0 and exit 0); one that names
only some of them is scored with a warning that counts what is missing."""

from __future__ import annotations

import json

import pytest
from helpers import cli_app
from test_evaluate import FakeRetriever
from typer.testing import CliRunner

from pretriever.cli.evaluate import evaluate_command
from pretriever.corpus import build
from pretriever.corpus.config import CorpusConfig
from pretriever.data import QAExample
from pretriever.evaluate import AnswersTask, EvaluationError, EvaluationOptions, MultiHopTask, evaluate_retrievers

runner = CliRunner()


@pytest.fixture(scope="module")
def two_docs(tmp_path_factory):
    """Two whole documents, A and B."""
    tmp = tmp_path_factory.mktemp("gold")
    (tmp / "docs.jsonl").write_text('{"id": "A", "title": "Tower", "text": "The Eiffel Tower stands in Paris."}\n'
                                    '{"id": "B", "title": "Rays", "text": "Roentgen found X-rays in 1895."}\n')
    build.run(CorpusConfig(input=tmp / "docs.jsonl", out=tmp / "store", min_title_chars=0, workers=1))
    (tmp / "queries.jsonl").write_text('{"_id": "q1", "text": "Eiffel Tower"}\n{"_id": "q2", "text": "X-rays"}\n')
    return tmp


def _evaluate(tmp, qrels_lines: str, out: str):
    (tmp / f"{out}.tsv").write_text("query-id\tcorpus-id\tscore\n" + qrels_lines)
    return runner.invoke(cli_app(evaluate=evaluate_command), ["evaluate", "--bm25", "--corpus", str(tmp / "store"), "--queries",
                                     str(tmp / "queries.jsonl"), "--qrels", str(tmp / f"{out}.tsv"),
                                     "--out", str(tmp / out)])


def test_qrels_naming_no_document_of_the_corpus_are_refused(two_docs):
    result = _evaluate(two_docs, "q1\tX1\t1\nq2\tX2\t1\n", "foreign")
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.split())
    assert "foreign.tsv: none of its 2 judged relevant documents is in the corpus store" in text
    assert not (two_docs / "foreign" / "results.json").exists()


def test_qrels_naming_some_missing_documents_warn_with_counts(two_docs):
    result = _evaluate(two_docs, "q1\tA\t1\nq2\tX2\t1\nq2\tX3\t1\n", "partial")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "2 of its 3 judged relevant documents are not in the corpus store" in text
    assert "1 of 2 questions have none of theirs there" in text
    notes = json.loads((two_docs / "partial" / "results.json").read_text())["dataset"]["notes"]
    assert any("2 of its 3 judged relevant documents" in n for n in notes)


def test_multihop_gold_passages_outside_the_corpus(two_docs):
    fake = FakeRetriever("fake", {"q": [("A-0", 1.0)]})
    store = EvaluationOptions(store=two_docs / "store")
    with pytest.raises(EvaluationError, match="none of its 2 gold passages is in the corpus store"):
        evaluate_retrievers([fake], MultiHopTask([("q", ["Z1", "Z2"])]), store)
    with pytest.raises(EvaluationError, match="none of its 1 gold titles"):
        evaluate_retrievers([fake], MultiHopTask([("q", ["Nowhere"])], gold_by="title"), store)
    result = evaluate_retrievers([fake], MultiHopTask([("q", ["A-0"]), ("r", ["Z1"])]), store)
    assert any("1 of its 2 gold passages are not in the corpus store" in n for n in result.dataset["notes"])


def test_answers_whose_gold_passages_are_all_missing_warn(two_docs):
    """Answers are matched by text, so a DPR file whose gold passage ids are none of the corpus's is still
    scored (another split of Wikipedia), but the table says how many of its gold passages are missing."""
    fake = FakeRetriever("fake", {"where is the tower": [("A-0", 1.0)], "who found x-rays": [("A-0", 1.0)]})
    examples = [QAExample("where is the tower", ["Paris"], "0", [{"passage_id": "9", "text": "Paris"}]),
                QAExample("who found x-rays", ["Roentgen"], "1", [{"passage_id": "8", "text": "Roentgen"}])]
    result = evaluate_retrievers([fake], AnswersTask(examples, ks=[1]), EvaluationOptions(store=two_docs / "store"))
    assert result.systems["fake"]["Acc@1"] == 0.5
    assert any("2 of its 2 gold passages (positive_ctxs) are not in the corpus store" in n and
               "2 of 2 questions have none" in n for n in result.dataset["notes"])
