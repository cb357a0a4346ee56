"""Dense index: resumable sharded encoding, merge, FAISS index types, index.json, CLI, errors.

Dense tests encode the first 72 SciFact abstracts (max length 128) with the packaged
all-MiniLM-L6-v2; the reference encode is shared by the whole module.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from pretriever import __version__
from conftest import SCIFACT, shared
from helpers import cli_app
from pretriever.cli.index import index_app, search_command
from pretriever.config import ConfigError, build_config
from pretriever.stage import MARKER
from pretriever.corpus import build
from pretriever.corpus.config import CorpusConfig
from pretriever.index import (DenseIndex, EncodeStateError, FaissParams, IndexConfig, IndexMeta, MergeError,
                              NotAnIndexError, ShardSpecError, encode, merge_index, parse_shard)
from pretriever.data.passages import PassageSource

APP = cli_app(index=index_app, search=search_command)
N_DOCS = 72
EVERY = 20  # 4 chunks: 20, 20, 20, 12
SETTINGS = dict(max_length=128, checkpoint_every=EVERY, batch_size=16)

TINY_DOCS = [
    ("volcano", "Volcano", "A volcano is a rupture in the crust of a planet through which lava, ash and gases escape."),
    ("piano", "Piano", "The piano is a keyboard instrument whose strings are struck by felt hammers."),
    ("honeybee", "Honey bee", "Honey bees live in colonies, build wax combs and make honey from flower nectar."),
    ("glacier", "Glacier", "A glacier is a persistent body of dense ice that moves slowly under its own weight."),
    ("espresso", "Espresso", "Espresso is coffee brewed by forcing hot water under pressure through finely ground beans."),
    ("chess", "Chess", "Chess is a board game for two players who move sixteen pieces each on a checkered board."),
    ("lighthouse", "Lighthouse", "A lighthouse is a tower with a bright lamp that guides ships away from rocks at night."),
    ("origami", "Origami", "Origami is the Japanese art of folding a single sheet of paper into shapes and figures."),
]


def _index_json(folder: Path) -> dict:
    """An index folder's index.json as written."""
    return json.loads((folder / "index.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def small_store(tmp_path_factory) -> Path:
    """A corpus store of the first 72 SciFact documents (kept whole, titles in documents.title)."""
    src = shared(SCIFACT)
    folder = tmp_path_factory.mktemp("scifact72")
    lines = (src / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:N_DOCS]
    (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = folder / "store"
    assert build.run(CorpusConfig(input=folder, out=out, workers=1)).manifest
    return out


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory) -> Path:
    """A handwritten JSONL store of 8 one-passage documents (no shared data needed)."""
    folder = tmp_path_factory.mktemp("tiny")
    path = folder / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in TINY_DOCS),
                    encoding="utf-8")
    out = folder / "store"
    assert build.run(CorpusConfig(input=path, out=out, workers=1)).manifest
    return out


@pytest.fixture(scope="module")
def model():
    from pretriever.models import load_model

    return load_model(device="cpu")


@pytest.fixture(scope="module")
def reference(small_store, model, tmp_path_factory) -> Path:
    """The uninterrupted one-process index (flat, float32), work files kept for re-merging."""
    out = tmp_path_factory.mktemp("reference") / "index"
    result = encode.run(IndexConfig(corpus=small_store, out=out, keep_work=True, **SETTINGS), model=model)
    assert result.manifest and result.chunks_encoded == 4 and result.passages_encoded == N_DOCS
    return out


def embeddings(path: Path) -> np.ndarray:
    return np.load(path / "embeddings.npy")


def ids(path: Path) -> list[str]:
    return DenseIndex.load(path).passage_ids.tolist()


# -- encoding: resume and shards ------------------------------------------------------------

