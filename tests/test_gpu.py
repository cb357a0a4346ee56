"""What a CUDA device changes, checked on one (`pytest -m gpu`; skipped without CUDA): half-precision steps of
train and pretrain, GradCache's gradients, encoding equal to the CPU's, a reader step. ``bench/gpu_check.sh`` runs
these on a machine with a GPU."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

import pretriever.pretrain.run
from pretriever.pretrain import PretrainConfig
from pretriever.pretrain.gradcache import gradcache_step
from pretriever.pretrain.run import build_objective
from conftest import QA, shared
from pretrain_fixtures import tiny_bert_st
from test_pretrain_gradcache import METHODS, XS, YS, gradients

DEVICE = os.environ.get("PRETRIEVER_GPU_TESTS_ON", "cuda")  # "cpu": a dry run of these tests where no GPU is
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(DEVICE == "cuda" and not torch.cuda.is_available(),
                                                  reason="needs a CUDA device")]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return tiny_bert_st(tmp_path_factory.mktemp("bert") / "st", pooling="mean", normalize=True)


@pytest.fixture
def pairs(tmp_path):
    folder = tmp_path / "pairs"
    folder.mkdir()
    rows = [{"pair_id": f"p{i}", "method": "cc", "query": y, "positive_text": x} for i, (x, y) in enumerate(zip(XS, YS))]
    pq.write_table(pa.Table.from_pylist(rows * 4), folder / "cc.parquet")
    return folder


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_a_train_run_at_half_precision(tiny, pairs, tmp_path, precision):
    from pretriever.train import TrainConfig
    import pretriever.train.run

    if DEVICE == "cpu":
        pytest.skip("the Hugging Face Trainer runs fp16 and bf16 on a GPU only (train refuses them on a CPU)")

    result = pretriever.train.run.run(TrainConfig(pairs=pairs, out=tmp_path / "m", model=str(tiny), batch_size=4,
                                                  max_steps=3, precision=precision, max_query_length=32,
                                                  max_passage_length=32), device=DEVICE)
    report = json.loads((tmp_path / "m" / "train.json").read_text())
    assert result.manifest is not None and math.isfinite(report["loss_curve"][-1]["loss"])


@pytest.mark.parametrize("precision", ["bf16", "fp16"])
def test_pretrain_on_cuda_with_gradcache(tiny, pairs, tmp_path, precision):
    pretriever.pretrain.run.run(PretrainConfig(pairs=pairs, out=tmp_path / "p", objective="cocondenser",
                                               model=str(tiny), batch_size=4, max_steps=3, max_length=32,
                                               mini_batch_size=2, precision=precision, device=DEVICE))
    report = json.loads((tmp_path / "p" / "pretrain.json").read_text())
    assert report["device"].startswith(DEVICE) and report["precision"] == precision
    assert all(math.isfinite(p["loss"]) for p in report["loss_curve"])


@pytest.mark.parametrize("objective", ["cocondenser", "cotmae"])
def test_gradcache_gives_the_whole_batchs_gradients_on_cuda(tiny, tmp_path, objective):
    cfg = PretrainConfig(pairs=tmp_path, out=tmp_path / "m", model=str(tiny), objective=objective, scale=5.0)
    model = build_objective(cfg, DEVICE)[1].eval()
    torch.manual_seed(0)
    inputs = {k: v.to(DEVICE) for k, v in model.prepare(XS, YS, METHODS).items()}
    (model(**inputs)["loss"] * 0.5).backward()
    expected = gradients(model)
    gradcache_step(model, inputs, 5, scale=0.5)
    got = gradients(model)
    assert set(got) == set(expected)
    for name, grad in expected.items():
        assert torch.allclose(got[name], grad, rtol=1e-4, atol=1e-5), (name, (got[name] - grad).abs().max())


def test_encoding_on_cuda_equals_the_cpus(tiny, tmp_path):
    """index build on the device equals the CPU's; --precision bf16/fp16 there stays within cosine 0.99 of it.
    Through the library, not the CLI: the command line imports the serving and fetching stacks, which the GPU
    check's wheels leave behind."""
    from pretriever.corpus import build
    from pretriever.corpus.config import CorpusConfig
    from pretriever.index import IndexConfig, encode

    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": f"d{i}", "title": "", "text": x}) + "\n" for i, x in enumerate(XS)))
    build.run(CorpusConfig(input=docs, out=tmp_path / "s", workers=1))

    def vectors(name: str, device: str, precision: str = "fp32") -> np.ndarray:
        encode.run(IndexConfig(corpus=tmp_path / "s", out=tmp_path / name, model=str(tiny), device=device,
                               precision=precision))
        return np.load(tmp_path / name / "embeddings.npy")

    cpu = vectors("on-cpu", "cpu")
    assert np.allclose(cpu, vectors("on-device", DEVICE), atol=1e-4)
    for precision in ("bf16", "fp16"):
        half = vectors(precision, DEVICE, precision)
        cosine = (cpu * half).sum(1) / np.linalg.norm(cpu, axis=1) / np.linalg.norm(half, axis=1)
        assert cosine.min() > 0.99, (precision, cosine)


def test_a_reader_step_on_cuda(tiny, tmp_path):
    """The Trainer puts the reader on the GPU itself (reader train has no --device). The random BERT under the
    sentence-transformers folder, so that nothing here needs the packaged MiniLM (a GPU machine lacks it)."""
    from pretriever.reader.config import ReaderConfig
    import pretriever.reader.train

    squad = shared(QA / "squad2-dev-5articles.json")
    result = pretriever.reader.train.run(ReaderConfig(data=squad, out=tmp_path / "reader", passages=1, max_steps=2,
                                                      batch_size=4, max_length=64, model=str(tiny) + "-hf"))
    assert result.manifest is not None
