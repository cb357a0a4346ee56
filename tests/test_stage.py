"""The pieces every stage shares: its --out folder's lifecycle and the Reporter."""

from __future__ import annotations

import pytest
from rich.console import Console

from pretriever.errors import PretrieverError
from pretriever.progress import QUIET, RichReporter
from pretriever.stage import OutputFolder, StageResult, differences
from pretriever.testing import RecordingReporter


class Oops(PretrieverError):
    exit_code = 7


def folder(path):
    return OutputFolder(path, holds="a model", markers=("report.json", "checkpoints"), error=Oops)


def test_a_fresh_folder_is_made_and_nothing_is_resumed(tmp_path):
    assert folder(tmp_path / "out").prepare() is None
    assert (tmp_path / "out").is_dir()


def test_resume_and_overwrite_together_are_refused(tmp_path):
    with pytest.raises(Oops, match="give one of them"):
        folder(tmp_path).prepare(resume=True, overwrite=True)


def test_someone_elses_folder_is_never_deleted(tmp_path):
    (tmp_path / "thesis.tex").write_text("years of work")
    with pytest.raises(Oops, match="does not hold a model"):
        folder(tmp_path).prepare(overwrite=True)
    assert (tmp_path / "thesis.tex").exists()


def test_a_file_is_not_a_folder(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(Oops, match="not a folder"):
        folder(tmp_path / "f").prepare()


def test_an_earlier_run_needs_overwrite_and_resume_finds_the_newest_checkpoint(tmp_path):
    for step in (5, 20, 10):
        (tmp_path / "checkpoints" / f"checkpoint-{step}").mkdir(parents=True)
        (tmp_path / "checkpoints" / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoints" / "checkpoint-30").mkdir()  # incomplete: no trainer_state.json
    with pytest.raises(Oops, match="--overwrite to replace it or continue the interrupted run with --resume"):
        folder(tmp_path).prepare()
    assert folder(tmp_path).prepare(resume=True).name == "checkpoint-20"
    (tmp_path / "keep.me").write_text("x")
    assert folder(tmp_path).prepare(overwrite=True, keep=["keep.me"]) is None
    assert [p.name for p in tmp_path.iterdir()] == ["keep.me"]


def test_resume_without_a_checkpoint_says_so_unless_none_is_needed(tmp_path):
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
