"""A TOML value of the wrong type is a ConfigError naming the file, table and key (exit 2), never a raw
TypeError or a server that answers every call with a 500; the forms the command line takes still work."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from pretriever.cli import app
from pretriever.config import build_config
from pretriever.errors import ConfigError
from pretriever.evaluate.config import EvaluateConfig
from pretriever.index.config import IndexConfig
from pretriever.mine.config import MineConfig
from pretriever.reader.config import ReaderConfig
from pretriever.serve.config import ServeConfig
from pretriever.train.config import TrainConfig

REQUIRED = {"serve": (ServeConfig, {"index": "idx"}), "index": (IndexConfig, {"corpus": "c", "out": "o"}),
            "evaluate": (EvaluateConfig, {"out": "o", "bm25": True, "corpus": "c", "answers": "qa.jsonl"}),
            "reader": (ReaderConfig, {"data": "d.json", "out": "r"}), "train": (TrainConfig, {"pairs": "p", "out": "o"}),
            "mine": (MineConfig, {"corpus": "c", "out": "o"})}


def _build(tmp_path: Path, section: str, body: str):
    toml = tmp_path / "run.toml"
    toml.write_text(f"[{section}]\n{body}\n", encoding="utf-8")
    cls, required = REQUIRED[section]
    return build_config(cls, toml, section, **required)


@pytest.mark.parametrize("section, body, where, expected", [
    ("serve", 'api_key = ["x"]', "[serve] api_key", "a string, got a TOML array"),  # was: every call a 500
    ("serve", "api_key = 123", "[serve] api_key", "a string, got a TOML integer"),  # was: a raw TypeError
    ("serve", 'port = "8000"', "[serve] port", "an integer, got a TOML string"),  # was: a raw TypeError
    ("serve", "port = true", "[serve] port", "an integer, got a TOML boolean"),  # a bool is not an int
    ("serve", "[serve.hybrid]\nrrf_k = 60.5", "[serve.hybrid] rrf_k", "an integer, got a TOML float"),
    ("index", '[index.faiss]\nhnsw_m = "16"', "[index.faiss] hnsw_m", "an integer, got a TOML string"),
    ("index", "faiss = 3", "[index] faiss", "a table of FaissParams settings"),
    ("evaluate", 'ks = [1, "5"]', "[evaluate] ks", "a list of integers"),
    ("evaluate", "overlap = 1", "[evaluate] overlap", "true or false, got a TOML integer"),
    ("reader", 'lr = "fast"', "[reader] lr", "a number, got a TOML string"),  # an old key name: its field's type
    ("train", "mix = 3", "[train] mix", "a table of numbers"),
    ("mine", "methods = [1, 2]", "[mine] methods", "a list of strings"),
    ("serve", "host = 2024-01-01", "[serve] host", "a string, got a TOML date"),
])
def test_a_toml_value_of_the_wrong_type_names_file_table_and_key(tmp_path, section, body, where, expected):
    with pytest.raises(ConfigError) as err:
        _build(tmp_path, section, body)
    assert str(err.value).startswith(f"{tmp_path / 'run.toml'} {where}: expected {expected}")
    assert err.value.exit_code == 2


@pytest.mark.parametrize("section, body, field, value", [
    ("serve", "batch_wait_ms = 3", "batch_wait_ms", 3),  # an int where a float is expected
    ("serve", 'qrels = {test = "qrels/test.tsv"}', "qrels", {"test": Path("qrels/test.tsv")}),
    ("serve", 'qrels = ["test=qrels/test.tsv"]', "qrels", {"test": Path("qrels/test.tsv")}),  # the CLI's form
    ("evaluate", "ks = 10", "ks", [10]),
    ("evaluate", 'ks = "1,5"', "ks", [1, 5]),
    ("evaluate", 'index = "a-index"', "index", [Path("a-index")]),
    ("mine", 'methods = "dl,cm"', "methods", ["dl", "cm"]),
    ("train", "mix = {dl = 1, cm = 3}", "mix", {"dl": 0.25, "cm": 0.75}),
    ("index", "[index.faiss]\nhnsw_m = 16", "faiss", None),
])
def test_the_forms_the_fields_take_are_accepted(tmp_path, section, body, field, value):
    cfg = _build(tmp_path, section, body)
    if value is not None:
        assert getattr(cfg, field) == value


def test_serve_with_a_mistyped_toml_value_exits_2_naming_it(tmp_path):
    toml = tmp_path / "serve.toml"
    toml.write_text('[serve]\nport = "8000"\n', encoding="utf-8")
    result = CliRunner().invoke(app, ["serve", str(tmp_path / "index"), "--config", str(toml)])
    assert result.exit_code == 2, result.output
    assert "[serve] port: expected an integer, got a TOML string" in " ".join(result.output.split())
