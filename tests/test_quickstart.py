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
    assert "2/7 mine" not in result.output and not (tmp_path / "demo" / "pairs").exists()


def test_the_summary_says_what_moved_and_by_how_much(tmp_path):
    """The closing sentence reads tune.json: before, after, the change with its interval, BM25 and the choice."""
    import json

    from pretriever.cli.quickstart import what_moved

    def tune_json(low, high):
        (tmp_path / "tune.json").write_text(json.dumps({
            "compare": {"dense": {"pseudo_nDCG@10": 0.41}, "this_dense": {"pseudo_nDCG@10": 0.47},
                        "difference": {"pseudo_nDCG@10": 0.06, "interval": [low, high]}},
            "candidates": [{"label": "dense", "pseudo_nDCG@10": 0.47}, {"label": "bm25", "pseudo_nDCG@10": 0.52},
                           {"label": "hybrid convex 0.5", "pseudo_nDCG@10": 0.58}],
            "choice": {"label": "hybrid convex 0.5"}, "generators": {"masked-ict": {"queries": 200}}}))
        return what_moved(tmp_path)

    assert tune_json(0.02, 0.10) == (
        "On 200 pseudo-queries (nDCG@10): the starting model 0.410, the trained model 0.470: dense retrieval went "
        "up, +0.060 (95% interval +0.020 to +0.100); BM25 0.520; the tuned choice, hybrid convex 0.5, 0.580.")
    assert "did not move clearly (the interval holds 0)" in tune_json(-0.01, 0.10)
