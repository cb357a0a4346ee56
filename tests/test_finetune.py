"""Two-stage fine-tuning: negatives mined with an index (never a judged positive, depth and count, seeded,
one column each) and `pretriever finetune --two-stage` end to end, resumed, on real SciFact text."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

import pretriever.train.finetune
import pretriever.train.run
from pretriever.cli.train import finetune_command
from pretriever.corpus import build
from pretriever.corpus.config import CorpusConfig
from pretriever.data import PassageLookup, load_qrels, load_queries, qrels_path, relevant
from pretriever.index import IndexFolder
from pretriever.index.bm25 import BM25Index
from pretriever.retrieval import Hit
from pretriever.train import FinetuneConfig, TrainConfig
from pretriever.train.finetune import stage_config
from pretriever.train.manifest import FinetuneManifest
from pretriever.train.index_negatives import mine_bm25_sample, mine_index_negatives
from pretriever.train.labelled import Example, LabelledData, Passages, load_beir
from pretriever.train.model import route
from pretriever.train.pair_sampling import write_records
from conftest import SCIFACT, shared
from helpers import cli_app, flat
from train_callbacks import Interrupt, Steps

TINY = dict(max_query_length=32, max_passage_length=64)


@pytest.fixture(scope="module")
def scifact40():
    """40 train claims drawn with seed 0 (46 judged pairs), the whole SciFact corpus and BM25 over it."""
    data, passages = load_beir(shared(SCIFACT), "train", 40, 0, True)
    bm25 = BM25Index.build_from_texts(*passages.all())
    return data, passages, bm25


def fresh(data: LabelledData) -> list[Example]:
    return [Example(e.qid, e.query, e.positive_id, e.positive, exclude=set(e.exclude)) for e in data.examples]


def texts_of(passages: Passages, hits: list[Hit]) -> list[str]:
    found = passages.get([h.passage_id for h in hits])
    return [found[h.passage_id] for h in hits]


# ---------------------------------------------------------------- the miner, no model

def test_mined_negatives_are_never_a_judged_positive_on_scifact(scifact40):
    data, passages, bm25 = scifact40
    examples = fresh(data)
    stats = mine_index_negatives(examples, bm25, None, passages, depth=200, count=15, seed=0)
    # checked by hand: 45 of the 46 judged documents are in their claim's BM25 top 200
    assert stats == {"queries": 40, "judged_positives_skipped": 45, "queries_short": 0, "index": 600,
                     "random_fallback": 0}
    # claim 69 has two judged documents, and BM25 ranks them first and second
    top = [h.passage_id for h in bm25.search([next(e.query for e in examples if e.qid == "69")], 200)[0]]
    assert top[:2] == ["4414547", "5956380"] or top[:2] == ["5956380", "4414547"]
    judged_text = passages.get(["4414547", "5956380"])
    for e in (e for e in examples if e.qid == "69"):
        assert len(e.negatives) == 15 and not set(e.negatives) & set(judged_text.values())
    for e in examples:
        top_texts = texts_of(passages, bm25.search([e.query], 200)[0])
        positives = set(passages.get(sorted(e.exclude)).values())
        assert len(set(e.negatives)) == 15 and set(e.negatives) <= set(top_texts)
        assert not set(e.negatives) & positives and e.positive not in e.negatives


def test_depth_and_count_are_respected(scifact40):
    data, passages, bm25 = scifact40
    examples = fresh(data)
    mine_index_negatives(examples, bm25, None, passages, depth=20, count=5, seed=0)
    for e in examples:
        top20 = texts_of(passages, bm25.search([e.query], 20)[0])
        assert len(e.negatives) == 5 and set(e.negatives) <= set(top20)
        assert [t for t in top20 if t in e.negatives] == e.negatives  # kept in rank order

    # claim 69: 16 hits minus its 2 judged documents leave 14, one short of 15: a seeded random top-up
    only69 = [e for e in fresh(data) if e.qid == "69"]
    stats = mine_index_negatives(only69, bm25, None, passages, depth=16, count=15, seed=0)
    assert stats["queries_short"] == 1 and stats["index"] == 14 and stats["random_fallback"] == 1
    judged = set(passages.get(["4414547", "5956380"]).values())
    assert len(set(only69[0].negatives)) == 15 and not set(only69[0].negatives) & judged


def test_the_draw_is_seeded_per_query(scifact40):
    data, passages, bm25 = scifact40

    def draw(seed: int, keep=lambda e: True) -> dict[str, list[str]]:
        examples = [e for e in fresh(data) if keep(e)]
        mine_index_negatives(examples, bm25, None, passages, depth=200, count=15, seed=seed)
        return {e.qid: e.negatives for e in examples}

    first, again, other = draw(0), draw(0), draw(1)
    assert first == again
    assert sum(first[q] != other[q] for q in first) >= 35  # 15 of ~198 candidates: another seed, another draw
    # a query's draw does not depend on the other queries or on the batches
    assert draw(0, lambda e: e.qid == "69")["69"] == first["69"]


class Ranked:
    """A retriever that returns a fixed ranking for every query (the miner must not trust it)."""

    name = "fixed"

    def __init__(self, ids: list[str]):
        self.ids = ids

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        return [[Hit(pid, 1.0 - i / 100) for i, pid in enumerate(self.ids[:k])] for _ in queries]


def test_every_passage_of_a_judged_document_is_skipped_and_grade_zero_is_not_judged(tmp_path):
    """A store cut into passages: hits are passages, judgments name documents (qrels scores 2, 1 and 0)."""
    beir = tmp_path / "beir"
    (beir / "qrels").mkdir(parents=True)
    words = " ".join(f"w{i}" for i in range(28))  # 30 words a document: 3 passages of 10
    docs = [{"_id": f"d{i}", "title": f"T{i}", "text": f"doc {i} {words}"} for i in range(8)]
    (beir / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "doc zero"}) + "\n")
    (beir / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td0\t2\nq1\td1\t1\nq1\td2\t0\n")
    assert build.run(CorpusConfig(input=beir, out=tmp_path / "store", words=10, workers=1)).manifest
    lookup = PassageLookup(tmp_path / "store")
    try:
        pids, _ = Passages(store=lookup.store).all()
        doc_of = lookup.doc_ids(pids)
        pids = sorted(pids, key=lambda p: (doc_of[p], pids.index(p)))
        assert len(pids) == 24 and sum(d == "d0" for d in doc_of.values()) == 3  # 3 passages per document
        data, passages = load_beir(beir, "train", None, 0, True)
        assert {e.positive_id for e in data.examples} == {"d0", "d1"}  # grade 0 is not relevant
        examples = data.examples
        # the judged documents' passages first, then d2's (graded 0), then the rest
        stats = mine_index_negatives(examples, Ranked(pids), lookup, passages, depth=24, count=18, seed=0)
        assert stats["judged_positives_skipped"] == 6 and stats["index"] == 18 and stats["queries_short"] == 0
        texts = lookup.passage_texts(pids, True)
        for e in examples:
            sources = {doc_of[p] for p in pids if texts[p] in e.negatives}
            assert sources == {"d2", "d3", "d4", "d5", "d6", "d7"}  # every passage not of d0 or d1
    finally:
        lookup.close()


def test_retriever_1_draws_15_bm25_negatives_from_the_top_200_never_a_positive(scifact40):
    """Stage 1 as the paper and caskcsg's eval_msmarco.sh (Tevatron, --train_n_passages 16): 15 BM25 negatives
    per query from BM25's top k, judged positives left out, the same count as retriever 2 by default."""
    data, passages, bm25 = scifact40
    examples = fresh(data)
    stats = mine_bm25_sample(examples, bm25, passages, depth=200, count=15, seed=0)
    queries = list(dict.fromkeys(e.qid for e in examples))
    assert stats["bm25"] == 15 * len(queries) and stats["random_fallback"] == 0 and "index" not in stats
    for e in examples:
        top = texts_of(passages, bm25.search([e.query], 200)[0])
        judged = {passages.get([d])[d] for d in e.exclude}
        assert len(e.negatives) == 15 and set(e.negatives) <= set(top) and not set(e.negatives) & judged
    cfg = FinetuneConfig(out=Path("ft"), beir=shared(SCIFACT))
    assert cfg.bm25_negatives == cfg.negatives_per_query == 15 and cfg.bm25_depth == cfg.negative_depth == 200
    stage1 = stage_config(cfg, Path("ft/stage1"))
    assert (stage1.hard_negatives, stage1.bm25_negatives, stage1.bm25_depth) == ("bm25", 15, 200)
    assert TrainConfig(out=Path("m"), beir=shared(SCIFACT)).bm25_negatives == 1  # plain train keeps DPR's one negative


