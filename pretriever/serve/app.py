"""The FastAPI application: :func:`create_app` wires the engine, the pairs, the reader, the limits and the page.

Endpoints (``/openapi.json``, shown by Swagger UI at ``/docs``): ``GET/POST /search``, ``POST /search/batch``,
``POST /compare``, ``POST /answer`` (with ``--reader``), ``GET /pairs``, ``GET /pairs/stats``, ``GET /queries``
(judged queries of a qrels set, for the query view), ``GET /passages/{id}``, ``GET /health``,
``GET /info``; the page at ``/``.

Safety: no endpoint takes a filesystem path (indexes, pairs, the reader, qrels and answers are
fixed at start-up and named); request bodies over ``max_body_bytes`` get 413 before they are
read; queries, k and batches are capped in the request models (422, and strict: no "3" or true for
an int); every error is JSON ``{"error": message}`` (:mod:`~pretriever.serve.handlers`). On
loopback, a request must name the server in its Host header (127.0.0.1, localhost, [::1] or an
``--allowed-host``), against DNS rebinding. With a key (always, off loopback) every path but the page, the docs
and ``/health`` needs it (``X-API-Key`` or ``Authorization: Bearer``), checked before the body is read. The
request head's caps, read deadlines and JSON answers to malformed requests are the server's
(:mod:`~pretriever.serve.server`).
"""


import math
import time
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi import Path as PathParam
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles
from pydantic import AfterValidator

from pretriever import __version__
from pretriever.data import PassageLookup
from pretriever.retrieval import Hit
from pretriever.serve.answer import Answering, answer_router, no_reader_router
from pretriever.serve.config import ServeConfig
from pretriever.serve.engine import QueryEngine
from pretriever.serve.guards import DOCS_CSP, PAGE_CSP, BodyLimit, HostCheck, KeyCheck, SecurityHeaders
from pretriever.serve.handlers import install_error_handlers, without_paths
from pretriever.serve.judged import JudgedSets
from pretriever.serve.pair_pages import PageOutOfRange, PairsView
from pretriever.serve.schemas import (ANSWERED_BY_GUARDS, ERRORS, BatchOut, CompareOut, HitOut, Mode, PairsOut,
                                      PassageOut, QueriesOut, SearchOut, errors, has_text, request_models)

STATIC = Path(__file__).parent / "static"
# Swagger UI's files as the fastapi-offline package ships them: /docs loads nothing from another site
SWAGGER_UI = ("fastapi_offline", "static")
# what needs no API key: the page and its files, the API's description, liveness
OPEN_PATHS, OPEN_UNDER = frozenset({"/", "/health", "/docs", "/openapi.json"}), ("/static/", "/docs/")


def _hits(hits: list[Hit], passages: dict) -> list[HitOut]:
    return [HitOut(rank=rank, id=h.passage_id, title=passages[h.passage_id].title, text=passages[h.passage_id].text,
                   score=h.score if math.isfinite(h.score) else 0.0, doc_id=passages[h.passage_id].doc_id)
            for rank, h in enumerate(hits, 1)]


