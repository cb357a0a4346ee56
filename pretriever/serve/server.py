"""How ``pretriever serve`` runs uvicorn: its options, its HTTP protocol, and the guards uvicorn's protocol lacks.

The protocol is uvicorn's httptools one (the C parser of Node's llhttp; uvicorn's own choice when httptools is
installed): on SciFact BM25 it answered 9-12% sooner at concurrency 1 and 18-32% more requests a second at 8 and
32 than uvicorn's pure-Python h11 protocol, in one interleaved run on a loaded machine (bench/README.md,
2026-11-27). :class:`GuardedHttp` is that protocol with three guards:

* Read deadlines. uvicorn closes an idle kept-alive connection after ``timeout_keep_alive``, but sets no deadline
  for reading a request: a client that connects and sends nothing, or sends its headers or its body a byte at a
  time, holds the socket (and, while a body trickles in, a request task) as long as it likes. Here the request line
  and headers must arrive within ``header_timeout`` seconds of connecting (or of the request's first byte, on a
  kept-alive connection), and the body within ``body_timeout`` seconds of the headers; else the socket is closed.
* A cap on the request head. httptools holds a header line whole however long it grows, and uvicorn gathers the
  URL and every header before the application (and so the API key check) sees the request: one connection could
  make the server hold 88 MB within the header deadline. As nginx and h11 do, the head is capped: the request line
  at :data:`LINE_BYTES` (414), a header line at :data:`LINE_BYTES` and the whole head at :data:`HEAD_BYTES` (431),
  counted as the bytes arrive, so a header that never ends is cut off at the cap.
* JSON refusals. uvicorn answers a request its parser refuses in plain text; here every answer the protocol gives
  itself is the API's ``{"error": message}`` with the headers every response carries.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from typing import Any

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from pretriever.serve.config import ServeConfig
from pretriever.serve.guards import COMMON_HEADERS
from pretriever.serve.schemas import HEAD_BYTES, LINE_BYTES

log = logging.getLogger(__name__)


class Refusal(Exception):
    """A request the protocol answers itself, raised in a parser callback (the parser then stops)."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class GuardedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with read deadlines, a capped request head and JSON refusals. The parser's
    callbacks say where a request is: its first byte (headers due), its headers complete (body due), the whole
    request in (nothing due while the application has it, nor between requests, where uvicorn's keep-alive timeout
    runs)."""

    header_timeout = 10.0
    body_timeout = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._reading: str | None = None
        self._deadline: asyncio.TimerHandle | None = None
        self._completed = 0  # requests read whole on this connection
        self._head_bytes = 0  # bytes of the current request's head read so far
        self._refused = False
        super().connection_made(transport)
        self._expect("headers")  # nothing has come yet

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return  # after a refusal what still comes is dropped, until the client closes or the deadline ends it
        completed = self._completed
        super().data_received(data)  # the parser's errors, and Refusals raised in its callbacks: send_400_response
        # a read that also ended a request (pipelined) is not counted, as the part of it that is the new head is
        # not known: the count falls short by less than a read, and a complete head's size is checked exactly
        if self._reading == "headers" and self._completed == completed and not self._refused:
            self._head_bytes += len(data)
            if self._head_bytes > HEAD_BYTES:
                self._refuse(*_too_large())

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = 0
        self._expect("headers")

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > LINE_BYTES:
            raise Refusal(414, f"the request URL is longer than {LINE_BYTES:,} bytes (send a long query in a "
                               f"POST body)")

    def on_header(self, name: bytes, value: bytes) -> None:
        if len(name) + len(value) > LINE_BYTES:
            raise Refusal(*_too_large())
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        if len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers) > HEAD_BYTES:
            raise Refusal(*_too_large())  # a whole head that came in one read
        self._expect("body")  # before the application starts: a request without a body completes at once
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._completed += 1
        self._expect(None)
        super().on_message_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._expect(None)
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer when the parser fails, called as it handles the parser's error: a Refusal's status and
        message, else 400 with the parser's reason, as JSON."""
        error = sys.exc_info()[1]
        cause = error.__context__ if error is not None and error.__context__ is not None else error
        if isinstance(cause, Refusal):
            self._refuse(cause.status, str(cause))
        else:
            reason = str(cause)[:200] if cause is not None else msg
            self._refuse(400, f"malformed HTTP request: {reason}")

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``{"error": message}`` and end the connection. Its sending side is shut, not the socket: closed
        with the client's bytes still unread, it would be reset and the client could lose the answer. What the
        client still sends is dropped until it closes or the running deadline (headers' or body's) ends it."""
        log.warning("refused a request from %s: %d %s", self.client, status, message)
        self._refused = True
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the request in flight is abandoned: its application hears a disconnect
            self.cycle.message_event.set()
        body = json.dumps({"error": message}).encode()
        headers = [*self.server_state.default_headers, (b"content-type", b"application/json"),
                   (b"content-length", str(len(body)).encode()), (b"connection", b"close"), *COMMON_HEADERS]
        lines = (name + b": " + value + b"\r\n" for name, value in headers)
        self.transport.write(b"".join([STATUS_LINE[status], *lines, b"\r\n", body]))
        if not self.transport.can_write_eof():
            self.transport.close()
            return
        self.transport.write_eof()

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


def _too_large() -> tuple[int, str]:
    return 431, f"request headers too large: at most {LINE_BYTES:,} bytes a line and {HEAD_BYTES:,} in all"


def uvicorn_options(cfg: ServeConfig) -> dict[str, Any]:
    """Keyword arguments of ``uvicorn.run`` (or ``uvicorn.Config``) for ``cfg``: address, the guarded protocol."""
    protocol = type("ServeProtocol", (GuardedHttp,), {"header_timeout": cfg.header_timeout,
                                                       "body_timeout": cfg.body_timeout})
    return {"host": cfg.host, "port": cfg.port, "http": protocol, "log_level": "warning"}
