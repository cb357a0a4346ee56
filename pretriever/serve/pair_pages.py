"""Pages of mined pairs for the API and the page: filters, the evidence spans, the method's reason.

A pairs folder (:class:`pretriever.data.pairs.PairsDir`) holds one Parquet file per method;
:class:`PairsView` pages through one with DuckDB (filters pushed into the scan, so a file of
millions of pairs is never read whole) and turns each row into what a person reads: the query
and the positive with their anchor spans (character offsets into each text, as the pairs files
store them), the negative, the titles, and why the method paired them.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from pretriever.data.pairs import PairsDir, PairsError
from pretriever.io import read_json
from pretriever.mine.methods import METHODS
from pretriever.mine.triplets import standalone
from pretriever.mine.schema import STATS


class PageOutOfRange(PairsError):
    """A page past the last one."""


@dataclass
class PairsPage:
    """One page of a method's mined pairs, with the paging figures the view shows."""
    method: str
    page: int
    page_size: int
    total: int
    pages: int
    pairs: list[dict[str, Any]]


def _span(start: int | None, end: int | None, kind: str, text: str | None) -> list[dict[str, Any]]:
    if start is None or end is None or text is None or not 0 <= start < end <= len(text):
        return []
    return [{"start": start, "end": end, "kind": kind, "text": text[start:end]}]


def reason(row: dict[str, Any]) -> str:
    """Why ``row``'s method made it a pair, in the words of its evidence (as `pairs show` prints it)."""
    method, q_title, p_title = row["method"], row.get("query_title"), row.get("positive_title")
    back = f"; the positive's anchor \u201c{row['positive_anchor']}\u201d links back to {q_title}" \
        if row.get("positive_anchor") else ""
    if method == "dl":
        return f"dual link: the query's anchor \u201c{row.get('query_anchor')}\u201d links to {p_title}{back}"
    if method == "cm":
        return (f"co-mention: the query's anchor \u201c{row.get('query_anchor')}\u201d and the positive's anchor "
                f"\u201c{row.get('entity_anchor')}\u201d both link to {row.get('entity')} (in-degree "
                f"{row.get('entity_indegree')}){back}")
    if method == "ict":
        kept = "kept in" if row.get("query_sentence_kept") else "removed from"
        return f"inverse cloze task: the query is a sentence of the positive passage, {kept} it"
    if method == "wlp":
        return f"wiki link prediction: the query is a lead sentence of {q_title}{back}"
    if method == "bfs":
        return f"body first selection: the query is a lead sentence of {q_title}, the positive a passage of its body"
    if method == "qac":
        url = row.get("reference_url")
        cited = f" ({url})" if url else ""
        source = (f"a passage of the linked article {p_title}" if row.get("context_source") == "link"
                  else f"a block of the cited page {row.get('reference_title') or url}")
        return (f"question-answer-context: the question is a cited statement of {q_title}{cited} with its "
                f"{row.get('answer_type')} \u201c{row.get('answer')}\u201d replaced by \u201c{row.get('answer_phrase')}"
                f"\u201d; the positive is {source}, where the answer occurs")
    if method == "cc":
        return f"context pairs: the query and the positive are two passages of the same document, {q_title}"
    if method == "tb":
        return f"title-body: the query is the title of {q_title}, the positive a passage of its body"
    if method == "qc":
        return (f"query as context: the query is generated query #{row.get('candidate')} of the positive passage "
                f"(doc2query)")
    known = METHODS.get(method)  # a method registered by a plugin: its own definition
    return f"{known.title}: {known.summary}" if known is not None else method


def phrase_span(row: dict[str, Any]) -> list[dict[str, Any]]:
    """QAC: where the interrogative phrase sits in the question. The question is the statement, less a leading
    connective (:func:`pretriever.mine.triplets.standalone`), with the answer replaced
    (:func:`pretriever.mine.triplets.make_question`), so the phrase starts within the prefix the two share; the last
    such start is taken (the phrase's first letter may be capitalised)."""
    query, statement, phrase = row["query"], standalone(row.get("statement") or ""), row.get("answer_phrase") or ""
    if not phrase:
        return []
    shared = next((i for i, (a, b) in enumerate(zip(query, statement)) if a != b), min(len(query), len(statement)))
    starts = [i for i in range(min(shared, len(query) - len(phrase)) + 1)
              if query[i:i + len(phrase)].lower() == phrase.lower()]
    return _span(starts[-1], starts[-1] + len(phrase), "answer_phrase", query) if starts else []


