"""pretriever generate: doc2query mechanics on a tiny random T5 (no doc2query weights offline)."""

from __future__ import annotations

import json
import logging

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import pretriever.generate.run
from pretriever.cli import app
from pretriever.generate import GenerateConfig, GenerateError, import_queries
from pretriever.generate.prefix import model_prefix
from pretriever.data import QUERIES_FILE
from pretriever.generate.run import generate_batch
from pretriever import mine
from pretriever.mine import MineConfig
from pretriever.testing import beir_subset, random_t5
from conftest import SCIFACT, build, shared


@pytest.fixture(scope="module")
def t5(tmp_path_factory):
    return random_t5(tmp_path_factory.mktemp("t5") / "t5")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("sf")
    beir = beir_subset(root / "beir", shared(SCIFACT), n_docs=12)
    return build(beir, root / "store", words=60, workers=1)


def run(store, t5, out, **kw):
    options = dict(corpus=store.path, out=out, model=str(t5), per_passage=3, max_output_length=6,
                   max_input_length=32, batch_size=4, checkpoint_every=7)
    return pretriever.generate.run.run(GenerateConfig(**{**options, **kw}))


def rows(out):
    return pq.read_table(out / QUERIES_FILE).to_pylist()


@pytest.fixture(scope="module")
def whole(store, t5, tmp_path_factory):
    out = tmp_path_factory.mktemp("whole") / "q"
    result = run(store, t5, out)
    return out, result


def test_counts_and_manifest(store, whole):
    out, result = whole
    n = store.counts["passages"]
    assert n > 12  # 12 abstracts cut at 60 words give more passages than documents
    table = rows(out)
    assert len(table) == 3 * n == result.queries
    assert [r["candidate"] for r in table[:6]] == [0, 1, 2, 0, 1, 2]
    assert all(r["text"] for r in table)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["queries"] == 3 * n and manifest["passages_with_queries"] == n
    assert not (out / "parts").exists()


def test_deterministic_and_batch_independent(store, t5, whole, tmp_path):
    out, _ = whole
    run(store, t5, tmp_path / "again", batch_size=3)
    assert rows(tmp_path / "again") == rows(out)
    run(store, t5, tmp_path / "seed1", seed=1)
    assert rows(tmp_path / "seed1") != rows(out)


