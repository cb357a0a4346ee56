"""Training on two processes as a user starts it on two GPUs (``torchrun --nproc_per_node 2 pretriever ...``), here
on the CPU, where DDP runs over gloo: the same code path but for the device and the backend."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from conftest import QA, shared
from pretriever.testing import random_bert

pytestmark = pytest.mark.slow
PRETRIEVER = str(Path(sys.executable).parent / "pretriever")
TWO_STEPS = ["--model", "model", "--max-steps", "2", "--logging-steps", "1", "--warmup", "0", "--max-query-length", "32",
            "--max-passage-length", "64", "--learning-rate", "1e-3", "--seed", "3"]
CHECKPOINTED = ["--save-steps", "1", "--keep-checkpoints", *TWO_STEPS]


def launch(args: list[str], processes: int, cwd: Path) -> subprocess.CompletedProcess:
    """``pretriever ARGS`` alone, or under torchrun with ``processes`` processes; fails the test on a non-zero
    exit, showing the output."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [PRETRIEVER, *args] if processes == 1 else [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
        "--no-python", PRETRIEVER, *args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def one_and_two(scifact_pairs, tmp_path_factory) -> tuple[Path, Path]:
    """Two steps at a global batch of 8 pairs: in one process, and in two processes of 4 whose passages are every
    query's candidates (--gather-across-devices), each keeping a checkpoint after every step (the resume test
    cuts the two-process run back to its first). A tiny BERT without dropout, so that a step depends on its
    batch alone (dropout's random masks would differ between the two runs)."""
    work = tmp_path_factory.mktemp("ddp")
    random_bert(work / "model", dropout=0.0)  # --model model (TWO_STEPS), relative to work
    launch(["train", str(scifact_pairs), "--out", "one", "--batch-size", "8", *CHECKPOINTED], 1, work)
    launch(["train", str(scifact_pairs), "--out", "two", "--batch-size", "4", "--gather-across-devices",
            *CHECKPOINTED], 2, work)
    return work / "one", work / "two"


def test_two_processes_give_the_loss_of_one(one_and_two):
    # the two processes take the two halves of the batch one process takes, and score each query against both
    # halves' passages (before the fix, each process trained alone on every batch: no process group on CPUs)
    one, two = one_and_two
    report_one, report_two = (json.loads((p / "train.json").read_text()) for p in (one, two))
    assert report_two["training"]["world_size"] == 2 and report_one["training"]["world_size"] == 1
    assert len(report_one["loss_curve"]) == 2  # the second step ran (before: it stopped two processes)
    for step_one, step_two in zip(report_one["loss_curve"], report_two["loss_curve"], strict=True):
        assert step_two["loss"] == pytest.approx(step_one["loss"], abs=1e-5)


def test_two_processes_give_the_weights_of_one(one_and_two):
    # before: DDP was told that no weight goes unused, but BERT's pooler does (mean pooling), so the bucket that
    # held it, here the whole tiny model, was never reduced: each process stepped on its own half-batch gradient
    # (cosine 0.4-0.8 with one process's), and a second step stopped with "Expected to have finished reduction"
    weights_one, weights_two = (load_file(str(p / "model.safetensors")) for p in one_and_two)
    assert weights_one.keys() == weights_two.keys()
    # each of Adam's steps moves a weight by about lr (1e-3; the defect: 2e-3 apart). Sums in another order leave
    # gradients equal to ~1e-7, which Adam's second step, dividing by the root of small moments, makes ~2e-5
    for name, w in weights_one.items():
        assert torch.allclose(w, weights_two[name], atol=1e-4), name


def test_two_processes_with_gradcache_give_the_losses_and_weights_of_one(scifact_pairs, one_and_two):
    """--mini-batch-size (GradCache: sentence-transformers' cached loss runs a backward per mini-batch inside the
    step) on two processes: the same two steps as one process without it, since GradCache computes the batch's
    loss and gradients in mini-batches, not another loss."""
    one = one_and_two[0]
    launch(["train", str(scifact_pairs), "--out", "two-cached", "--batch-size", "4", "--gather-across-devices",
            "--mini-batch-size", "2", *TWO_STEPS], 2, one.parent)
    cached = one.parent / "two-cached"
    curves = [json.loads((p / "train.json").read_text())["loss_curve"] for p in (one, cached)]
    assert [s["loss"] for s in curves[1]] == pytest.approx([s["loss"] for s in curves[0]], abs=1e-5)
    assert len(curves[0]) == 2
    weights_one, weights_two = (load_file(str(p / "model.safetensors")) for p in (one, cached))
    for name, w in weights_one.items():
        assert torch.allclose(w, weights_two[name], atol=1e-4), name