def pair_json(row: dict[str, Any]) -> dict[str, Any]:
    """A pair as the API returns it: texts, titles, passage ids, spans, negative, reason, QAC answer, QC
    candidate."""
    negative = None
    if row.get("negative_passage_id"):
        negative = {"passage_id": row["negative_passage_id"], "title": row.get("negative_title"),
                    "text": row.get("negative_text"), "kind": row.get("negative_kind")}
    answer = None
    if row.get("answer") is not None:
        answer = {"text": row["answer"], "type": row.get("answer_type"), "phrase": row.get("answer_phrase"),
                  "statement": row.get("statement"), "reference_url": row.get("reference_url"),
                  "reference_title": row.get("reference_title"), "context_source": row.get("context_source")}
    return {
        "pair_id": row["pair_id"], "method": row["method"], "reason": reason(row),
        "query": {"text": row["query"], "title": row.get("query_title"), "doc_id": row.get("query_doc_id"),
                  "passage_id": row.get("query_passage_id"),
                  "spans": sorted(_span(row.get("query_anchor_start"), row.get("query_anchor_end"), "query_anchor",
                                        row["query"]) + phrase_span(row), key=lambda s: s["start"])},
        "positive": {"text": row["positive_text"], "title": row.get("positive_title"),
                     "doc_id": row.get("positive_doc_id"), "passage_id": row.get("positive_passage_id"),
                     "spans": sorted(_span(row.get("positive_anchor_start"), row.get("positive_anchor_end"),
                                           "back_anchor", row["positive_text"])
                                     + _span(row.get("entity_anchor_start"), row.get("entity_anchor_end"),
                                             "entity_anchor", row["positive_text"])
                                     + _span(row.get("answer_start"), row.get("answer_end"), "answer",
                                             row["positive_text"]),
                                     key=lambda s: s["start"])},
        "negative": negative,
        "entity": row.get("entity"),
        "answer": answer,
        "candidate": row.get("candidate"),
    }


class PairsView:
    """One pairs folder, fixed at start-up, paged and filtered for the API."""

    def __init__(self, path: Path | str):
        self.dir = PairsDir(path)
        self._con = duckdb.connect()
        self._lock = threading.Lock()
        stats_path = self.dir.path / STATS
        self.stats: dict[str, Any] = read_json(stats_path, PairsError) if stats_path.exists() else {}

    @property
    def methods(self) -> list[str]:
        return self.dir.methods

    def store_path(self) -> Path | None:
        """The corpus store the pairs were mined from, when it is still there (pairs.json records it
        as given to `pretriever mine`: absolute, or relative to where it ran or to the pairs folder)."""
        recorded = self.dir.manifest.corpus_path
        if not recorded:
            return None
        for candidate in (Path(recorded), self.dir.path.parent / recorded, self.dir.path / recorded):
            if (candidate / "manifest.json").exists():
                return candidate
        return None

    def definitions(self) -> dict[str, dict[str, Any]]:
        """Per method: its name, definition, pair count, or why it gave none (from pairs.json)."""
        return {m: {k: info.get(k) for k in ("title", "definition", "pairs", "why_no_pairs") if k in info}
                for m, info in self.dir.manifest.methods.items()}

    def page(self, method: str, page: int, page_size: int, words: str = "", title: str = "") -> PairsPage:
        """Page ``page`` (1-based) of ``method``'s pairs whose query holds every word of ``words`` and whose
        query or positive title holds ``title`` (both case-insensitive)."""
        [method] = self.dir.select([method])
        where, params = [], []
        for word in words.lower().split():
            where.append("strpos(lower(query), ?) > 0")
            params.append(word)
        if title.strip():
            where.append("(strpos(lower(coalesce(query_title, '')), ?) > 0 "
                         "OR strpos(lower(coalesce(positive_title, '')), ?) > 0)")
            params += [title.strip().lower()] * 2
        source = f"read_parquet('{_quoted(self.dir.file(method))}')"
        condition = f" WHERE {' AND '.join(where)}" if where else ""
        with self._lock:  # one DuckDB connection: one caller at a time
            total = self._con.execute(f"SELECT count(*) FROM {source}{condition}", params).fetchone()[0]
            pages = max(1, math.ceil(total / page_size))
            if page > pages:
                raise PageOutOfRange(f"page {page} is past the last page ({pages}) of {total:,} {method} pairs "
                                f"at {page_size} a page")
            cursor = self._con.execute(f"SELECT * FROM {source}{condition} LIMIT ? OFFSET ?",
                                       params + [page_size, (page - 1) * page_size])
            columns = [d[0] for d in cursor.description]
            rows = [dict(zip(columns, values)) for values in cursor.fetchall()]
        return PairsPage(method, page, page_size, total, pages, [pair_json(r) for r in rows])

    def close(self) -> None:
        self._con.close()


def _quoted(path: Path) -> str:
    return str(path).replace("'", "''")
