"""Training data without a model: pairs folders, --limit, --mix, BEIR qrels, DPR JSON, BM25 negatives, CLI errors."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from conftest import SCIFACT, shared
from helpers import cli_app, flat
from pretriever.cli.train import train_command
from pretriever.config import help_for
from pretriever.train.config import TrainConfig, parse_mix
from pretriever.train.errors import TrainError
from pretriever.data import DatasetError, load_qrels, load_queries, qrels_path, relevant
from pretriever.index.bm25 import BM25Index
from pretriever.train.labelled import (Example, Passages, fill_random_negatives, load_beir, load_dpr,
                                       mine_bm25_negatives)
from pretriever.train.pair_sampling import plan_mix, scan_pairs, select_rows, write_selected
from pretriever.train.run import TrainingData, trained_pairs, training_report, training_summary


def read_relevant(folder, split):
    return relevant(load_qrels(qrels_path(folder, split)))


def write_pairs(folder: Path, counts: dict[str, int], negatives: bool = True, missing_negative: int = 0) -> Path:
    """A pairs folder shaped like `pretriever mine` output: one file per method, synthetic but distinct texts."""
    folder.mkdir(parents=True, exist_ok=True)
    for method, n in counts.items():
        cols = {"pair_id": [f"{method}-{i}" for i in range(n)], "method": [method] * n,
                "query": [f"{method} query number {i}" for i in range(n)],
                "positive_passage_id": [f"{method}-p{i}" for i in range(n)],
                "positive_text": [f"{method} positive passage {i} with some words" for i in range(n)]}
        if negatives:
            cols["negative_passage_id"] = [None if i < missing_negative else f"{method}-n{i}" for i in range(n)]
            cols["negative_text"] = [None if i < missing_negative else f"{method} negative {i}" for i in range(n)]
        pq.write_table(pa.table(cols), folder / f"{method}.parquet", row_group_size=16)
    return folder


# ---------------------------------------------------------------- --mix and --limit

def test_parse_mix_normalises_and_rejects_bad_specs():
    assert parse_mix("dl:1,cm:3") == {"dl": 0.25, "cm": 0.75}
    assert parse_mix({"DL": 0.5, "cm": 0.5}) == {"dl": 0.5, "cm": 0.5}
    assert parse_mix(None) is None
    for bad in ("dl", "dl:x", "dl:0.5,dl:0.5", "dl:-1,cm:1", "dl:0,cm:1"):
        with pytest.raises(ValueError):
            parse_mix(bad)


def test_plan_mix_gives_the_asked_proportions_of_the_budget():
    assert plan_mix({"dl": 100, "cm": 50}, {"dl": 0.5, "cm": 0.5}, None) == {"dl": 50, "cm": 50}
    assert plan_mix({"dl": 100, "cm": 50}, {"dl": 0.5, "cm": 0.5}, 40) == {"dl": 20, "cm": 20}
    assert plan_mix({"dl": 100, "cm": 50}, {"dl": 0.7, "cm": 0.3}, 10) == {"dl": 7, "cm": 3}
    counts = plan_mix({"a": 1000, "b": 1000, "c": 1000}, parse_mix("a:1,b:1,c:1"), 100)
    assert sum(counts.values()) == 100 and max(counts.values()) - min(counts.values()) <= 1
    with pytest.raises(TrainError, match="cm needs 60"):
        plan_mix({"dl": 100, "cm": 50}, {"dl": 0.5, "cm": 0.5}, 120)
    with pytest.raises(TrainError, match="unknown method"):
        plan_mix({"dl": 100}, {"ict": 1.0}, None)


def test_mix_samples_each_method_in_proportion(tmp_path):
    folder = write_pairs(tmp_path / "pairs", {"dl": 80, "cm": 40, "ict": 30})
    scan = scan_pairs(folder, only=["dl", "cm"])
    rows, counts = select_rows(scan, parse_mix("dl:0.75,cm:0.25"), 40, seed=0)
    assert counts == {"dl": 30, "cm": 10} and len(rows) == 40
    n = write_selected(scan, rows, tmp_path / "train.arrow")
    table = pa.ipc.open_stream(pa.OSFile(str(tmp_path / "train.arrow"))).read_all()
    assert n == 40 and table.column_names == ["anchor", "positive", "negative"]
    queries = table.column("anchor").to_pylist()
    assert sum(q.startswith("dl ") for q in queries) == 30 and sum(q.startswith("cm ") for q in queries) == 10
    assert not any(q.startswith("ict ") for q in queries)
    # each row keeps its own positive and negative
    assert all(p.split()[3] == q.split()[3] for q, p in zip(queries, table.column("positive").to_pylist()))
    # no budget: the largest mixture the methods allow (cm has 40 -> 40 / 0.25 = 160 > 80 / 0.75 -> 106)
    _, counts = select_rows(scan, parse_mix("dl:0.75,cm:0.25"), None, seed=0)
    assert counts == {"dl": 80, "cm": 26} or counts == {"dl": 79, "cm": 27}
    assert sum(counts.values()) == 106


def test_limit_sampling_is_deterministic_under_the_seed(tmp_path):
    folder = write_pairs(tmp_path / "pairs", {"dl": 60, "cm": 60})
    scan = scan_pairs(folder)
    a, _ = select_rows(scan, None, 20, seed=1)
    b, _ = select_rows(scan, None, 20, seed=1)
    c, _ = select_rows(scan, None, 20, seed=2)
    assert len(a) == 20 and np.array_equal(a, b) and not np.array_equal(a, c)
    everything, counts = select_rows(scan, None, None, seed=1)
    assert len(everything) == 120 and counts == {"dl": 60, "cm": 60}


def test_pairs_without_a_negative_are_left_out_or_negatives_dropped(tmp_path):
    folder = write_pairs(tmp_path / "some", {"dl": 20}, missing_negative=5)
    scan = scan_pairs(folder)
    assert scan.with_negatives and scan.available == {"dl": 15} and scan.without_negative == {"dl": 5}
    scan = scan_pairs(folder, use_negatives=False)
    assert not scan.with_negatives and scan.available == {"dl": 20}
    folder = write_pairs(tmp_path / "none", {"dl": 20}, negatives=False)
    scan = scan_pairs(folder)
    assert not scan.with_negatives and scan.available == {"dl": 20} and "no negative column" in scan.negatives_note


def test_sentence_transformers_export_and_method_from_file_name(tmp_path):
    folder = tmp_path / "st"
    folder.mkdir()
    pq.write_table(pa.table({"anchor": ["q1", "q2", "q3"], "positive": ["p1", "p2", "p3"],
                             "negative": ["n1", "n2", "n3"]}), folder / "wlp.parquet")
    scan = scan_pairs(folder)
    assert scan.methods == ["wlp"] and scan.with_negatives and scan.available == {"wlp": 3}


def test_a_folder_without_pairs_json_says_which_files_it_read(tmp_path):
    from pretriever.testing import RecordingReporter
    from pretriever.train.run import build_data

    folder = write_pairs(tmp_path / "pairs", {"dl": 6})
    write_pairs(folder / "old-run", {"ict": 4})  # a stray folder of pairs inside
    heard = RecordingReporter()
    said = heard.messages
    data = build_data(TrainConfig(out=tmp_path / "m", pairs=folder), heard)
    note = next((s for s in said if "pairs.json" in s), "")
    assert "dl.parquet" in note and "old-run/ict.parquet" in note and "(2)" in note
    assert data.info["unlisted_files"] == note and data.counts == {"dl": 6, "ict": 4}
    (folder / "pairs.json").write_text(json.dumps({"methods": {"dl": {"file": "dl.parquet"}}}))
    said.clear()
    data = build_data(TrainConfig(out=tmp_path / "m2", pairs=folder), heard)
    assert not any("pairs.json" in s for s in said) and data.info["unlisted_files"] is None
    assert data.counts == {"dl": 6}


def test_unusable_pairs_folders_give_clear_errors(tmp_path):
    bad = tmp_path / "bad"
    bad.mkdir()
    pq.write_table(pa.table({"method": ["dl"], "query": ["q"]}), bad / "dl.parquet")
    with pytest.raises(TrainError, match="positive_text"):
        scan_pairs(bad)
    (tmp_path / "empty").mkdir()
    with pytest.raises(TrainError, match="no Parquet pair files"):
        scan_pairs(tmp_path / "empty")
    with pytest.raises(TrainError, match="does not exist"):
        scan_pairs(tmp_path / "nowhere")
    folder = write_pairs(tmp_path / "pairs", {"dl": 5, "cm": 5})
    with pytest.raises(TrainError, match=r"--mix names method\(s\) ict"):
        scan_pairs(folder, only=["dl", "ict"])


def test_config_checks():
    with pytest.raises(ValueError, match="exactly one source"):
        TrainConfig(out="m")
    with pytest.raises(ValueError, match="exactly one source"):
        TrainConfig(out="m", pairs="p", beir="b")
    with pytest.raises(ValueError, match="similarity"):
        TrainConfig(out="m", pairs="p", similarity="l2")
    with pytest.raises(ValueError, match="--mix"):
        TrainConfig(out="m", beir="b", mix="dl:1")
    with pytest.raises(ValueError, match="pick one"):
        TrainConfig(out="m", pairs="p", resume=True, overwrite=True)
    cfg = TrainConfig(out="m", pairs="p", similarity="cosine", mix="dl:1,cm:1")
    assert cfg.similarity == "cos" and cfg.mix == {"dl": 0.5, "cm": 0.5}
    assert cfg.learning_rate == 2e-5 and cfg.warmup_ratio == 0.1 and (cfg.max_query_length, cfg.max_passage_length) == (150, 256)


def test_toml_train_table_fills_the_config(tmp_path):
    from pretriever.config import build_config

    toml = tmp_path / "run.toml"
    toml.write_text('[train]\nbatch_size = 400\nmini_batch_size = 64\nmix = {dl = 1, cm = 1}\n'
                    'similarity = "dot"\nscale = 1.0\npooling = "cls"\nshared_encoder = false\n')
    cfg = build_config(TrainConfig, toml, "train", out=tmp_path / "m", pairs=tmp_path / "p", batch_size=None, scale=2.0)
    assert (cfg.batch_size, cfg.mini_batch_size, cfg.similarity, cfg.pooling) == (400, 64, "dot", "cls")
    assert cfg.mix == {"dl": 0.5, "cm": 0.5} and cfg.scale == 2.0 and cfg.shared_encoder is False


def test_training_report_counts_pairs_and_records_a_resumed_run():
    # the trainer's state after 10 steps of 2 epochs over 20 pairs (batch 4: 5 steps an epoch)
    state = SimpleNamespace(global_step=10, max_steps=10, epoch=2.0, log_history=[])
    cfg = TrainConfig(out="m", pairs="p", epochs=2, batch_size=4)
    assert trained_pairs(cfg, 20, state, start_step=0, planned_steps=10, per_epoch=5) == (40, 5)
    # the trainer planned 12 steps (a no-duplicates sampler needed more batches): 6 an epoch
    assert trained_pairs(cfg, 20, SimpleNamespace(global_step=12, max_steps=12), 0, 10, 5) == (40, 6)
    # --max-steps, resumed at step 4: 6 steps of 4 pairs were run here
    steps_cfg = TrainConfig(out="m", pairs="p", max_steps=10, batch_size=4)
    assert trained_pairs(steps_cfg, 20, state, start_step=4, planned_steps=10, per_epoch=5) == (24, 5)

    curve = [{"step": 1, "epoch": 0.2, "loss": 2.5, "learning_rate": 1e-5},
             {"step": 10, "epoch": 2.0, "loss": 0.75, "learning_rate": 0.0}]
    training = training_summary(cfg, state, 5, Path("m/checkpoints/checkpoint-4"), 4, curve)
    assert training == {"steps": 10, "steps_per_epoch": 5, "epochs": 2.0, "batch_size": 4, "world_size": 1,
                        "loss": "MultipleNegativesRankingLoss", "resumed_from": str(Path("m/checkpoints/checkpoint-4")),
                        "resumed_at_step": 4, "final_loss": 0.75}
    data = TrainingData(Path("x.arrow"), 20, {"dl": 20}, True, {"source": "pairs"})
    report = training_report(cfg, data, {"base": "b"}, training, curve, 40, train_seconds=8.0, train_cpu=15.99991,
                             total_seconds=9.12345).to_json()
    assert list(report) == ["pretriever_version", "config", "data", "model", "training", "loss_curve", "seconds",
                            "pairs_trained", "pairs_per_second"]
    assert report["data"] == {"pairs": 20, "per_method": {"dl": 20}, "negatives": True, "source": "pairs"}
    assert report["seconds"] == {"train": 8.0, "total": 9.123, "train_cpu": 16.0}
    assert report["pairs_per_second"] == 5.0 and report["config"]["batch_size"] == 4
    cached = TrainConfig(out="m", pairs="p", mini_batch_size=2)
    assert training_summary(cached, state, 5, None, 0, [])["loss"] == "CachedMultipleNegativesRankingLoss"


def test_defaults_and_help_live_in_the_config():
    assert help_for(TrainConfig, "learning_rate").endswith("HLP: 2e-5. Default: 2e-5.")
    assert help_for(TrainConfig, "batch_size").endswith("Default: 32.")
    assert "Default: the packaged all-MiniLM-L6-v2" in help_for(TrainConfig, "model")


# ---------------------------------------------------------------- CLI errors (no model is loaded)

def test_cli_reports_bad_data_and_options(tmp_path):
    runner = CliRunner()
    app = cli_app(train=train_command)
    bad = tmp_path / "bad"
    bad.mkdir()
    pq.write_table(pa.table({"method": ["dl"], "query": ["q"]}), bad / "dl.parquet")
    result = runner.invoke(app, ["train", str(bad), "--out", str(tmp_path / "m1")])
    assert result.exit_code == 2 and "positive_text" in flat(result.output)

    pairs = write_pairs(tmp_path / "pairs", {"dl": 10, "cm": 10})
    result = runner.invoke(app, ["train", str(pairs), "--out", str(tmp_path / "m2"), "--mix", "dl:0.5,bfs:0.5"])
    assert result.exit_code == 2 and "bfs" in result.output and "it has: cm, dl" in flat(result.output)
    assert not (tmp_path / "m2").exists()  # a failed start leaves no MODEL_DIR behind

    result = runner.invoke(app, ["train", "--out", str(tmp_path / "m3")])
    assert result.exit_code == 2 and "exactly one source" in flat(result.output)

    result = runner.invoke(app, ["train", str(pairs), "--out", str(tmp_path / "m4"), "--resume"])
    assert result.exit_code == 2 and "nothing to resume" in flat(result.output)

    (tmp_path / "m5").mkdir()
    (tmp_path / "m5" / "notes.txt").write_text("mine")
    result = runner.invoke(app, ["train", str(pairs), "--out", str(tmp_path / "m5"), "--overwrite"])
    assert result.exit_code == 2 and "pretriever did not write" in flat(result.output)
    assert (tmp_path / "m5" / "notes.txt").exists()

    config = tmp_path / "run.toml"
    config.write_text("[train]\nbatch_sizes = 4\n")
    result = runner.invoke(app, ["train", str(pairs), "--out", str(tmp_path / "m6"), "--config", str(config)])
    assert result.exit_code == 2 and "batch_sizes" in flat(result.output)


def test_cli_help_reads_like_a_manual():
    result = CliRunner().invoke(cli_app(train=train_command), ["train", "--help"], terminal_width=200)
    assert result.exit_code == 0
    for text in ("2e-5", "400", "--mini-batch-size", "--resume", "Examples", "accelerate launch", "--separate-encoders"):
        assert text in result.output


# ---------------------------------------------------------------- BEIR and DPR

def test_beir_qrels_reader_on_scifact_train():
    folder = shared(SCIFACT)
    queries = load_queries(folder)
    qrels = read_relevant(folder, "train")
    assert len(qrels) == 809
    assert sum(len(v) for v in qrels.values()) == 919
    assert all(q in queries for q in qrels)
    with pytest.raises(DatasetError, match="splits found: test, train"):
        qrels_path(folder, "dev")


def test_beir_few_shot_is_seeded_and_bm25_negatives_are_not_positives():
    folder = shared(SCIFACT)
    a, passages = load_beir(folder, "train", 16, seed=0, prepend_title=True)
    b, _ = load_beir(folder, "train", 16, seed=0, prepend_title=True)
    c, _ = load_beir(folder, "train", 16, seed=1, prepend_title=True)
    qids = [e.qid for e in a.examples]
    assert a.queries == 16 and qids == [e.qid for e in b.examples] and set(qids) != {e.qid for e in c.examples}
    qrels = read_relevant(folder, "train")
    assert len(a.examples) == sum(len(qrels[q]) for q in set(qids))
    ids, texts = passages.all()
    retriever = BM25Index.build_from_texts(ids, texts)
    stats = mine_bm25_negatives(a.examples, retriever, passages, depth=10, seed=0)
    assert stats["bm25"] == len(a.examples) and stats["random_fallback"] == 0
    by_text = dict(zip(texts, ids))
    for e in a.examples:
        assert e.negative and e.negative != e.positive
        assert by_text[e.negative] not in qrels[e.qid]  # never one of the query's relevant documents
        top = [h.passage_id for h in retriever.search([e.query], 10)[0]]
        assert by_text[e.negative] in top


def test_random_negative_fallback_is_seeded_and_never_a_positive():
    corpus = {f"d{i}": (f"T{i}", f"text {i}") for i in range(30)}

    def run(seed):
        examples = [Example(qid=str(i), query=f"q{i}", positive_id=f"d{i}", positive=f"T{i} text {i}",
                            exclude={f"d{i}", f"d{i + 1}"}) for i in range(10)]
        assert fill_random_negatives(examples, Passages(corpus), seed) == 10
        for i, e in enumerate(examples):
            assert e.negative not in (f"T{i} text {i}", f"T{i + 1} text {i + 1}")
        return [e.negative for e in examples]

    assert run(0) == run(0) and run(0) != run(1)


def test_dpr_reader_takes_the_first_positive_and_skips_answer_holding_negatives(tmp_path):
    ctx = lambda pid, title, text: {"passage_id": pid, "title": title, "text": text}  # noqa: E731
    records = [
        {"question": "who wrote the origin of species", "answers": ["Charles Darwin"],
         "positive_ctxs": [ctx("1", "On the Origin of Species", "a book by Charles Darwin published in 1859")],
         "negative_ctxs": [], "hard_negative_ctxs": [ctx("2", "Origin", "the origin of species of birds, "
                                                        "wrote Charles Darwin")]},
        {"question": "what is the capital of france", "answers": ["Paris"],
         "positive_ctxs": [ctx("3", "France", "Paris is the capital of France")],
         "negative_ctxs": [ctx("4", "Lyon", "Lyon is a city in France, not the capital")], "hard_negative_ctxs": []},
        {"question": "no positive here", "answers": [], "positive_ctxs": [], "negative_ctxs": []},
        {"question": "species of finches", "answers": ["Geospiza"],
         "positive_ctxs": [ctx("5", "Darwin's finches", "Geospiza is a genus of finches")],
         "negative_ctxs": [ctx("6", "Species", "a species is a group of organisms; origin of species")],
         "hard_negative_ctxs": []},
    ]
    path = tmp_path / "train.json"
    path.write_text(json.dumps(records))
    data, passages = load_dpr(path, None, 0, True, "file")
    assert data.queries == 3 and data.notes["records_without_positive"] == 1
    first = data.examples[0]
    assert first.positive == "On the Origin of Species a book by Charles Darwin published in 1859"
    assert first.negative.startswith("Origin ")  # DPR's own hard negative
    assert data.examples[1].negative.startswith("Lyon ")  # falls back to negative_ctxs

    data, passages = load_dpr(path, None, 0, True, "bm25")
    stats = mine_bm25_negatives(data.examples, BM25Index.build_from_texts(*passages.all()), passages, 10, 0)
    first = data.examples[0]
    # the best BM25 hit "Origin ... wrote Charles Darwin" holds the answer: DPR's rule skips it
    assert first.negative is not None and "Charles Darwin" not in first.negative
    assert stats["bm25"] + stats.get("random_fallback", 0) == 3

    with pytest.raises(TrainError, match="DPR"):
        bad = tmp_path / "bad.json"
        bad.write_text(json.dumps([{"query": "x"}]))
        load_dpr(bad, None, 0, True, "bm25")


@pytest.mark.slow
def test_beir_passages_and_bm25_negatives_from_a_corpus_store(tmp_path):
    from pretriever.corpus import build
    from pretriever.corpus.config import CorpusConfig
    from pretriever.data.store import CorpusStore
    from pretriever.train.labelled import bm25_retriever

    folder = shared(SCIFACT)
    assert build.run(CorpusConfig(input=folder, out=tmp_path / "store", workers=2)).manifest
    store = CorpusStore(tmp_path / "store")
    from_store, passages = load_beir(folder, "train", 16, seed=0, prepend_title=True, store=store)
    from_jsonl, _ = load_beir(folder, "train", 16, seed=0, prepend_title=True)
    # the store keeps BEIR documents whole under their BEIR ids: the same examples either way
    assert [(e.qid, e.positive_id) for e in from_store.examples] == [(e.qid, e.positive_id) for e in from_jsonl.examples]
    assert [" ".join(e.positive.split()) for e in from_store.examples] == \
        [" ".join(e.positive.split()) for e in from_jsonl.examples]
    retriever, what = bm25_retriever(passages)
    assert "corpus store" in what
    stats = mine_bm25_negatives(from_store.examples, retriever, passages, depth=10, seed=0)
    qrels = read_relevant(folder, "train")
    assert stats["bm25"] == len(from_store.examples)
    texts = passages.get([h.passage_id for e in from_store.examples for h in retriever.search([e.query], 10)[0]])
    for e in from_store.examples:
        top = {texts[h.passage_id]: h.passage_id for h in retriever.search([e.query], 10)[0]}
        assert e.negative in top and top[e.negative] not in qrels[e.qid]
