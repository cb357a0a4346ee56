"""Shared by the serve tests: a 300-document SciFact store with a dense + BM25 index, pairs of dl, cm and ict
mined from the hand-written co-mention wiki (the enwiki sample has no co-mention pair), pairs of cc, qac and qc
mined from the enwiki sample (qac from canned cited pages, qc from two imported generated queries), and one
opened engine (built once per session; the model is loaded once)."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import SCIFACT, build, shared
from mine_fixtures import run
from qac_fixtures import make_refs
from pretriever.generate import GenerateConfig, import_queries
from pretriever.index import BM25Index, IndexConfig, build_index
from pretriever.serve import ServeConfig
from pretriever.serve.engine import Engine

N_DOCS = 300
METHODS = ["dl", "cm", "ict"]  # from the co-mention wiki
EVIDENCE_METHODS = ["cc", "qac", "qc"]  # from the enwiki sample
GENERATED = [{"id": "12", "queries": ["what is anarchism", "anarchism definition"]},  # enwiki page ids
             {"id": "25", "queries": ["what is autism"]}]


@dataclass
class Served:
    index: Path
    pairs: Path
    evidence_pairs: Path
    qrels: Path
    queries: Path
    engine: Engine

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
    build_index(IndexConfig(corpus=store.path, out=index))
    BM25Index.build(store).save(index / "bm25")
    run(cowiki_store, root / "pairs", methods=",".join(METHODS), negatives="overlap", seed=0)
    evidence = mine_evidence_pairs(enwiki_store, root)
    engine = Engine.open(ServeConfig(index=index, batch_wait_ms=20.0))
    yield Served(index, root / "pairs", evidence, beir / "qrels" / "test.tsv", beir / "queries.jsonl", engine)
    engine.executor.shutdown(wait=False)