def test_interrupted_encode_resumes_to_identical_embeddings(small_store, model, reference, tmp_path, monkeypatch):
    out = tmp_path / "index"
    cfg = dict(corpus=small_store, out=out, **SETTINGS)
    # 1. stop on purpose after one chunk
    first = encode.run(IndexConfig(max_chunks=1, **cfg), model=model)
    assert first.stopped and first.chunks_encoded == 1 and not first.manifest
    with pytest.raises(NotAnIndexError, match="--resume"):
        DenseIndex.load(out)
    # 2. crash while encoding the third chunk (after the second was saved)
    real = encode.encode_texts
    calls = {"n": 0}

    def flaky(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("simulated crash")
        return real(*args, **kwargs)

    monkeypatch.setattr(encode, "encode_texts", flaky)
    with pytest.raises(RuntimeError, match="simulated crash"):
        encode.run(IndexConfig(resume=True, **cfg), model=model)
    monkeypatch.setattr(encode, "encode_texts", real)
    work = out / "_work" / "chunks"
    assert sorted(p.name for p in work.glob("*.npy")) == ["chunk-000000.npy", "chunk-000001.npy"]
    assert not list(work.glob("*.tmp"))  # no half-written chunk left behind
    # 3. without --resume the finished chunks are not silently redone or mixed
    with pytest.raises(EncodeStateError, match="--resume"):
        encode.run(IndexConfig(**cfg), model=model)
    # 4. resume: only the two missing chunks are encoded, and the vectors are identical
    last = encode.run(IndexConfig(resume=True, **cfg), model=model)
    assert last.chunks_encoded == 2 and last.passages_encoded == EVERY + (N_DOCS - 3 * EVERY)
    assert np.array_equal(embeddings(out), embeddings(reference))
    assert ids(out) == ids(reference)
    assert not (out / "_work").exists()  # removed after the merge (keep_work=False)


def test_shards_then_merge_equal_one_process_index(small_store, model, reference, tmp_path):
    dirs = [tmp_path / f"shard{i}" for i in range(3)]
    for i in (0, 1):
        result = encode.run(IndexConfig(corpus=small_store, out=dirs[i], shard=f"{i}/3", **SETTINGS), model=model)
        assert not result.manifest and not (dirs[i] / "index.json").exists()
    with pytest.raises(MergeError, match=r"2/3"):
        merge_index(dirs[0], dirs[1:2])
    result = encode.run(IndexConfig(corpus=small_store, out=dirs[2], shard="2/3", **SETTINGS), model=model)
    assert result.chunks == range(2, 4)  # 4 chunks over 3 shards: [0], [1], [2, 3]
    meta = merge_index(dirs[0], dirs[1:])
    assert meta.count == N_DOCS and meta.recorded["encode"]["shards"] == [3]
    assert np.array_equal(embeddings(dirs[0]), embeddings(reference))
    assert ids(dirs[0]) == ids(reference)


def test_index_order_is_store_order_with_titles(small_store):
    source = PassageSource(small_store)
    first_ids, texts = source.read(0, 3, prepend_title=True)
    _, bare = source.read(0, 3, prepend_title=False)
    source.close()
    lines = [json.loads(line) for line in (SCIFACT / "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:3]]
    assert first_ids == [d["_id"] for d in lines]
    assert texts == [f"{d['title']} {b}" for d, b in zip(lines, bare)]
    assert bare[0].startswith(lines[0]["text"][:40])


# -- dtype, FAISS index types, index.json -------------------------------------------------------

def copy_work(index: Path, to: Path) -> Path:
    """An encode's work, as a user moves it to merge elsewhere: _work with the folder's marker (a folder without
    it is not pretriever's to write into)."""
    shutil.copytree(index / "_work", to / "_work")
    shutil.copy(index / MARKER, to / MARKER)
    return to


def test_float16_merge_through_cli(reference, tmp_path):
    copy = copy_work(reference, tmp_path / "f16")
    result = CliRunner().invoke(APP, ["index", "merge", str(copy), "--dtype", "float16"])
    assert result.exit_code == 0, result.output
    stored = embeddings(copy)
    assert stored.dtype == np.float16
    assert np.array_equal(stored, embeddings(reference).astype(np.float16))
    meta = IndexMeta.read(copy)
    assert meta.dtype == "float16" and meta.count == N_DOCS
    index = DenseIndex.load(copy)
    rows = index.search_arrays(embeddings(reference)[:20], 1)[1][:, 0]
    assert rows.tolist() == list(range(20))


def test_hnsw_and_ivfpq_reload_and_find_a_passage_by_its_own_text(reference, model, tmp_path):
    flat = DenseIndex.load(reference, model=model)
    source = PassageSource(flat.meta.store)
    passage_ids, texts = source.read(0, 8, prepend_title=True)
    source.close()
    queries = flat.encode_queries(texts)
    # queries encoded like the passages (title prepended, same max length) give the same vectors
    assert np.allclose(queries, flat.embeddings[:8], atol=1e-5)
    built = {
        "hnsw": flat.reindex(tmp_path / "hnsw", FaissParams(type="hnsw", hnsw_m=8, hnsw_ef_search=32)),
        "ivfpq": flat.reindex(tmp_path / "ivfpq", FaissParams(type="ivfpq", pq_nbits=4, ivf_nprobe=8)),
    }
    for kind, index in built.items():
        reloaded = DenseIndex.load(tmp_path / kind, model=model)
        assert reloaded.meta.index_type == kind and reloaded.index.ntotal == N_DOCS
        top1 = [hits[0].passage_id for hits in reloaded.search_vectors(queries, 3)]
        assert top1 == passage_ids, kind
    # exact re-ranking of 4 x k IVF-PQ candidates with the stored vectors gives the exact top k
    reranked = flat.reindex(tmp_path / "ivfpq-rerank", FaissParams(type="ivfpq", pq_nbits=4, ivf_nprobe=8, rerank=4))
    exact_scores, exact_rows = flat.search_arrays(queries, 5)
    scores, rows = reranked.search_arrays(queries, 5)
    assert np.array_equal(rows, exact_rows) and np.allclose(scores, exact_scores, atol=1e-5)
    meta = IndexMeta.read(tmp_path / "ivfpq").faiss
    assert meta["ivf_nlist"] == 1 and meta["pq_m"] == 48 and meta["ivf_nprobe"] == 8  # automatic values resolved
    hits = built["hnsw"].search([texts[5]], 3)  # the text path of the Retriever protocol
    assert hits[0][0].passage_id == passage_ids[5] and hits[0][0].score > hits[0][1].score


def test_index_json_round_trip(reference, small_store, tmp_path):
    meta = _index_json(reference)  # the file as written: its layout did not change
    assert meta["pretriever_version"] == __version__ and meta["name"] == "all-MiniLM-L6-v2"
    assert meta["encoder"] == {"model": "all-MiniLM-L6-v2", "model_label": "all-MiniLM-L6-v2", "max_length": 128,
                               "normalize": False, "prepend_title": True, "passage_prompt": "",
                               "query_prompt": ""}
    assert meta["dim"] == 384 and meta["count"] == N_DOCS and meta["dtype"] == "float32"
    assert meta["index"] == {"type": "flat"}
    assert meta["corpus"] == {"store": str(small_store.resolve()), "n_passages": N_DOCS}
    assert meta["encode"]["checkpoint_every"] == EVERY and meta["encode"]["chunks"] == 4
    index = DenseIndex.load(reference)
    assert index.name == "all-MiniLM-L6-v2" and len(index) == N_DOCS and index.embeddings.shape == (N_DOCS, 384)
    # a re-index from (ids, vectors) keeps the encoder and corpus, with the new index parameters
    copy = index.reindex(tmp_path / "again", FaissParams(type="hnsw"))
    again = _index_json(tmp_path / "again")
    assert {k: again[k] for k in ("encoder", "corpus", "dim", "count", "name")} == \
           {k: meta[k] for k in ("encoder", "corpus", "dim", "count", "name")}
    assert again["index"] == {"type": "hnsw", "hnsw_m": 32, "hnsw_ef_construction": 200, "hnsw_ef_search": 128,
                              "rerank": 0}
    assert np.array_equal(copy.embeddings, index.embeddings)


def test_config_from_toml_and_cli(tmp_path):
    toml = tmp_path / "run.toml"
    toml.write_text('[index]\nprepend_title = false\nout = "from-toml"\n[index.faiss]\ntype = "hnsw"\nhnsw_m = 16\n'
                    '[index.bm25]\nk1 = 1.2\n', encoding="utf-8")
    cfg = build_config(IndexConfig, toml, "index", corpus="store", out=None, faiss={"hnsw_m": 48})
    assert cfg.faiss.type == "hnsw" and cfg.faiss.hnsw_m == 48 and not cfg.prepend_title and cfg.out == Path("from-toml")
    assert cfg.bm25.k1 == 1.2 and cfg.bm25.stemmer == "english"
    with pytest.raises(ConfigError, match="index type must be one of"):
        build_config(IndexConfig, None, "index", corpus="c", out="o", faiss={"type": "annoy"})
    with pytest.raises(ConfigError, match="out is required"):
        build_config(IndexConfig, None, "index", corpus="c")
    bad = tmp_path / "bad.toml"
    bad.write_text('[index.bm25]\nkone = 1.2\n', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"unknown key\(s\) in \[index\.bm25\]: kone"):
        build_config(IndexConfig, bad, "index", corpus="c", out="o")


def test_half_precision_encodes_on_request_close_to_fp32(tiny_store, model, tmp_path):
    """--precision bf16 casts the encoder it loads: the vectors move (so the cast happened) but stay within
    cosine 0.99 of fp32's, index.json says so, and a resume at another precision is refused."""
    plain = tmp_path / "fp32"
    encode.run(IndexConfig(corpus=tiny_store, out=plain, **SETTINGS), model=model)
    half = tmp_path / "bf16"
    encode.run(IndexConfig(corpus=tiny_store, out=half, precision="bf16", device="cpu", **SETTINGS))
    a, b = embeddings(plain), embeddings(half)
    assert b.dtype == np.float32 and a.shape == b.shape
    cosine = (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)
    assert not np.array_equal(a, b) and cosine.min() > 0.99, cosine
    assert _index_json(half)["encode"]["precision"] == "bf16" and _index_json(plain)["encode"]["precision"] == "fp32"
    with pytest.raises(ValueError, match="precision must be one of"):
        IndexConfig(corpus=tiny_store, out=half, precision="fp8")
    part = tmp_path / "part"
    encode.run(IndexConfig(corpus=tiny_store, out=part, precision="bf16", device="cpu", max_chunks=1, **SETTINGS))
    with pytest.raises(EncodeStateError, match="precision"):
        encode.run(IndexConfig(corpus=tiny_store, out=part, resume=True, **SETTINGS), model=model)


# -- CLI ---------------------------------------------------------------------------------------

def test_a_library_encode_and_merge_build_the_bm25_they_are_asked_for(tiny_store, model, tmp_path):
    """IndexConfig.build_bm25 holds for a library caller too: encode.run and encode.merge build INDEX_DIR/bm25
    (encode.run ignored it; only the command built it, afterwards)."""
    out = tmp_path / "index"
    encode.run(IndexConfig(corpus=tiny_store, out=out, build_bm25=True, **SETTINGS), model=model)
    assert IndexMeta.read(out / "bm25").count == len(TINY_DOCS)
    shard = tmp_path / "shard"
    encode.run(IndexConfig(corpus=tiny_store, out=shard, shard="0/1", **SETTINGS), model=model)
    assert not (shard / "bm25").exists()  # a shard is not an index yet
    encode.merge(IndexConfig(corpus=tiny_store, out=shard, build_bm25=True))
    assert IndexMeta.read(shard / "bm25").count == len(TINY_DOCS)


def test_cli_build_search_and_bm25(tiny_store, tmp_path):
    runner = CliRunner()
    out = tmp_path / "tiny-index"
    result = runner.invoke(APP, ["index", "build", str(tiny_store), "--out", str(out), "--bm25",
                                       "--checkpoint-every", "3", "--index-type", "hnsw"])
    assert result.exit_code == 0, result.output
    assert (out / "bm25" / "bm25.json").exists()
    meta = _index_json(out)
    assert meta["count"] == len(TINY_DOCS) and meta["encode"]["chunks"] == 3 and meta["index"]["type"] == "hnsw"
    result = runner.invoke(APP, ["search", str(out), "hot water pressed through ground coffee", "-k", "2",
                                       "--bm25"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "Espresso" in result.output and "bm25 score" in result.output and "all-MiniLM-L6-v2 score" in result.output
    result = runner.invoke(APP, ["search", str(out / "bm25"), "folding paper", "-k", "1"],
                           env={"COLUMNS": "200"})
    assert result.exit_code == 0 and "Origami" in result.output
    again = runner.invoke(APP, ["index", "build", str(tiny_store), "--out", str(out)])
    assert again.exit_code == 2 and "already holds an index" in again.output
    result = runner.invoke(APP, ["index", "info", str(out)])
    assert result.exit_code == 0 and "all-MiniLM-L6-v2" in result.output


# -- errors ------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec", ["3/2", "2/2", "a/b", "1/0", "-1/2", "1", "1/2/3"])
def test_bad_shard_spec(spec):
    with pytest.raises(ShardSpecError, match="shard"):
        parse_shard(spec)


def test_shard_spec_parses():
    assert parse_shard("0/4") == (0, 4) and parse_shard(" 3 / 4 ") == (3, 4) and parse_shard(None) is None


def test_cli_errors(tiny_store, tmp_path):
    runner = CliRunner()
    result = runner.invoke(APP, ["index", "build", str(tiny_store), "--out", str(tmp_path / "x"),
                                       "--shard", "4/4"])
    assert result.exit_code == 2 and "counted from 0" in result.output
    empty = tmp_path / "empty"
    empty.mkdir()
    result = runner.invoke(APP, ["index", "merge", str(empty)])
    assert result.exit_code == 2 and "no encode to merge" in result.output
    result = runner.invoke(APP, ["search", str(tiny_store), "volcano"])
    assert result.exit_code == 2 and "corpus store" in result.output
    result = runner.invoke(APP, ["search", str(tmp_path / "missing"), "volcano"])
    assert result.exit_code == 2 and "not a folder" in result.output


def test_not_an_index(tmp_path):
    with pytest.raises(NotAnIndexError, match="index.json is missing"):
        DenseIndex.load(tmp_path)
    (tmp_path / "index.json").write_text('{"kind": "something else"}', encoding="utf-8")
    with pytest.raises(NotAnIndexError, match="not written by"):
        DenseIndex.load(tmp_path)


def test_merge_refuses_shards_of_another_encode(reference, small_store, model, tmp_path):
    other = tmp_path / "other"
    encode.run(IndexConfig(corpus=small_store, out=other, shard="0/3", max_chunks=0,
                           **{**SETTINGS, "prepend_title": False}), model=model)
    copy = copy_work(reference, tmp_path / "copy")
    with pytest.raises(MergeError, match="prepend_title"):
        merge_index(copy, [other])


def test_pyserini_export_is_the_faiss_index_and_its_docids(reference, tmp_path):
    import faiss

    out = tmp_path / "pyserini"
    result = CliRunner().invoke(APP, ["index", "export", str(reference), "--format", "pyserini", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "docid", "index", "pretriever-index.json"]
    index = faiss.read_index(str(out / "index"))  # what Pyserini's FaissSearcher.load_index does
    assert isinstance(faiss.downcast_index(index), faiss.IndexFlatIP) and (index.ntotal, index.d) == (N_DOCS, 384)
    assert os.stat(out / "index").st_ino == os.stat(reference / "index.faiss").st_ino  # linked, not copied
    docids = [line.rstrip() for line in (out / "docid").read_text(encoding="utf-8").splitlines()]
    dense = DenseIndex.load(reference)
    assert docids == dense.passage_ids.tolist() and len(set(docids)) == N_DOCS
    # Pyserini maps FAISS rows through docid: the same top hits as pretriever's own search
    _, rows = index.search(embeddings(reference)[:10].astype(np.float32), 3)
    assert [[docids[r] for r in row] for row in rows] == \
        [[h.passage_id for h in hits] for hits in dense.search_vectors(embeddings(reference)[:10], 3)]
    assert json.loads((out / "pretriever-index.json").read_text()) == _index_json(reference)  # how to encode queries


def test_pyserini_export_refuses_what_pyserini_cannot_search(reference, tiny_store, tmp_path):
    bm25_dir = tmp_path / "bm25"
    assert CliRunner().invoke(APP, ["index", "bm25", str(tiny_store), "--out", str(bm25_dir)]).exit_code == 0
    result = CliRunner().invoke(APP, ["index", "export", str(bm25_dir), "--format", "pyserini", "--out",
                                            str(tmp_path / "x")])
    assert result.exit_code != 0 and "only plain dense indexes export to Pyserini" in " ".join(result.output.split())
    result = CliRunner().invoke(APP, ["index", "export", str(reference), "--format", "lucene", "--out",
                                            str(tmp_path / "y")])
    assert result.exit_code != 0 and "unknown format 'lucene'" in result.output
