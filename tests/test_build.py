"""The build pipeline on any input: atomic parts, resume, determinism, bad input, the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

import pretriever.corpus.build
from pretriever.cli import app
from pretriever.corpus.config import CorpusConfig
from pretriever.corpus.model import InputError
from pretriever.data.store import CorpusStore, StoreError

from conftest import SCIFACT, build, shared
from helpers import table_bytes

runner = CliRunner()


def write_jsonl(path: Path, n: int) -> Path:
    lines = [json.dumps({"id": f"d{i}", "title": f"Title {i}", "text": f"Sentence one of doc {i}. " * 30})
             for i in range(n)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_scifact_builds_5183_whole_documents(tmp_path):
    store = build(shared(SCIFACT), tmp_path / "sf", workers=2)
    con = store.connect()
    assert store.counts["documents"] == 5183
    assert con.execute("SELECT count(*) FROM passages").fetchone()[0] == 5183
    # BEIR keeps documents whole, so passage ids are the BEIR ids the qrels use
    assert con.execute("SELECT count(*) FROM passages WHERE passage_id <> doc_id").fetchone()[0] == 0
    title, = con.execute("SELECT title FROM documents WHERE doc_id = '4983'").fetchone()
    assert title.startswith("Microstructural development of human newborn cerebral white matter")
    assert store.counts["links"] == 0


def test_jsonl_chunks_into_100_word_passages(tmp_path):
    store = build(write_jsonl(tmp_path / "c.jsonl", 3), tmp_path / "s", workers=1)
    rows = store.connect().execute(
        "SELECT passage_id, n_words FROM passages WHERE doc_id = 'd1' ORDER BY position").fetchall()
    # 30 repetitions of a 5-word sentence = 150 words -> 100 + 50
    assert rows == [("d1-0", 100), ("d1-1", 50)]


@pytest.mark.parametrize("workers", [1, 2])
def test_resume_after_interruption_gives_identical_tables(tmp_path, workers):
    corpus = write_jsonl(tmp_path / "c.jsonl", 25)
    full = build(corpus, tmp_path / "full", workers=workers, chunk_pages=4)
    partial = pretriever.corpus.build.run(CorpusConfig(input=corpus, out=tmp_path / "resumed", workers=workers,
                                                       chunk_pages=4, max_chunks=3))
    assert partial.stopped and not partial.manifest and partial.chunks_done == 3
    with pytest.raises(StoreError, match="--resume"):
        CorpusStore(tmp_path / "resumed")
    build(corpus, tmp_path / "resumed", workers=workers, chunk_pages=4, resume=True)
    assert table_bytes(tmp_path / "resumed") == table_bytes(full.path)


def test_a_sample_is_a_finished_store_of_its_first_chunks(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", 25)
    sample = pretriever.corpus.build.run(CorpusConfig(input=corpus, out=tmp_path / "sample", workers=1, chunk_pages=4,
                                                      max_chunks=2, sample=True))
    assert not sample.stopped and sample.manifest.sample == {"chunks": 2, "chunk_pages": 4, "chunk_mb": 4.0}
    docs = CorpusStore(tmp_path / "sample").connect().execute("SELECT count(*) FROM documents").fetchone()[0]
    assert docs == 8  # two chunks of four documents, and the store opens
    whole = pretriever.corpus.build.run(CorpusConfig(input=corpus, out=tmp_path / "whole", workers=1, chunk_pages=4,
                                                     max_chunks=7, sample=True))
    assert whole.manifest.sample is None  # the chunks hold the whole input: no sample
    with pytest.raises(ValueError, match="max_chunks"):
        CorpusConfig(input=corpus, out=tmp_path / "x", sample=True)


def test_resume_refuses_other_options(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", 10)
    pretriever.corpus.build.run(CorpusConfig(input=corpus, out=tmp_path / "s", chunk_pages=2, max_chunks=1, workers=1))
    with pytest.raises(InputError, match="other input or options"):
        pretriever.corpus.build.run(CorpusConfig(input=corpus, out=tmp_path / "s", chunk_pages=3, resume=True,
                                                 workers=1))


def test_existing_output_needs_overwrite(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", 2)
    build(corpus, tmp_path / "s", workers=1)
    with pytest.raises(InputError, match="--overwrite"):
        pretriever.corpus.build.run(CorpusConfig(input=corpus, out=tmp_path / "s", workers=1))
    build(corpus, tmp_path / "s", workers=1, overwrite=True)


def test_missing_field_is_listed_with_its_line_and_exit_status_3(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "title": "Alpha", "text": "Some text here."}\n'
                      '{"id": "b", "title": "Beta"}\n'
                      '{"id": "c", "title": "Gamma", "text": "More text."}\n')
    result = runner.invoke(app, ["corpus", "build", str(corpus), "--out", str(tmp_path / "s"), "--workers", "1"])
    assert result.exit_code == 3, result.output
    manifest = json.loads((tmp_path / "s" / "manifest.json").read_text())
    assert manifest["counts"]["documents"] == 2 and manifest["counts"]["errors"] == 1
    error = manifest["errors"][0]
    assert "line 2" in error["where"] and "text" in error["reason"]


def test_duplicate_ids_are_an_error(tmp_path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text('{"id": "a", "title": "A1", "text": "x y"}\n{"id": "a", "title": "A2", "text": "z"}\n')
    with pytest.raises(InputError, match="repeated: 'a'"):
        build(corpus, tmp_path / "s", workers=1)


def test_cli_reports_unreadable_input_with_exit_status_4(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\x00\x01 not a corpus")
    result = runner.invoke(app, ["corpus", "build", str(junk), "--out", str(tmp_path / "s")])
    assert result.exit_code == 4
    assert "cannot tell the input format" in result.output


def test_toml_config_sets_options_and_cli_wins(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", 2)
    config = tmp_path / "run.toml"
    config.write_text("[corpus]\nwords = 50\nworkers = 1\n")
    result = runner.invoke(app, ["corpus", "build", str(corpus), "--out", str(tmp_path / "a"), "--config", str(config)])
    assert result.exit_code == 0, result.output
    assert CorpusStore(tmp_path / "a").manifest.options["words"] == 50
    result = runner.invoke(app, ["corpus", "build", str(corpus), "--out", str(tmp_path / "b"),
                                 "--config", str(config), "--words", "20"])
    assert CorpusStore(tmp_path / "b").manifest.options["words"] == 20
    config.write_text("[corpus]\nwordz = 5\n")
    result = runner.invoke(app, ["corpus", "build", str(corpus), "--out", str(tmp_path / "c"), "--config", str(config)])
    assert result.exit_code == 2 and "wordz" in result.output


def test_store_rejects_a_folder_that_is_not_a_store(tmp_path):
    with pytest.raises(StoreError, match="manifest.json is missing"):
        CorpusStore(tmp_path)
