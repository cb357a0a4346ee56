"""Judgments and answers fixed at start-up, named by requests: which hits are judged or answer-bearing.

``--qrels NAME=PATH`` (BEIR or TREC qrels), ``--queries PATH`` (their texts) and
``--answers NAME=PATH`` (QA files) are read once; a /compare request names a set, never a
path. Judged ids are document ids (BEIR), so a hit is marked by its passage's document;
answers are matched in the passage text by DPR's rule (:class:`pretriever.data.AnswerMatcher`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pretriever.data import AnswerMatcher, QAExample, load_qa_file, load_qrels, load_queries
from pretriever.data.qa import guess_match_mode
from pretriever.serve.config import ServeConfig, ServeError


class UnknownSetError(ServeError):
    """A request names a qrels or answers set, or a query, that the server was not started with."""


@dataclass
class AnswerSet:
    by_id: dict[str, QAExample]
    by_question: dict[str, QAExample]
    matcher: AnswerMatcher


@dataclass
class JudgedSets:
    qrels: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    queries: dict[str, str] = field(default_factory=dict)  # query id -> text
    answers: dict[str, AnswerSet] = field(default_factory=dict)
    default_matcher: AnswerMatcher = field(default_factory=AnswerMatcher)  # answers given in the request

    @classmethod
    def load(cls, cfg: ServeConfig) -> JudgedSets:
        sets = cls(qrels={name: load_qrels(path) for name, path in cfg.qrels.items()},
                   queries=load_queries(cfg.queries) if cfg.queries else {})
        for name, path in cfg.answers.items():
            examples = load_qa_file(path)
            sets.answers[name] = AnswerSet({e.qid: e for e in examples}, {e.question: e for e in examples},
                                           AnswerMatcher(guess_match_mode(path)))
        return sets

    def describe(self) -> dict[str, dict[str, int]]:
        return {"qrels": {name: len(q) for name, q in self.qrels.items()},
                "answers": {name: len(a.by_id) for name, a in self.answers.items()},
                "queries": {"texts": len(self.queries)}}

    def judgments(self, name: str, query_id: str | None, text: str) -> tuple[str, dict[str, int]]:
        """(query id, {doc id: grade}) of the query in qrels set ``name``, by id or else by its text."""
        if name not in self.qrels:
            raise UnknownSetError(f"no qrels set named {name!r} (this server has: "
                                  f"{', '.join(self.qrels) or 'none; start it with --qrels NAME=PATH'})")
        if query_id is None:
            query_id = next((qid for qid, q in self.queries.items() if q == text and qid in self.qrels[name]), None)
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
        return len(ids), [(qid, self.queries.get(qid), sum(1 for g in self.qrels[name][qid].values() if g > 0))
                          for qid in rows]
