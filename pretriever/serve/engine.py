"""The search engine behind the API: one model, micro-batched query encoding, search off the event loop.

* The index is opened once with :func:`pretriever.index.open_system` (dense, refined or BM25
  folder, with the store its passages come from), so its model is loaded once; BM25 comes from
  the index's ``bm25/`` folder (:func:`pretriever.index.bm25_system`, built in memory when the
  folder has none).
* :class:`MicroBatcher`: concurrent requests put their query on an asyncio queue; one task
  takes up to ``encode_batch`` queries (waiting ``batch_wait_ms`` for more) and encodes them
  in one call in the thread pool. Encoding one query at a time costs nearly as much as
  encoding 32 on a CPU, so under load this is where throughput comes from.
* FAISS and BM25 searches and passage lookups run in a thread pool (FAISS and bm25s release
  the GIL), never on the event loop. Dense mode encodes through the index's
  :class:`pretriever.retrieval.VectorSearch` side (a refined index: its refined query vectors).
* ``hybrid`` is dense and BM25 fused by :func:`pretriever.index.hybrid.fuse` (``[serve.hybrid]``: RRF by
  default, or convex), each taken to the same depth, as ``pretriever search --hybrid`` does.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pretriever.data import PassageLookup
from pretriever.index import System, bm25_system, open_system, retriever_kind
from pretriever.index.dense import BM25_DIR
from pretriever.index.hybrid import fuse
from pretriever.retrieval import Hit, Passage, VectorSearch
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
class Engine:
    """The opened index (dense and/or BM25, each a :class:`pretriever.index.System` reading passages from the
    index's store), and the pool its searches run in."""

    config: ServeConfig
    dense: System | None
    bm25: System | None
    kind: str
    bm25_source: str = ""
    executor: ThreadPoolExecutor = field(default_factory=ThreadPoolExecutor)
    batcher: MicroBatcher | None = None

    @classmethod
    def open(cls, config: ServeConfig) -> Engine:
        """Open ``config.index``; its model is loaded here, once."""
        kind = retriever_kind(config.index)
        system = open_system(config.index, device=config.device)
        executor = ThreadPoolExecutor(config.threads, thread_name_prefix="pretriever-serve")
        if kind == "bm25":
            return cls(config, None, system, kind, "the served index", executor)
        if not isinstance(system, VectorSearch):
            raise ServeError(f"{config.index}: a {kind} index has no query encoder to serve in dense mode")
        bm25, source = None, ""
        if (config.index / BM25_DIR).exists() or system.lookup is not None:
            bm25, source = bm25_system(system.lookup, [config.index / BM25_DIR])
        engine = cls(config, system, bm25, kind, source, executor)
        engine.batcher = MicroBatcher(system.encode_queries, executor, config.encode_batch,
                                      config.batch_wait_ms / 1000)
        system.encode_queries(["warm up"])  # load the model now, not on the first request
        return engine

    @property
    def system(self) -> System:
        """The served index (the dense side, or the BM25 folder)."""
        return self.dense or self.bm25

    @property
    def lookup(self) -> PassageLookup | None:
        """The store the served index's passages come from (None: not known)."""
        return self.system.lookup

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
        return await self.run(self.dense.search_vectors, np.stack(vectors), k)

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
        depth = options.depth_for(k)
        dense, sparse = await asyncio.gather(self._dense(queries, depth), self._bm25(queries, depth))
        return [fuse(d, s, options, k) for d, s in zip(dense, sparse)]

    async def passages(self, ids: list[str]) -> dict[str, Passage]:
        """Title, text and document of each passage id (None fields for ids not in the store)."""
        return await self.run(self.system.passages, ids)

    @property
    def meta(self) -> dict[str, Any]:
        """The served index's recorded metadata (index.json; a refined index's has a ``refine`` section)."""
        return self.system.meta

    def info(self) -> dict[str, Any]:
        meta = self.meta
        encoder = meta.get("encoder", {}) if self.dense is not None else {}
        return {
            "index": str(self.config.index), "kind": self.kind, "modes": self.modes,
            "model": encoder.get("model_label") or encoder.get("model"),
            "index_type": (meta.get("index") or {}).get("type") if self.dense is not None else "bm25",
            "dim": meta.get("dim"), "passages": len(self.system),
            "bm25": {"passages": len(self.bm25), "source": self.bm25_source} if self.bm25 is not None else None,
            "store": str(self.lookup.path) if self.lookup is not None else None,
            "encoding": {"batches": self.batcher.batches, "queries": self.batcher.texts,
                         "max_batch": self.config.encode_batch} if self.batcher else None,
        }

    async def close(self) -> None:
        if self.batcher is not None:
            await self.batcher.close()
        self.executor.shutdown(wait=False, cancel_futures=True)
        self.system.close()
