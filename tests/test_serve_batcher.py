"""The serve engine's micro-batcher on a stub encoder: when a batch waits for company (no model needed: the stub
records what it was asked)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from pretriever.retrieval import Hit
from pretriever.serve.engine import MicroBatcher, set_encode_threads


class StubEncoder:
    """Encodes a text as its length; records each call's texts (and torch's thread count on the calling thread)."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], int]] = []

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        self.calls.append((list(texts), torch.get_num_threads()))
        return np.array([[float(len(t))] for t in texts], dtype="float32")

    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[Hit]]:
        return [[Hit(str(int(v[0])), 1.0)] * k for v in vectors]


def batcher(max_wait: float) -> tuple[MicroBatcher, StubEncoder]:
    stub = StubEncoder()
    pool = ThreadPoolExecutor(1, initializer=set_encode_threads, initargs=(1,))
    return MicroBatcher(stub, pool, max_batch=8, max_wait=max_wait), stub


async def lone_then_another(b: MicroBatcher, gap: float) -> None:
    """A request alone, and a second one ``gap`` seconds later, while the first may still be waiting."""
    first = asyncio.ensure_future(b.search(["alone"], 1))
    await asyncio.sleep(gap)
    await asyncio.gather(first, b.search(["later"], 1))


def test_a_lone_request_after_a_shared_batch_waits_for_the_next():
    """Requests that came together bring the next ones a few milliseconds apart: after a batch of several requests,
    a lone one waits (up to max_wait) and the next request joins it. Without that history it is encoded at once."""
    fresh, stub = batcher(max_wait=0.5)
    asyncio.run(lone_then_another(fresh, 0.05))
    assert [texts for texts, _ in stub.calls] == [["alone"], ["later"]]  # no load seen: no wait

    loaded, stub = batcher(max_wait=0.5)

    async def burst_then_lone():
        await asyncio.gather(loaded.search(["a"], 1), loaded.search(["b"], 1))
        await lone_then_another(loaded, 0.05)

    asyncio.run(burst_then_lone())
    assert [texts for texts, _ in stub.calls] == [["a", "b"], ["alone", "later"]]