def test_resume_equals_whole(store, t5, whole, tmp_path, monkeypatch):
    out, _ = whole
    target = tmp_path / "resumed"
    calls = {"n": 0}
    real = generate_batch

    def failing(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:  # dies in the middle of the second chunk (7 passages, batches of 4)
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr("pretriever.generate.run.generate_batch", failing)
    with pytest.raises(KeyboardInterrupt):
        run(store, t5, target)
    assert len(list((target / "parts").glob("part-*.parquet"))) == 1
    with pytest.raises(GenerateError, match="--resume"):
        run(store, t5, target)
    with pytest.raises(GenerateError, match="per_passage"):
        run(store, t5, target, per_passage=2, resume=True)
    monkeypatch.setattr("pretriever.generate.run.generate_batch", real)
    result = run(store, t5, target, resume=True)
    assert result.passages == store.counts["passages"] - 7  # the first part was kept
    assert rows(target) == rows(out)


def test_shards_union_is_whole(store, t5, whole, tmp_path):
    out, _ = whole
    first = run(store, t5, tmp_path / "sh", shard="0/2")
    assert not first.complete and not (tmp_path / "sh" / QUERIES_FILE).exists()
    second = run(store, t5, tmp_path / "sh", shard="1/2")
    assert second.complete
    assert first.passages + second.passages == store.counts["passages"]
    assert rows(tmp_path / "sh") == rows(out)


def spy_inputs(monkeypatch) -> list[str]:
    """The texts given to the tokenizer from now on."""
    import transformers

    seen: list[str] = []
    real = transformers.PreTrainedTokenizerBase.__call__

    def spy(self, text=None, *args, **kwargs):
        if isinstance(text, list):
            seen.extend(text)
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(transformers.PreTrainedTokenizerBase, "__call__", spy)
    return seen


def test_prefix_is_applied(store, t5, monkeypatch, tmp_path):
    seen = spy_inputs(monkeypatch)
    run(store, t5, tmp_path / "p", prefix="text2query: ", limit=2)
    assert len(seen) == 2 and all(s.startswith("text2query: ") for s in seen)
    assert all(len(s) > len("text2query: ") + 20 for s in seen)  # the passage follows the prefix


def test_a_with_prefix_model_gets_its_prefix_without_being_told(store, monkeypatch, tmp_path, caplog):
    model = random_t5(tmp_path / "doc2query" / "all-with-prefix-t5-base-v1")
    seen = spy_inputs(monkeypatch)
    with caplog.at_level(logging.WARNING):
        result = run(store, model, tmp_path / "q", limit=2)
    assert len(seen) == 2 and all(s.startswith("text2query: ") for s in seen)
    assert "'text2query: '" in result.prefix_note and "with-prefix" in result.prefix_note
    assert result.manifest.options["prefix"] == "text2query: " and not caplog.records
    seen.clear()
    run(store, model, tmp_path / "bare", limit=2, prefix="")  # told: none
    assert len(seen) == 2 and not any(s.startswith("text2query") for s in seen)


def test_an_unknown_model_without_a_prefix_is_warned_about(store, t5, monkeypatch, tmp_path, caplog):
    seen = spy_inputs(monkeypatch)
    with caplog.at_level(logging.WARNING):
        result = run(store, t5, tmp_path / "q", limit=2)
    assert result.prefix_note.startswith("warning:") and "--prefix 'text2query: '" in result.prefix_note
    assert any("needs a prefix" in r.getMessage() for r in caplog.records)
    assert len(seen) == 2 and not any(s.startswith("text2query") for s in seen)


def test_a_prefix_named_in_the_config_is_used(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "config.json").write_text(json.dumps({"model_type": "t5", "task_specific_params": {
        "summarization": {"prefix": "summarize: "}, "query_generation": {"prefix": "generate query: "}}}))
    assert model_prefix(str(tmp_path / "a"))[0] == "generate query: "
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "config.json").write_text(json.dumps({"model_type": "t5", "prefix": "q: "}))
    assert model_prefix(str(tmp_path / "b"))[0] == "q: "
    assert model_prefix("castorini/doc2query-t5-base-msmarco") == ("", "a doc2query model trained on the bare passage")


def test_import_tsv_and_jsonl(store, tmp_path):
    con = store.connect()
    (pid, doc), = con.sql("SELECT passage_id, doc_id FROM passages WHERE position = 0 LIMIT 1").fetchall()
    tsv = tmp_path / "q.tsv"
    tsv.write_text(f"{pid}\tfirst query\tsecond query\nnot-an-id\tlost\n{pid}\tthird\n", encoding="utf-8")
    result = import_queries(GenerateConfig(corpus=store.path, out=tmp_path / "tsv", from_file=tsv))
    assert [(r["passage_id"], r["candidate"], r["text"]) for r in rows(tmp_path / "tsv")] == [
        (pid, 0, "first query"), (pid, 1, "second query"), (pid, 2, "third")]
    assert result.skipped["unknown_id"] == 1
    jl = tmp_path / "q.jsonl"
    jl.write_text(json.dumps({"id": doc, "predicted_queries": ["a", "b"]}) + "\n", encoding="utf-8")
    # the stage's own run imports too, as the command does (before, it ignored from_file and loaded a model)
    pretriever.generate.run.run(GenerateConfig(corpus=store.path, out=tmp_path / "jl", from_file=jl, model="none"))
    assert [(r["passage_id"], r["text"]) for r in rows(tmp_path / "jl")] == [(pid, "a"), (pid, "b")]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1}\n', encoding="utf-8")
    with pytest.raises(GenerateError, match="bad.jsonl:1"):
        import_queries(GenerateConfig(corpus=store.path, out=tmp_path / "bad", from_file=bad))


