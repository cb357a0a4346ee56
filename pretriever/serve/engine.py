"""The search engine behind the API: one model, micro-batched query encoding, search off the event loop.

* The index is opened once with :func:`pretriever.index.open_retriever` (dense, refined or
  BM25 folder), so its model is loaded once; BM25 comes from the index's ``bm25/`` folder
  (:func:`pretriever.index.bm25_beside`, built in memory when the folder has none).
* :class:`MicroBatcher`: concurrent requests put their query on an asyncio queue; one task
  takes up to ``encode_batch`` queries (waiting ``batch_wait_ms`` for more) and encodes them
  in one call in the thread pool. Encoding one query at a time costs nearly as much as
  encoding 32 on a CPU, so under load this is where throughput comes from.
* FAISS and BM25 searches and passage lookups run in a thread pool (FAISS and bm25s release
  the GIL), never on the event loop.
* ``hybrid`` is dense and BM25 fused by :func:`pretriever.index.hybrid.fuse` (``[serve.hybrid]``: RRF by
  default, or convex), each taken to the same depth, as ``pretriever search --hybrid`` does.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from pretriever.data import CorpusStore, PassageLookup
from pretriever.index import BM25Index, bm25_beside, open_retriever, retriever_kind
from pretriever.index.dense import BM25_DIR
from pretriever.index.hybrid import MIN_DEPTH, fuse
from pretriever.retrieval import Hit, Retriever
from pretriever.serve.config import MODES, ServeConfig, ServeError

class MicroBatcher:
    """Encode texts from many concurrent callers in shared batches (``await batcher.encode(text)``).

    ``encode`` maps a list of texts to an (n, dim) array and runs in ``executor``. When a text
    arrives the batcher waits ``max_wait`` seconds (unless ``max_batch`` are already waiting),
    then encodes up to ``max_batch`` waiting texts in one call; texts that arrive meanwhile
    queue for the next batch.
    """

    def __init__(self, encode: Callable[[list[str]], np.ndarray], executor: ThreadPoolExecutor,
                 max_batch: int, max_wait: float):
        self._encode = encode
        self._executor = executor
        self.max_batch = max_batch
        self.max_wait = max_wait
        self._queue: asyncio.Queue[tuple[str, asyncio.Future]] | None = None
        self._task: asyncio.Task | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.batches = 0
        self.texts = 0

    async def encode(self, text: str) -> np.ndarray:
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._loop is not loop:  # first call, or a new event loop
            self._loop, self._queue = loop, asyncio.Queue()
            self._task = loop.create_task(self._run())
        future = loop.create_future()
        await self._queue.put((text, future))
        return await future

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        queue = self._queue
        while True:
            batch = [await queue.get()]
            if self.max_wait > 0 and queue.qsize() < self.max_batch - 1:
                # let concurrent requests join; a plain sleep, not wait_for(queue.get()), which on
                # Python < 3.12 can drop an item taken just as the timeout fires
                await asyncio.sleep(self.max_wait)
            while len(batch) < self.max_batch and not queue.empty():
                batch.append(queue.get_nowait())
            live = [(text, fut) for text, fut in batch if not fut.cancelled()]
            if not live:
                continue
            try:
                vectors = await loop.run_in_executor(self._executor, self._encode, [text for text, _ in live])
            except Exception as err:  # noqa: BLE001 - every waiting caller gets the failure
                for _, fut in live:
                    if not fut.done():
                        fut.set_exception(err)
                continue
            self.batches += 1
            self.texts += len(live)
            for (_, fut), vector in zip(live, vectors):
                if not fut.done():
                    fut.set_result(vector)

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, RuntimeError):
                pass
            self._task = None


@dataclass
class Passage:
    passage_id: str
    title: str | None
    text: str | None
    doc_id: str | None


class Passages:
    """A store's passages by id for concurrent requests: one DuckDB connection, one caller at a time."""

    def __init__(self, store: Path):
        self.lookup = PassageLookup(CorpusStore(store))
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self.lookup.path

    def get(self, ids: list[str]) -> dict[str, Passage]:
        """Title, text and document of each id (None fields for an id not in the store)."""
        with self._lock:
            titles = self.lookup.titles(ids)
            texts = self.lookup.texts(ids)
            docs = self.lookup.doc_ids(ids)
        return {i: Passage(i, titles.get(i), texts.get(i), docs.get(i)) for i in ids}

    def close(self) -> None:
        self.lookup.close()


