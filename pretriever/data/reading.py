"""Reading-comprehension files a reader trains on: SQuAD v1.1 JSON and DPR's reader JSON.

Recognised by content (:func:`load_reading_file`):

* SQuAD v1.1 (``{"data": [{"title", "paragraphs": [{"context", "qas": [{"id", "question",
  "answers": [{"text", "answer_start"}]}]}]}]}``; qac triplets come as this through
  ``pretriever pairs export --format squad``): each question's paragraph is its positive, with
  the given answer offsets; SQuAD v2.0 too: an unanswerable question (``is_impossible``, no
  answers) is kept with no answers, and the reader skips and counts it;
* DPR reader JSON, a list of ``{"question", "answers", "ctxs": [{"id", "title", "text", "score",
  "has_answer"}]}`` (DPR's retriever output, which ``pretriever reader prepare`` writes): the
  contexts marked ``has_answer`` are positives, the others negatives;
* DPR retriever training JSON (``positive_ctxs``, ``hard_negative_ctxs``, ``negative_ctxs``);
* a pairs folder of ``pretriever mine --method qac`` (its ``qac.parquet``), read as the SQuAD
  articles that ``pretriever pairs export --format squad`` writes (:func:`squad_article`).

Answer offsets are kept only where SQuAD gives them; every other occurrence is found by the reader
stage, which knows its tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pretriever.data.beir import DatasetError
from pretriever.io import read_json

QAC_COLUMNS = ("pair_id", "query", "answer", "answer_start", "positive_title", "positive_text")


class ReadingFileError(DatasetError):
    """A SQuAD or DPR reader file cannot be read; the message names the file and the item."""


@dataclass
class ReadingPassage:
    """A passage a reader is trained on; SQuAD's answer offsets when the file gives them."""
    text: str
    title: str = ""
    passage_id: str = ""
    positive: bool = False  # SQuAD's paragraph, DPR's has_answer / positive_ctxs
    answer_starts: list[tuple[int, str]] = field(default_factory=list)  # SQuAD: (answer_start, answer text)


@dataclass
class ReadingExample:
    """A question, its answers and the passages read for it (positives and negatives)."""
    question: str
    answers: list[str]
    passages: list[ReadingPassage]
    qid: str = ""


