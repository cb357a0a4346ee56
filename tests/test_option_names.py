"""An option spells the same in every stage (--lr, --grad-accum); an old spelling still works, with a note."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import pretriever.pretrain.run as pretrain_run
import pretriever.train.run as train_run
from pretriever.cli import app


class Stop(Exception):
    """Raised by a stand-in stage once it has the config the command line built."""


def _capture(seen: list):
    def stage(cfg, *args, **kwargs):
        seen.append(cfg)
        raise Stop

    return stage


def _run(args: list[str]) -> tuple[object, str]:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert isinstance(result.exception, Stop), result.output
    return result, result.output


@pytest.mark.parametrize("stage", ["pretrain", "train", "finetune", "reader train"])
def test_help_shows_the_shared_spellings_only(stage):
    result = CliRunner().invoke(app, [*stage.split(), "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "--lr " in result.output
    assert "--learning-rate" not in result.output and "--gradient-accumulation" not in result.output


def test_pretrain_takes_the_new_and_the_old_spellings(monkeypatch, tmp_path):
    seen: list = []
    monkeypatch.setattr(pretrain_run, "run", _capture(seen))
    base = ["pretrain", str(tmp_path / "pairs"), "--out", str(tmp_path / "m")]
    _, output = _run([*base, "--lr", "3e-4", "--grad-accum", "4"])
    assert (seen[-1].learning_rate, seen[-1].gradient_accumulation) == (3e-4, 4)
    assert "deprecated" not in output
    _, output = _run([*base, "--learning-rate", "5e-5", "--gradient-accumulation", "2"])
    assert (seen[-1].learning_rate, seen[-1].gradient_accumulation) == (5e-5, 2)
    assert "--learning-rate is deprecated and will go: use --lr" in " ".join(output.split())
    assert "--gradient-accumulation is deprecated and will go: use --grad-accum" in " ".join(output.split())
    _run([*base, "--learning-rate", "5e-5", "--lr", "7e-5"])
    assert seen[-1].learning_rate == 7e-5  # the new spelling wins


def test_train_takes_the_old_learning_rate_spelling(monkeypatch, tmp_path):
    seen: list = []
    monkeypatch.setattr(train_run, "run", _capture(seen))
    base = ["train", str(tmp_path / "pairs"), "--out", str(tmp_path / "m")]
    _run([*base, "--lr", "1e-5"])
    assert seen[-1].learning_rate == 1e-5
    _, output = _run([*base, "--learning-rate", "4e-5"])
    assert seen[-1].learning_rate == 4e-5
    assert "--learning-rate is deprecated" in output
