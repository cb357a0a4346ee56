"""The ``manifest.json`` of a generated-queries folder, typed: :class:`GenerateManifest`, which a run or an import
writes once every part is in the table."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pretriever.generate.errors import GenerateError
from pretriever.stage import Manifest


@dataclass(frozen=True, kw_only=True)
class GenerateManifest(Manifest):
    """What the table holds: the ``corpus`` store, its ``passages``, the ``queries`` written, the ``options``;
    for an import (``generate --from``), the file ``imported_from``, the ``key`` its ids named (passage or doc)
    and the lines ``skipped`` (why). Recorded as written: version, time, table and columns, passages with
    queries, empty queries, the last run's seconds."""

    FILE = "manifest.json"
    ERROR = GenerateError
    ORDER = ("pretriever_version", "created", "corpus", "table", "columns", "passages", "passages_with_queries",
             "queries", "empty_queries", "options", "seconds_last_run", "imported_from", "key", "skipped")
    FIX = "generate (or import) the queries again"

    corpus: str
    passages: int
    queries: int
    options: dict[str, Any]
    imported_from: str | None = None
    key: str | None = None
    skipped: dict[str, int] | None = None
