"""BEIR files: queries, judgments (BEIR or TREC qrels) and the corpus.

* BEIR ``queries.jsonl``: one ``{"_id", "text"}`` a line (a BEIR dataset folder is accepted
  and its ``queries.jsonl`` read).
* BEIR ``corpus.jsonl``: ``{"_id", "title", "text"}`` a line.
* Judgments: BEIR's qrels TSV (header ``query-id  corpus-id  score``) or TREC qrels
  (``qid 0 docid rel``, whitespace-separated, no header). A folder means its ``qrels/test.tsv``.
  Judged ids are *document* ids (BEIR ``_id``). Scores are integer grades; relevance is
  ``score >= 1`` (pytrec_eval's default), and grades count in nDCG. A negative grade (TREC's
  "junk", -2) is read as 0, judged not relevant, as trec_eval counts it, and :class:`Qrels`
  counts them so results can say so; a grade that is not an integer or exceeds
  :data:`~pretriever.metrics.MAX_GRADE` is refused (pytrec_eval crashes or runs out of memory on them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pretriever.errors import PretrieverError
from pretriever.io import read_jsonl
from pretriever.metrics import MAX_GRADE


class DatasetError(PretrieverError, ValueError):
    """A dataset file cannot be read; the message names the file and the line."""


def _beir_file(path: Path, name: str) -> Path:
    path = Path(path)
    if path.is_dir():
        path = path / name
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    return path


def _json_lines(path: Path, expected: str):
    """("PATH, line N", object) for every non-blank line of a JSONL file; ``expected`` names the record."""
    for where, obj in read_jsonl(path, DatasetError):
        if not isinstance(obj, dict) or "_id" not in obj:
            raise DatasetError(f"{where}: expected {expected}")
        yield where, obj


def load_queries(path: Path | str) -> dict[str, str]:
    """BEIR queries: ``{_id: text}`` in file order.

    Args:
        path: a ``queries.jsonl`` file, or the BEIR dataset folder holding it.

    Returns:
        The queries by id.

    Raises:
        DatasetError: the file is missing, not JSON lines, or holds no queries (the message names the line).
    """
    path = _beir_file(Path(path), "queries.jsonl")
    expected = 'a BEIR query {"_id": ..., "text": ...}'
    queries: dict[str, str] = {}
    for where, obj in _json_lines(path, expected):
        if not isinstance(obj.get("text"), str):
            raise DatasetError(f"{where}: expected {expected}")
        queries[str(obj["_id"])] = obj["text"]
    if not queries:
        raise DatasetError(f"{path}: holds no queries")
    return queries


def qrels_path(folder: Path | str, split: str) -> Path:
    """``folder/qrels/<split>.tsv`` of a BEIR dataset, or an error listing the splits it has.

    Args:
        folder: the BEIR dataset folder.
        split: ``train``, ``dev``, ``test``, ...

    Returns:
        The qrels file's path.
    """
    qrels_dir = Path(folder) / "qrels"
    path = qrels_dir / f"{split}.tsv"
    if not path.is_file():
        splits = sorted(p.stem for p in qrels_dir.glob("*.tsv")) if qrels_dir.is_dir() else []
        raise DatasetError(f"{folder}: no qrels for split {split!r} ({path} is missing; "
                           f"splits found: {', '.join(splits) or 'none'})")
    return path


class Qrels(dict[str, dict[str, int]]):
    """Judgments ``{query_id: {doc_id: grade}}`` as read from ``path``; ``negative`` judgments had a negative
    grade, read as 0 (what a reader of the results must be told).

    Args:
        judged: the judgments.
        path: the file they were read from.
        negative: how many judgments had a negative grade.
    """

    def __init__(self, judged: dict[str, dict[str, int]], path: Path, negative: int = 0):
        super().__init__(judged)
        self.path = path
        self.negative = negative

    def described(self) -> dict[str, Any]:
        """What results record about the grades read: ``negative_grades`` and a note saying how they counted,
        or nothing when no grade was negative."""
        if not self.negative:
            return {}
        return {"negative_grades": self.negative,
                "notes": [f"{self.path}: {self.negative:,} judgement(s) with negative grades counted as not "
                          "relevant (grade 0, as trec_eval does)"]}


def _grade(text: str, where: str) -> int:
    """The integer grade ``text`` holds ("2" or "2.0"), or a DatasetError naming ``where``."""
    try:
        value = float(text)
    except ValueError:
        raise DatasetError(f"{where}: the score {text!r} is not a number") from None
    if not value.is_integer():
        raise DatasetError(f"{where}: the score {text!r} is not an integer grade")
    if value > MAX_GRADE:
        raise DatasetError(f"{where}: the score {text!r} is over {MAX_GRADE:,}, the largest grade accepted")
    return int(value)


def load_qrels(path: Path | str) -> Qrels:
    """Judgments ``{query_id: {doc_id: score}}`` from a BEIR qrels TSV or a TREC qrels file.

    Args:
        path: the file (a BEIR qrels TSV or a TREC qrels file), or a BEIR dataset folder (its
            ``qrels/test.tsv``).

    Returns:
        The judgments, with the file they came from.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "qrels" / "test.tsv"
    if not path.is_file():
        raise DatasetError(f"{path}: no such file")
    qrels: dict[str, dict[str, int]] = {}
    negative = 0
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            parts = line.split()
            if not parts:
                continue
            if line_no == 1 and parts[0].lower() in ("query-id", "query_id", "qid"):
                continue  # BEIR header
            if len(parts) == 3:
                qid, did, score = parts
            elif len(parts) == 4:
                qid, _, did, score = parts
            else:
                raise DatasetError(f"{path}, line {line_no}: expected `query-id corpus-id score` (BEIR) or "
                                   f"`qid 0 docid rel` (TREC), got {len(parts)} field(s)")
            grade = _grade(score, f"{path}, line {line_no}")
            if grade < 0:
                negative += 1
            qrels.setdefault(qid, {})[did] = max(grade, 0)
    if not qrels:
        raise DatasetError(f"{path}: holds no judgments")
    return Qrels(qrels, path, negative)


