"""The one interface every retrieval system offers: BM25, dense indexes, refined indexes.

Evaluation and search work against :class:`Retriever`, so a new system (a refined
index, a hybrid) only has to implement ``search``.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol


class Hit(NamedTuple):
    passage_id: str
    score: float


class Retriever(Protocol):
    name: str  # the key of this system in result tables and JSON

    def search(self, queries: list[str], k: int) -> list[list[Hit]]:
        """The top ``k`` passages for each query, best first."""
        ...