def test_several_negatives_become_one_column_each(tmp_path):
    examples = [Example("q", "a query", "d1", "its positive", negatives=["n1", "n2", "n3"])]
    records = LabelledData("beir:train", examples, 1).records(with_negatives=True)
    assert list(records) == ["anchor", "positive", "negative_1", "negative_2", "negative_3"]
    assert write_records(records, tmp_path / "t.arrow") == 1
    from datasets import Dataset

    dataset = Dataset.from_file(str(tmp_path / "t.arrow"))
    assert dataset.column_names == list(records) and dataset[0]["negative_3"] == "n3"
    assert [route(c) for c in dataset.column_names] == ["query"] + ["document"] * 4
    one = LabelledData("beir:train", [Example("q", "a", "d", "p", negatives=["n"])], 1).records(True)
    assert list(one) == ["anchor", "positive", "negative"]  # one hard negative keeps its usual name


def test_settings_that_cannot_mine_are_refused(tmp_path):
    with pytest.raises(ValueError, match="--beir"):
        TrainConfig(out=tmp_path / "m", pairs=tmp_path, negatives_from=tmp_path / "idx")
    with pytest.raises(ValueError, match="cannot exceed"):
        TrainConfig(out=tmp_path / "m", beir=tmp_path, negatives_from=tmp_path / "idx", negative_depth=10,
                    negatives_per_query=15)
    with pytest.raises(ValueError, match="--no-negatives"):
        TrainConfig(out=tmp_path / "m", beir=tmp_path, negatives_from=tmp_path / "idx", use_negatives=False)
    with pytest.raises(ValueError, match="--beir"):
        FinetuneConfig(out=tmp_path / "ft", pairs=tmp_path)
    with pytest.raises(ValueError, match="cannot exceed"):
        TrainConfig(out=tmp_path / "m", beir=tmp_path, bm25_negatives=15, bm25_depth=10)
    with pytest.raises(ValueError, match="DPR"):
        TrainConfig(out=tmp_path / "m", dpr=tmp_path / "d.json", bm25_negatives=2)
    # the mined-negative settings only matter to a run that mines
    assert "negatives_per_query" not in TrainConfig(out=tmp_path / "m", beir=tmp_path).run_settings()


