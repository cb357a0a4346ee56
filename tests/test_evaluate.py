"""Evaluation plumbing on a tiny fake Retriever: hand-computed metrics, MaxP, answers, multi-hop, CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from helpers import cli_app
from pretriever.cli.evaluate import evaluate_command
from pretriever.corpus import build
from pretriever.corpus.config import CorpusConfig
from pretriever.data import DatasetError, MultiHopExample, QAExample, load_multihop, load_qrels, load_queries
from pretriever.evaluate import (AnswersTask, EvaluateConfig, EvaluationError, EvaluationOptions, MultiHopTask,
                                 QrelsTask, evaluate_retrievers)
from pretriever.metrics import bucket_of, overlap_ratio, qrels_metrics, trec_order
from pretriever.retrieval import Hit

APP = cli_app(evaluate=evaluate_command)
runner = CliRunner()


class FakeRetriever:
    """Returns fixed rankings per query text; records the k it was asked for."""

    def __init__(self, name: str, rankings: dict[str, list[tuple[str, float]]]):
        self.name = name
        self.rankings = rankings
        self.asked_k: list[int] = []

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        self.asked_k.append(k)
        return [[Hit(p, s) for p, s in self.rankings.get(q, [])[:k]] for q in queries]


QUERIES = {"q1": "first query", "q2": "second query", "q3": "third query", "q4": "fourth query"}
QRELS = {"q1": {"d1": 1, "d3": 1}, "q2": {"d2": 2, "d4": 1}, "q3": {"d7": 1}, "q4": {"rel": 1}}
RANKINGS = {
    "first query": [("d2", 0.9), ("d1", 0.8), ("d5", 0.7), ("d3", 0.6)],
    "second query": [("d4", 0.5), ("d9", 0.4)],
    # third query: nothing retrieved
    "fourth query": [(f"n{i:02d}", 1.0 - i / 100) for i in range(10)] + [("rel", 0.5)],
}

L2, L3, L5 = math.log2(2), math.log2(3), math.log2(5)
# q1: relevant d1 at rank 2, d3 at rank 4 (binary gains)
Q1 = {"nDCG@10": (1 / L3 + 1 / L5) / (1 + 1 / L3), "MRR@10": 0.5, "Recall@20": 1.0, "MAP": (1 / 2 + 2 / 4) / 2}
# q2: d4 (grade 1) at rank 1, d2 (grade 2) never retrieved; ideal order d2, d4
Q2 = {"nDCG@10": (1 / L2) / (2 / L2 + 1 / L3), "MRR@10": 1.0, "Recall@20": 0.5, "MAP": (1 / 1) / 2}
# q3: nothing retrieved -> 0 everywhere; q4: the only relevant document at rank 11
Q4 = {"nDCG@10": 0.0, "MRR@10": 0.0, "Recall@20": 1.0, "MAP": (1 / 11) / 1}


def test_hand_computed_qrels_metrics():
    fake = FakeRetriever("fake", RANKINGS)
    result = evaluate_retrievers([fake], QrelsTask(QUERIES, QRELS))
    per = result.per_query["fake"]
    for qid, expected in (("q1", Q1), ("q2", Q2), ("q4", Q4)):
        for metric, value in expected.items():
            assert per[qid][metric] == pytest.approx(value, abs=1e-9), (qid, metric)
    assert all(v == 0.0 for k, v in per["q3"].items())  # judged but nothing retrieved: counts as 0
    means = result.systems["fake"]
    for metric in ("nDCG@10", "MRR@10", "Recall@20", "MAP"):
        assert means[metric] == pytest.approx((Q1[metric] + Q2[metric] + 0.0 + Q4[metric]) / 4, abs=1e-9)
    assert means["queries"] == 4
    assert means["Recall@100"] == means["Recall@1000"] == pytest.approx((1 + 0.5 + 0 + 1) / 4)
    assert fake.asked_k == [1000]  # whole documents, no store: depth 1000 passages = documents


def test_mrr_is_cut_at_ten_but_recall_is_not():
    fake = FakeRetriever("fake", RANKINGS)
    per = evaluate_retrievers([fake], QrelsTask(QUERIES, {"q4": QRELS["q4"]})).per_query["fake"]["q4"]
    assert per["MRR@10"] == 0.0 and per["Recall@20"] == 1.0 and per["MAP"] == pytest.approx(1 / 11)


def test_ties_follow_trec_eval_order():
    # trec_eval ranks equal scores by document id, descending: "z" before "a"
    assert [d for d, _ in trec_order({"a": 1.0, "z": 1.0, "m": 2.0})] == ["m", "z", "a"]
    fake = FakeRetriever("fake", {"x": [(f"d{i:02d}", 1.0) for i in range(11)]})
    # relevant d10 (the largest id) ranks first under ties, although the system returned it last
    per = evaluate_retrievers([fake], QrelsTask({"q": "x"}, {"q": {"d10": 1}})).per_query["fake"]["q"]
    assert per["MRR@10"] == 1.0


def test_query_id_is_ignored_among_results_unless_asked():
    fake = FakeRetriever("fake", {"x": [("q", 2.0), ("d1", 1.0)]})
    default = evaluate_retrievers([fake], QrelsTask({"q": "x"}, {"q": {"d1": 1}})).per_query["fake"]["q"]
    keep = QrelsTask({"q": "x"}, {"q": {"d1": 1}}, ignore_identical_ids=False)
    kept = evaluate_retrievers([fake], keep).per_query["fake"]["q"]
    assert default["MRR@10"] == 1.0 and kept["MRR@10"] == 0.5


def test_two_systems_side_by_side_and_duplicate_names_refused():
    a = FakeRetriever("a", RANKINGS)
    b = FakeRetriever("b", {"first query": [("d1", 1.0), ("d3", 0.9)]})
    result = evaluate_retrievers([a, b], QrelsTask(QUERIES, QRELS))
    assert list(result.systems) == ["a", "b"]
    assert result.per_query["b"]["q1"]["nDCG@10"] == pytest.approx(1.0)
    with pytest.raises(EvaluationError, match="share the name"):
        evaluate_retrievers([a, FakeRetriever("a", {})], QrelsTask(QUERIES, QRELS))


# --- with a store: MaxP, answers, titles, overlap ------------------------------------------


@pytest.fixture(scope="module")
def chunked_store(tmp_path_factory):
    """Three documents cut into 5-word passages: A-0, A-1, B-0, B-1, C-0."""
    tmp = tmp_path_factory.mktemp("store")
    docs = [
        {"id": "A", "title": "Alpha", "text": "The Eiffel Tower stands in Paris, France since 1889."},
        {"id": "B", "title": "Beta", "text": "Röntgen discovered X-rays in 1895 at Würzburg."},
        {"id": "C", "title": "Gamma", "text": "Nothing relevant here."},
    ]
    src = tmp / "docs.jsonl"
    src.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    build.run(CorpusConfig(input=src, out=tmp / "store", words=5, min_title_chars=0, workers=1))
    return tmp / "store"


def passage_texts(store_dir: Path) -> dict[str, str]:
    from pretriever.data.store import CorpusStore

    return dict(CorpusStore(store_dir).connect().execute("SELECT passage_id, text FROM passages").fetchall())


def test_store_fixture_is_chunked(chunked_store):
    texts = passage_texts(chunked_store)
    assert texts["A-0"] == "The Eiffel Tower stands in" and texts["A-1"].startswith("Paris")
    assert set(texts) == {"A-0", "A-1", "B-0", "B-1", "C-0"}


def test_maxp_aggregates_passages_to_documents(chunked_store):
    fake = FakeRetriever("fake", {"x": [("C-0", 0.9), ("A-1", 0.8), ("C-0", 0.7), ("A-0", 0.95), ("B-1", 0.1)]})
    result = evaluate_retrievers([fake], QrelsTask({"q": "x"}, {"q": {"A": 1, "B": 1}}, depth=2),
                                 EvaluationOptions(store=chunked_store))
    # documents by best passage: A 0.95, C 0.9, B 0.1; cut to depth 2 -> A, C
    per = result.per_query["fake"]["q"]
    assert per["MRR@10"] == 1.0 and per["Recall@20"] == 0.5
    assert fake.asked_k == [2 * 3]  # passages are chunks: fetch depth * maxp_factor
    assert "MaxP" in result.dataset["aggregation"]["fake"]


def test_answers_top_k_accuracy_with_store(chunked_store):
    rankings = {"where is the tower": [("C-0", 3.0), ("A-1", 2.0)],
                "who found x rays": [("C-0", 3.0), ("A-0", 2.0), ("B-0", 1.0)],
                "unanswerable": [("C-0", 1.0)]}
    fake = FakeRetriever("fake", rankings)
    examples = [QAExample("where is the tower", ["paris"]), QAExample("who found x rays", ["Röntgen"]),
                ("unanswerable", ["nobody"])]
    result = evaluate_retrievers([fake], AnswersTask(examples, ks=[1, 2, 3]), EvaluationOptions(store=chunked_store))
    assert result.systems["fake"]["Acc@1"] == 0.0
    assert result.systems["fake"]["Acc@2"] == pytest.approx(1 / 3)
    assert result.systems["fake"]["Acc@3"] == pytest.approx(2 / 3)
    assert [result.per_query["fake"][q]["answer_rank"] for q in ("0", "1", "2")] == [2, 3, None]
    ov = result.overlap
    # "where is the tower" vs "Paris, France since 1889.": no shared word; "who found x rays" vs
    # "Röntgen discovered X-rays in 1895": x, rays -> 2/4
    assert ov["per_query"] == {"0": 0.0, "1": 0.5, "2": None}
    assert ov["buckets"]["0.0-0.2"]["n"] == 1 and ov["buckets"]["0.4-0.6"]["n"] == 1
    assert ov["buckets"]["no reference"]["n"] == 1
    assert ov["buckets"]["0.4-0.6"]["systems"]["fake"] == 1.0  # answered within top 20


def test_answers_need_a_store():
    with pytest.raises(EvaluationError, match="corpus store"):
        evaluate_retrievers([FakeRetriever("fake", {})], AnswersTask([("q", ["a"])]))


def test_multihop_all_gold_by_passage_and_by_title(chunked_store):
    fake = FakeRetriever("fake", {"q": [("A-0", 3.0), ("C-0", 2.0), ("B-1", 1.0)]})
    by_pid = evaluate_retrievers([fake], MultiHopTask([MultiHopExample("q", ["A-0", "B-1"])], ks=[1, 2, 3]),
                                 EvaluationOptions(store=chunked_store))
    assert by_pid.systems["fake"] == {"Acc@1": 0.0, "Acc@2": 0.0, "Acc@3": 1.0, "queries": 1}
    by_title = evaluate_retrievers([fake], MultiHopTask([("q", ["Alpha", "Gamma"])], gold_by="title", ks=[1, 2, 3]),
                                   EvaluationOptions(store=chunked_store))
    assert by_title.systems["fake"]["Acc@2"] == 1.0 and by_title.systems["fake"]["Acc@1"] == 0.0


def test_overlap_buckets_follow_the_paper():
    assert [bucket_of(r) for r in (0.0, 0.19, 0.2, 0.59, 0.8, 1.0)] == \
        ["0.0-0.2", "0.0-0.2", "0.2-0.4", "0.4-0.6", "0.8-1.0", "0.8-1.0"]
    assert overlap_ratio(["who", "is", "who"], {"who"}) == pytest.approx(2 / 3)
    assert overlap_ratio([], {"x"}) is None


# --- input files ------------------------------------------------------------------------------


def test_beir_queries_qrels_and_trec_qrels(tmp_path):
    (tmp_path / "queries.jsonl").write_text('{"_id": "1", "text": "a"}\n{"_id": "2", "text": "b"}\n')
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n1\td1\t1\n1\td2\t2\n")
    (tmp_path / "qrels.trec").write_text("1 0 d1 1\n1 0 d2 2\n")
    assert load_queries(tmp_path) == {"1": "a", "2": "b"}
    assert load_qrels(tmp_path / "qrels.tsv") == load_qrels(tmp_path / "qrels.trec") == {"1": {"d1": 1, "d2": 2}}


@pytest.mark.parametrize("score", ["2.5", "1e308", "inf", "nan", "1001", "3000000000"])
def test_qrels_grade_not_an_integer_or_too_large_is_refused_with_file_and_line(tmp_path, score):
    # 1e308 and 3,000,000,000 reached pytrec_eval (a traceback; killed for memory), 2.5 was cut to 2
    qrels = tmp_path / "qrels.tsv"
    qrels.write_text(f"query-id\tcorpus-id\tscore\n1\td1\t1\n1\td2\t{score}\n")
    with pytest.raises(DatasetError, match=rf"qrels.tsv, line 3: the score '{score}' is (not an integer|over 1,000)"):
        load_qrels(qrels)


def test_qrels_negative_grades_read_as_not_relevant_and_counted(tmp_path):
    (tmp_path / "qrels.trec").write_text("1 0 d1 2.0\n1 0 d2 -2\n2 0 d3 -5\n2 0 d4 1000\n")
    qrels = load_qrels(tmp_path / "qrels.trec")
    assert qrels == {"1": {"d1": 2, "d2": 0}, "2": {"d3": 0, "d4": 1000}} and qrels.negative == 2
    assert "2 judgement(s) with negative grades counted as not relevant" in qrels.described()["notes"][0]


def test_metrics_refuse_grades_pytrec_eval_cannot_take():
    # a grade of -2 or -5 handed to pytrec_eval crashed the process with a segmentation fault
    for grade in (-2, 3_000_000_000, 2.5):
        with pytest.raises(ValueError, match="is not an integer in 0..1000"):
            qrels_metrics({"q1": {"d1": 1, "d2": grade}, "q2": {"d3": grade}},
                          {"q1": {"d1": 1.0, "d2": 2.0}, "q2": {"d3": 1.0, "d1": 0.5}})


def test_multihop_files(tmp_path):
    (tmp_path / "ids.jsonl").write_text('{"question": "q", "gold_passages": ["p1", "p2"]}\n')
    (tmp_path / "hotpot.json").write_text(json.dumps(
        [{"_id": "x", "question": "q", "supporting_facts": [["T1", 0], ["T2", 3], ["T1", 2]]}]))
    (tmp_path / "mixed.jsonl").write_text('{"question": "q", "gold_passages": ["p"]}\n'
                                          '{"question": "r", "gold_titles": ["T"]}\n')
    examples, by = load_multihop(tmp_path / "ids.jsonl")
    assert by == "passage" and examples[0].gold == ["p1", "p2"]
    examples, by = load_multihop(tmp_path / "hotpot.json")
    assert by == "title" and examples[0].gold == ["T1", "T2"] and examples[0].qid == "x"
    with pytest.raises(ValueError, match="mixes"):
        load_multihop(tmp_path / "mixed.jsonl")


def test_config_checks(tmp_path):
    with pytest.raises(ValueError, match="exactly one"):
        EvaluateConfig(out=Path("o"), index=[Path("i")])
    with pytest.raises(ValueError, match="queries"):
        EvaluateConfig(out=Path("o"), index=[Path("i")], qrels=Path("q.tsv"))
    cfg = EvaluateConfig(out="o", index="i", answers="a.jsonl", ks="20,1,5")
    assert cfg.ks == [1, 5, 20] and cfg.index == [Path("i")] and cfg.kind == "answers"
    beir = EvaluateConfig(out="o", index="i", queries=tmp_path)  # a BEIR folder: its test judgments
    assert beir.qrels == tmp_path / "qrels" / "test.tsv" and beir.kind == "qrels"


# --- the command ---------------------------------------------------------------------------------


def test_cli_qrels_with_bm25_writes_results_and_plots(chunked_store, tmp_path):
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "Eiffel Tower Paris"}\n'
                                            '{"_id": "q2", "text": "X-rays Würzburg"}\n'
                                            '{"_id": "q9", "text": "not judged"}\n', encoding="utf-8")
    (tmp_path / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tA\t1\nq2\tB\t1\n")
    out = tmp_path / "eval"
    result = runner.invoke(APP, ["evaluate", "--bm25", "--corpus", str(chunked_store),
                                       "--queries", str(tmp_path / "queries.jsonl"), "--qrels",
                                       str(tmp_path / "test.tsv"), "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert set(data) >= {"systems", "per_query", "config", "dataset", "overlap", "curves", "plots"}
    assert list(data["systems"]) == ["bm25"]
    assert data["systems"]["bm25"]["nDCG@10"] == 1.0 and data["systems"]["bm25"]["queries"] == 2
    assert set(data["per_query"]["bm25"]) == {"q1", "q2"}  # only judged queries
    assert data["dataset"]["aggregation"]["bm25"].startswith("MaxP")
    assert (out / "recall_at_k.png").stat().st_size > 1000 and (out / "overlap.png").exists()
    assert "nDCG@10" in result.output and "bm25" in result.output


def test_cli_qrels_negative_grades_count_as_not_relevant_and_results_say_so(chunked_store, tmp_path):
    # TREC's junk grade -2 (and -5) crashed evaluate with a segmentation fault inside pytrec_eval
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "Eiffel Tower Paris"}\n'
                                            '{"_id": "q2", "text": "X-rays Würzburg"}\n', encoding="utf-8")
    (tmp_path / "qrels.trec").write_text("q1 0 A 1\nq1 0 C -2\nq2 0 B -5\n")
    out = tmp_path / "eval"
    result = runner.invoke(APP, ["evaluate", "--bm25", "--corpus", str(chunked_store), "--queries",
                                 str(tmp_path / "queries.jsonl"), "--qrels", str(tmp_path / "qrels.trec"),
                                 "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert data["dataset"]["negative_grades"] == 2
    assert any("2 judgement(s) with negative grades counted as not relevant" in n for n in data["dataset"]["notes"])
    assert "negative grades counted as not relevant" in " ".join(result.output.split())
    assert data["per_query"]["bm25"]["q1"]["nDCG@10"] == 1.0
    assert data["per_query"]["bm25"]["q2"]["MRR@10"] == 0.0  # B, retrieved first, is junk: not relevant


def test_cli_qrels_grade_that_is_not_an_integer_exits_2(chunked_store, tmp_path):
    (tmp_path / "queries.jsonl").write_text('{"_id": "q1", "text": "Eiffel Tower Paris"}\n')
    (tmp_path / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tA\t2.5\n")
    result = runner.invoke(APP, ["evaluate", "--bm25", "--corpus", str(chunked_store), "--queries",
                                 str(tmp_path / "queries.jsonl"), "--qrels", str(tmp_path / "qrels.tsv"),
                                 "--out", str(tmp_path / "eval")])
    assert result.exit_code == 2
    assert "qrels.tsv, line 2: the score '2.5' is not an integer grade" in " ".join(result.output.split())


def test_cli_answers_side_by_side_table(chunked_store, tmp_path):
    qa = tmp_path / "qa.jsonl"
    qa.write_text('{"question": "where does the eiffel tower stand", "answer": ["Paris"]}\n'
                  '{"question": "who discovered x-rays", "answer": ["Röntgen"]}\n', encoding="utf-8")
    out = tmp_path / "eval"
    result = runner.invoke(APP, ["evaluate", "--bm25", "--corpus", str(chunked_store), "--answers", str(qa),
                                       "--k", "1,5", "--out", str(out), "--save-runs"])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    assert set(data["systems"]["bm25"]) == {"Acc@1", "Acc@5", "queries"}
    assert data["config"]["match"] == "string" and data["config"]["ks"] == [1, 5]
    assert (out / "accuracy_at_k.png").exists() and (out / "runs" / "bm25.trec").exists()
    assert "Acc@5" in result.output and "overlap" in result.output


def test_cli_rejects_bad_input_with_file_and_line(chunked_store, tmp_path):
    bad = tmp_path / "qas.tsv"
    bad.write_text("q\t['ok']\nq2\t{'not': 'a list'}\n")
    result = runner.invoke(APP, ["evaluate", "--bm25", "--corpus", str(chunked_store), "--answers", str(bad),
                                       "--out", str(tmp_path / "e")])
    assert result.exit_code == 2
    assert "line 2" in result.output and "qas.tsv" in result.output
    assert not (tmp_path / "e" / "results.json").exists()
    result = runner.invoke(APP, ["evaluate", "--bm25", "--corpus", str(chunked_store), "--answers", str(bad)])
    assert result.exit_code == 2 and "out is required (give --out" in " ".join(result.output.split())
    result = runner.invoke(APP, ["evaluate", "--bm25", "--answers", str(bad), "--out", str(tmp_path / "e")])
    assert result.exit_code == 2 and "corpus" in result.output


def test_cli_help_reads_like_a_manual():
    result = runner.invoke(APP, ["evaluate", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    for words in ("--index", "--bm25", "--qrels", "--answers", "--multihop", "MaxP", "Examples", "Exit status"):
        assert words in result.output


def test_cli_multihop_by_title_from_toml_config(chunked_store, tmp_path):
    mh = tmp_path / "hotpot.jsonl"
    mh.write_text('{"question": "Eiffel Tower and Röntgen X-rays", "gold_titles": ["Alpha", "Beta"]}\n'
                  '{"question": "Eiffel Tower", "gold_titles": ["Alpha", "Gamma"]}\n', encoding="utf-8")
    toml = tmp_path / "run.toml"
    toml.write_text(f'[evaluate]\nbm25 = true\ncorpus = "{chunked_store}"\nmultihop = "{mh}"\nks = [2, 5]\n'
                    f'plots = false\n', encoding="utf-8")
    out = tmp_path / "eval"
    result = runner.invoke(APP, ["evaluate", "--config", str(toml), "--out", str(out)])
    assert result.exit_code == 0, result.output
    data = json.loads((out / "results.json").read_text())
    # question 0: Alpha and Beta passages both match a query word; question 1: Gamma shares none
    assert data["systems"]["bm25"] == {"Acc@2": 0.5, "Acc@5": 0.5, "queries": 2}
    assert data["dataset"]["gold_by"] == "title" and "plots" not in data and not (out / "overlap.png").exists()
    assert data["per_query"]["bm25"]["1"] == {"all_gold_rank": None}


def test_paired_randomisation_counts_sign_patterns_as_by_hand():
    from pretriever.metrics import paired_randomisation

    # 3 differences of +0.1: only all-plus and all-minus reach |mean| 0.1, 2 of the 8 patterns
    assert paired_randomisation([0.5, 0.7, 0.9], [0.4, 0.6, 0.8]) == pytest.approx(2 / 8)
    # differences 1, -1, 2, 0 (mean 0.5): |s1 - s2 + 2 s3| >= 2 for 6 of the 8 (s1, s2, s3), either s4: 12/16
    assert paired_randomisation([1, 0, 2, 0], [0, 1, 0, 0]) == pytest.approx(12 / 16)
    assert paired_randomisation([0.3] * 40, [0.3] * 40) == 1.0  # no difference at all
    shifted = paired_randomisation([i / 40 + 0.2 for i in range(40)], [i / 40 for i in range(40)], resamples=999)
    assert shifted == pytest.approx(1 / 1000)  # no sign pattern but all-plus (and all-minus) reaches 0.2
    with pytest.raises(ValueError, match="equally long"):
        paired_randomisation([1, 2], [1])
