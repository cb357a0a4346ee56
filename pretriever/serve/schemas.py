"""Request and response bodies of the API. Request limits come from :class:`ServeConfig`, so the
models are made per app (:func:`request_models`) and the OpenAPI schema states the real limits."""


from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from pretriever.serve.config import ServeConfig

Mode = Literal["dense", "bm25", "hybrid"]


class HitOut(BaseModel):
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
    query: str
    mode: Mode
    k: int
    hits: list[HitOut]
    took_ms: float


class BatchOut(BaseModel):
    mode: Mode
    k: int
    results: list[SearchOut]
    took_ms: float


class CompareOut(BaseModel):
    query: str
    k: int
    systems: list[SearchOut]
    qrels: str | None = None
    query_id: str | None = None
    judged: int | None = Field(None, description="judged relevant documents of the query")
    answers: list[str] | None = None
    took_ms: float


class Span(BaseModel):
    start: int
    end: int
    kind: str = Field(description="query_anchor, back_anchor (links to the query's document) or entity_anchor")
    text: str


class PairSide(BaseModel):
    text: str
    title: str | None
    doc_id: str | None
    passage_id: str | None
    spans: list[Span]


class Negative(BaseModel):
    passage_id: str
    title: str | None
    text: str | None
    kind: str | None


class PairOut(BaseModel):
    pair_id: str
    method: str
    reason: str
    query: PairSide
    positive: PairSide
    negative: Negative | None
    entity: str | None


class PairsOut(BaseModel):
    method: str
    page: int
    page_size: int
    total: int
    pages: int
    pairs: list[PairOut]


class PassageOut(BaseModel):
    passage_id: str
    title: str | None
    text: str | None
    doc_id: str | None
    source: str


class QueryOut(BaseModel):
    id: str
    text: str | None
    judged: int


class QueriesOut(BaseModel):
    set: str
    page: int
    pages: int
    total: int
    queries: list[QueryOut]


class ErrorOut(BaseModel):
    error: str
    detail: list | None = None


@dataclass
class RequestModels:
    search: type[BaseModel]
    batch: type[BaseModel]
    compare: type[BaseModel]


def request_models(cfg: ServeConfig) -> RequestModels:
    """The request bodies with this server's limits (query length, k, batch size)."""
    Query = Annotated[str, StringConstraints(min_length=1, max_length=cfg.max_query_chars)]
    K = Annotated[int, Field(ge=1, le=cfg.max_k, description="hits to return")]
    strict = ConfigDict(extra="forbid")

    class SearchIn(BaseModel):
        model_config = strict
        q: Query
        k: K = 10
        mode: Mode = "dense"

    class BatchIn(BaseModel):
        model_config = strict
        queries: list[Query] = Field(min_length=1, max_length=cfg.max_batch,
                                   description=f"at most {cfg.max_batch} queries, each at most "
                                               f"{cfg.max_query_chars} characters")
        k: K = 10
        mode: Mode = "dense"

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

    return RequestModels(SearchIn, BatchIn, CompareIn)