def test_import_counts_bad_lines_and_fails_by_default(store, tmp_path):
    """A TSV whose last line is cut off (the id, then nothing) is not imported in silence."""
    (pid,), = store.connect().sql("SELECT passage_id FROM passages LIMIT 1").fetchall()
    tsv = tmp_path / "cut.tsv"
    tsv.write_text(f"{pid}\tfirst query\n{pid}\tsecond query\n{pid}", encoding="utf-8")
    out = tmp_path / "q"
    with pytest.raises(GenerateError, match=r"1 bad line.*cut\.tsv:3.*--skip-bad-lines"):
        import_queries(GenerateConfig(corpus=store.path, out=out, from_file=tsv))
    assert not out.exists() or not any(out.rglob("*"))  # nothing written, so nothing needs --overwrite
    result = import_queries(GenerateConfig(corpus=store.path, out=out, from_file=tsv, skip_bad_lines=True))
    assert result.skipped["bad_lines"] == 1 and [r["text"] for r in rows(out)] == ["first query", "second query"]
    assert json.loads((out / "manifest.json").read_text())["skipped"]["bad_lines"] == 1


def test_a_failed_import_leaves_no_state_that_forces_overwrite(store, tmp_path):
    (pid,), = store.connect().sql("SELECT passage_id FROM passages LIMIT 1").fetchall()
    unknown = tmp_path / "unknown.tsv"
    unknown.write_text("no-such-id\ta query\n", encoding="utf-8")
    out = tmp_path / "q"
    with pytest.raises(GenerateError, match="none of its 1 lines"):
        import_queries(GenerateConfig(corpus=store.path, out=out, from_file=unknown))
    assert not (out / "parts" / "state.json").exists()
    good = tmp_path / "good.tsv"
    good.write_text(f"{pid}\tfixed query\n", encoding="utf-8")
    import_queries(GenerateConfig(corpus=store.path, out=out, from_file=good))  # no --overwrite needed
    assert [r["text"] for r in rows(out)] == ["fixed query"]


def test_cli_generate(store, t5, tmp_path):
    result = CliRunner().invoke(app, ["generate", str(store.path), "--model", str(t5), "--per-passage", "2",
                                      "--limit", "3", "--max-output-length", "4", "--out", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "warning:" in result.output and "prefix" in result.output  # a random T5 names no prefix
    assert len(rows(tmp_path / "c")) == 6
    again = CliRunner().invoke(app, ["generate", str(store.path), "--model", str(t5), "--out", str(tmp_path / "c")])
    assert again.exit_code == 2 and "--overwrite" in again.output


def test_mine_qc_and_cc(store, whole, tmp_path):
    queries, _ = whole
    result = mine.run(MineConfig(corpus=store.path, out=tmp_path / "pairs", methods="qc,cc", queries=queries,
                                 negatives="none", stats_sample=10))
    qc = pq.read_table(tmp_path / "pairs" / "qc.parquet").to_pylist()
    generated = {(r["passage_id"], r["candidate"]): r["text"] for r in rows(queries)}
    texts = dict(store.connect().sql("SELECT passage_id, text FROM passages WHERE n_words >= 20").fetchall())
    # every candidate of every long-enough passage, the query being that candidate's text
    assert sorted((r["positive_passage_id"], r["candidate"]) for r in qc) == sorted(
        k for k in generated if k[0] in texts)
    assert all(r["query"] == generated[(r["positive_passage_id"], r["candidate"])] for r in qc)
    assert all(r["positive_text"] == texts[r["positive_passage_id"]] for r in qc)
    assert len({r["pair_id"] for r in qc}) == len(qc)
    cc = pq.read_table(tmp_path / "pairs" / "cc.parquet").to_pylist()
    docs = dict(store.connect().sql("SELECT passage_id, doc_id FROM passages").fetchall())
    assert cc and result.methods["cc"].pairs == len(cc)
    assert all(docs[r["query_passage_id"]] == docs[r["positive_passage_id"]] == r["query_doc_id"] for r in cc)
    assert all(r["query_passage_id"] != r["positive_passage_id"] and r["candidate"] is None for r in cc)
    # each passage of a multi-passage document is a query once and a positive once
    assert len({r["query_passage_id"] for r in cc}) == len({r["positive_passage_id"] for r in cc}) == len(cc)
    with pytest.raises(ValueError, match="--queries"):
        MineConfig(corpus=store.path, out=tmp_path / "x", methods="qc")


def test_train_mixes_qc_and_cc(store, whole, tmp_path):
    from pretrain_fixtures import tiny_bert_st

    queries, _ = whole
    mine.run(MineConfig(corpus=store.path, out=tmp_path / "pairs", methods="qc,cc", queries=queries, negatives="none",
                        stats_sample=10))
    model = tiny_bert_st(tmp_path / "tiny")
    result = CliRunner().invoke(app, ["train", str(tmp_path / "pairs"), "--mix", "qc:0.5,cc:0.5", "--limit", "16",
                                      "--model", str(model), "--batch-size", "4", "--max-steps", "2",
                                      "--max-passage-length", "64", "--out", str(tmp_path / "m")], terminal_width=200)
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "m" / "train.json").read_text())
    assert report["data"]["per_method"] == {"qc": 8, "cc": 8}