def _api(cfg: ServeConfig, default_mode: str = "dense") -> APIRouter:
    models = request_models(cfg, default_mode)
    router = APIRouter()
    Q = Annotated[str, Query(min_length=1, max_length=cfg.max_query_chars, description="the query text"),
                  AfterValidator(has_text)]
    K = Annotated[int, Query(ge=1, le=cfg.max_k, description="hits to return")]

    def engine(request: Request) -> QueryEngine:
        return request.app.state.engine

    async def search_out(eng: QueryEngine, queries: list[str], k: int, mode: str) -> list[SearchOut]:
        started = time.perf_counter()
        results = await eng.search(queries, k, mode)
        passages = await eng.passages([h.passage_id for hits in results for h in hits])
        took = round((time.perf_counter() - started) * 1000, 3)
        return [SearchOut(query=q, mode=mode, k=k, hits=_hits(hits, passages), took_ms=took)
                for q, hits in zip(queries, results)]

    @router.get("/search", response_model=SearchOut, responses=ERRORS, tags=["search"])
    async def search_get(request: Request, q: Q, k: K = 10,
                         mode: Mode = default_mode) -> SearchOut:  # type: ignore[assignment]
        """The top k passages for the query: id, title, text, score, rank, and the time taken."""
        return (await search_out(engine(request), [q], k, mode))[0]

    @router.post("/search", response_model=SearchOut, responses=ERRORS, tags=["search"])
    async def search_post(request: Request, body: models.search) -> SearchOut:  # type: ignore[valid-type]
        """As GET /search, with the query in a JSON body."""
        return (await search_out(engine(request), [body.q], body.k, body.mode))[0]

    @router.post("/search/batch", response_model=BatchOut, responses=ERRORS, tags=["search"])
    async def search_batch(request: Request, body: models.batch) -> BatchOut:  # type: ignore[valid-type]
        """Many queries at once (at most max_batch); one result per query, in order."""
        started = time.perf_counter()
        results = await search_out(engine(request), body.queries, body.k, body.mode)
        return BatchOut(mode=body.mode, k=body.k, results=results,
                        took_ms=round((time.perf_counter() - started) * 1000, 3))

    @router.post("/compare", response_model=CompareOut, responses=ERRORS, tags=["search"])
    async def compare(request: Request, body: models.compare) -> CompareOut:  # type: ignore[valid-type]
        """Two systems' top k side by side; judged hits marked when the request names a qrels set
        (with ``query_id`` or a judged query's text), answer-bearing hits when it gives answers."""
        started = time.perf_counter()
        sets: JudgedSets = request.app.state.judged
        qid, judged, answers, matcher = body.query_id, None, body.answers, None
        if body.qrels is not None:
            qid, judged = sets.judgments(body.qrels, body.query_id, body.q)
        if body.answer_set is not None:
            answers, matcher = sets.answer_list(body.answer_set, body.query_id, body.q)
        eng = engine(request)
        for mode in body.systems:
            eng.check_mode(mode)
        systems = [(await search_out(eng, [body.q], body.k, mode))[0] for mode in body.systems]
        if answers and matcher is None:
            matcher = sets.default_matcher
        for system in systems:
            for hit in system.hits:
                if judged is not None:
                    hit.relevance = judged.get(hit.doc_id or hit.id)
                if answers:
                    hit.has_answer = matcher.has_answer(answers, hit.text)
        return CompareOut(query=body.q, k=body.k, systems=systems, qrels=body.qrels, query_id=qid,
                          judged=sum(1 for g in judged.values() if g > 0) if judged is not None else None,
                          answers=answers, took_ms=round((time.perf_counter() - started) * 1000, 3))

    @router.get("/pairs", response_model=PairsOut, responses=ERRORS, tags=["pairs"])
    async def pairs(request: Request,
                    method: Annotated[str | None, Query(max_length=20, description="dl, cm, ict, wlp, bfs "
                                                        "(default: the first mined)")] = None,
                    page: Annotated[int, Query(ge=1, le=10**9)] = 1,
                    page_size: Annotated[int, Query(ge=1, le=cfg.max_page_size)] = 10,
                    q: Annotated[str, Query(max_length=cfg.max_query_chars,
                                            description="words the query must hold")] = "",
                    title: Annotated[str, Query(max_length=300, description="text of the query's or the "
                                                "positive's title")] = "") -> PairsOut:
        """A page of mined pairs: query, positive and negative, anchor spans, titles and the method's reason."""
        view = _pairs_view(request)
        chosen = method or (view.methods[0] if view.methods else "")
        result = await engine(request).run(view.page, chosen, page, page_size, q, title)
        return PairsOut(**result.__dict__)

    @router.get("/pairs/stats", tags=["pairs"], responses=errors(404))
    async def pairs_stats(request: Request) -> dict:
        """stats.json of the pairs folder (pairs, distinct queries, overlap histogram per method) and the
        methods' definitions from pairs.json."""
        view = _pairs_view(request)
        return {**view.stats, "definitions": view.definitions(), "mined": view.methods}

    @router.get("/queries", response_model=QueriesOut, responses=ERRORS, tags=["search"])
    async def queries(request: Request, set: Annotated[str, Query(max_length=200, description="qrels set name")],
                      page: Annotated[int, Query(ge=1, le=10**9)] = 1,
                      page_size: Annotated[int, Query(ge=1, le=cfg.max_page_size)] = 20) -> QueriesOut:
        """The judged queries of a qrels set (id, text when --queries was given, relevant documents)."""
        sets: JudgedSets = request.app.state.judged
        total, rows = sets.judged_page(set, page, page_size)
        pages = max(1, math.ceil(total / page_size))
        if page > pages:
            raise PageOutOfRange(f"page {page} is past the last page ({pages}) of {total:,} queries of {set!r}")
        return QueriesOut(set=set, page=page, pages=pages, total=total,
                          queries=[{"id": i, "text": t, "judged": n} for i, t, n in rows])

    @router.get("/passages/{passage_id:path}", response_model=PassageOut, responses=ERRORS, tags=["search"])
    async def passage(request: Request, passage_id: Annotated[str, PathParam(min_length=1, max_length=300,
                                                                             description="any id, / included")],
                      source: Annotated[str, Query(pattern="^(index|pairs)$", description="the index's store or "
                                               "the store the pairs were mined from")] = "index") -> PassageOut:
        """One passage by id (an id may hold /: the rest of the path is the id): title, text, document."""
        store = request.app.state.stores.get(source)
        if store is None:
            raise HTTPException(404, f"no corpus store is known for {source!r}")
        found = (await engine(request).run(store.passages, [passage_id]))[passage_id]
        if found.text is None:
            raise HTTPException(404, f"passage {passage_id!r} is not in the {source} store")
        return PassageOut(**found.__dict__, source=source)

    @router.get("/info", tags=["service"])
    async def info(request: Request) -> dict:
        """Model, index type, sizes, modes, pairs, the reader, judged sets, limits. Paths are shown relative to
        the folder the index is in (the index as its folder's name), or by their last part when outside it."""
        view, reading = request.app.state.pairs, request.app.state.reader
        return _relative({"version": __version__, **engine(request).info(),
                          "pairs": {"path": str(view.dir.path.resolve()), "methods": view.methods} if view else None,
                          "reader": reading.info() if reading is not None else None,
                          "sets": request.app.state.judged.describe(),
                          "limits": {k: getattr(cfg, k) for k in ("max_query_chars", "max_k", "max_batch",
                                                                  "max_body_bytes", "max_page_size", "max_read_k")}},
                         cfg.index.resolve().parent)
    return router