def _str(obj: dict, key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        raise ReadingFileError(f"{where}: no {key!r} string")
    return value


def _squad(data: list, path: Path) -> list[ReadingExample]:
    out = []
    for a, article in enumerate(data):
        where = f"{path}, data[{a}]"
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            raise ReadingFileError(f"{where}: no \"paragraphs\" list (SQuAD v1.1)")
        title = article.get("title") or ""
        for p, paragraph in enumerate(article["paragraphs"]):
            pwhere = f"{where}.paragraphs[{p}]"
            context = _str(paragraph, "context", pwhere)
            for q, qa in enumerate(paragraph.get("qas") or []):
                qwhere = f"{pwhere}.qas[{q}]"
                question = _str(qa, "question", qwhere)
                answers = qa.get("answers")
                if qa.get("is_impossible") is True or (isinstance(answers, list) and not answers
                                                        and "plausible_answers" in qa):
                    # SQuAD v2.0's unanswerable question: kept without answers; the reader skips and counts it
                    passage = ReadingPassage(text=context, title=title, passage_id=f"{a}-{p}", positive=True)
                    out.append(ReadingExample(question=question, answers=[], passages=[passage],
                                              qid=str(qa.get("id", len(out)))))
                    continue
                if not isinstance(answers, list) or not answers:
                    raise ReadingFileError(f"{qwhere}: no \"answers\" list")
                starts = []
                for ans in answers:
                    if not isinstance(ans, dict) or not isinstance(ans.get("text"), str) \
                            or not isinstance(ans.get("answer_start"), int):
                        raise ReadingFileError(f"{qwhere}: an answer needs \"text\" and an integer \"answer_start\"")
                    starts.append((ans["answer_start"], ans["text"]))
                passage = ReadingPassage(text=context, title=title, passage_id=f"{a}-{p}", positive=True,
                                         answer_starts=starts)
                out.append(ReadingExample(question=question, answers=list(dict.fromkeys(t for _, t in starts)),
                                          passages=[passage], qid=str(qa.get("id", len(out)))))
    return out


def _ctx(obj, where: str, positive: bool | None) -> ReadingPassage:
    if not isinstance(obj, dict):
        raise ReadingFileError(f"{where}: a context must be an object with \"text\"")
    flag = obj.get("has_answer") if positive is None else positive
    pid = obj.get("id", obj.get("passage_id", ""))
    return ReadingPassage(text=_str(obj, "text", where), title=obj.get("title") or "", passage_id=str(pid),
                          positive=bool(flag))


def _dpr(data: list, path: Path) -> list[ReadingExample]:
    out = []
    for i, item in enumerate(data):
        where = f"{path}, item {i}"
        if not isinstance(item, dict):
            raise ReadingFileError(f"{where}: expected an object with \"question\" and \"answers\"")
        question = _str(item, "question", where)
        answers = item.get("answers")
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise ReadingFileError(f"{where}: no \"answers\" list of strings")
        groups = [("ctxs", None)] if "ctxs" in item else \
            [("positive_ctxs", True), ("hard_negative_ctxs", False), ("negative_ctxs", False)]
        if not any(key in item for key, _ in groups):
            raise ReadingFileError(f"{where}: no \"ctxs\" (DPR reader data) or \"positive_ctxs\" (DPR training data)")
        passages = []
        for key, positive in groups:
            ctxs = item.get(key) or []
            if not isinstance(ctxs, list):
                raise ReadingFileError(f"{where}: {key!r} must be a list")
            passages += [_ctx(c, f"{where}, {key}[{j}]", positive) for j, c in enumerate(ctxs)]
        out.append(ReadingExample(question=question, answers=answers, passages=passages,
                                  qid=str(item.get("id", item.get("qid", i)))))
    return out


def squad_article(row: dict[str, Any]) -> dict[str, Any]:
    """A qac triplet (a pairs row with ``answer`` and ``answer_start``) as a one-question SQuAD v1.1 article."""
    answer = {"text": row["answer"], "answer_start": row["answer_start"]}
    qa = {"id": row["pair_id"], "question": row["query"], "answers": [answer]}
    if row.get("context_source"):  # reference (the cited page) or link (a linked article)
        qa["context_source"] = row["context_source"]
    return {"title": row.get("positive_title") or "", "paragraphs": [{"context": row["positive_text"], "qas": [qa]}]}


def _qac_folder(path: Path) -> dict[str, Any]:
    table = path / "qac.parquet"
    if not table.is_file():
        raise ReadingFileError(f"{path}: a folder, but no qac.parquet in it (mine one with `pretriever mine CORPUS "
                               "--method qac --out PAIRS_DIR`, or give SQuAD or DPR JSON)")
    rows = pq.read_table(table, columns=list(QAC_COLUMNS)).to_pylist()
    return {"data": [squad_article(r) for r in rows if r["answer"] is not None and r["answer_start"] is not None]}


def load_reading_file(path: Path | str) -> list[ReadingExample]:
    """Questions with their passages from SQuAD v1.1 JSON, DPR reader/retriever JSON or a qac pairs folder
    (see the module)."""
    path = Path(path)
    data = _qac_folder(path) if path.is_dir() else read_json(path, ReadingFileError)
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        examples = _squad(data["data"], path)
    elif isinstance(data, list):
        examples = _dpr(data, path)
    else:
        raise ReadingFileError(f"{path}: neither SQuAD v1.1 ({{\"data\": [...]}}) nor DPR reader JSON (a list)")
    if not examples:
        raise ReadingFileError(f"{path}: holds no questions")
    return examples