def test_reader_training_on_two_processes_gives_one_process_step_and_one_folder(tmp_path):
    """reader train under torchrun: the processes split each batch (before, on CPUs, each trained alone on every
    batch), two steps end where one process's end, and only the first process writes the folder."""
    squad = shared(QA / "squad2-dev-5articles.json")
    random_bert(tmp_path / "model", dropout=0.0)
    common = ["--model", "model", "--passages", "1", "--max-steps", "2", "--dev-share", "0", "--max-length", "128",
              "--lr", "1e-3", "--warmup-ratio", "0", "--seed", "3", "--no-group-by-length", "--limit", "64"]
    launch(["reader", "train", str(squad), "--out", "one", "--batch-size", "8", *common], 1, tmp_path)
    launch(["reader", "train", str(squad), "--out", "two", "--batch-size", "4", *common], 2, tmp_path)
    one, two = (load_file(str(tmp_path / p / "model.safetensors")) for p in ("one", "two"))
    # qa_outputs.bias shifts every start (end) logit alike, which the softmax ignores: its gradient is zero but for
    # rounding, and Adam's step turns rounding into about lr either way; every other weight follows its gradient
    for name, w in one.items():
        if name != "qa_outputs.bias":
            assert torch.allclose(w, two[name], atol=1e-4), name
    assert sorted(p.name for p in (tmp_path / "two").iterdir()) == sorted(p.name for p in (tmp_path / "one").iterdir())
    assert json.loads((tmp_path / "two" / "reader.json").read_text())["steps"] == 2


