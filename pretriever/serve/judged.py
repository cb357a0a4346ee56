"""Judgments and answers fixed at start-up, named by requests: which hits are judged or answer-bearing.

Two sources, both read once; a /compare or /queries request names a set, never a path:

* the command line: ``--qrels NAME=PATH`` (BEIR or TREC qrels) with ``--queries PATH`` (their
  texts), and ``--answers NAME=PATH`` (QA files);
* a refined index's ``index.json`` (``pretriever refine`` records its inputs): set ``feedback``
  is the feedback queries with their qrels (or answers), set ``holdout`` the ``--holdout``
  evaluation queries when that file is a qrels or QA file. Their texts come from the recorded
  feedback queries file. A recorded file that is no longer there is skipped, and /info says why.
  ``pretriever evaluate --out`` writes its own folder, not into the index, so an evaluated (not
  refined) index needs ``--qrels``/``--queries``.

Judged ids are document ids (BEIR), so a hit is marked by its passage's document; answers are
matched in the passage text by DPR's rule (:class:`pretriever.data.AnswerMatcher`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pretriever.data import AnswerMatcher, QAExample, load_qa_file, load_qrels, load_queries
from pretriever.data.qa import guess_match_mode
from pretriever.errors import PretrieverError
from pretriever.serve.config import ServeConfig, ServeError


class UnknownSetError(ServeError):
    """A request names a qrels or answers set, or a query, that the server was not started with."""


@dataclass
class AnswerSet:
    """A QA file requests may name: its questions by id and by text, matched as the file's name suggests (regex for
    CuratedTREC).
    """

    by_id: dict[str, QAExample]
    by_question: dict[str, QAExample]
    matcher: AnswerMatcher

    @classmethod
    def read(cls, path: Path, match: str | None = None) -> AnswerSet:
        examples = load_qa_file(path)
        return cls({e.qid: e for e in examples}, {e.question: e for e in examples},
                   AnswerMatcher(match or guess_match_mode(path)))


@dataclass
class JudgedSets:
    """The qrels and answer sets a server offers /compare and the judged-query view, by name, with where each came from
    and the recorded sets it left out (and why).
    """

    qrels: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    texts: dict[str, dict[str, str]] = field(default_factory=dict)  # per qrels set: query id -> text
    answers: dict[str, AnswerSet] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)  # set name -> where it was read from
    skipped: dict[str, str] = field(default_factory=dict)  # a recorded set not offered -> why
    default_matcher: AnswerMatcher = field(default_factory=AnswerMatcher)  # answers given in the request

    @classmethod
    def load(cls, cfg: ServeConfig, refine: dict[str, Any] | None = None) -> JudgedSets:
        """The sets of the command line, then those a refined index records (``refine``: its refine record; see
        the module docstring)."""
        queries = load_queries(cfg.queries) if cfg.queries else {}
        sets = cls()
        for name, path in cfg.qrels.items():
            sets.qrels[name], sets.texts[name], sets.sources[name] = load_qrels(path), queries, f"--qrels {path}"
        for name, path in cfg.answers.items():
            sets.answers[name], sets.sources[name] = AnswerSet.read(path), f"--answers {path}"
        if refine:
            sets._add_refined(refine, cfg.index)
        return sets

    def _add_refined(self, refine: dict[str, Any], index: Path) -> None:
        feedback = refine.get("feedback") or {}
        where = f"{index}/index.json"
        texts: dict[str, str] = {}
        if feedback.get("queries"):
            try:
                texts = load_queries(_recorded(feedback["queries"], index))
            except PretrieverError as err:  # a QA file (topk feedback) or a file gone: no texts
                self.skipped["feedback texts"] = str(err)
        recorded = [("feedback", feedback.get("qrels") or feedback.get("answers"), feedback.get("match")),
                    ("holdout", (refine.get("protocol") or {}).get("holdout"), feedback.get("match"))]
        for name, path, match in recorded:
            if not path or name in self.qrels or name in self.answers:  # the command line's sets win
                continue
            try:
                self._add_file(name, _recorded(path, index), texts, match)
                self.sources[name] = f"refine {name} ({where})"
            except PretrieverError as err:
                self.skipped[name] = str(err)

    def _add_file(self, name: str, path: Path, texts: dict[str, str], match: str | None) -> None:
        """``path`` as a qrels set, else as an answers set (a queries file has no judgments: an error)."""
        try:
            self.qrels[name], self.texts[name] = load_qrels(path), texts
            return
        except PretrieverError as qrels_error:
            try:
                self.answers[name] = AnswerSet.read(path, match)
            except PretrieverError:
                raise ServeError(f"{path}: neither qrels nor a QA file ({qrels_error})") from qrels_error

    def describe(self) -> dict[str, Any]:
        return {"qrels": {name: len(q) for name, q in self.qrels.items()},
                "answers": {name: len(a.by_id) for name, a in self.answers.items()},
                "queries": {"texts": {name: sum(1 for q in self.qrels[name] if q in self.texts[name])
                                      for name in self.qrels}},
                "sources": self.sources, "skipped": self.skipped}

    def judgments(self, name: str, query_id: str | None, text: str) -> tuple[str, dict[str, int]]:
        """(query id, {doc id: grade}) of the query in qrels set ``name``, by id or else by its text."""
        if name not in self.qrels:
            raise UnknownSetError(f"no qrels set named {name!r} (this server has: "
                                  f"{', '.join(self.qrels) or 'none; start it with --qrels NAME=PATH'})")
        if query_id is None:
            query_id = next((qid for qid, q in self.texts[name].items() if q == text and qid in self.qrels[name]),
                            None)
            if query_id is None:
                raise UnknownSetError(f"the query text is not a judged query of {name!r}; give query_id")
        if query_id not in self.qrels[name]:
            raise UnknownSetError(f"query {query_id!r} has no judgments in {name!r}")
        return query_id, self.qrels[name][query_id]

    def answer_list(self, name: str, query_id: str | None, text: str) -> tuple[list[str], AnswerMatcher]:
        """The answers of the question in QA set ``name`` (by id, else by its text) and the matcher to use."""
        if name not in self.answers:
            raise UnknownSetError(f"no answers set named {name!r} (this server has: "
                                  f"{', '.join(self.answers) or 'none; start it with --answers NAME=PATH'})")
        found = self.answers[name]
        example = found.by_id.get(query_id) if query_id is not None else found.by_question.get(text)
        if example is None:
            raise UnknownSetError(f"question {query_id or text[:80]!r} is not in the answers set {name!r}")
        return example.answers, found.matcher

    def judged_page(self, name: str, page: int, page_size: int) -> tuple[int, list[tuple[str, str | None, int]]]:
        """(total, [(query id, text, relevant documents)]) of page ``page`` of the judged queries of ``name``."""
        if name not in self.qrels:
            raise UnknownSetError(f"no qrels set named {name!r} (this server has: {', '.join(self.qrels) or 'none'})")
        ids = list(self.qrels[name])
        rows = ids[(page - 1) * page_size: page * page_size]
        return len(ids), [(qid, self.texts[name].get(qid), sum(1 for g in self.qrels[name][qid].values() if g > 0))
                          for qid in rows]


def _recorded(path: str, index: Path) -> Path:
    """A path ``pretriever refine`` recorded as it was given: as it is (absolute, or relative to here), else
    relative to the folder holding the index."""
    for candidate in (Path(path), index.parent / path):
        if candidate.exists():
            return candidate
    raise ServeError(f"{path} (recorded in {index}/index.json) is not there any more")
