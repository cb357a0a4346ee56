"""One polite, capped, checked GET: per-host gates, manual redirects, retries, robots.txt, size caps.

:class:`PageClient` turns a URL into a :class:`Page` (the raw body, decompressed and capped) or
raises :class:`FetchFailure` with its reason. Politeness is per ``host[:port]``: at most
``per_host`` requests in flight and ``host_delay`` seconds between two request starts, raised by a
429's Retry-After and by robots.txt's Crawl-delay. Redirects are followed by hand so each hop goes
through robots.txt, the address check (in the connection pool's backend, see :mod:`.safety`) and
the hop limit. Whatever goes wrong with one URL (a host no browser would read, a redirect to
``data:``, a protocol or TLS error, a timeout) is a :class:`FetchFailure` of that URL, never an
exception that stops the job.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import random
import re
import ssl
import time
import zlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import datetime, timezone
from urllib.parse import urljoin, urlsplit
from urllib.robotparser import RobotFileParser

import httpx

from pretriever.references.config import FetchConfig
from pretriever.references.errors import FetchFailure
from pretriever.references.safety import AddressGuard, CheckedTransport
from pretriever.references.urls import InvalidUrl, host_of, normalise_url

REDIRECTS = (301, 302, 303, 307, 308)
ROBOTS_PARSE_BYTES = 500 * 1024  # RFC 9309 2.5: parse at least the first 500 KiB
MAX_CRAWL_DELAY = 30.0
CHUNK = 65_536
LINE_END = re.compile(r"\r\n|\r|\n")  # RFC 9309 2.2: CR, LF or CRLF
SERVER_SIDE = ("status", "decode")  # robots.txt failures the server is to blame for (5xx, 429, corrupt body)
NOT_FOLLOWED = ("redirects", "invalid_url", "refused_address")  # a robots.txt we will not fetch: unavailable


@dataclass
class Page:
    """A downloaded body (after Content-Encoding, at most the cap) and what the server said of it."""

    url: str
    final_url: str
    status: int
    content_type: str | None  # media type, lower case, without parameters
    charset: str | None  # from the Content-Type header
    body: bytes


class _Redirect(Exception):
    """A redirect's Location, taken before httpx parses it (see :func:`_take_redirect`)."""

    def __init__(self, location: str):
        super().__init__(location)
        self.location = location


async def _take_redirect(response: httpx.Response) -> None:
    """Response hook: hand a redirect's Location over as it was sent.

    httpx (0.28) builds the next request of every redirect even when it does not follow it, and
    raises ``InvalidURL`` for a Location it cannot parse (``data:...``, ``http:\\x``); the hook runs
    before that, so each Location goes through :meth:`PageClient.get`'s own checks instead.
    """
    if response.status_code in REDIRECTS and "location" in response.headers:
        raise _Redirect(response.headers["location"])


def tls_error(err: BaseException) -> ssl.SSLError | None:
    """The TLS error behind a connection error (httpx wraps it twice), or None."""
    cause: BaseException | None = err
    while cause is not None and not isinstance(cause, ssl.SSLError):
        cause = cause.__cause__ or cause.__context__
    return cause


class _Retry(Exception):
    def __init__(self, reason: str, message: str, status: int | None = None, wait: float | None = None):
        super().__init__(message)
        self.reason, self.status, self.wait = reason, status, wait


class HostGate:
    """At most ``per_host`` requests in flight to one host, and ``delay`` seconds between two starts."""

    def __init__(self, per_host: int, delay: float):
        self._slots = asyncio.Semaphore(per_host)
        self.delay = delay
        self._next_start = 0.0

    def hold_off(self, seconds: float) -> None:
        """No request to this host starts in the next ``seconds`` (a 429's Retry-After)."""
        self._next_start = max(self._next_start, time.monotonic() + seconds)

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._slots:
            now = time.monotonic()
            start = max(now, self._next_start)
            self._next_start = start + self.delay
            if start > now:
                await asyncio.sleep(start - now)
            yield


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return max(0.0, (when - datetime.now(timezone.utc)).total_seconds())


def media_type(header: str | None) -> tuple[str | None, str | None]:
    """(media type, charset) of a Content-Type header."""
    if not header:
        return None, None
    kind, *params = header.split(";")
    charset = None
    for param in params:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            charset = value.strip().strip("\"'") or None
    return kind.strip().lower() or None, charset