def test_a_run_interrupted_on_two_processes_resumes_on_two_to_the_same_weights(scifact_pairs, one_and_two):
    """--resume under torchrun: the two-process run cut after its first checkpoint (checkpoint-2 and the finished
    files removed, as an interrupted run leaves the folder) continues from step 1 on two processes and ends where
    the uninterrupted run did."""
    import shutil

    full = one_and_two[1]
    cut = full.parent / "two-cut"
    shutil.copytree(full, cut)
    shutil.rmtree(cut / "checkpoints" / "checkpoint-2")
    for path in cut.iterdir():  # what a finished run adds beside its checkpoints
        if path.name not in ("checkpoints", ".pretriever.json"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
    launch(["train", str(scifact_pairs), "--out", cut.name, "--resume", "--batch-size", "4", "--gather-across-devices",
            *CHECKPOINTED], 2, full.parent)
    report = json.loads((cut / "train.json").read_text())
    assert report["training"]["resumed_at_step"] == 1 and report["training"]["world_size"] == 2
    done, resumed = (load_file(str(p / "model.safetensors")) for p in (full, cut))
    assert done.keys() == resumed.keys()
    for name, w in done.items():
        assert torch.allclose(w, resumed[name], atol=1e-6), name


def test_only_the_first_process_writes_the_folder(one_and_two):
    _, two = one_and_two
    marker = json.loads((two / ".pretriever.json").read_text())
    assert marker["stage"] == "train"
    assert not list(two.rglob("*rank1*")), "a second process's work file was left in the folder"
    assert sorted(p.name for p in two.iterdir()) == sorted(p.name for p in one_and_two[0].iterdir())


def run_script(script: Path, args: list[str], processes: int, cwd: Path) -> None:
    """``python SCRIPT ARGS`` alone, or under torchrun with ``processes`` processes; fails the test on a non-zero
    exit, showing the output."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, str(script), *args] if processes == 1 else [
        sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}", str(script),
        *args]
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.parametrize("objective, mini_batch", [("cocondenser", None), ("cocondenser", 2), ("cotmae", None)])
def test_a_pretrain_step_on_two_processes_is_one_process_step_at_the_global_batch(tmp_path, objective, mini_batch):
    """Two processes of 4 pairs against one of 8 (the same masks: tests/ddp_pretrain_step.py), dropout off: the
    same loss terms and gradients. Each needs its part: MLM terms divided by the masked tokens of both processes
    (each process's own would give each half the weight of the whole), coCondenser's contrastive term over both
    processes' spans, and the gradients summed over the processes."""
    random_bert(tmp_path / "model", dropout=0.0)
    script = Path(__file__).parent / "ddp_pretrain_step.py"
    for processes, out in ((1, "one"), (2, "two")):
        (tmp_path / out).mkdir()
        run_script(script, [str(tmp_path / "model"), objective, out, *([str(mini_batch)] if mini_batch else [])],
                   processes, tmp_path)
    one, two = (load_file(str(tmp_path / out / "step.safetensors")) for out in ("one", "two"))
    assert one.keys() == two.keys()
    terms = sorted(k for k in one if k.startswith("term."))
    assert len(terms) == 4 and all(one[k].item() > 0.1 for k in terms), {k: one[k].item() for k in terms}
    for k in terms:
        assert two[k].item() == pytest.approx(one[k].item(), rel=1e-5), k
    grads = [k for k in one if k.startswith("grad.")]
    assert len(grads) > 40
    for k in grads:
        assert torch.allclose(two[k], one[k], rtol=1e-4, atol=1e-6), (k, (two[k] - one[k]).abs().max().item())


def pretrain_pairs(folder: Path) -> Path:
    """16 cc pairs: two passages of one SciFact abstract each (its first and second halves)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from conftest import SCIFACT

    rows = []
    with open(shared(SCIFACT / "corpus.jsonl"), encoding="utf-8") as f:
        for line, _ in zip(f, range(16)):
            words = json.loads(line)["text"].split()[:80]
            rows.append({"method": "cc", "query": " ".join(words[40:]), "positive_text": " ".join(words[:40])})
    folder.mkdir()
    pq.write_table(pa.Table.from_pylist(rows), folder / "cc.parquet")
    return folder


def test_pretrain_on_two_processes_writes_one_folder_and_resumes_on_two(tmp_path):
    """pretrain under torchrun: the first process alone writes the folder (what a run alone writes), the manifest
    counts both processes' pairs, and a run cut after its first checkpoint resumes on two processes to the weights
    of the uninterrupted run (each process takes back its own random state); on one process it is refused."""
    pretrain_pairs(tmp_path / "pairs")
    random_bert(tmp_path / "model", dropout=0.0)
    common = ["pretrain", "pairs", "--objective", "cocondenser", "--model", "model", "--batch-size", "2",
              "--max-steps", "2", "--max-length", "32", "--save-steps", "1", "--logging-steps", "1"]
    launch([*common, "--out", "alone", "--batch-size", "4"], 1, tmp_path)
    launch([*common, "--out", "two"], 2, tmp_path)
    report = json.loads((tmp_path / "two" / "pretrain.json").read_text())
    assert report["pairs"]["processes"] == 2 and report["pairs"]["global_batch_size"] == 4
    assert report["pairs_seen"] == 8 and report["pairs"]["batches_per_epoch"] == 4  # 16 pairs, 4 a global batch
    assert report["steps"] == 2 and len(report["loss_curve"]) == 2
    listing = {p: sorted(q.name for q in (tmp_path / p).iterdir()) for p in ("two", "alone")}
    assert listing["two"] == listing["alone"]  # the first process wrote what a run alone writes, no one else
    options = {"pairs": "pairs", "out": "cut", "objective": "cocondenser", "model": "model", "batch_size": 2,
               "max_steps": 2, "max_length": 32, "save_steps": 1, "logging_steps": 1}
    run_script(Path(__file__).parent / "ddp_pretrain_interrupted.py", [json.dumps(options), "2"], 2, tmp_path)
    cut = tmp_path / "cut"
    assert [p.name for p in (cut / "checkpoints").iterdir()] == ["step-1.pt"] and not (cut / "pretrain.json").exists()
    alone = subprocess.run([PRETRIEVER, *common, "--out", "cut", "--resume"], cwd=tmp_path, capture_output=True,
                           text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"}, timeout=600)
    assert alone.returncode != 0 and "written by 2 process(es)" in alone.stdout + alone.stderr
    launch([*common, "--out", "cut", "--resume"], 2, tmp_path)
    done, resumed = (load_file(str(tmp_path / p / "model.safetensors")) for p in ("two", "cut"))
    assert done.keys() == resumed.keys()
    for name, w in done.items():
        assert torch.allclose(w, resumed[name], atol=1e-6), name
