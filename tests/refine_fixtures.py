"""The refine tests' toy index: 60 passages in 8 dims with queries near their relevant passages, encoded by a
model that returns fixed vectors (test_refine, test_refine_protocol)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pretriever.index import encoder_info, save_dense_index
from pretriever.refine import RefineConfig


class FakeModel:
    """Stands in for the sentence-transformers model: fixed vectors per text."""

    def __init__(self, vectors: dict[str, np.ndarray]):
        self.vectors = vectors
        self.max_seq_length = 256

    def encode(self, texts, **kwargs):
        return np.stack([self.vectors[t] for t in texts]).astype(np.float32)

    # sentence-transformers routes queries and passages through these (one encoder here)
    encode_query = encode_document = encode


@pytest.fixture()
def toy(tmp_path):
    """60 passages in 8 dims, 40 training and 20 test queries near their relevant passages."""
    rng = np.random.default_rng(7)
    dim, n = 8, 60
    passages = rng.standard_normal((n, dim)).astype(np.float32)
    passages /= np.linalg.norm(passages, axis=1, keepdims=True)
    ids = [f"d{i}" for i in range(n)]
    index_dir = tmp_path / "index"
    save_dense_index(index_dir, ids, passages, encoder_info(None, 256, False, True))
    queries, texts, qrels = {}, {}, {}
    for i in range(60):
        rel = rng.choice(n, 2, replace=False)
        vec = passages[rel].mean(0) + 0.9 * rng.standard_normal(dim).astype(np.float32)
        qid = f"q{i}"
        texts[qid] = f"query {i}"
        queries[f"query {i}"] = vec / np.linalg.norm(vec)
        qrels[qid] = {ids[r]: 1 for r in rel}
    data = tmp_path / "data"
    (data / "qrels").mkdir(parents=True)
    with open(data / "queries.jsonl", "w") as f:
        for qid, text in texts.items():
            f.write(json.dumps({"_id": qid, "text": text}) + "\n")
    for split, qids in (("train", [f"q{i}" for i in range(40)]), ("test", [f"q{i}" for i in range(40, 60)])):
        with open(data / "qrels" / f"{split}.tsv", "w") as f:
            f.write("query-id\tcorpus-id\tscore\n")
            for q in qids:
                for d, g in qrels[q].items():
                    f.write(f"{q}\t{d}\t{g}\n")
    return {"index": index_dir, "data": data, "model": FakeModel(queries), "texts": texts, "qrels": qrels,
            "train_vectors": np.stack([queries[texts[f"q{i}"]] for i in range(40)]),
            "test": {f"q{i}": texts[f"q{i}"] for i in range(40, 60)},
            "test_qrels": {f"q{i}": qrels[f"q{i}"] for i in range(40, 60)}}


def toy_config(toy, out, **kw) -> RefineConfig:
    """A refine run over the ``toy`` index with its training judgments as feedback; ``kw`` overrides."""
    base = dict(index=toy["index"], out=out, queries=toy["data"] / "queries.jsonl",
                qrels=toy["data"] / "qrels" / "train.tsv", feedback="qrels", k=10, k_pos=2, max_epochs=20)
    base.update(kw)
    return RefineConfig(**base)
