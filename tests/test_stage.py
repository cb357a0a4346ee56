"""The pieces every stage shares: its --out folder's lifecycle and the Reporter."""

from __future__ import annotations

import json

import pytest
from rich.console import Console

from pretriever.errors import PretrieverError
from pretriever.progress import QUIET, RichReporter
from pretriever.stage import MARKER, FolderError, OutputFolder, StageResult, differences
from pretriever.testing import RecordingReporter


class Oops(PretrieverError):
    exit_code = 7


def folder(path, stage="train", report=QUIET):
    return OutputFolder(path, stage=stage, holds="a model", owns=("report.json", "checkpoints"), error=Oops,
                        report=report)


def snapshot(root):
    """Every file under ``root`` with its bytes: what a refusal must leave as it was."""
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_a_fresh_folder_is_made_marked_and_nothing_is_resumed(tmp_path):
    assert folder(tmp_path / "out").prepare() is None
    marker = json.loads((tmp_path / "out" / MARKER).read_text())
    assert marker["stage"] == "train" and marker["holds"] == "a model" and marker["pretriever_version"]
    assert marker["created"].endswith("+00:00")


def test_resume_and_overwrite_together_are_refused(tmp_path):
    with pytest.raises(Oops, match="give one of them"):
        folder(tmp_path).prepare(resume=True, overwrite=True)


@pytest.mark.parametrize("names", [["thesis.tex"], ["report.json", ".git/HEAD", "src/a.py"],
                                   ["checkpoints/checkpoint-1/trainer_state.json"]])
def test_a_folder_without_the_marker_is_never_touched(tmp_path, names):
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("years of work")
    before = snapshot(tmp_path)
    for options in ({}, {"overwrite": True}, {"resume": True}):
        with pytest.raises(FolderError, match=f"no {MARKER}") as err:
            folder(tmp_path).prepare(**options)
        assert err.value.exit_code == 2
    assert snapshot(tmp_path) == before
    # a folder of today's names (an earlier pretriever's) is told apart from anyone's folder
    assert ("earlier pretriever" in str(err.value)) == (names[0] != "thesis.tex")


def test_a_folder_of_another_stage_is_refused_by_name(tmp_path):
    OutputFolder(tmp_path, stage="corpus", holds="a corpus store", owns=("manifest.json",)).prepare()
    (tmp_path / "manifest.json").write_text("{}")
    before = snapshot(tmp_path)
    with pytest.raises(FolderError, match="holds a corpus store, not a model"):
        folder(tmp_path).prepare(overwrite=True)
    assert snapshot(tmp_path) == before


def test_overwrite_removes_only_what_the_stage_wrote_and_names_the_rest(tmp_path):
    out = tmp_path / "out"
    first = folder(out)
    first.prepare()
    (out / "report.json").write_text("{}")          # matches owns
    (out / "model.safetensors").write_text("w")     # written by the run, recorded by seal()
    first.seal()
    assert json.loads((out / MARKER).read_text())["written"] == ["model.safetensors", "report.json"]
    (out / "notes.txt").write_text("mine, not pretriever's")  # added by a person afterwards
    (out / "checkpoints").mkdir()                   # an interrupted later run's, never sealed
    report = RecordingReporter()
    assert folder(out, report=report).prepare(overwrite=True) is None
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "notes.txt"]
    assert report.messages == [f"{out}: left what pretriever did not write there: notes.txt"]
    again = folder(out)
    again.prepare(overwrite=True)  # nothing of ours: nothing to replace, the person's file stays unlisted
    (out / "report.json").write_text("{}")
    again.seal()
    assert json.loads((out / MARKER).read_text())["written"] == ["report.json"]


def test_a_file_is_not_a_folder(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(FolderError, match="not a folder"):
        folder(tmp_path / "f").prepare()


def test_an_earlier_run_needs_overwrite_and_resume_finds_the_newest_checkpoint(tmp_path):
    folder(tmp_path).prepare()
    for step in (5, 20, 10):
        (tmp_path / "checkpoints" / f"checkpoint-{step}").mkdir(parents=True)
        (tmp_path / "checkpoints" / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoints" / "checkpoint-30").mkdir()  # incomplete: no trainer_state.json
    with pytest.raises(Oops, match="--overwrite to replace it or continue the interrupted run with --resume"):
        folder(tmp_path).prepare()
    assert folder(tmp_path).prepare(resume=True).name == "checkpoint-20"
    (tmp_path / "keep.me").write_text("x")
    assert folder(tmp_path).prepare(overwrite=True, keep=["keep.me"]) is None
    assert sorted(p.name for p in tmp_path.iterdir()) == [MARKER, "keep.me"]


def test_resume_without_a_checkpoint_says_so_unless_none_is_needed(tmp_path):
    folder(tmp_path).prepare()
    (tmp_path / "report.json").write_text("{}")
    with pytest.raises(Oops, match="nothing to resume"):
        folder(tmp_path).prepare(resume=True)
    assert folder(tmp_path).prepare(resume=True, need_checkpoint=False) is None


def test_a_resume_with_other_settings_names_each_change(tmp_path):
    saved = tmp_path / "run.json"
    OutputFolder.save_fingerprint(saved, {"lr": 1e-5, "batch": 8}, step=3)
    folder(tmp_path).check_fingerprint(saved, {"lr": 1e-5, "batch": 8})
    with pytest.raises(Oops, match=r"batch: 8 -> 16"):
        folder(tmp_path).check_fingerprint(saved, {"lr": 1e-5, "batch": 16})
    assert differences({"a": 1}, {"b": 2}) == ["a: 1 -> None", "b: None -> 2"]


def test_a_stage_result_keeps_subclass_fields_positional():
    from dataclasses import dataclass

    @dataclass
    class Mined(StageResult):
        pairs: int

    result = Mined(3, out="x", manifest={"n": 3})
    assert (result.pairs, result.out, result.manifest) == (3, "x", {"n": 3})


def test_reporters_record_and_draw():
    QUIET.message("nobody hears this")
    QUIET.progress("t", 1, 2)
    rec = RecordingReporter()
    rec.message("reading")
    for done in (1, 2):
        rec.progress("encoding", done, 4, unit="passages", loss=0.5)
    assert rec.messages == ["reading"] and rec.last["encoding"] == (2, 4, "passages", {"loss": 0.5})
    assert rec.calls["encoding"] == 2
    out = Console(record=True, width=120, force_terminal=False)
    with RichReporter(out) as report:
        report.message("[not markup]")
        report.progress("reading dump", 3_000_000, 6_000_000, unit="bytes")
    text = out.export_text()
    assert "[not markup]" in text and "reading dump" in text and "3.0/6.0 MB" in text
