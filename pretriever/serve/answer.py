"""``POST /answer``: retrieve with the engine, then read the passages with a trained reader.

The reader stage's public pieces do the reading (:class:`pretriever.reader.predict.Reader`, as
``pretriever answer`` uses it); this module only feeds it the engine's hits, so retrieval is the
served index's (dense, BM25 or hybrid, with the engine's micro-batched query encoding) and the
answer is the one ``pretriever answer`` gives for the same passages. The reader is loaded once at
start-up (``--reader READER_DIR``); one request reads at a time (a forward pass already uses
every core), off the event loop.

Example::

    curl -s localhost:8000/answer -H 'content-type: application/json' \\
         -d '{"q": "who wrote hamlet", "k": 20, "mode": "hybrid", "rank": "passage", "n_best": 3}'
"""

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from fastapi import APIRouter, HTTPException, Request

from pretriever.reader.config import ReadOptions
from pretriever.reader.manifest import ReaderManifest
from pretriever.reader.predict import Answer, Reader
from pretriever.retrieval import Passage
from pretriever.serve.config import ServeConfig
from pretriever.serve.schemas import ERRORS, AnswerOut, request_models


class Answering:
    """A loaded reader shared by the requests; each request may choose its own reading options."""

    def __init__(self, path: Path, device: str | None = None):
        self.reader = Reader.load(path, ReadOptions(device=device))
        self.meta = ReaderManifest.read(path) if (path / ReaderManifest.FILE).is_file() else None
        self._lock = threading.Lock()

    def read(self, question: str, passages: list[Passage], **options: Any) -> Answer:
        """The reader's answer from ``passages`` with ``options`` (rank, n_best, max_answer_length) set."""
        base = self.reader
        reader = Reader(base.module, base.tokenizer, replace(base.options, **options), base.path)
        with self._lock:
            return reader.read(question, passages)

    def info(self) -> dict[str, Any]:
        return {"path": str(self.reader.path.resolve()), "base_model": self.meta.base_model if self.meta else None,
                "dev": self.meta.dev if self.meta else None, "defaults": {k: getattr(self.reader.options, k)
                                                          for k in ("rank", "n_best", "max_answer_length")}}


def answer_router(cfg: ServeConfig, default_mode: str = "dense") -> APIRouter:
    """The ``POST /answer`` route (mounted by :func:`pretriever.serve.app.create_app` when a reader is given)."""
    body_model = request_models(cfg, default_mode).answer
    router = APIRouter()  # no `from __future__ import annotations` here: FastAPI must see body_model itself

    @router.post("/answer", response_model=AnswerOut, responses=ERRORS, tags=["answer"])
    async def answer(request: Request, body: body_model) -> AnswerOut:  # type: ignore[valid-type]
        """Retrieve the top k passages (mode), read them, and return the answer with its passage, its
        character offsets in that passage, and the n-best spans (as `pretriever answer --json`)."""
        started = time.perf_counter()
        engine = request.app.state.engine
        [hits] = await engine.search([body.q], body.k, body.mode)
        found = await engine.passages([h.passage_id for h in hits])
        passages = [found[h.passage_id] for h in hits if found[h.passage_id].text is not None]
        if not passages:
            raise HTTPException(404, f"no passage was retrieved for {body.q[:200]!r} in mode {body.mode} "
                                     "(no term of it in a BM25 index, or a store without the passages)")
        reading: Answering = request.app.state.reader
        result = await engine.run(lambda: reading.read(body.q, passages, rank=body.rank, n_best=body.n_best,
                                                       max_answer_length=body.max_answer_length))
        out = result.to_json()
        out["n_best"] = [{**span, "passage_id": passages[span["passage"]].passage_id} for span in out["n_best"]]
        return AnswerOut(**out, mode=body.mode, k=body.k, rank=body.rank,
                         took_ms=round((time.perf_counter() - started) * 1000, 3))

    return router


def no_reader_router() -> APIRouter:
    """``POST /answer`` on a server without a reader: a 404 that says how to get one (not in the OpenAPI)."""
    router = APIRouter()

    @router.post("/answer", include_in_schema=False)
    async def answer() -> None:
        raise HTTPException(404, "POST /answer needs a reader: start the server with --reader READER_DIR")

    return router
