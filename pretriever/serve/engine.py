"""The search engine behind the API: one model, adaptive micro-batches of query encodings, nothing slow on the
event loop.

* The index is opened once with :meth:`pretriever.index.IndexFolder.open` (dense, refined or BM25
  folder, with the store its passages come from), so its model is loaded once; BM25 comes from
  the index's ``bm25/`` folder (:meth:`pretriever.index.IndexFolder.bm25`, built in memory when the
  folder has none).
* :class:`MicroBatcher`: concurrent requests queue their query; one worker encodes whatever is queued
  (up to ``encode_batch``) in one call and searches the vectors, on the encoder's own thread. A lone
  query is encoded at once; queries that come while a batch is encoding make up the next one, so the
  batch size follows the load (continuous batching). Encoding one query costs nearly as much as
  encoding 32 on a CPU, so under load this is where throughput comes from.
* Threads, on purpose: the encoder has one thread (:data:`ENCODER_THREADS`), so encodes never overlap and
  torch's intra-op threads (``encode_threads``) are the encoder's only parallelism, never multiplied by a
  pool; store queries and pairs run in the pool (``threads``), never on the event loop.
* BM25 (mode bm25) runs on the event loop while its searches so far took at most ``bm25_inline_ms`` a query
  (SciFact's: 0.16 ms, less than the 0.2 ms a hop to a worker thread and back adds), else in the pool, so a
  large index never holds the loop (:meth:`QueryEngine._bm25`). Hybrid's BM25 runs in the pool, beside the encode.
* Passages come from memory when the store fits (``passages_mb``,
  :meth:`pretriever.data.PassageLookup.hold`), read on the event loop; else from the store, in the pool.
* ``hybrid`` is dense and BM25 fused by :func:`pretriever.index.hybrid.fuse` (``[serve.hybrid]``: RRF by
  default, or convex), each taken to the same depth, as ``pretriever search --hybrid`` does.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from pretriever.data import PassageLookup
from pretriever.index import IndexFolder, IndexMeta, System, TunedSetting
from pretriever.index.hybrid import fuse
from pretriever.retrieval import Hit, Passage, VectorSearch
from pretriever.serve.config import MODES, ServeConfig, ServeError

ENCODER_THREADS = 1  # one batch encodes at a time; its parallelism is torch's


def set_encode_threads(threads: int) -> None:
    """torch's intra-op threads for the calling thread: run as the encoder thread's initializer, because a
    thread keeps the OpenMP thread count it started with, whatever another thread sets later."""
    import torch

    torch.set_num_threads(threads)


class MicroBatcher:
    """Encode and search the queries of many concurrent requests in shared batches
    (``await batcher.search(queries, k)``).

    ``system`` encodes a list of texts (``encode_queries``) and searches their vectors (``search_vectors``);
    both run in ``executor``. A worker task runs while queries are queued: it takes up to ``max_batch``,
    encodes them in one call and searches each ``k`` asked for, then takes the next batch. A lone request is
    encoded at once. A batch waits, up to ``max_wait`` seconds, for more queries to join until it is full only
    when requests are coming together: it holds queries of several requests, or the last batch did (the
    answers just sent bring the next requests, a few milliseconds apart). So the first lone request after a
    burst waits ``max_wait`` once. The worker exits when the queue is empty, so no task outlives the requests (or the
    event loop) it served.
    """

    def __init__(self, system: VectorSearch, executor: ThreadPoolExecutor, max_batch: int, max_wait: float):
        self._system = system
        self._executor = executor
        self.max_batch = max_batch
        self.max_wait = max_wait
        self._shared = False  # the last batch held queries of several requests: requests are coming together
        self._queue: deque[Queued] = deque()
        self._arrived = asyncio.Event()
        self._worker: asyncio.Task | None = None
        self.batches = 0
        self.texts = 0
        self.waits = 0  # batches that waited for company (a lone request never does)

    async def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """The top ``k`` hits of each of ``queries`` (one request's), encoded with the queries queued beside them."""
        loop = asyncio.get_running_loop()
        request = object()
        futures = [loop.create_future() for _ in queries]
        if self._worker is None or self._worker.get_loop() is not loop:  # none, or one left on a closed loop
            self._queue = deque(q for q in self._queue if q.future.get_loop() is loop)
            self._arrived = asyncio.Event()
            self._worker = loop.create_task(self._run())
        self._queue.extend(Queued(text, k, future, request) for text, future in zip(queries, futures))
        self._arrived.set()
        return list(await asyncio.gather(*futures))

    def _fill(self, batch: list[Queued]) -> list[Queued]:
        while self._queue and len(batch) < self.max_batch:
            batch.append(self._queue.popleft())
        return batch

    async def _wait_for_more(self, batch: list[Queued]) -> list[Queued]:
        """``batch`` topped up with the queries that come within ``max_wait`` seconds, or until it is full."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.max_wait
        while len(batch) < self.max_batch and (left := deadline - loop.time()) > 0:
            self._arrived.clear()
            try:
                await asyncio.wait_for(self._arrived.wait(), left)
            except TimeoutError:
                pass
            self._fill(batch)
        return batch

    async def _run(self) -> None:
        loop, me = asyncio.get_running_loop(), asyncio.current_task()
        try:
            while self._queue:
                batch = self._fill([])
                if self.max_wait > 0 and len(batch) < self.max_batch and (
                        self._shared or len({q.request for q in batch}) > 1):
                    self.waits += 1
                    batch = await self._wait_for_more(batch)
                self._shared = len({q.request for q in batch}) > 1
                live = [q for q in batch if not q.future.done()]  # a caller that went away is skipped
                if not live:
                    continue
                try:
                    found = await loop.run_in_executor(self._executor, self._encode_and_search,
                                                       [q.text for q in live], [q.k for q in live])
                except Exception as err:  # noqa: BLE001 - every waiting caller gets the failure
                    for q in live:
                        if not q.future.done():
                            q.future.set_exception(err)
                    continue
                self.batches += 1
                self.texts += len(live)
                for q, hits in zip(live, found):
                    if not q.future.done():
                        q.future.set_result(hits)
        finally:
            if self._worker is me:
                self._worker = None

    def _encode_and_search(self, texts: list[str], ks: list[int]) -> list[list[Hit]]:
        """One encoder call for ``texts``, then one vector search per distinct ``k`` (so each query gets exactly
        what a search with its own ``k`` returns, on any index type)."""
        vectors = self._system.encode_queries(texts)
        found: list[list[Hit]] = [[] for _ in texts]
        for k in sorted(set(ks)):
            rows = [i for i, wanted in enumerate(ks) if wanted == k]
            for row, hits in zip(rows, self._system.search_vectors(vectors[rows], k)):
                found[row] = hits
        return found

    async def close(self) -> None:
        """Stop the worker; queued callers get CancelledError."""
        worker, self._worker = self._worker, None
        for queued in self._queue:
            queued.future.cancel()
        self._queue.clear()
        if worker is not None and not worker.done():
            worker.cancel()
            try:
                await worker
            except asyncio.CancelledError:
                pass


class Queued(NamedTuple):
    """A query waiting for the encoder: its text, its k, who waits for it, and which request it belongs to."""

    text: str
    k: int
    future: asyncio.Future
    request: object


@dataclass
class QueryEngine:
    """The opened index (dense and/or BM25, each a :class:`pretriever.index.System` reading passages from the
    index's store), the encoder's thread and the pool the other searches and lookups run in."""

    config: ServeConfig
    dense: System | None
    bm25: System | None
    kind: str
    bm25_source: str = ""
    executor: ThreadPoolExecutor = field(default_factory=ThreadPoolExecutor)
    encoder: ThreadPoolExecutor | None = None
    batcher: MicroBatcher | None = None
    tuned: TunedSetting | None = None  # what `pretriever tune` chose (index.json), unless --no-tuned
    bm25_ms: float | None = None  # a BM25 search's time per query so far (moving average); None: none yet

    @classmethod
    def open(cls, config: ServeConfig) -> QueryEngine:
        """Open ``config.index``; its model is loaded here, once, and its passages read when they fit."""
        folder = IndexFolder(config.index)
        kind = folder.kind
        system = folder.open(device=config.device)
        if system.lookup is not None:
            system.lookup.hold(config.passages_mb * 2**20)
        executor = ThreadPoolExecutor(config.threads, thread_name_prefix="pretriever-serve")
        if kind == "bm25":
            return cls(config, None, system, kind, "the served index", executor)
        if not isinstance(system, VectorSearch):
            raise ServeError(f"{config.index}: a {kind} index has no query encoder to serve in dense mode")
        bm25, source = None, ""
        if folder.bm25_dir.exists() or system.lookup is not None:
            bm25, source = folder.bm25(system.lookup)
        encoder = ThreadPoolExecutor(ENCODER_THREADS, thread_name_prefix="pretriever-encode",
                                     initializer=set_encode_threads, initargs=(config.encode_threads,))
        encoder.submit(system.encode_queries, ["warm up"]).result()  # load the model now, not on the first request
        tuned = folder.meta.tuned_setting if config.tuned else None
        if tuned is not None and tuned.mode != "index" and bm25 is None:
            raise ServeError(f"{config.index}: its tuned setting ({tuned.label}) needs BM25, and neither "
                             f"{folder.bm25_dir} nor the corpus store is there; serve with --no-tuned")
        return cls(config, system, bm25, kind, source, executor, encoder,
                   MicroBatcher(system, encoder, config.encode_batch, config.batch_wait_ms / 1000), tuned)

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

    @property
    def default_mode(self) -> str:
        """The mode of a request that names none: the tuned setting's, else dense."""
        return {"index": "dense", "bm25": "bm25", "hybrid": "hybrid"}[self.tuned.mode] if self.tuned else "dense"

    @property
    def fusion(self):
        """How mode=hybrid fuses: the tuned fusion when the tuned setting is a hybrid one, else --fusion's."""
        return self.tuned.fusion if self.tuned is not None and self.tuned.fusion is not None else self.config.hybrid

    def check_mode(self, mode: str) -> None:
        if mode not in self.modes:
            raise ServeError(f"mode {mode!r} is not available for this index (it serves: {', '.join(self.modes)})")

    async def run(self, fn: Callable, *args: Any) -> Any:
        """``fn(*args)`` in the engine's thread pool, off the event loop."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def _dense(self, queries: list[str], k: int) -> list[list[Hit]]:
        return await self.batcher.search(queries, k)

    def _timed_bm25(self, queries: list[str], k: int) -> list[list[Hit]]:
        started = time.perf_counter()
        found = self.bm25.search(queries, k)
        ms = (time.perf_counter() - started) * 1000 / len(queries)
        self.bm25_ms = ms if self.bm25_ms is None else 0.8 * self.bm25_ms + 0.2 * ms
        return found

    async def _bm25(self, queries: list[str], k: int) -> list[list[Hit]]:
        """BM25 on the event loop when the searches so far say these take at most ``bm25_inline_ms`` (a thread hop
        would cost more than the search), else in the pool; the first search runs in the pool and sets the
        estimate, and every search, wherever it runs, updates it."""
        limit = self.config.bm25_inline_ms
        if limit > 0 and self.bm25_ms is not None and self.bm25_ms * len(queries) <= limit:
            return self._timed_bm25(queries, k)
        return await self.run(self._timed_bm25, queries, k)

    async def search(self, queries: list[str], k: int, mode: str) -> list[list[Hit]]:
        """The top ``k`` hits of each query in ``mode`` (dense, bm25 or hybrid)."""
        self.check_mode(mode)
        if not queries:
            return []
        if mode == "dense":
            return await self._dense(queries, k)
        if mode == "bm25":
            return await self._bm25(queries, k)
        options = self.fusion
        depth = options.depth_for(k)
        # BM25 in the pool even when cheap: there it overlaps the encode (torch lets go of the GIL), on the loop
        # it would delay handing the queries to the encoder
        dense, sparse = await asyncio.gather(self._dense(queries, depth), self.run(self._timed_bm25, queries, depth))
        return [fuse(d, s, options, k) for d, s in zip(dense, sparse)]

    async def passages(self, ids: list[str]) -> dict[str, Passage]:
        """Title, text and document of each passage id (None fields for ids not in the store): a dict lookup
        on the event loop when the store is held in memory, else a store query in the pool."""
        if self.lookup is None or self.lookup.held:
            return self.system.passages(ids)
        return await self.run(self.system.passages, ids)

    @property
    def meta(self) -> IndexMeta:
        """The served index's recorded metadata (index.json; a refined index's has a ``refine`` record)."""
        return self.system.meta

    def info(self) -> dict[str, Any]:
        meta = self.meta
        encoder = meta.encoder if self.dense is not None else None
        return {
            "index": str(self.config.index.resolve()), "kind": self.kind, "modes": self.modes,
            "default_mode": self.default_mode, "tuned": self.tuned.to_json() if self.tuned else None,
            "model": (encoder.model_label or encoder.model) if encoder is not None else None,
            "index_type": meta.index_type if self.dense is not None else "bm25",
            "dim": meta.dim, "passages": len(self.system),
            "bm25": {"passages": len(self.bm25), "source": self.bm25_source,
                     "search_ms": round(self.bm25_ms, 4) if self.bm25_ms is not None else None,
                     "inline_ms": self.config.bm25_inline_ms} if self.bm25 is not None else None,
            "store": str(self.lookup.path.resolve()) if self.lookup is not None else None,
            "encoding": {"batches": self.batcher.batches, "queries": self.batcher.texts,
                         "max_batch": self.config.encode_batch} if self.batcher else None,
        }

    async def close(self) -> None:
        if self.batcher is not None:
            await self.batcher.close()
        for pool in (self.executor, self.encoder):
            if pool is not None:
                pool.shutdown(wait=False, cancel_futures=True)
        self.system.close()
