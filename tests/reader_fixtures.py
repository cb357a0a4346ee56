"""Shared by the reader and serve tests: six small documents, SQuAD questions on them, a store with a BM25
index, and MiniLM trained as a reader on them (trained once per session: about half a minute on 2 cores)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from pretriever.cli import app
from pretriever.reader.config import ReaderConfig
from pretriever.reader.train import run

DOCS = [
    ("eiffel", "Eiffel Tower", "The Eiffel Tower is a wrought-iron lattice tower in Paris. It was designed by the "
                               "engineer Gustave Eiffel and completed in 1889."),
    ("hamlet", "Hamlet", "Hamlet is a tragedy written by William Shakespeare around 1600. The play is set in Denmark."),
    ("python", "Python (programming language)", "Python is a programming language created by Guido van Rossum and "
                                                "first released in 1991."),
    ("everest", "Mount Everest", "Mount Everest is the highest mountain on Earth, located in the Himalayas on the "
                                 "border of Nepal and China."),
    ("penicillin", "Penicillin", "Penicillin was discovered by Alexander Fleming in 1928 at St Mary's Hospital in "
                                 "London."),
    ("apollo", "Apollo 11", "Apollo 11 landed on the Moon in July 1969. Neil Armstrong was the first person to walk "
                            "on the lunar surface."),
]
QUESTIONS = {
    "eiffel": [("Who designed the Eiffel Tower?", "Gustave Eiffel"), ("When was the Eiffel Tower completed?", "1889")],
    "hamlet": [("Who wrote Hamlet?", "William Shakespeare"), ("Where is Hamlet set?", "Denmark")],
    "python": [("Who created the Python programming language?", "Guido van Rossum")],
    "everest": [("Where is Mount Everest located?", "the Himalayas")],
    "penicillin": [("Who discovered penicillin?", "Alexander Fleming")],
    "apollo": [("Who was the first person to walk on the Moon?", "Neil Armstrong")],
}
def _squad(path: Path) -> Path:
    data = []
    for doc_id, title, text in DOCS:
        qas = [{"id": f"{doc_id}{i}", "question": q, "answers": [{"text": a, "answer_start": text.index(a)}]}
               for i, (q, a) in enumerate(QUESTIONS[doc_id])]
        data.append({"title": title, "paragraphs": [{"context": text, "qas": qas}]})
    path.write_text(json.dumps({"version": "1.1", "data": data}), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """A six-document store built by `pretriever corpus build`, its BM25 index, and SQuAD data on its passages."""
    root = tmp_path_factory.mktemp("reader")
    docs = root / "docs.jsonl"
    docs.write_text("".join(json.dumps({"id": i, "title": t, "text": x}) + "\n" for i, t, x in DOCS), encoding="utf-8")
    for args in (["corpus", "build", str(docs), "--out", str(root / "store")],
                 ["index", "bm25", str(root / "store"), "--out", str(root / "bm25")]):
        result = CliRunner().invoke(app, args)
        assert result.exit_code == 0, result.output
    return root, _squad(root / "squad.json")


@pytest.fixture(scope="session")
def trained(tiny):
    """MiniLM trained on the eight SQuAD questions (dev = the same questions, to exercise best-checkpoint)."""
    root, squad = tiny
    cfg = ReaderConfig(data=squad, out=root / "reader", dev=squad, passages=2, max_steps=30, batch_size=4, learning_rate=2e-4,
                       max_length=64, eval_steps=15, seed=1)
    return run(cfg)
