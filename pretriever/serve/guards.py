"""ASGI middleware in front of every route: the Host check, the API key, the body cap, and the headers every
response carries, in that order: a request without the key is refused before its body is read or parsed.

They answer in the API's one error format, ``{"error": message}``; that is why the Host check is not
Starlette's ``TrustedHostMiddleware``, whose 400 is plain text.
"""

import hmac

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pretriever.serve.config import host_name
from pretriever.serve.handlers import error_reply

# every response: not sniffed into another type, never framed, no Referer to other sites
COMMON_HEADERS = [(b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
                  (b"referrer-policy", b"no-referrer")]
# the page: its own script and style only, no inline code, no frames, forms post to itself
PAGE_CSP = "default-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'; object-src 'none'"
# /docs: the same, but Swagger UI draws its icons from data: URLs (Chromium renders it and runs requests with no
# other exception: tests/test_serve_browser.py)
DOCS_CSP = f"{PAGE_CSP}; img-src 'self' data:"


class SecurityHeaders:
    """Adds :data:`COMMON_HEADERS` to every response."""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                have = {name.lower() for name, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []), *(h for h in COMMON_HEADERS if h[0] not in have)]
            await send(message)

        await self.app(scope, receive, with_headers)


class HostCheck:
    """400 for a request whose Host header is none of ``names``. A page on another site that points its
    DNS name at 127.0.0.1 (DNS rebinding) still sends its own name, so it cannot read a server that has
    no key."""

    def __init__(self, app: ASGIApp, names: frozenset[str]):
        self.app, self.names = app, names

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            if host_name(given) not in self.names:
                reply = error_reply(400, f"this server does not answer to the host {given[:100]!r} (Host header); "
                                         f"start it with --allowed-host NAME to add a name")
                return await reply(scope, receive, send)
        await self.app(scope, receive, send)


class KeyCheck:
    """401 for a request without the API key (``X-API-Key``, or ``Authorization: Bearer KEY``), compared in constant
    time, unless its path is one of ``open_paths`` or under one of ``open_under`` (the page, its assets, the docs,
    liveness). Every other path needs it, unknown ones too, so a client without the key learns no route."""

    def __init__(self, app: ASGIApp, key: str, open_paths: frozenset[str], open_under: tuple[str, ...]):
        self.app, self.key = app, key.encode("ascii")  # visible ASCII (ServeConfig checks)
        self.open_paths, self.open_under = open_paths, open_under

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in self.open_paths and not scope["path"].startswith(
                self.open_under):
            headers = dict(scope["headers"])
            given = headers.get(b"x-api-key", b"")
            auth = headers.get(b"authorization", b"")
            if not given and auth[:7].lower() == b"bearer ":
                given = auth[7:].strip()
            if not hmac.compare_digest(given, self.key):
                reply = error_reply(401, "a valid API key is required: send it as the X-API-Key header")
                return await reply(scope, receive, send)
        await self.app(scope, receive, send)


class BodyLimit:
    """413 for a body over ``limit`` bytes, by Content-Length or as it streams in (chunked). The body is read
    here, whole, before the route sees it, so an oversized one never reaches the body parser (which would
    call the failure a parse error)."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            return await self._reject(scope, receive, send)
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            if size > self.limit:
                return await self._reject(scope, receive, send)
            if not message.get("more_body", False):
                break
        body, given = b"".join(chunks), False

        async def replay() -> Message:
            nonlocal given
            if given:
                return await receive()  # after the body: the disconnect, when it comes
            given = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _reject(self, scope: Scope, receive: Receive, send: Send) -> None:
        # the rest of the body is never read, so the connection cannot carry another request
        reply = error_reply(413, f"request body too large: the limit is {self.limit:,} bytes", {"connection": "close"})
        await reply(scope, receive, send)
