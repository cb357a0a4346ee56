"""Request and response bodies of the API. Request limits come from :class:`ServeConfig`, so the
models are made per app (:func:`request_models`) and the OpenAPI schema states the real limits."""


import unicodedata
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic_core import PydanticCustomError

from pretriever.reader.config import ReadOptions
from pretriever.serve.config import ServeConfig

Mode = Literal["dense", "bm25", "hybrid"]
Rank = Literal["passage", "span"]
MAX_N_BEST = 20
MAX_ANSWER_TOKENS = 50
LINE_BYTES = 16 * 1024  # the request line, or one header line (nginx allows 8 KiB a line; h11 16 KiB for the head)
HEAD_BYTES = 64 * 1024  # the request line and all the headers (the server's protocol caps both: server.py)


def has_text(query: str) -> str:
    """``query`` when something is left of it without whitespace and control or format characters
    (a query of tabs, NULs or zero-width spaces has nothing to search for)."""
    if all(c.isspace() or unicodedata.category(c).startswith("C") for c in query):
        raise PydanticCustomError("query_empty", "the query is empty once whitespace and control characters "
                                                 "are stripped")
    return query


class HitOut(BaseModel):
    """A passage found: its rank (1 = best), id, title, text and score; /compare adds its judgment or answer."""
    rank: int
    id: str
    title: str | None
    text: str | None
    score: float
    doc_id: str | None = None
    relevance: int | None = Field(None, description="/compare with qrels: the judged grade (0 = judged not "
                                  "relevant, absent = not judged)")
    has_answer: bool | None = Field(None, description="/compare with answers: the passage holds an answer")


class SearchOut(BaseModel):
    """One query's hits (GET and POST /search), with the mode searched and the time taken."""
    query: str
    mode: Mode
    k: int
    hits: list[HitOut]
    took_ms: float


class BatchOut(BaseModel):
    """Several queries' hits (POST /search/batch), in the order asked."""
    mode: Mode
    k: int
    results: list[SearchOut]
    took_ms: float


class CompareOut(BaseModel):
    """Two systems' top k side by side for one query (POST /compare): judged hits marked when a qrels set is
    named, answer-bearing hits when answers are given."""

    query: str
    k: int
    systems: list[SearchOut]
    qrels: str | None = None
    query_id: str | None = None
    judged: int | None = Field(None, description="judged relevant documents of the query")
    answers: list[str] | None = None
    took_ms: float


class Span(BaseModel):
    """A marked stretch of a pair's text (character offsets), and what it marks."""
    start: int
    end: int
    kind: str = Field(description="query_anchor, back_anchor (links to the query's document), entity_anchor "
                      "(CM), answer (QAC: the answer in the positive) or answer_phrase (QAC: the question word "
                      "that replaced it)")
    text: str


class PairSide(BaseModel):
    """The query or the positive side of a mined pair: its passage and the marked spans."""
    text: str
    title: str | None
    doc_id: str | None
    passage_id: str | None
    spans: list[Span]


class Negative(BaseModel):
    """The extra negative passage of a mined pair, and how it was drawn (random or overlap)."""
    passage_id: str
    title: str | None
    text: str | None
    kind: str | None


class AnswerEvidence(BaseModel):
    """QAC: how the question was made (C-MORE): the cited statement with its answer entity replaced."""
    text: str
    type: str | None
    phrase: str | None
    statement: str | None
    reference_url: str | None
    reference_title: str | None
    context_source: str | None = Field(description="reference (the cited page) or link (a linked article)")


class PairOut(BaseModel):
    """A mined pair as the pairs view shows it: why the method paired the two passages, both sides and the negative."""
    pair_id: str
    method: str
    reason: str
    query: PairSide
    positive: PairSide
    negative: Negative | None
    entity: str | None
    answer: AnswerEvidence | None = None
    candidate: int | None = Field(None, description="QC: which generated query of the passage (0-based)")


class PairsOut(BaseModel):
    """A page of one method's mined pairs (GET /pairs)."""
    method: str
    page: int
    page_size: int
    total: int
    pages: int
    pairs: list[PairOut]


class PassageOut(BaseModel):
    """A passage by id (GET /passages/ID), and which store it came from: the index's or the pairs'."""
    passage_id: str
    title: str | None
    text: str | None
    doc_id: str | None
    source: str


class QueryOut(BaseModel):
    """A judged query of a qrels set: its id, its text (when known) and how many documents it has judged relevant."""
    id: str
    text: str | None
    judged: int


class QueriesOut(BaseModel):
    """A page of a qrels set's judged queries (GET /queries)."""
    set: str
    page: int
    pages: int
    total: int
    queries: list[QueryOut]


class AnswerSpan(BaseModel):
    """One of the reader's best answers (n-best), where it is and how it scored."""
    text: str
    start: int = Field(description="character offset in its passage's text")
    end: int
    score: float = Field(description="start + end logit")
    passage: int = Field(description="0-based rank of its passage among those read")
    passage_id: str
    relevance: float = Field(description="its passage's selection logit")


