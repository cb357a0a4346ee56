"""Shared by the serve tests: a 300-document SciFact store with a dense + BM25 index, pairs mined from
the hand-written co-mention wiki (the enwiki sample has no co-mention pair), and one opened engine (built
once per session; the model is loaded once)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import SCIFACT, build, shared
from mine_fixtures import run
from pretriever.index import BM25Index, IndexConfig, build_index
from pretriever.serve import ServeConfig
from pretriever.serve.engine import Engine

N_DOCS = 300


@dataclass
class Served:
    index: Path
    pairs: Path
    qrels: Path
    queries: Path
    engine: Engine

    def config(self, **options) -> ServeConfig:
        return ServeConfig(index=self.index, pairs=self.pairs, qrels={"test": self.qrels}, queries=self.queries,
                           **options)


def scifact_subset(out: Path) -> Path:
    """The first 300 SciFact documents as a BEIR folder (queries and test qrels as they are)."""
    source = shared(SCIFACT)
    (out / "qrels").mkdir(parents=True)
    with open(source / "corpus.jsonl", encoding="utf-8") as f:
        lines = [next(f) for _ in range(N_DOCS)]
    (out / "corpus.jsonl").write_text("".join(lines), encoding="utf-8")
    shutil.copy(source / "queries.jsonl", out / "queries.jsonl")
    shutil.copy(source / "qrels" / "test.tsv", out / "qrels" / "test.tsv")
    assert len({json.loads(line)["_id"] for line in lines}) == N_DOCS
    return out


@pytest.fixture(scope="session")
def served(tmp_path_factory, cowiki_store) -> Served:
    root = tmp_path_factory.mktemp("serve")
    beir = scifact_subset(root / "scifact300")
    store = build(beir / "corpus.jsonl", root / "store", workers=1)  # no worker processes forked from a
    # test process that already runs torch and browser threads
    build_index(IndexConfig(corpus=store.path, out=root / "index"))
    BM25Index.build(store).save(root / "index" / "bm25")
    run(cowiki_store, root / "pairs", methods="dl,cm,ict", negatives="overlap", seed=0)
    cfg = ServeConfig(index=root / "index", batch_wait_ms=20.0)
    engine = Engine.open(cfg)
    yield Served(root / "index", root / "pairs", beir / "qrels" / "test.tsv", beir / "queries.jsonl", engine)
    engine.executor.shutdown(wait=False)
