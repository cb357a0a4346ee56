"""How ``pretriever serve`` runs uvicorn: its options, and the read deadlines uvicorn lacks.

uvicorn closes an idle kept-alive connection after ``timeout_keep_alive``, but sets no deadline for
reading a request: a client that connects and sends nothing, or sends its headers or its body a byte
at a time, holds the socket (and, while a body trickles in, a request task) as long as it likes.
:class:`ReadDeadlines` is uvicorn's h11 protocol with two: the request line and headers must arrive
within ``header_timeout`` seconds of connecting (or of the request's first byte, on a kept-alive
connection), and the body within ``body_timeout`` seconds of the headers; else the socket is closed.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from pretriever.serve.config import ServeConfig

log = logging.getLogger(__name__)


class ReadDeadlines(H11Protocol):
    """uvicorn's h11 protocol, closing a connection whose request headers or body come too slowly."""

    header_timeout = 10.0
    body_timeout = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._reading: str | None = None
        self._deadline: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._expect("headers")  # nothing has come yet

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._follow(received=True)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        self._follow(received=bool(self.conn.trailing_data[0]))  # a pipelined request may be half in

    def connection_lost(self, exc: Exception | None) -> None:
        self._expect(None)
        super().connection_lost(exc)

    def _follow(self, received: bool) -> None:
        """Keep the deadline of the part of a request being read; none while the application has the request
        (or, between requests, while uvicorn's keep-alive timeout runs)."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            self._expect("body")
        elif state is h11.IDLE and (received or self._reading == "headers"):
            self._expect("headers")
        else:
            self._expect(None)

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
