"""`pretriever quickstart` runs its steps through the command line that is running, and stops at a failed one."""

from __future__ import annotations

import sys

from typer.testing import CliRunner

from pretriever.cli import app


def test_a_failed_step_ends_the_demo_with_its_exit_code(tmp_path, monkeypatch):
    broken = tmp_path / "broken.xml.bz2"
    broken.write_bytes(b"not a bzip2 stream")
    monkeypatch.setattr(sys.modules["pretriever.cli.quickstart"], "demo_dump_path", lambda: broken)  # the module:
    # pretriever.cli.quickstart names the command function there
    result = CliRunner().invoke(app, ["quickstart", "--out", str(tmp_path / "demo")])
    assert result.exit_code != 0, result.output
    assert "$ pretriever corpus build" in result.output
    assert "2/5 mine" not in result.output and not (tmp_path / "demo" / "pairs").exists()