@dataclass
class Engine:
    """The opened index (dense and/or BM25), its store, and the pool its searches run in."""

    config: ServeConfig
    dense: Retriever | None
    bm25: BM25Index | None
    lookup: Passages | None
    kind: str
    bm25_source: str = ""
    executor: ThreadPoolExecutor = field(default_factory=ThreadPoolExecutor)
    batcher: MicroBatcher | None = None

    @classmethod
    def open(cls, config: ServeConfig) -> Engine:
        """Open ``config.index``; its model is loaded here, once."""
        kind = retriever_kind(config.index)
        retriever = open_retriever(config.index, device=config.device)
        executor = ThreadPoolExecutor(config.threads, thread_name_prefix="pretriever-serve")
        if kind == "bm25":
            store_path = _store_of(retriever)
            return cls(config, None, retriever, _lookup(store_path), kind, "the served index", executor)
        store_path = _store_of(retriever)
        bm25, source = (None, "")
        if (config.index / BM25_DIR).exists() or store_path is not None:
            bm25, source = bm25_beside(store_path or config.index, [config.index / BM25_DIR])
        engine = cls(config, retriever, bm25, _lookup(store_path), kind, source, executor)
        encode, _ = _vector_side(retriever)
        engine.batcher = MicroBatcher(encode, executor, config.encode_batch, config.batch_wait_ms / 1000)
        encode(["warm up"])  # load the model now, not on the first request
        return engine

    @property
    def modes(self) -> list[str]:
        have = {"dense": self.dense is not None, "bm25": self.bm25 is not None}
        have["hybrid"] = have["dense"] and have["bm25"]
        return [m for m in MODES if have[m]]

    def check_mode(self, mode: str) -> None:
        if mode not in self.modes:
            raise ServeError(f"mode {mode!r} is not available for this index (it serves: {', '.join(self.modes)})")

    async def run(self, fn: Callable, *args: Any) -> Any:
        """``fn(*args)`` in the engine's thread pool, off the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def _dense(self, queries: list[str], k: int) -> list[list[Hit]]:
        vectors = await asyncio.gather(*(self.batcher.encode(q) for q in queries))
        _, search = _vector_side(self.dense)
        return await self.run(search, np.stack(vectors), k)

    async def _bm25(self, queries: list[str], k: int) -> list[list[Hit]]:
        return await self.run(self.bm25.search, queries, k)

    async def search(self, queries: list[str], k: int, mode: str) -> list[list[Hit]]:
        """The top ``k`` hits of each query in ``mode`` (dense, bm25 or hybrid)."""
        self.check_mode(mode)
        if not queries:
            return []
        if mode == "dense":
            return await self._dense(queries, k)
        if mode == "bm25":
            return await self._bm25(queries, k)
        options = self.config.hybrid
        depth = options.depth or max(k, MIN_DEPTH)
        dense, sparse = await asyncio.gather(self._dense(queries, depth), self._bm25(queries, depth))
        return [fuse(d, s, options, k) for d, s in zip(dense, sparse)]

    async def passages(self, ids: list[str]) -> dict[str, Passage]:
        """Title, text and document of each passage id (None fields for ids not in the store)."""
        ids = list(dict.fromkeys(ids))
        if self.lookup is None:
            return {i: Passage(i, None, None, None) for i in ids}
        return await self.run(self.lookup.get, ids)

    @property
    def meta(self) -> dict[str, Any]:
        """The served index's recorded metadata (index.json; a refined index's has a ``refine`` section)."""
        return getattr(self.dense, "meta", None) or getattr(self.bm25, "meta", {}) or {}

    def info(self) -> dict[str, Any]:
        meta = self.meta
        size = len(self.dense) if self.dense is not None else len(self.bm25)
        encoder = meta.get("encoder", {}) if self.dense is not None else {}
        return {
            "index": str(self.config.index), "kind": self.kind, "modes": self.modes,
            "model": encoder.get("model_label") or encoder.get("model"),
            "index_type": (meta.get("index") or {}).get("type") if self.dense is not None else "bm25",
            "dim": meta.get("dim"), "passages": size,
            "bm25": {"passages": len(self.bm25), "source": self.bm25_source} if self.bm25 is not None else None,
            "store": str(self.lookup.path) if self.lookup is not None else None,
            "encoding": {"batches": self.batcher.batches, "queries": self.batcher.texts,
                         "max_batch": self.config.encode_batch} if self.batcher else None,
        }

    async def close(self) -> None:
        if self.batcher is not None:
            await self.batcher.close()
        self.executor.shutdown(wait=False, cancel_futures=True)
        if self.lookup is not None:
            self.lookup.close()


def _vector_side(retriever: Any) -> tuple[Callable[[list[str]], np.ndarray], Callable[[np.ndarray, int], list]]:
    """(encode queries, search vectors) of a dense or refined index, so encoding can be batched apart."""
    if hasattr(retriever, "query_vectors_for"):  # a refined index: its own query side, then the dense search
        return retriever.query_vectors_for, retriever.dense.search_vectors
    if hasattr(retriever, "encode_queries") and hasattr(retriever, "search_vectors"):
        return retriever.encode_queries, retriever.search_vectors
    raise ServeError(f"{type(retriever).__name__} has no query encoder to serve in dense mode")


def _store_of(retriever: Any) -> Path | None:
    store = ((getattr(retriever, "meta", None) or {}).get("corpus") or {}).get("store")
    return Path(store) if store and Path(store).exists() else None


def _lookup(store: Path | None) -> Passages | None:
    return Passages(store) if store is not None else None
