"""A threaded HTTP server on 127.0.0.1 for the fetcher tests: routes by path, counts hits per path."""

from __future__ import annotations

import asyncio
import ipaddress
import threading
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

Route = Callable[[BaseHTTPRequestHandler], None]


def article(title: str, facts: str, charset: str = "utf-8") -> str:
    """A small article page with navigation and boilerplate around the facts."""
    body = " ".join([facts] * 4)
    return (f"<!DOCTYPE html><html><head><meta charset=\"{charset}\"><title>{title} | Example News</title></head>"
            f"<body><nav><a href='/'>Home</a> | <a href='/about'>About</a> | <a href='/contact'>Contact</a></nav>"
            f"<main><article><h1>{title}</h1><p>{body}</p><p>{facts} This paragraph repeats the facts so the page "
            f"has the length of a real article.</p></article></main>"
            f"<footer>Copyright 2024 Example News. All rights reserved. Privacy policy.</footer></body></html>")


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes = b"", content_type: str = "text/html",
         headers: dict[str, str] | None = None) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(body)


class _Server(ThreadingHTTPServer):
    """A listen queue of 128, not socketserver's 5: a fetch at concurrency 64 on busy cores overflowed 5, and a
    connection the kernel then dropped looked open to the client, which waited out its 20 s read timeout (the
    nytimes robots.txt of test_pages_fetched_through_a_loopback_proxy_give_the_same_triplets, in the suite)."""

    request_queue_size = 128
    daemon_threads = True


class LoopbackServer:
    """``routes`` maps a path (or, for proxy requests, an absolute URL) to a handler function."""

    def __init__(self, routes: dict[str, Route]):
        self.routes, self.hits, self.lock = routes, Counter(), threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                key = self.path if self.path in outer.routes else urlsplit(self.path).path
                with outer.lock:
                    outer.hits[key] += 1
                route = outer.routes.get(key) or outer.routes.get("*")
                try:
                    route(self) if route else send(self, 404, b"not found", "text/plain")
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def log_message(self, *args) -> None:
                pass

        self.server = _Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def __enter__(self) -> LoopbackServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()


def fake_dns(monkeypatch, answers: dict[str, str], default: str | None = None) -> None:
    """Names in ``answers`` resolve to the given address, any other name to ``default`` when given (so no
    lookup leaves the machine), and ``localhost`` and literal addresses as the system resolves them."""
    real = asyncio.BaseEventLoop.getaddrinfo

    async def getaddrinfo(self, host, port, **kw):
        address = answers.get(host)
        if address is None and default is not None and host != "localhost" and not _is_address(host):
            address = default
        if address is not None:
            return [(2, 1, 6, "", (address, port))]
        return await real(self, host, port, **kw)

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", getaddrinfo)


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True
