"""Training with the packaged all-MiniLM-L6-v2 on real SciFact text: loss, saved model, resume, CLI.

Kept tiny (tens of pairs, short max lengths, a few steps) so that it runs on two CPU cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from typer.testing import CliRunner

from conftest import SCIFACT, shared
from helpers import cli_app
from pretriever.cli.train import train_command
from pretriever.train import TrainConfig
from pretriever.train.model import build_model
from pretriever.train.run import pairs_loss, run
from train_callbacks import Interrupt, Steps

pytestmark = pytest.mark.slow

APP = cli_app(train=train_command)
TINY = dict(max_query_length=32, max_passage_length=96)
OLD_TRAIN_JSON = Path(__file__).parent / "data" / "stage_layout_0.1" / "model" / "train.json"


def as_dataset(folder: Path):
    from datasets import Dataset

    table = pa.concat_tables([pq.read_table(folder / f"{m}.parquet") for m in ("dl", "cm")])
    return Dataset.from_dict({"anchor": table.column("query").to_pylist(),
                              "positive": table.column("positive_text").to_pylist(),
                              "negative": table.column("negative_text").to_pylist()})


def test_training_lowers_the_loss_and_saves_a_plain_sentence_transformers_model(scifact_pairs, tmp_path):
    from sentence_transformers import SentenceTransformer

    cfg = TrainConfig(out=tmp_path / "model", pairs=scifact_pairs, batch_size=8, learning_rate=1e-4,
                      logging_steps=1, seed=0, **TINY)
    dataset = as_dataset(scifact_pairs)
    base, _ = build_model(cfg)
    before = pairs_loss(base, cfg, dataset)
    result = run(cfg)
    after = pairs_loss(result.model, cfg, dataset)
    assert after < before * 0.9, (before, after)

    out = cfg.out
    report = json.loads((out / "train.json").read_text())
    assert report["data"]["pairs"] == 40 and report["data"]["per_method"] == {"dl": 20, "cm": 20}
    assert report["data"]["negatives"] is True
    assert [c["step"] for c in report["loss_curve"]] == [1, 2, 3, 4, 5]
    assert report["pairs_trained"] == 40 and report["pairs_per_second"] > 0
    assert report["config"]["learning_rate"] == 1e-4
    assert (out / "loss.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not (out / "checkpoints").exists() and not (out / ".work").exists()

    loaded = SentenceTransformer(str(out), device="cpu")
    texts = dataset["anchor"][:4] + dataset["positive"][:4]
    assert np.array_equal(loaded.encode(texts), result.model.encode(texts))
    assert np.array_equal(loaded.encode_query(texts[:4]), result.model.encode_query(texts[:4]))
    assert not np.array_equal(loaded.encode(texts[:4]), base.encode(texts[:4]))  # it did change
    # queries are cut at max_query_length after loading too
    assert loaded.preprocess(["word " * 200], task="query")["input_ids"].shape[1] == 32
    assert loaded.preprocess(["word " * 200], task="document")["input_ids"].shape[1] == 96


def test_heldout_pairs_check_the_model_before_and_after_training(scifact_pairs, tmp_path):
    """8 of the 40 real pairs are held out: training sees 32, and train.json says how often a held-out
    claim ranks its own cited abstract first among the 8, before and after (the readable check)."""
    cfg = TrainConfig(out=tmp_path / "model", pairs=scifact_pairs, batch_size=8, learning_rate=1e-4, seed=0,
                      heldout_pairs=8, **TINY)
    report = run(cfg).manifest
    held = report.heldout
    assert held["pairs"] == 8 and report.pairs_trained == 32
    written = json.loads((tmp_path / "model" / "train.json").read_text())
    assert list(written) == [*json.loads(OLD_TRAIN_JSON.read_text()), "heldout"]  # the keys and order 0.1.0 wrote
    for when in ("before", "after"):
        assert 0 <= held[when]["acc@1"] <= 1 and 1 / 8 <= held[when]["mrr"] <= 1 and held[when]["loss"] > 0
    assert held["before"]["at_step"] == 0
    # the packaged MiniLM already finds most cited abstracts among 8; training on 32 pairs keeps it there
    assert held["before"]["acc@1"] >= 0.5 and held["after"]["acc@1"] >= 0.5


def test_retrieval_check_counts_ranks_by_hand():
    from pretriever.train.heldout import retrieval_check, smoothed

    class Fixed:  # query i is closest to passage i, except query 2, closest to passage 0
        vectors = {"q0": [1, 0, 0], "q1": [0, 1, 0], "q2": [1, 0, 0.5], "p0": [1, 0, 0], "p1": [0, 1, 0],
                   "p2": [0, 0, 1]}

        def encode_query(self, texts, **_):
            return np.array([self.vectors[t] for t in texts], dtype=np.float32)

        encode_document = encode_query

        def similarity(self, a, b):
            return a @ b.T

    check = retrieval_check(Fixed(), ["q0", "q1", "q2"], ["p0", "p1", "p2"])
    assert check == {"acc@1": pytest.approx(2 / 3), "mrr": pytest.approx((1 + 1 + 1 / 2) / 3)}
    assert smoothed([{"loss": v} for v in [4] * 5 + [2] * 15 + [0.5] * 5]) == (4.0, 0.5)
    # the quick start's 12 logged batches "rose" 0.30 -> 0.68 while the held-out loss fell: no trend from so few
    assert smoothed([{"loss": v} for v in (0.3, 0.3, 0.5, 0.4, 0.6, 0.2, 0.5, 0.4, 0.3, 0.5, 0.7, 0.68)]) is None


def test_interrupted_training_resumes_to_identical_weights(scifact_pairs, tmp_path):
    base = dict(pairs=scifact_pairs, max_steps=4, save_steps=2, batch_size=4, limit=16, seed=3, **TINY)
    straight = run(TrainConfig(out=tmp_path / "a", **base)).model

    with pytest.raises(KeyboardInterrupt):
        run(TrainConfig(out=tmp_path / "b", **base), Interrupt(3))
    assert (tmp_path / "b" / "checkpoints" / "checkpoint-2").is_dir()
    assert not (tmp_path / "b" / "train.json").exists()

    with pytest.raises(Exception, match="other settings \\(batch_size: 4 -> 8"):
        run(TrainConfig(out=tmp_path / "b", resume=True, **{**base, "batch_size": 8}))

    steps = Steps()
    resumed = run(TrainConfig(out=tmp_path / "b", resume=True, **base), steps)
    assert steps.seen == [3, 4]  # it continued from checkpoint-2 instead of starting over
    assert resumed.manifest.training["resumed_at_step"] == 2
    a, b = straight.state_dict(), resumed.model.state_dict()
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    curve = json.loads((tmp_path / "b" / "train.json").read_text())["loss_curve"]
    assert [c["step"] for c in curve] == [1, 2, 3, 4]


def test_cli_separate_encoders_cls_dot_gradcache(scifact_pairs, tmp_path):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Router

    out = tmp_path / "dpr-style"
    result = CliRunner().invoke(APP, [
        "train", str(scifact_pairs), "--out", str(out), "--separate-encoders", "--pooling", "cls",
        "--similarity", "dot", "--scale", "1", "--mini-batch-size", "4", "--batch-size", "8", "--max-steps", "2",
        "--limit", "16", "--mix", "dl:0.5,cm:0.5", "--max-query-length", "32", "--max-passage-length", "96",
        "--keep-checkpoints", "--save-steps", "1"], terminal_width=200)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "training pairs" in text and "16 (dl 8, cm 8)" in text and "pairs/s" in text
    report = json.loads((out / "train.json").read_text())
    assert report["model"]["shared_encoder"] is False and report["data"]["per_method"] == {"dl": 8, "cm": 8}
    assert report["training"]["loss"] == "CachedMultipleNegativesRankingLoss"
    assert report["model"]["pooling"] == "cls" and report["training"]["steps"] == 2
    assert (out / "checkpoints" / "checkpoint-2").is_dir()

    model = SentenceTransformer(str(out), device="cpu")
    assert isinstance(model[0], Router) and model.similarity_fn_name == "dot"
    assert model[0].sub_modules["query"][1].pooling_mode == "cls"
    text = ["Vitamin D deficiency is linked to depression."]
    q, d = model.encode_query(text), model.encode_document(text)
    assert q.shape == d.shape and not np.allclose(q, d)  # two encoders, trained apart
    assert abs(float(np.linalg.norm(q)) - 1.0) < 1e-4  # the packaged model's Normalize is kept


def test_cli_fine_tunes_on_beir_train_with_bm25_negatives(tmp_path):
    shared(SCIFACT)
    out = tmp_path / "scifact-16"
    result = CliRunner().invoke(APP, [
        "train", "--beir", str(SCIFACT), "--split", "train", "--limit", "16", "--out", str(out),
        "--max-steps", "1", "--batch-size", "8", "--max-query-length", "32", "--max-passage-length", "64"],
        terminal_width=200)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "train.json").read_text())
    n = report["data"]["pairs"]
    assert report["data"]["queries"] == 16 and n >= 16 and report["data"]["per_method"] == {"beir:train": n}
    assert report["data"]["negatives"] is True and report["data"]["negatives_found"]["bm25"] == n


def test_a_plain_hugging_face_checkpoint_gets_the_papers_cls_pooling(tmp_path):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling

    from pretriever.models import resolve_model

    packaged = SentenceTransformer(resolve_model(None), device="cpu")
    plain = tmp_path / "bert-like"
    packaged[0].auto_model.save_pretrained(plain)
    packaged[0].tokenizer.save_pretrained(plain)
    assert not (plain / "modules.json").exists()

    model, info = build_model(TrainConfig(out=tmp_path / "m", pairs=tmp_path / "p", model=str(plain),
                                          similarity="dot", scale=1.0, **TINY))
    assert info["base_is_sentence_transformers"] is False and info["pooling"] == "cls" and info["normalize"] is False
    pooling = [m for m in model.children() if isinstance(m, Pooling)]
    assert len(pooling) == 1 and pooling[0].pooling_mode == "cls"
    assert not any(isinstance(m, Normalize) for m in model.children()) and model.similarity_fn_name == "dot"
    # the packaged sentence-transformers model keeps its own mean pooling + Normalize unless told otherwise
    model, info = build_model(TrainConfig(out=tmp_path / "m", pairs=tmp_path / "p", **TINY))
    assert info["pooling"] == "mean" and info["normalize"] is True
