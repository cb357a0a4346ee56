"""Shared by the serve tests: a 300-document SciFact store with a dense + BM25 index, pairs of dl, cm and ict
mined from the hand-written co-mention wiki (the enwiki sample has no co-mention pair), pairs of cc, qac and qc
mined from the enwiki sample (qac from canned cited pages, qc from two imported generated queries), and one
opened engine (built once per session; the model is loaded once); a BM25 index of three documents whose ids
hold "/"; and :func:`running`, an app served by uvicorn on 127.0.0.1 as `pretriever serve` serves it."""

from __future__ import annotations

import json
import shutil
import socket
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

from conftest import SCIFACT, build, shared
from mine_fixtures import run
from qac_fixtures import make_refs
from pretriever.generate import GenerateConfig, import_queries
from pretriever.index import BM25Index, IndexConfig, encode
from pretriever.serve import ServeConfig, create_app
from pretriever.serve.engine import QueryEngine
from pretriever.serve.server import uvicorn_options

N_DOCS = 300
MINED = ["dl", "cm", "ict"]  # the methods mined from the co-mention wiki
EVIDENCE_METHODS = ["cc", "qac", "qc"]  # from the enwiki sample
GENERATED = [{"id": "12", "queries": ["what is anarchism", "anarchism definition"]},  # enwiki page ids
             {"id": "25", "queries": ["what is autism"]}]


SLASHED = [("physics/relativity", "Relativity", "Special relativity relates space and time for observers in motion."),
           ("10.1000/xyz/123", "A DOI", "A digital object identifier names a paper, and it holds slashes."),
           ("plain", "Plain", "An ordinary id without any slash, about gardens and roses.")]


@dataclass
class Served:
    index: Path
    pairs: Path
    evidence_pairs: Path
    qrels: Path
    queries: Path
    engine: QueryEngine

    def config(self, **options) -> ServeConfig:
        return ServeConfig(**{"index": self.index, "pairs": self.pairs, "qrels": {"test": self.qrels},
                              "queries": self.queries, **options})


def scifact_subset(out: Path) -> Path:
    """The first 300 SciFact documents as a BEIR folder (queries, train and test qrels as they are)."""
    source = shared(SCIFACT)
    (out / "qrels").mkdir(parents=True)
    with open(source / "corpus.jsonl", encoding="utf-8") as f:
        lines = [next(f) for _ in range(N_DOCS)]
    (out / "corpus.jsonl").write_text("".join(lines), encoding="utf-8")
    shutil.copy(source / "queries.jsonl", out / "queries.jsonl")
    for split in ("train", "test"):
        shutil.copy(source / "qrels" / f"{split}.tsv", out / "qrels" / f"{split}.tsv")
    assert len({json.loads(line)["_id"] for line in lines}) == N_DOCS
    return out


def mine_evidence_pairs(enwiki_store, root: Path) -> Path:
    """Pairs of EVIDENCE_METHODS from the enwiki sample into ROOT/evidence-pairs."""
    pytest.importorskip("spacy")
    refs = make_refs(enwiki_store, root / "refs")
    lines = root / "generated.jsonl"
    lines.write_text("".join(json.dumps(q) + "\n" for q in GENERATED), encoding="utf-8")
    import_queries(GenerateConfig(corpus=enwiki_store.path, from_file=lines, out=root / "queries"))
    run(enwiki_store, root / "evidence-pairs", methods=",".join(EVIDENCE_METHODS), references=refs,
        queries=root / "queries", negatives="overlap", seed=0)
    return root / "evidence-pairs"


@pytest.fixture(scope="session")
def served(tmp_path_factory, cowiki_store, enwiki_store) -> Served:
    root = tmp_path_factory.mktemp("serve")
    beir = scifact_subset(root / "scifact300")
    store = build(beir / "corpus.jsonl", root / "store", workers=1)  # no worker processes forked from a
    # test process that already runs torch and browser threads
    index = root / "scifact-index"  # the page shows the folder's name (and the screenshots)
    encode.run(IndexConfig(corpus=store.path, out=index))
    BM25Index.build(store).save(index / "bm25")
    run(cowiki_store, root / "pairs", methods=",".join(MINED), negatives="overlap", seed=0)
    evidence = mine_evidence_pairs(enwiki_store, root)
    engine = QueryEngine.open(ServeConfig(index=index, batch_wait_ms=20.0))
    yield Served(index, root / "pairs", evidence, beir / "qrels" / "test.tsv", beir / "queries.jsonl", engine)
    engine.executor.shutdown(wait=False)


@pytest.fixture(scope="session")
def slashed(tmp_path_factory) -> Path:
    """A BM25 index (no model) over SLASHED, whose ids hold "/" as DOIs and wiki paths do."""
    root = tmp_path_factory.mktemp("slashed")
    docs = root / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in SLASHED),
                    encoding="utf-8")
    store = build(docs, root / "store", workers=1)
    BM25Index.build(store).save(root / "bm25-index")
    return root / "bm25-index"


@contextmanager
def running(cfg: ServeConfig, engine: QueryEngine | None = None):
    """The app of ``cfg`` (sharing ``engine``) served by uvicorn in a thread on a free loopback port, with the
    options `pretriever serve` gives it; yields its URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    app = create_app(cfg, engine=engine)
    server = uvicorn.Server(uvicorn.Config(app, **{**uvicorn_options(cfg), "host": "127.0.0.1", "port": port}))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(200):
        if server.started:
            break
        time.sleep(0.05)
    assert server.started
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)