def _relative(value: Any, base: Path) -> Any:
    """``value`` (JSON) with the absolute paths in its strings shown relative to ``base`` (or by their last part)."""
    if isinstance(value, str):
        return without_paths(value, base)
    if isinstance(value, dict):
        return {k: _relative(v, base) for k, v in value.items()}
    if isinstance(value, list):
        return [_relative(v, base) for v in value]
    return value


def _pairs_view(request: Request) -> PairsView:
    view = request.app.state.pairs
    if view is None:
        raise HTTPException(404, "no pairs folder is served: start with --pairs PAIRS_DIR")
    return view


def create_app(cfg: ServeConfig, engine: QueryEngine | None = None) -> FastAPI:
    """The application serving ``cfg.index`` (and ``cfg.pairs``, ``cfg.reader``); ``engine`` shares an
    already opened one (its ``config`` need not be ``cfg``: the search settings are the engine's).

    Args:
        cfg: the server's settings.
        engine: a query engine already open (None: one is opened from ``cfg`` and closed with the app).

    Returns:
        The FastAPI application.
    """
    owned = engine is None  # an engine passed in belongs to the caller, who closes it

    @asynccontextmanager
    async def lifespan(app: FastAPI):
        yield
        if owned:
            await app.state.engine.close()
        for closing in (app.state.pairs, app.state.stores["pairs"]):
            if closing is not None:
                closing.close()

    app = FastAPI(title="pretriever", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None,
                  responses=ANSWERED_BY_GUARDS,
                  description="Search an index (dense, BM25, hybrid), compare systems, browse mined pairs, "
                              "answer questions with a reader.")
    app.state.engine = engine or QueryEngine.open(cfg)
    app.state.pairs = PairsView(cfg.pairs) if cfg.pairs is not None else None
    app.state.reader = Answering(cfg.reader, cfg.device) if cfg.reader is not None else None
    app.state.judged = JudgedSets.load(cfg, app.state.engine.meta.refine)
    pairs_store = app.state.pairs.store_path() if app.state.pairs is not None else None
    app.state.stores = {"index": app.state.engine.lookup,
                        "pairs": PassageLookup(pairs_store) if pairs_store is not None else None}
    app.add_middleware(BodyLimit, limit=cfg.max_body_bytes)  # the innermost: a body is read once the key is good
    if cfg.api_key:  # (ServeConfig demands one off loopback)
        app.add_middleware(KeyCheck, key=cfg.api_key, open_paths=OPEN_PATHS, open_under=OPEN_UNDER)
    if (names := cfg.host_names()) is not None:
        app.add_middleware(HostCheck, names=names)
    app.add_middleware(SecurityHeaders)  # the outermost: on the other guards' answers too
    install_error_handlers(app)
    key_errors = errors(401) if cfg.api_key else {}
    app.include_router(_api(cfg, app.state.engine.default_mode), responses=key_errors)
    reading = answer_router(cfg, app.state.engine.default_mode) if app.state.reader is not None else no_reader_router()
    app.include_router(reading, responses=key_errors)

    @app.get("/health", tags=["service"])
    async def health() -> dict:
        """Liveness: 200 with {"status": "ok"} once the index is open."""
        return {"status": "ok"}

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html", headers={"content-security-policy": PAGE_CSP})

    @app.get("/docs", include_in_schema=False)
    async def docs() -> FileResponse:
        """Swagger UI over /openapi.json, its files served from here (the page's CSP allows no other site)."""
        return FileResponse(STATIC / "docs.html", headers={"content-security-policy": DOCS_CSP})

    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.mount("/docs/assets", StaticFiles(packages=[SWAGGER_UI]), name="swagger-ui")
    return app

