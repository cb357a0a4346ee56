"""Every example in `pretriever ... --help` runs as written, in pipeline order, against small real data.

The workspace holds what the examples name: the enwiki sample dump's first pages (as ``enwiki.xml.bz2``, see
:data:`ENWIKI_PAGES`), a 200-document SciFact subset in BEIR layout, each abstract cut to its first 32 words
(``scifact/``, with its test and train judgments), the NQ-open and CuratedTREC question files, a JSONL of crawled
pages, a JSONL of queries made elsewhere, and a tiny randomly initialised T5 saved as ``doc2query/all-with-
prefix-t5-base-v1`` (no doc2query weights are offline; a local folder of that name is found before any hub lookup,
so the generate example runs as written). Every other folder an example reads was written by an earlier example.
Nothing leaves the machine: the fetch examples go through a proxy on 127.0.0.1 (``$HTTP_PROXY``, ``$HTTPS_PROXY``)
that answers every page with 404 and refuses tunnels, so they run their whole course (politeness, retries, the
table) offline.
"""

from __future__ import annotations

import json
import random
import re
import shlex
from pathlib import Path

import pytest
import typer

from conftest import ENWIKI as DUMP, QA, SCIFACT
from helpers import dump_head, offline_cli
from pretriever.cli import PIPELINE_ORDER, app
from pretriever.testing import beir_subset, random_t5

ENWIKI_PAGES = 86  # of the sample's 206: 19 articles (894 passages of 4,055) from Anarchism to Atlas Shrugged,
ENWIKI_ALSO = ("586", "659")  # and ASCII, whose statement citing ANSI (linked) is the sample's one qac-links pair
_EXAMPLE = re.compile(r"^(?:Examples?:)?\s*((?:[A-Z_][A-Z0-9_]*=\S+\s+)*pretriever\s.*?)(?:\s{3,}\(.*\))?\s*$")


def _commands(command, path=()):
    if hasattr(command, "list_commands"):
        for name in command.list_commands(None):
            yield from _commands(command.get_command(None, name), (*path, name))
    else:
        yield path, command


def help_examples() -> list[tuple[str, str]]:
    """(command path, example) for every example line of every command's help, in pipeline order."""
    root = typer.main.get_command(app)
    found = []
    for path, command in _commands(root):
        for line in (command.help or "").splitlines():
            match = _EXAMPLE.match(line.strip())
            if match:
                found.append((" ".join(path), match.group(1)))
    rank = {name: i for i, name in enumerate(PIPELINE_ORDER)}
    return sorted(found, key=lambda item: rank.get(item[0].split()[0], len(rank)))  # stable: help order kept


def test_every_command_but_the_simplest_has_an_example():
    have = {path for path, _ in help_examples()}
    simple = {"quickstart", "corpus info", "corpus formats", "index info"}
    missing = [" ".join(p) for p, _ in _commands(typer.main.get_command(app)) if " ".join(p) not in have | simple]
    assert not missing, f"commands without an example in their help: {missing}"


def _scifact_subset(folder: Path) -> Path:
    """The SciFact documents judged for the first 20 test and 20 train claims, plus others up to 200, each
    abstract cut to its first 32 words: the examples check that commands run, and whole abstracts (241
    MiniLM tokens on average, most cut at 256) pad every encode and training batch of the SciFact examples to 256
    tokens, their first 32 words to at most 111 (68 on average); most still hold two sentences, as masked-ICT's
    sentence-out queries need."""
    return beir_subset(folder, SCIFACT, n_docs=200, splits={"test": 20, "train": 20}, words=32)


def _ends_queries_early(model: Path) -> Path:
    """Let half of the vocabulary end a query (the saved generation config's ``eos_token_id``), so the random
    stand-in writes a few words per query as doc2query does; left as it is, it almost never draws its one end
    token and writes every query out to the 64 tokens of ``--max-output-length``, five times the work."""
    from transformers import AutoTokenizer, GenerationConfig  # heavy: only when the workspace is built

    rng = random.Random(0)
    tokenizer = AutoTokenizer.from_pretrained(model)
    special = set(tokenizer.all_special_ids)
    config = GenerationConfig.from_pretrained(model)
    config.eos_token_id = [tokenizer.sep_token_id] + [i for i in range(tokenizer.vocab_size)
                                                      if i not in special and rng.random() < 0.5]
    config.save_pretrained(model)
    return model


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    for needed in (DUMP, SCIFACT, QA):
        if not needed.exists():
            pytest.skip(f"real test data not found: {needed}")
    root = tmp_path_factory.mktemp("examples")
    dump_head(DUMP, root / "enwiki.xml.bz2", pages=ENWIKI_PAGES, also=ENWIKI_ALSO)
    for name in ("nq-open-dev.jsonl", "curatedtrec-test.jsonl"):
        (root / name).symlink_to(QA / name)
    _scifact_subset(root / "scifact")
    page = "<html><head><title>Anarchism</title></head><body><p>Anarchism is a political philosophy.</p></body></html>"
    _ends_queries_early(random_t5(root / "doc2query" / "all-with-prefix-t5-base-v1"))  # found locally before any
    # hub lookup
    queries = [{"id": "12", "queries": ["what is anarchism", "anarchism definition"]},  # enwiki page ids
               {"id": "25", "queries": ["what is autism"]}]
    (root / "doc2query-queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    (root / "pages.jsonl").write_text(json.dumps({"url": "http://www.example.org/anarchism", "html": page}) + "\n",
                                      encoding="utf-8")
    return root


@pytest.mark.slow
def test_every_help_example_runs_as_written(workspace, monkeypatch):
    served: list[dict] = []
    ran = []
    with offline_cli(monkeypatch, workspace, served) as invoke:
        for path, example in help_examples():
            words = shlex.split(example)
            at = words.index("pretriever")
            given = dict(word.split("=", 1) for word in words[:at])  # VAR=value before the command
            code, output, trace = invoke(words[at + 1:], given)
            assert code == 0, (f"`{example}` (from `pretriever {path} --help`) failed:\n"
                               f"{output[-3000:]}\n{trace[-3000:]}")
            ran.append(example)
    assert len(ran) >= 20 and any(example.startswith("PRETRIEVER_API_KEY=") for example in ran)
    assert served and all(len(answer["hits"]) == 3 for answer in served)  # the serve examples built a working app