async def read_capped(response: httpx.Response, cap: int, url: str, *, head: bool = False) -> bytes:
    """The body after Content-Encoding, aborting once more than ``cap`` bytes would be kept (with
    ``head``, its first ``cap`` bytes instead).

    Decompression is bounded too (``max_length``), so a gzip bomb stops at the cap instead of
    expanding in memory.
    """
    encoding = response.headers.get("content-encoding", "identity").strip().lower()
    if encoding in ("gzip", "x-gzip", "deflate"):
        decoder = zlib.decompressobj(zlib.MAX_WBITS | 32)
    elif encoding in ("", "identity"):
        decoder = None
    else:
        raise FetchFailure("decode", f"{url}: unsupported Content-Encoding {encoding!r}", status=response.status_code)
    parts: list[bytes] = []
    size = 0
    try:
        async for chunk in response.aiter_raw(CHUNK):
            data = decoder.decompress(chunk, cap - size + 1) if decoder is not None else chunk
            size += len(data)
            if size > cap and head:
                parts.append(data[:len(data) - (size - cap)])
                return b"".join(parts)
            if size > cap:
                raise FetchFailure("too_large", f"{url}: body larger than {cap:,} bytes"
                                   + (" after decompression" if decoder is not None else ""),
                                   status=response.status_code)
            parts.append(data)
        if decoder is not None:
            tail = decoder.flush()
            if head:
                tail = tail[:cap - size]
            elif size + len(tail) > cap:
                raise FetchFailure("too_large", f"{url}: body larger than {cap:,} bytes after decompression",
                                   status=response.status_code)
            parts.append(tail)
    except zlib.error as err:
        raise FetchFailure("decode", f"{url}: corrupt {encoding} body ({err})", status=response.status_code) from err
    return b"".join(parts)


