"""No stage writes into, resumes or deletes a folder that pretriever did not write (issue: --overwrite deleted a
folder that held a manifest.json beside .git/, a data folder with one Parquet file, any sentence-transformers model).

Every command that writes a folder is run with --overwrite (and --resume where it has it) against four victims:
someone's project (.git/, src/, a manifest.json), a data folder with one Parquet file, a sentence-transformers
model folder (modules.json) and another stage's folder. Each is refused with exit status 2 and keeps every byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from helpers import flat
from pretriever.cli import app
from pretriever.stage import MARKER

MORE = " Students meet it early in their studies and return to it for many years afterwards."
DOCS = [
    ("d1", "Alpha", "The alpha particle is a helium nucleus. It was named by Rutherford. It is heavy."),
    ("d2", "Beta", "Beta decay emits an electron. It changes a neutron into a proton. Fermi explained it."),
    ("d3", "Gamma", "Gamma rays are photons of high energy. They come from nuclear transitions. Lead stops them."),
    ("d4", "Delta", "A river delta forms where a river meets the sea. Sediment builds it. The Nile has one."),
    ("d5", "Epsilon", "Epsilon is a small positive number in analysis. Limits use it. Cauchy wrote with it."),
    ("d6", "Zeta", "The zeta function sums inverse powers. Riemann studied its zeros. Euler found its values."),
]


def snapshot(root: Path) -> dict[str, bytes | None]:
    """Every entry under ``root`` (files with their bytes, folders as None): what a refusal must leave as it was."""
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


def invoke(*words) -> tuple[int, str]:
    result = CliRunner().invoke(app, [str(w) for w in words], env={"COLUMNS": "200"})
    return result.exit_code, flat(result.output)


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> dict[str, Path]:
    """A six-document BEIR folder, its store, ICT pairs from it, a SQuAD file and a JSONL of fetched pages."""
    root = tmp_path_factory.mktemp("inputs")
    beir = root / "beir"
    (beir / "qrels").mkdir(parents=True)
    (beir / "corpus.jsonl").write_text("".join(json.dumps({"_id": i, "title": t, "text": x + MORE}) + "\n"
                                               for i, t, x in DOCS))
    (beir / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "what stops gamma rays"}) + "\n")
    (beir / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td3\t1\n")
    (beir / "qrels" / "train.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td3\t1\n")
    store, pairs = root / "store", root / "pairs"
    assert invoke("corpus", "build", beir, "--out", store)[0] == 0
    code, output = invoke("mine", store, "--method", "ict", "--out", pairs)
    assert code == 0, output
    squad = root / "squad.json"
    squad.write_text(json.dumps({"version": "1.1", "data": [{"title": "Gamma", "paragraphs": [{
        "context": DOCS[2][2], "qas": [{"id": "a", "question": "What stops gamma rays?",
                                        "answers": [{"text": "Lead", "answer_start": DOCS[2][2].index("Lead")}]}]}]}]}))
    index = root / "index"
    code, output = invoke("index", "build", store, "--out", index)
    assert code == 0, output
    pages = root / "pages.jsonl"
    pages.write_text(json.dumps({"url": "http://example.org/", "text": "a page"}) + "\n")
    queries = root / "generated.jsonl"
    queries.write_text(json.dumps({"id": "d1", "queries": ["what is an alpha particle"]}) + "\n")
    return {"beir": beir, "store": store, "pairs": pairs, "index": index, "squad": squad, "pages": pages,
            "queries": queries}


# Each command that writes a folder, as a user types it, with VICTIM for its --out and its flags to try.
COMMANDS = {
    "corpus build": (["corpus", "build", "{beir}", "--out", "VICTIM"], ["--overwrite", "--resume"]),
    "mine": (["mine", "{store}", "--method", "ict", "--out", "VICTIM"], ["--overwrite", "--resume"]),
    "pairs export": (["pairs", "export", "{pairs}", "--format", "sentence-transformers", "--out", "VICTIM"], [""]),
    "train": (["train", "{pairs}", "--out", "VICTIM"], ["--overwrite", "--resume"]),
    "pretrain": (["pretrain", "{pairs}", "--out", "VICTIM"], ["--overwrite", "--resume"]),
    "finetune": (["finetune", "--beir", "{beir}", "--out", "VICTIM"], ["--overwrite", ""]),
    "index build": (["index", "build", "{store}", "--out", "VICTIM"], ["--overwrite", "--resume"]),
    "index bm25": (["index", "bm25", "{store}", "--out", "VICTIM"], [""]),
    "index merge": (["index", "merge", "VICTIM"], [""]),
    "index export": (["index", "export", "{index}", "--format", "pyserini", "--out", "VICTIM"], [""]),
    "refine run": (["refine", "run", "{index}", "--queries", "{beir}/queries.jsonl", "--feedback", "qrels",
                    "--qrels", "{beir}/qrels/train.tsv", "--out", "VICTIM"], ["--overwrite", ""]),
    "refine grid": (["refine", "grid", "{index}", "--queries", "{beir}/queries.jsonl", "--feedback", "qrels",
                     "--qrels", "{beir}/qrels/train.tsv", "--oracle", "--out", "VICTIM"], [""]),
    "evaluate": (["evaluate", "--bm25", "--corpus", "{store}", "--queries", "{beir}/queries.jsonl",
                  "--qrels", "{beir}/qrels/test.tsv", "--out", "VICTIM"], [""]),
    "reader train": (["reader", "train", "{squad}", "--out", "VICTIM"], ["--overwrite", "--resume"]),
    "generate": (["generate", "{store}", "--from", "{queries}", "--out", "VICTIM"], ["--overwrite", "--resume"]),
    "references fetch": (["references", "fetch", "{store}", "--out", "VICTIM"], ["--overwrite", "--resume"]),
    "references import": (["references", "import", "{pages}", "--out", "VICTIM"], ["--overwrite", "--resume"]),
}


def victims(root: Path, command: str) -> dict[str, Path]:
    """Someone's project, a data folder, a model, and another stage's folder (a store; pairs for corpus build)."""
    made = {name: root / name for name in ("project", "parquet", "model", "other stage")}
    (made["project"] / ".git").mkdir(parents=True)
    (made["project"] / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (made["project"] / "src").mkdir()
    (made["project"] / "src" / "main.py").write_text("print('years of work')\n")
    (made["project"] / "manifest.json").write_text('{"name": "my project"}')
    (made["project"] / "notes.txt").write_text("do not lose")
    made["parquet"].mkdir()
    pq.write_table(pa.table({"x": [1, 2, 3]}), made["parquet"] / "data.parquet")
    made["model"].mkdir()
    (made["model"] / "modules.json").write_text("[]")
    (made["model"] / "model.safetensors").write_bytes(b"\0" * 64)
    other = made["other stage"]
    other.mkdir()
    (other / "manifest.json").write_text("{}")
    stage, holds = ("mine", "mined pairs") if command == "corpus build" else ("corpus", "a corpus store")
    (other / MARKER).write_text(json.dumps({"stage": stage, "holds": holds}))
    return made


@pytest.mark.parametrize("command", COMMANDS)
def test_no_stage_touches_a_folder_it_did_not_write(command, inputs, tmp_path):
    words, flags = COMMANDS[command]
    for name, victim in victims(tmp_path, command).items():
        before = snapshot(victim)
        for flag in flags:
            args = [w.format(**inputs) if w != "VICTIM" else victim for w in words] + ([flag] if flag else [])
            code, output = invoke(*args)
            assert code == 2, (command, name, flag, output)
            if name == "other stage":
                assert f"holds {'mined pairs' if command == 'corpus build' else 'a corpus store'}, not" in output, (
                    command, output)
            else:
                assert MARKER in output, (command, name, flag, output)
            assert snapshot(victim) == before, (command, name, flag)


def test_a_folder_written_before_markers_is_named_as_such_and_kept(inputs, tmp_path):
    """An earlier pretriever's store (today's names, no marker) is refused with a way forward, never deleted."""
    old = tmp_path / "old-pairs"
    old.mkdir()
    for entry in inputs["pairs"].iterdir():
        if entry.is_file() and entry.name != MARKER:
            (old / entry.name).write_bytes(entry.read_bytes())
    before = snapshot(old)
    code, output = invoke("mine", inputs["store"], "--method", "ict", "--out", old, "--overwrite")
    assert code == 2 and "written by an earlier pretriever" in output and "move or delete it yourself" in output
    assert snapshot(old) == before


def test_overwrite_replaces_what_the_stage_wrote_and_keeps_the_rest(inputs, tmp_path):
    out = tmp_path / "pairs"
    assert invoke("mine", inputs["store"], "--method", "ict", "--out", out)[0] == 0
    marker = json.loads((out / MARKER).read_text())
    assert marker["stage"] == "mine" and "ict.parquet" in marker["written"] and "pairs.json" in marker["written"]
    (out / "my-notes.md").write_text("what I learnt from these pairs")
    code, output = invoke("mine", inputs["store"], "--method", "ict", "--out", out, "--overwrite")
    assert code == 0, output
    assert "left what pretriever did not write there: my-notes.md" in output
    assert (out / "my-notes.md").read_text() == "what I learnt from these pairs"
    assert "my-notes.md" not in json.loads((out / MARKER).read_text())["written"]
