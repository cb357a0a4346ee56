"""A corpus store's ``manifest.json``, typed: :class:`StoreManifest`, which the build writes and
:class:`pretriever.data.CorpusStore` reads. It lives with the build (below ``data``) so that both use one class."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pretriever.errors import PretrieverError
from pretriever.stage import Manifest

MANIFEST = "manifest.json"


class StoreError(PretrieverError):
    """The folder is not a usable corpus store."""


@dataclass(frozen=True, kw_only=True)
class StoreManifest(Manifest):
    """A store's manifest: the ``input`` read ({"path", "bytes", "format"}), the build ``options``, the
    ``counts`` (pages, documents, passages, links, errors, ...), the pages dropped or unparsable (``errors``,
    each with its page and message), ``sample`` when the store holds only the first chunks of its input, and
    the build's ``build_seconds``. Recorded as written: version, creation time, the table layout."""

    FILE = MANIFEST
    ERROR = StoreError
    ORDER = ("pretriever_version", "created", "input", "options", "sample", "counts", "dropped_documents", "errors",
             "tables", "build_seconds")
    FIX = "rebuild the store with `pretriever corpus build INPUT --out DIR`"

    input: dict[str, Any]
    counts: dict[str, Any]
    options: dict[str, Any] | None = None
    sample: dict[str, Any] | None = None
    dropped_documents: list[dict[str, Any]] = field(default_factory=list)
    errors: list[dict[str, Any]] = field(default_factory=list)
    build_seconds: float | None = None

    @property
    def format(self) -> str:
        """The input format's name (``mediawiki``, ``beir``, ...)."""
        return str(self.input.get("format"))
