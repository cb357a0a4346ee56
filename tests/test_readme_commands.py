"""The README's own command blocks run as printed (issue 26): the pipeline, C-MORE, query-as-context, reader and
serve sections are read from README.md and each command runs through the CLI, in order, in one workspace of small
real data laid out under the names the README uses:

* ``enwiki-latest-pages-articles-multistream.xml.bz2``: the shortened enwiki sample dump;
* ``beir/scifact``: a 200-abstract SciFact subset with the judgments of 20 test and 20 training claims, each
  abstract cut to its first 32 words;
* ``bert-base-uncased``, ``doc2query/all-with-prefix-t5-base-v1``: tiny random models saved under those names
  (a local folder is found before any hub lookup; no weights are offline);
* ``nq-open-dev.jsonl``: the real NQ-open dev questions; ``CC-MAIN-2026-test.warc.gz``: a WARC of canned pages
  that the sample's articles cite.

What differs from the printed text is explicit and minimal (:data:`SUBSTITUTIONS`, :data:`EXTRA_FLAGS`,
:data:`SETUP`): fewer workers, a few optimizer steps, the first questions or pages only, pre-training from the
tiny BERT, and the one folder the README uses without printing how it is made (``enwiki-index/``). A shell glob is expanded as a shell would; two lines
that are alternatives of each other (the same ``--out``) both run, the first one's output set aside. ``serve``
builds its app, which answers /health and a search instead of listening; ``references fetch`` goes through a
proxy on 127.0.0.1 that answers 404, so nothing leaves the machine.
"""

from __future__ import annotations

import glob
import json
import re
import shlex
from pathlib import Path

import pytest
from pretrain_fixtures import tiny_bert_st
from conftest import ENWIKI as DUMP, QA, SCIFACT
from helpers import offline_cli, warc_bytes
from pretriever.testing import random_t5
from test_cli_examples import _scifact_subset


README = Path(__file__).resolve().parents[1] / "README.md"
PAGES = Path(__file__).parent / "data" / "cmore_pages"
SECTIONS = ("## The pipeline", "**C-MORE route**", "**Query-as-context route**", "**Reader and answers**",
            "**Serve**")
SUBSTITUTIONS = {"--workers 16": "--workers 2"}  # printed text -> what runs (2 cores)
EXTRA_FLAGS = {  # command start -> flags appended, so training and reading stay seconds long
    "train pairs/": ["--max-steps", "2"],
    # pretrain starts from the tiny BERT, not the packaged MiniLM: seconds, not minutes, here and in the two
    # commands that start from its cotmae/ (train --beir, finetune --two-stage, which indexes the corpus twice)
    "pretrain ": ["--max-steps", "2", "--model", "bert-base-uncased"],
    "train --beir": ["--max-steps", "2"],
    "finetune ": ["--max-steps", "2"],
    "references fetch ": ["--limit", "20"],  # 20 of the sample's cited pages (each answered 404 on 127.0.0.1)
    "generate ": ["--limit", "40", "--max-output-length", "8"],  # 40 passages fill a pretrain batch (32)
    "reader prepare ": ["--limit", "300"],  # 30 of the first 300 NQ questions have an answer in the sample's top 20
    "reader train ": ["--max-steps", "2"],
    "evaluate --index enwiki-index/": ["--limit", "20", "--reader-k", "5"],
}
SETUP = {  # section -> commands run before it: what the README uses there but does not print
    "**Reader and answers**": ["index build enwiki/ --model bert-base-uncased --out enwiki-index/ --bm25"],
}


def readme_commands() -> list[tuple[str, str]]:
    """(section, command) for every command of the README's blocks in :data:`SECTIONS`, in order; continued
    lines joined, comments dropped."""
    found, section, block = [], None, None
    for line in README.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or line.startswith("**"):
            section = next((s for s in SECTIONS if line.startswith(s)), None)
        elif line.startswith("```bash") and section:
            block = []
        elif line.startswith("```") and block is not None:
            text = "\n".join(block).replace("\\\n", " ")
            found += [(section, cmd) for cmd in (shlex.join(shlex.split(t, comments=True)) for t in text.splitlines())
                      if cmd]
            block = None
        elif block is not None:
            block.append(line)
    return found


def test_the_readme_blocks_are_found():
    commands = readme_commands()
    assert {s for s, _ in commands} == set(SECTIONS)
    assert all(cmd.startswith("pretriever ") for _, cmd in commands), commands
    assert len(commands) >= 25


def _words(command: str, root: Path) -> list[str]:
    """The argv that runs for a printed command: substitutions, extra flags, globs expanded in ``root``."""
    for printed, run in SUBSTITUTIONS.items():
        command = command.replace(printed, run)
    words = shlex.split(command)[1:]
    rest = command.removeprefix("pretriever ") + " "
    words += next((flags for start, flags in EXTRA_FLAGS.items() if rest.startswith(start)), [])
    out = []
    for word in words:
        out += sorted(glob.glob(word, root_dir=root)) or [word] if "*" in word else [word]
    return out


def _set_aside(words: list[str], root: Path) -> None:
    """A line that writes an --out an earlier line wrote is an alternative to it: keep the earlier one aside."""
    if "--out" in words:
        out = root / words[words.index("--out") + 1]
        if out.exists():
            out.rename(out.with_name(out.name.rstrip("/") + f".before-{len(list(root.glob(out.name + '.before-*')))}"))


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    for needed in (DUMP, SCIFACT, QA / "nq-open-dev.jsonl"):
        if not needed.exists():
            pytest.skip(f"real test data not found: {needed}")
    root = tmp_path_factory.mktemp("readme")
    (root / "enwiki-latest-pages-articles-multistream.xml.bz2").symlink_to(DUMP)
    (root / "nq-open-dev.jsonl").symlink_to(QA / "nq-open-dev.jsonl")
    (root / "beir").mkdir()
    _scifact_subset(root / "beir" / "scifact")
    tiny_bert_st(root / "bert-base-uncased", max_positions=512)  # train's default lengths reach 256 tokens
    random_t5(root / "doc2query" / "all-with-prefix-t5-base-v1")
    index = json.loads((PAGES / "index.json").read_text(encoding="utf-8"))
    (root / "CC-MAIN-2026-test.warc.gz").write_bytes(warc_bytes(
        [(url, 200, "text/html; charset=utf-8", (PAGES / name).read_bytes()) for url, name in index.items()]))
    return root


@pytest.mark.slow
def test_every_readme_command_runs_as_printed(workspace, monkeypatch):
    served: list[dict] = []
    ran, done = [], set()
    with offline_cli(monkeypatch, workspace, served) as invoke:
        for section, command in readme_commands():
            todo = [] if section in done else [f"pretriever {c}" for c in SETUP.get(section, [])]
            done.add(section)
            for cmd in (*todo, command):
                words = _words(cmd, workspace)
                _set_aside(words, workspace)
                code, output, trace = invoke(words)
                assert code == 0, (f"README ({section}): `{command}` ran as {words} and failed:\n"
                                   f"{output[-3000:]}\n{trace[-3000:]}")
                ran.append(cmd)
    assert served and all(len(answer["hits"]) == 3 for answer in served)  # both serve lines built a working app
    assert (workspace / "qac" / "pairs.json").exists() and (workspace / "nq-reader").is_dir()
    assert re.search(r"refine run scifact-index/", " ".join(ran))