# ---------------------------------------------------------------- finetune, with the model

@pytest.fixture(scope="module")
def tiny_beir(tmp_path_factory) -> Path:
    """SciFact in BEIR layout, cut to the first 6 train claims, their 6 judged abstracts and 24 others."""
    source = shared(SCIFACT)
    rows = (source / "qrels" / "train.tsv").read_text(encoding="utf-8").splitlines()[1:]
    qids = list(dict.fromkeys(r.split("\t")[0] for r in rows))[:6]
    kept = [r for r in rows if r.split("\t")[0] in qids]
    judged = {r.split("\t")[1] for r in kept}
    docs = []
    with open(source / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            if json.loads(line)["_id"] in judged or len(docs) < 30 - len(judged):
                docs.append(line)
    folder = tmp_path_factory.mktemp("tiny") / "scifact"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text("".join(docs), encoding="utf-8")
    (folder / "queries.jsonl").write_text((source / "queries.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    (folder / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(kept) + "\n",
                                                encoding="utf-8")
    assert len(docs) == 30 and len(judged) == 6
    return folder


@pytest.mark.slow
def test_finetune_two_stage_runs_end_to_end_then_keeps_what_is_done(tiny_beir, tmp_path):
    out = tmp_path / "ft"
    args = ["finetune", "--beir", str(tiny_beir), "--two-stage", "--negatives-per-query", "2", "--negative-depth",
            "10", "--bm25-negatives", "2", "--bm25-depth", "10", "--batch-size", "4", "--max-steps", "1", "--max-query-length", "32", "--max-passage-length", "64",
            "--index-batch-size", "16", "--out", str(out)]
    result = CliRunner().invoke(cli_app(finetune=finetune_command), args, env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    squeezed = re.sub(r"[\s│┃]", "", result.output)  # the table folds long paths over lines
    for stage in ("stage1", "store", "stage1-index", "stage2"):
        assert str(out / stage) in squeezed  # where each stage's output is
    plan = json.loads((out / "finetune.json").read_text())
    assert [(s["name"], s["ran"]) for s in plan["stages"]] == [
        ("retriever 1", True), ("corpus store", True), ("index of retriever 1", True), ("retriever 2", True)]
    assert FinetuneManifest.read(out).to_json() == plan  # the typed manifest reads back what it wrote
    first = json.loads((out / "stage1" / "train.json").read_text())
    second = json.loads((out / "stage2" / "train.json").read_text())
    assert first["data"]["pairs"] == 6 and first["data"]["negatives_found"]["bm25"] == 2 * 6  # 2 per claim, BM25
    assert second["data"]["hard_negatives"] == f"index {out / 'stage1-index'}"
    assert second["data"]["negatives_per_pair"] == 2 and second["data"]["negatives_store"] == str(
        (out / "store").resolve())
    # retriever 1's top 10 of each claim: the judged abstracts in it were skipped, 2 others drawn per claim
    qrels = relevant(load_qrels(qrels_path(tiny_beir, "train")))
    queries = load_queries(tiny_beir)
    top = IndexFolder(out / "stage1-index").retriever().search([queries[q] for q in qrels], 10)
    judged_in_top = sum(h.passage_id in qrels[q] for q, row in zip(qrels, top) for h in row)
    assert judged_in_top >= 3
    assert second["data"]["negatives_found"] == {"queries": 6, "judged_positives_skipped": judged_in_top,
                                                 "queries_short": 0, "index": 12, "random_fallback": 0}
    assert first["config"]["model"] is None and second["config"]["model"] is None  # both start from --model
    meta = json.loads((out / "stage1-index" / "index.json").read_text())
    assert meta["encoder"]["model"] == str((out / "stage1").resolve())  # indexed with retriever 1

    trained = (out / "stage2" / "train.json").stat().st_mtime_ns
    again = CliRunner().invoke(cli_app(finetune=finetune_command), args, env={"COLUMNS": "250"})
    assert again.exit_code == 0, again.output
    assert [(s["name"], s["ran"]) for s in json.loads((out / "finetune.json").read_text())["stages"]] == [
        ("retriever 1", False), ("corpus store", False), ("index of retriever 1", False), ("retriever 2", False)]
    assert "finished earlier" in flat(again.output) and "built earlier" in flat(again.output)
    assert (out / "stage2" / "train.json").stat().st_mtime_ns == trained

    changed = CliRunner().invoke(cli_app(finetune=finetune_command), [*args[:-2], "--negatives-per-query", "3", "--out", str(out)],
                                 env={"COLUMNS": "250"})
    assert changed.exit_code == 2 and "negatives_per_query: 2 -> 3" in flat(changed.output)
    assert "stage2" in flat(changed.output)


@pytest.mark.slow
def test_an_interrupted_retriever_2_continues_from_its_checkpoint(tiny_beir, tmp_path):
    cfg = FinetuneConfig(out=tmp_path / "ft", beir=tiny_beir, two_stage=True, negatives_per_query=2,
                         negative_depth=10, batch_size=4, max_steps=3, save_steps=1, **TINY)

    def interrupt_stage_2(scfg: TrainConfig, report):  # stops in step 2, after checkpoint-1 was written
        return pretriever.train.run.run(scfg, Interrupt(2) if scfg.negatives_from is not None else report)

    with pytest.raises(KeyboardInterrupt):
        pretriever.train.finetune.run(cfg, run_train=interrupt_stage_2)
    assert (tmp_path / "ft" / "stage2" / "checkpoints" / "checkpoint-1").is_dir()
    assert (tmp_path / "ft" / "stage1" / "train.json").exists()

    steps, stages = Steps(), []
    result = pretriever.train.finetune.run(
        cfg, run_train=lambda scfg, _: stages.append(scfg.out.name) or pretriever.train.run.run(scfg, steps))
    assert stages == ["stage2"] and steps.seen == [2, 3]  # retriever 1 and the index were kept; step 1 was not redone
    assert [(s.name, s.ran, s.note) for s in result.stages][-1] == ("retriever 2", True, "resumed from its checkpoint")
    assert json.loads((tmp_path / "ft" / "stage2" / "train.json").read_text())["training"]["resumed_at_step"] == 1


def test_the_query_as_context_paper_is_cited_as_wu_et_al_2023():
    import importlib

    for name in ("pretriever.train.finetune", "pretriever.train.index_negatives"):
        module = importlib.import_module(name)
        assert "Wu et al. 2023" in module.__doc__ and "Xie" not in module.__doc__
