"""An option spells the same in every stage (--lr, --grad-accum); an old spelling still works, with a note."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

import pretriever.pretrain.run
import pretriever.train.run
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
    monkeypatch.setattr(pretriever.pretrain.run, "run", _capture(seen))
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
    monkeypatch.setattr(pretriever.train.run, "run", _capture(seen))
    base = ["train", str(tmp_path / "pairs"), "--out", str(tmp_path / "m")]
    _run([*base, "--lr", "1e-5"])
    assert seen[-1].learning_rate == 1e-5
    _, output = _run([*base, "--learning-rate", "4e-5"])
    assert seen[-1].learning_rate == 4e-5
    assert "--learning-rate is deprecated" in output


# --- one field name per option in every stage config, and the old TOML keys ---

SHARED = {"learning_rate": "--lr", "gradient_accumulation": "--grad-accum", "precision": "--precision"}
OLD_FIELD_NAMES = {"lr", "grad_accum", "gradient_accumulation_steps", "learningrate"}


def _stage_configs() -> list[type]:
    """Every config dataclass the CLI is made from (fields declared with ``option``, so they carry help)."""
    import dataclasses
    import sys

    found = []
    for name, module in list(sys.modules.items()):
        if not name.startswith("pretriever.") or module is None:
            continue
        for value in vars(module).values():
            if (isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == name
                    and any("help" in f.metadata for f in dataclasses.fields(value))):
                found.append(value)
    return found


def test_no_stage_config_keeps_an_old_field_name():
    import dataclasses

    configs = _stage_configs()
    names = {c.__name__ for c in configs}
    assert {"ReaderConfig", "RefineConfig", "TrainConfig", "PretrainConfig", "GenerateConfig"} <= names
    clashes = {f"{c.__module__}.{c.__name__}.{f.name}" for c in configs for f in dataclasses.fields(c)
               if f.name in OLD_FIELD_NAMES}
    assert not clashes


def _commands(command, path=()):
    if hasattr(command, "commands"):  # a group (typer's own click)
        for name, sub in command.commands.items():
            yield from _commands(sub, (*path, name))
    else:
        yield " ".join(path), command


def test_shared_fields_have_the_shared_flag_in_every_command():
    import typer

    seen = {name: [] for name in SHARED}
    for path, command in _commands(typer.main.get_command(app)):
        for param in command.params:
            if param.name in SHARED:
                assert SHARED[param.name] in param.opts, (path, param.name, param.opts)
                seen[param.name].append(path)
    assert {"reader train", "train", "pretrain", "refine run"} <= set(seen["learning_rate"]), seen
    assert {"reader train", "pretrain"} <= set(seen["gradient_accumulation"]), seen  # train has none
    assert {"reader train", "train", "generate", "pretrain"} <= set(seen["precision"]), seen


def test_reader_train_takes_lr_and_grad_accum(monkeypatch, tmp_path):
    seen: list = []
    _reader_stage_stub(monkeypatch, seen)
    _, output = _run(["reader", "train", str(tmp_path / "d.json"), "--out", str(tmp_path / "r"), "--lr", "3e-5",
                      "--grad-accum", "2"])
    assert (seen[-1].learning_rate, seen[-1].gradient_accumulation) == (3e-5, 2)
    assert "deprecated" not in output


def _reader_stage_stub(monkeypatch, seen: list) -> None:
    import pretriever.reader.train

    monkeypatch.setattr(pretriever.reader.train, "run", _capture(seen))


def _toml(tmp_path, text: str):
    path = tmp_path / "run.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _note(capsys) -> str:
    return " ".join(capsys.readouterr().err.split())


def test_old_toml_keys_still_work_with_a_note(tmp_path, capsys):
    from pretriever.config import build_config
    from pretriever.reader.config import ReaderConfig
    from pretriever.refine.config import RefineConfig

    path = _toml(tmp_path, "[reader]\nlr = 1e-4\ngrad_accum = 3\n\n[refine]\nlr = 0.05\n")
    cfg = build_config(ReaderConfig, path, "reader", data=tmp_path / "d.json", out=tmp_path / "r")
    assert (cfg.learning_rate, cfg.gradient_accumulation) == (1e-4, 3)
    note = _note(capsys)
    assert "[reader] lr is deprecated and will go: use learning_rate" in note
    assert "[reader] grad_accum is deprecated and will go: use gradient_accumulation" in note
    refine = build_config(RefineConfig, path, "refine", index=tmp_path / "i", out=tmp_path / "o")
    assert refine.learning_rate == 0.05
    assert "[refine] lr is deprecated" in _note(capsys)
    new = _toml(tmp_path, "[reader]\nlearning_rate = 1e-4\n")
    assert build_config(ReaderConfig, new, "reader", data="d", out="r").learning_rate == 1e-4
    assert "deprecated" not in _note(capsys)


def test_old_and_new_toml_key_together_is_an_error(tmp_path):
    from pretriever.config import build_config
    from pretriever.errors import ConfigError
    from pretriever.reader.config import ReaderConfig

    path = _toml(tmp_path, "[reader]\nlr = 1e-4\nlearning_rate = 2e-4\n")
    with pytest.raises(ConfigError, match="sets both lr and learning_rate"):
        build_config(ReaderConfig, path, "reader", data="d", out="r")
    # an old key in the file and the new flag on the command line: also both, so also an error
    with pytest.raises(ConfigError, match="sets both lr and learning_rate"):
        build_config(ReaderConfig, _toml(tmp_path, "[reader]\nlr = 1e-4\n"), "reader", data="d", out="r",
                     learning_rate=3e-4)


def test_old_toml_key_through_the_command(monkeypatch, tmp_path):
    seen: list = []
    _reader_stage_stub(monkeypatch, seen)
    path = _toml(tmp_path, "[reader]\nlr = 7e-5\n")
    _, output = _run(["reader", "train", "d.json", "--out", str(tmp_path / "r"), "--config", str(path)])
    assert seen[-1].learning_rate == 7e-5
    assert "lr is deprecated and will go: use learning_rate" in " ".join(output.split())


# --- one precision vocabulary ---

def test_resolve_precision():
    from pretriever.training import PRECISIONS, resolve_precision

    assert PRECISIONS == ("auto", "fp32", "fp16", "bf16")
    assert resolve_precision("auto", "cpu") == "fp32"
    assert resolve_precision("AUTO", None) == "fp32"
    for value in ("fp32", "fp16", "bf16"):
        assert resolve_precision(value, "cpu") == value
        assert resolve_precision(value, "cuda") == value
    with pytest.raises(ValueError, match="precision must be one of auto, fp32, fp16, bf16, got 'fp8'"):
        resolve_precision("fp8", "cpu")


def test_half_precision_without_a_gpu_is_refused_before_the_trainer_starts(monkeypatch):
    import pretriever.models
    from pretriever.errors import ConfigError
    from pretriever.training import trainer_precision

    monkeypatch.setattr(pretriever.models, "resolve_device", lambda device=None: "cpu")
    assert trainer_precision("auto") == trainer_precision("fp32") == "fp32"
    for value in ("bf16", "fp16"):
        with pytest.raises(ConfigError, match=f"--precision {value}: the Hugging Face Trainer runs fp16 and bf16 on "
                                              "a GPU only, and this machine has cpu"):
            trainer_precision(value)


def test_every_stage_checks_precision_alike(tmp_path):
    from pretriever.generate.config import GenerateConfig
    from pretriever.pretrain.config import PretrainConfig
    from pretriever.reader.config import ReaderConfig
    from pretriever.train.config import TrainConfig

    made = {"train": lambda p: TrainConfig(pairs=tmp_path, out=tmp_path / "m", precision=p),
            "pretrain": lambda p: PretrainConfig(pairs=tmp_path, out=tmp_path / "p", precision=p),
            "reader": lambda p: ReaderConfig(data=tmp_path, out=tmp_path / "r", precision=p),
            "generate": lambda p: GenerateConfig(corpus=tmp_path, out=tmp_path / "q", model="t5", precision=p)}
    for stage, make in made.items():
        for value in ("auto", "fp32", "fp16", "bf16"):
            assert make(value).precision == value, stage
        with pytest.raises(ValueError) as err:
            make("half")
        assert str(err.value) == "precision must be one of auto, fp32, fp16, bf16, got 'half'", stage
    # one default everywhere: auto, fp32 on a CPU (nothing changes there), bf16 (else fp16) on a GPU
    assert {make("fp32").__class__.__dataclass_fields__["precision"].default for make in made.values()} == {"auto"}


# --- the options many stages share: declared once (pretriever.config), resolved once (resolve_device) ---

SHARED_WORDING = {  # field -> the wording its one declaration gives, whatever the stage
    "device": r"Where .+: cpu, cuda, cuda:1, mps\.", "batch_size": r"[A-Z]\w+ per .+\.", "seed": r"Seed of .+\.",
    "resume": r"Continue .+\.", "overwrite": r"Replace .+\."}


def test_shared_options_are_worded_by_their_one_declaration():
    import dataclasses
    import re

    from pretriever.config import DEVICE_DEFAULT

    seen = {name: [] for name in SHARED_WORDING}
    for config in _stage_configs():
        for f in dataclasses.fields(config):
            if f.name in SHARED_WORDING:
                where = f"{config.__name__}.{f.name}: {f.metadata['help']!r}"
                assert re.fullmatch(SHARED_WORDING[f.name], f.metadata["help"], re.S), where
                seen[f.name].append(config.__name__)
            if f.name == "device":
                assert (f.default, f.metadata["default_help"]) == (None, DEVICE_DEFAULT), config.__name__
    assert {"IndexConfig", "GenerateConfig", "PretrainConfig", "ServeConfig", "RefineConfig"} <= set(seen["device"])
    assert {"TrainConfig", "ReaderConfig", "PretrainConfig", "EvaluateConfig"} <= set(seen["batch_size"])
    assert {"CorpusConfig", "MineConfig", "FinetuneConfig"} <= set(seen["overwrite"]), seen


def test_resolve_device_is_the_device_given_else_cuda_else_mps_else_cpu(monkeypatch):
    import torch

    from pretriever.models import resolve_device

    assert resolve_device("cuda:1") == "cuda:1"
    for cuda, mps, expected in ((True, True, "cuda"), (False, True, "mps"), (False, False, "cpu")):
        monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
        monkeypatch.setattr(torch.backends.mps, "is_available", lambda: mps)
        assert resolve_device(None) == resolve_device() == expected


@pytest.mark.parametrize("config, required, folder", [
    ("pretriever.references.config:FetchConfig", {"corpus": "c", "out": "o"}, "--out"),
    ("pretriever.references.config:ImportConfig", {"corpus": "c", "files": ["w.warc"], "out": "o"}, "--out"),
    ("pretriever.train.config:TrainConfig", {"pairs": "p", "out": "o"}, "MODEL_DIR"),
    ("pretriever.pretrain.config:PretrainConfig", {"pairs": "p", "out": "o"}, "MODEL_DIR"),
    ("pretriever.generate.config:GenerateConfig", {"corpus": "c", "out": "o", "model": "m"}, "QUERIES_DIR"),
])
def test_resume_with_overwrite_is_refused_in_one_wording(config, required, folder):
    import importlib

    module, name = config.split(":")
    cls = getattr(importlib.import_module(module), name)
    with pytest.raises(ValueError, match=f"^--resume continues the run in {folder} and --overwrite replaces it: "
                                         "pick one$"):
        cls(**required, resume=True, overwrite=True)