class PageClient:
    """GET pages under the job's politeness, limits and address rules (use as ``async with``)."""

    def __init__(self, cfg: FetchConfig):
        self.cfg = cfg
        self.guard = AddressGuard(cfg.allow_private, cfg.resolve)
        limits = httpx.Limits(max_connections=cfg.concurrency + 8, max_keepalive_connections=cfg.concurrency)
        self._http = httpx.AsyncClient(
            transport=CheckedTransport(self.guard, limits, cfg.proxy), follow_redirects=False, trust_env=False,
            event_hooks={"response": [_take_redirect]},
            timeout=httpx.Timeout(connect=cfg.connect_timeout, read=cfg.read_timeout, write=cfg.read_timeout,
                                  pool=cfg.total_timeout),
            headers={"User-Agent": cfg.user_agent, "Accept-Encoding": "gzip, deflate",
                     "Accept": ",".join(cfg.content_types) + ";q=0.9,*/*;q=0.1"})
        self._gates: dict[str, HostGate] = {}
        self._robots: dict[str, asyncio.Task[RobotFileParser | FetchFailure]] = {}

    async def __aenter__(self) -> PageClient:
        return self

    async def __aexit__(self, *exc) -> None:
        for task in self._robots.values():
            task.cancel()
        await self._http.aclose()

    def gate(self, url: str) -> HostGate:
        host = host_of(url)
        if host not in self._gates:
            self._gates[host] = HostGate(self.cfg.per_host, self.cfg.host_delay)
        return self._gates[host]

    async def get(self, url: str, *, robots: bool | None = None) -> Page:
        """The page at ``url`` after at most ``max_redirects`` hops, or :class:`FetchFailure`."""
        robots = self.cfg.robots if robots is None else robots
        current = url
        for _ in range(self.cfg.max_redirects + 1):
            try:  # a host no browser would read: a cited URL keeps it as written, so it fails here
                normalise_url(current, strict=True)
            except InvalidUrl as err:
                raise FetchFailure("invalid_url", f"{current}: {err}", final_url=current) from err
            if robots:
                await self.check_robots(current)
            result = await self._with_retries(current, robots_file=not robots)
            if isinstance(result, Page):
                return Page(url, result.final_url, result.status, result.content_type, result.charset, result.body)
            target = normalise_url(urljoin(current, result))
            if target is None:
                raise FetchFailure("redirects", f"{current}: redirect to a non-http(s) location {result!r}",
                                   final_url=current)
            current = target
        raise FetchFailure("redirects", f"{url}: more than {self.cfg.max_redirects} redirects (last: {current})",
                           final_url=current)

    async def _with_retries(self, url: str, robots_file: bool) -> Page | str:
        gate = self.gate(url)
        retry: _Retry | None = None
        for attempt in range(self.cfg.retries + 1):
            if attempt:
                wait = retry.wait if retry.wait is not None else self.cfg.backoff * 2 ** (attempt - 1)
                await asyncio.sleep(wait * random.uniform(1.0, 1.25))
            try:
                async with gate.slot():
                    return await asyncio.wait_for(self._once(url, robots_file), self.cfg.total_timeout)
            except _Retry as err:
                retry = err
                if err.wait is not None:
                    if err.wait > self.cfg.max_retry_after:
                        break
                    gate.hold_off(err.wait)
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.RemoteProtocolError, httpx.ReadError,
                    httpx.WriteError) as err:
                if isinstance(err, httpx.ConnectError) and (tls := tls_error(err)) is not None:  # no retry mends it
                    raise FetchFailure("tls", f"{url}: TLS failed ({tls})", final_url=url) from err
                retry = _Retry("connection", f"{url}: {type(err).__name__}: {err}")
            except (asyncio.TimeoutError, httpx.TimeoutException) as err:
                raise FetchFailure("timeout", f"{url}: timed out ({type(err).__name__})", final_url=url) from err
            except httpx.InvalidURL as err:  # not an HTTPError: httpx refuses to build the request
                raise FetchFailure("invalid_url", f"{url}: {err}", final_url=url) from err
            except httpx.HTTPError as err:
                raise FetchFailure("connection", f"{url}: {type(err).__name__}: {err}", final_url=url) from err
        assert retry is not None
        raise FetchFailure(retry.reason, f"{retry} (after {self.cfg.retries} retries)", status=retry.status,
                           final_url=url)

    async def _once(self, url: str, robots_file: bool) -> Page | str:
        try:
            return await self._read(url, robots_file)
        except _Redirect as hop:
            return hop.location

    async def _read(self, url: str, robots_file: bool) -> Page:
        # the Host header is given, as httpx (0.28) would derive it from url.host, which decodes the
        # punycode and refuses names browsers reach, such as emoji ones (encode/httpx#3710)
        async with self._http.stream("GET", url, headers={"Host": host_of(url)}) as response:
            status = response.status_code
            if status == 429 or status >= 500:
                wait = parse_retry_after(response.headers.get("retry-after"))
                raise _Retry("status", f"{url}: HTTP {status}", status=status, wait=wait)
            kind, charset = media_type(response.headers.get("content-type"))
            if not 200 <= status < 300:
                raise FetchFailure("status", f"{url}: HTTP {status}", status=status, final_url=url, content_type=kind)
            if robots_file:  # its head is parsed however long it is
                return Page(url, url, status, kind, charset, await read_capped(response, ROBOTS_PARSE_BYTES, url,
                                                                               head=True))
            cap = self.cfg.max_bytes
            if kind is not None and kind not in self.cfg.content_types:
                raise FetchFailure("content_type", f"{url}: content type {kind} is not fetched", status=status,
                                   final_url=url, content_type=kind)
            length = response.headers.get("content-length", "")
            if length.isdigit() and int(length) > cap and "content-encoding" not in response.headers:
                raise FetchFailure("too_large", f"{url}: Content-Length {int(length):,} is over the cap of {cap:,}",
                                   status=status, final_url=url, content_type=kind)
            try:
                body = await read_capped(response, cap, url)
            except FetchFailure as err:
                err.final_url, err.content_type = url, kind
                raise
            return Page(url, url, status, kind, charset, body)

    async def check_robots(self, url: str) -> None:
        """Raise the URL's :class:`FetchFailure` when robots.txt of its origin (fetched once per origin)
        keeps our agent from it: disallowed, or unreachable."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        if origin not in self._robots:
            self._robots[origin] = asyncio.ensure_future(self._load_robots(origin))
        rules = await asyncio.shield(self._robots[origin])
        if isinstance(rules, FetchFailure):
            raise FetchFailure(rules.reason, f"{url}: {rules}", final_url=url)
        if not rules.can_fetch(self.cfg.user_agent, url):
            raise FetchFailure("robots", f"{url}: disallowed by robots.txt", final_url=url)

    async def _load_robots(self, origin: str) -> RobotFileParser | FetchFailure:
        """The rules of ``origin``, or the failure every URL of it gets (RFC 9309 2.3.1).

        A 4xx other than 429 means no rules (unavailable), and so does a robots.txt we will not
        fetch: more redirects than allowed, or a hop to a URL or address we refuse (when the host
        itself is refused, each of its URLs then fails so on its own). An unreachable robots.txt
        means everything is disallowed: a 5xx or 429 after the retries, or a corrupt body, gives
        reason ``robots``; one the network could not deliver gives the URL the same failure
        (``connection``, ``timeout``, ``tls``), so dead hosts are still counted as such. The
        message says that robots.txt was unreachable and why.
        """
        parser = RobotFileParser(origin + "/robots.txt")
        try:
            page = await self.get(origin + "/robots.txt", robots=False)
        except FetchFailure as err:
            if err.reason in NOT_FOLLOWED or (err.reason == "status" and 400 <= (err.status or 0) < 500
                                              and err.status != 429):
                parser.allow_all = True
                parser.modified()
                return parser
            return FetchFailure("robots" if err.reason in SERVER_SIDE else err.reason,
                                f"robots.txt unreachable, so nothing of {origin} is fetched: {err}")
        lines = LINE_END.split(page.body.decode("utf-8-sig", errors="replace"))  # a byte-order mark is no rule
        if len(page.body) >= ROBOTS_PARSE_BYTES:  # cut at the limit: drop the partial last line
            lines.pop()
        parser.parse(lines)
        delay = parser.crawl_delay(self.cfg.user_agent)
        if delay:
            gate = self.gate(origin + "/")
            gate.delay = max(gate.delay, min(float(delay), MAX_CRAWL_DELAY))
        return parser
