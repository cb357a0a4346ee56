"""How ``pretriever serve`` runs uvicorn: its options, its HTTP protocol, and the read deadlines uvicorn lacks.

The protocol is uvicorn's httptools one (the C parser of Node's llhttp; uvicorn's own choice when httptools is
installed): on SciFact BM25 it answered 9-12% sooner at concurrency 1 and 18-32% more requests a second at 8 and
32 than uvicorn's pure-Python h11 protocol, in one interleaved run on a loaded machine (bench/README.md,
2026-11-27).

uvicorn closes an idle kept-alive connection after ``timeout_keep_alive``, but sets no deadline for
reading a request: a client that connects and sends nothing, or sends its headers or its body a byte
at a time, holds the socket (and, while a body trickles in, a request task) as long as it likes.
:class:`ReadDeadlines` is that protocol with two: the request line and headers must arrive
within ``header_timeout`` seconds of connecting (or of the request's first byte, on a kept-alive
connection), and the body within ``body_timeout`` seconds of the headers; else the socket is closed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from pretriever.serve.config import ServeConfig

log = logging.getLogger(__name__)


class ReadDeadlines(HttpToolsProtocol):
    """uvicorn's httptools protocol, closing a connection whose request headers or body come too slowly. The
    parser's callbacks say where a request is: its first byte (headers due), its headers complete (body due),
    the whole request in (nothing due while the application has it, nor between requests, where uvicorn's
    keep-alive timeout runs)."""

    header_timeout = 10.0
    body_timeout = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._reading: str | None = None
        self._deadline: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._expect("headers")  # nothing has come yet

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._expect("headers")

    def on_headers_complete(self) -> None:
        self._expect("body")  # before the application starts: a request without a body completes at once
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._expect(None)
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._expect(None)
        super().connection_lost(exc)

    def _expect(self, part: str | None) -> None:
        if part == self._reading:
            return  # the running deadline stands: trickling bytes do not extend it
        if self._deadline is not None:
            self._deadline.cancel()
        self._reading, self._deadline = part, None
        if part is not None:
            seconds = self.header_timeout if part == "headers" else self.body_timeout
            self._deadline = self.loop.call_later(seconds, self._expired, part, seconds)

    def _expired(self, part: str, seconds: float) -> None:
        self._deadline = None
        if not self.transport.is_closing():
            log.warning("closed the connection from %s: the request %s did not arrive within %g s",
                        self.client, part, seconds)
            self.transport.close()


def uvicorn_options(cfg: ServeConfig) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.run`` (or ``uvicorn.Config``) for ``cfg``: address, read deadlines."""
    protocol = type("ServeProtocol", (ReadDeadlines,), {"header_timeout": cfg.header_timeout,
                                                         "body_timeout": cfg.body_timeout})
    return {"host": cfg.host, "port": cfg.port, "http": protocol, "log_level": "warning"}