class AnswerOut(BaseModel):
    """As `pretriever answer --json` prints it, plus how it was retrieved and the time taken."""
    question: str
    answer: str
    span_score: float
    selection_score: float
    passage_id: str
    title: str | None
    passage_rank: int = Field(description="0-based rank of the answer's passage among those read")
    start: int = Field(description="character offsets of the answer in evidence")
    end: int
    evidence: str = Field(description="the text of the answer's passage")
    n_best: list[AnswerSpan]
    mode: Mode
    k: int
    rank: Rank
    took_ms: float


class ErrorOut(BaseModel):
    """Every error's body: ``{"error": message}``; ``detail`` lists the fields of a request that does not validate
    (422).
    """

    error: str
    detail: list | None = None


_MEANINGS = {400: "a malformed HTTP request, a Host header naming none of this server's hosts, or a request for "
                  "what this server cannot do (a mode its index lacks)",
             401: "no valid API key (X-API-Key, or Authorization: Bearer KEY)",
             404: "nothing by that name here: passage, qrels or answers set, pairs method, page, or the reader",
             413: "a body over max_body_bytes",
             414: f"a request URL over {LINE_BYTES:,} bytes",
             422: "the request does not validate (detail: the fields and why)",
             431: f"request headers over {LINE_BYTES:,} bytes a line or {HEAD_BYTES:,} in all"}


def errors(*statuses: int) -> dict[int | str, dict]:
    """The OpenAPI responses of error ``statuses``: each is ``{"error": message}``."""
    return {status: {"model": ErrorOut, "description": _MEANINGS[status]} for status in statuses}


# every route: the Host check and the body cap (guards.py), the head's caps and malformed requests (server.py)
ANSWERED_BY_GUARDS = errors(400, 413, 414, 431)
ERRORS = errors(404, 422)  # a route's own: a name not found, a request that does not validate


@dataclass
class RequestModels:
    """The request bodies of one app, made by :func:`request_models` with its configured limits."""
    search: type[BaseModel]
    batch: type[BaseModel]
    compare: type[BaseModel]
    answer: type[BaseModel]


def request_models(cfg: ServeConfig, default_mode: str = "dense") -> RequestModels:
    """The request bodies with this server's limits (query length, k, batch size) and its default mode (the tuned
    setting's, when the index has one)."""
    Query = Annotated[str, StringConstraints(min_length=1, max_length=cfg.max_query_chars), AfterValidator(has_text)]
    K = Annotated[int, Field(ge=1, le=cfg.max_k, description="hits to return")]
    strict = ConfigDict(extra="forbid", strict=True)  # JSON types as given: no "3" or true for 3

    class SearchIn(BaseModel):
        model_config = strict
        q: Query
        k: K = 10
        mode: Mode = default_mode  # type: ignore[assignment]

    class BatchIn(BaseModel):
        model_config = strict
        queries: list[Query] = Field(min_length=1, max_length=cfg.max_batch,
                                   description=f"at most {cfg.max_batch} queries, each at most "
                                               f"{cfg.max_query_chars} characters")
        k: K = 10
        mode: Mode = default_mode  # type: ignore[assignment]

    class CompareIn(BaseModel):
        model_config = strict
        q: Query
        k: int = Field(10, ge=1, le=min(cfg.max_k, 100), description="hits per system")
        systems: list[Mode] = Field(["dense", "bm25"], min_length=2, max_length=2,
                                    description="the two systems to put side by side")
        qrels: str | None = Field(None, max_length=200, description="name of a qrels set given at start-up "
                                  "(--qrels NAME=PATH): marks judged hits")
        query_id: str | None = Field(None, max_length=200, description="the query's id in the qrels or answers "
                                     "set (default: found by its text)")
        answers: list[str] | None = Field(None, max_length=100, description="answer strings: marks hits holding "
                                          "one (DPR matching)")
        answer_set: str | None = Field(None, max_length=200, description="name of a QA file given at start-up "
                                       "(--answers NAME=PATH): its answers for this question")

    reading = ReadOptions()

    class AnswerIn(BaseModel):
        model_config = strict
        q: Query
        k: int = Field(min(20, cfg.max_read_k), ge=1, le=cfg.max_read_k, description="passages retrieved and read")
        mode: Mode = default_mode  # type: ignore[assignment]
        rank: Rank = Field(reading.rank, description="passage: the best span of the passage with the highest "
                           "selection score (C-MORE); span: the best span score over all passages")
        n_best: int = Field(reading.n_best, ge=1, le=MAX_N_BEST, description="answers listed")
        max_answer_length: int = Field(reading.max_answer_length, ge=1, le=MAX_ANSWER_TOKENS,
                                       description="longest answer, in tokens")

    return RequestModels(SearchIn, BatchIn, CompareIn, AnswerIn)