def queries_in_qrels(queries: dict[str, str], qrels: dict[str, dict[str, int]],
                     queries_path: Path | str = "queries", qrels_path: Path | str = "qrels") -> dict[str, str]:
    """The queries that have judgments, in qrels order (as BEIR does); judged queries must have a text.

    Args:
        queries: the queries by id.
        qrels: the judgments.
        queries_path: the queries' file, named in the error.
        qrels_path: the judgments' file, named in the error.

    Returns:
        The judged queries by id.
    """
    missing = [q for q in qrels if q not in queries]
    if missing:
        raise DatasetError(f"{len(missing)} judged query id(s) of {qrels_path} are not in {queries_path} "
                           f"(e.g. {', '.join(missing[:5])}): are these the queries of the same dataset?")
    return {q: queries[q] for q in qrels}


def load_corpus(path: Path | str) -> dict[str, tuple[str, str]]:
    """A BEIR corpus as ``{_id: (title, text)}`` in file order (a dataset folder: its corpus.jsonl).

    Args:
        path: a ``corpus.jsonl`` file, or the BEIR dataset folder holding it.

    Returns:
        ``(title, text)`` by document id.
    """
    path = _beir_file(Path(path), "corpus.jsonl")
    return {str(obj["_id"]): (str(obj.get("title") or ""), str(obj.get("text") or ""))
            for _, obj in _json_lines(path, 'a BEIR document {"_id", "title", "text"}')}


def relevant(qrels: dict[str, dict[str, int]]) -> dict[str, list[str]]:
    """Each query's relevant documents (grade >= 1), in file order.

    Args:
        qrels: the judgments.

    Returns:
        Relevant document ids by query id; a query with none is left out.
    """
    out = {q: [d for d, grade in docs.items() if grade >= 1] for q, docs in qrels.items()}
    return {q: docs for q, docs in out.items() if docs}