def test_pack_sentences_is_greedy_and_keeps_a_long_sentence_alone():
    from pretriever.mine.methods.cc import pack_sentences

    rows = [("d1", 0, "a b", 3), ("d1", 1, "c", 2), ("d1", 2, "d e f", 6), ("d1", 3, "g", 1), ("d1", 4, "h", 4),
            ("d2", 0, "x", 1), ("d2", 2, "y", 1)]
    got = [(p["passage_id"], p["text"], p["n_tokens"], p["n_sentences"]) for p in pack_sentences(rows, 5)]
    assert got == [("d1-s0", "a b c", 5, 2), ("d1-s2", "d e f", 6, 1), ("d1-s3", "g h", 5, 2), ("d2-s0", "x y", 2, 2)]


def test_mine_cc_with_sentence_passages(store, tmp_path):
    """--cc-max-tokens: each document's sentences packed in order, greedily, up to N WordPiece tokens of
    all-MiniLM-L6-v2 (a longer sentence alone), and two passages of a document paired."""
    from pretriever.mine.stats import load_tokenizer

    n = 48
    result = mine.run(MineConfig(corpus=store.path, out=tmp_path / "pairs", methods="cc", cc_max_tokens=n,
                                 negatives="none", stats_sample=10))
    cc = pq.read_table(tmp_path / "pairs" / "cc.parquet").to_pylist()
    sentences: dict[str, list[str]] = {}
    for doc_id, text in store.connect().sql("SELECT doc_id, text FROM sentences ORDER BY doc_id, sentence_idx").fetchall():
        sentences.setdefault(doc_id, []).append(text)
    tok = load_tokenizer()
    size = {s: len(tok.encode(s, add_special_tokens=False).ids) for ss in sentences.values() for s in ss}
    passages = {}
    for r in cc:
        assert r["query_doc_id"] == r["positive_doc_id"] and r["query_passage_id"] != r["positive_passage_id"]
        passages[r["query_passage_id"]] = r["query"]
        passages[r["positive_passage_id"]] = r["positive_text"]
    for pid, text in passages.items():
        doc, first = pid.rsplit("-s", 1)
        doc_sentences = sentences[doc]
        first = int(first)
        k = next(k for k in range(1, len(doc_sentences) - first + 1)
                 if " ".join(doc_sentences[first:first + k]) == text)  # whole consecutive sentences
        tokens = sum(size[s] for s in doc_sentences[first:first + k])
        assert tokens <= n or k == 1  # within N, or one sentence longer than N on its own
        if first + k < len(doc_sentences):  # greedy: the next sentence would not have fitted
            assert tokens + size[doc_sentences[first + k]] > n
    report = result.methods["cc"].report["sentence_passages"]
    assert report["sentences"] == sum(len(v) for v in sentences.values())
    assert report["sentences_over_max_tokens"] == sum(v > n for v in size.values()) > 0
    assert report["max_tokens"] == n and report["passages"] >= len(passages)
    assert result.methods["cc"].pairs == len(cc) == len(passages)  # each passage a query once, a positive once
    with pytest.raises(ValueError, match="cc_max_tokens"):
        MineConfig(corpus=store.path, out=tmp_path / "x", methods="cc", cc_max_tokens=0)
