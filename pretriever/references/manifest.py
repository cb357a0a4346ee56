"""The ``manifest.json`` of a references folder, typed: :class:`ReferencesManifest`, which a fetch or an import
writes beside references.parquet and the command line's summary reads back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pretriever.data.references import ReferencesError
from pretriever.stage import Manifest


@dataclass(frozen=True, kw_only=True)
class ReferencesManifest(Manifest):
    """A fetch's or an import's report: the ``config`` (paths as text, credentials redacted), the ``funnel`` (cited,
    fetched, text extracted, ...), the ``failures`` by reason and the ``seconds``; a fetch adds what ``this_run``
    fetched, an import the ``records`` read and the files ``truncated`` (file, record, byte). Recorded as
    written: the pages fetched through the archive."""

    FILE = "manifest.json"
    ERROR = ReferencesError
    ORDER = ("config", "funnel", "failures", "via_archive", "seconds", "this_run", "records", "truncated")
    FIX = "fetch or import the references again"

    config: dict[str, Any]
    funnel: dict[str, int]
    failures: dict[str, int]
    seconds: float
    this_run: dict[str, Any] | None = None
    records: dict[str, int] | None = None
    truncated: list[dict[str, Any]] | None = None
