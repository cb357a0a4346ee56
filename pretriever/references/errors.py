"""Why one URL could not be turned into a reference (the ``error`` column of ``references``)."""

from __future__ import annotations

from pretriever.errors import PretrieverError
from pretriever.references.urls import redact

REASONS = ("status", "timeout", "robots", "too_large", "content_type", "refused_address", "invalid_url",
           "connection", "tls", "redirects", "decode", "extract_empty")


class FetchFailure(PretrieverError):
    """A permanent failure of one URL, with its reason (one of :data:`REASONS`) and what was learnt.

    The message is written to the ``error_detail`` column, so credentials in it are redacted here.
    """

    def __init__(self, reason: str, message: str, *, status: int | None = None,
                 final_url: str | None = None, content_type: str | None = None):
        assert reason in REASONS, reason
        super().__init__(redact(message))
        self.reason, self.status, self.final_url, self.content_type = reason, status, final_url, content_type


class RefusedAddress(FetchFailure):
    """The host resolves to an address that is not public (and --allow-private is off)."""

    def __init__(self, host: str, address: str):
        super().__init__("refused_address", f"{host} resolves to {address}, which is not a public address "
                         "(give --allow-private to fetch from private networks)")
