"""Address safety (SSRF): every host is resolved and checked, and the connection goes to the checked address.

The check sits in the network backend under httpx's connection pool, so it runs for every new
connection: the first request, every redirect hop and every retry. Because the socket is opened
to the very address that was checked, a DNS answer that changes between check and connect (DNS
rebinding) cannot reach an internal service; TLS still verifies the certificate against the host
name (httpcore passes the name, not the address, as SNI), and the Host header is untouched.

Behind an HTTP proxy the proxy opens the connection to the target, so the transport resolves and
checks each target host (every hop) before the request leaves for the proxy; the proxy's own
address is trusted for the connection to the proxy only, never as a target. The proxy resolves
the name again, so there the check cannot pin the address (a rebinding name could still slip
through a proxy; without one it cannot).
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket

import httpcore
import httpx

from pretriever.errors import ConfigError
from pretriever.references.errors import FetchFailure, RefusedAddress
from pretriever.references.urls import redact

# getaddrinfo's answers for a name that does not exist (a permanent failure, unlike EAI_AGAIN)
UNKNOWN_NAME = {getattr(socket, name) for name in ("EAI_NONAME", "EAI_NODATA") if hasattr(socket, name)}
GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")  # RFC 4291 2.4: every other IPv6 range is special
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052: the IPv4 address sits in the last 32 bits


def carried_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address reaches: IPv4-mapped, 6to4 or NAT64 (as DNS64 answers)."""
    if ip in NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFF_FFFF)
    return ip.ipv4_mapped or ip.sixtofour


def is_public(address: str) -> bool:
    """False for private, loopback, link-local, site-local, multicast, reserved, unspecified and shared
    addresses.

    An IPv6 address that carries an IPv4 address (IPv4-mapped ``::ffff:a.b.c.d``, 6to4
    ``2002:AABB:CCDD::/48``, NAT64 ``64:ff9b::a.b.c.d``) is judged by the IPv4 address it reaches;
    any other must be global unicast (``2000::/3``), since Python's ``is_global`` is a list of the
    special ranges known to its version and lets others through (the site-local ``fec0::/10``,
    IPv4-compatible ``::a.b.c.d``).
    """
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if isinstance(ip, ipaddress.IPv6Address):
        carried = carried_ipv4(ip)
        if carried is None and ip not in GLOBAL_UNICAST:
            return False
        ip = carried or ip
    return ip.is_global and not (ip.is_multicast or ip.is_reserved or ip.is_link_local)


def ip_literal(host: str) -> str | None:
    """``host`` as a normalised IP address when it is one (brackets of an IPv6 literal allowed), else None."""
    try:
        return str(ipaddress.ip_address(host.strip("[]")))
    except ValueError:
        return None


class AddressGuard:
    """Resolve a host to one address that may be connected to, or raise :class:`RefusedAddress`.

    ``pinned`` maps host names to addresses chosen by the user (like curl's --resolve); those are
    trusted. A name whose answers include any non-public address is refused whole, unless
    ``allow_private``.
    """

    def __init__(self, allow_private: bool = False, pinned: dict[str, str] | None = None):
        self.allow_private = allow_private
        self.pinned = {host.lower(): address for host, address in (pinned or {}).items()}

    def check(self, host: str, addresses: list[str]) -> None:
        if self.allow_private:
            return
        for address in addresses:
            if not is_public(address):
                raise RefusedAddress(host, address)

    async def resolve(self, host: str, port: int) -> str:
        name = host.lower()
        if name in self.pinned:
            return self.pinned[name]
        literal = ip_literal(name)
        if literal is not None:
            self.check(host, [literal])
            return literal
        try:
            infos = await asyncio.get_running_loop().getaddrinfo(name, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError) as err:
            if getattr(err, "errno", None) in UNKNOWN_NAME or isinstance(err, UnicodeError):  # no retry helps
                raise FetchFailure("connection", f"cannot resolve {host} here: {err}") from err
            raise httpcore.ConnectError(f"cannot resolve {host} here: {err}") from err
        addresses = list(dict.fromkeys(info[4][0] for info in infos))
        if not addresses:
            raise httpcore.ConnectError(f"{host} has no address")
        self.check(host, addresses)
        return addresses[0]


class CheckedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend, opening TCP connections only to addresses the guard accepted.

    ``proxy`` is the (host, port) of the HTTP proxy, the one connection opened unchecked.
    """

    def __init__(self, guard: AddressGuard, proxy: tuple[str, int] | None = None):
        self.guard, self.proxy = guard, proxy
        self._inner = httpcore.AnyIOBackend()

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                          local_address: str | None = None, socket_options=None) -> httpcore.AsyncNetworkStream:
        proxied = (host.lower(), port) == self.proxy
        address = host if proxied else await self.guard.resolve(host, port)
        return await self._inner.connect_tcp(address, port, timeout=timeout, local_address=local_address,
                                             socket_options=socket_options)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options=None) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("unix sockets are never used for fetching")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class CheckedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport on a connection pool (or HTTP proxy) built over :class:`CheckedBackend`.

    httpx has no argument for the network backend, so the httpcore pool that its
    ``handle_async_request`` and ``aclose`` use is built here, with the same settings httpx uses.
    With a proxy, each request's host is resolved and checked here, since the backend then only
    ever connects to the proxy.
    """

    def __init__(self, guard: AddressGuard, limits: httpx.Limits, proxy: str | None = None):
        self.guard = guard
        self.proxied = proxy is not None
        common = dict(ssl_context=httpx.create_ssl_context(trust_env=False),
                      max_connections=limits.max_connections,
                      max_keepalive_connections=limits.max_keepalive_connections,
                      keepalive_expiry=limits.keepalive_expiry)
        if proxy is None:
            self._pool = httpcore.AsyncConnectionPool(network_backend=CheckedBackend(guard), **common)
            return
        try:
            spec = httpx.Proxy(url=proxy)
        except (httpx.InvalidURL, ValueError) as err:
            raise ConfigError(f"--proxy {redact(proxy)}: not a proxy URL ({redact(str(err))})") from err
        if spec.url.scheme not in ("http", "https"):
            raise ConfigError(f"--proxy {redact(proxy)}: only http:// and https:// proxies are supported")
        port = spec.url.port or (443 if spec.url.scheme == "https" else 80)
        backend = CheckedBackend(guard, proxy=(spec.url.raw_host.decode("ascii").lower(), port))
        self._pool = httpcore.AsyncHTTPProxy(
            proxy_url=httpcore.URL(scheme=spec.url.raw_scheme, host=spec.url.raw_host, port=port,
                                   target=spec.url.raw_path),
            proxy_auth=spec.raw_auth, proxy_headers=spec.headers.raw, network_backend=backend, **common)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.proxied:  # the proxy connects to the target: check the target's address before sending
            url = request.url
            port = url.port or (443 if url.scheme == "https" else 80)
            try:
                await self.guard.resolve(url.raw_host.decode("ascii"), port)
            except httpcore.ConnectError as err:
                raise httpx.ConnectError(str(err), request=request) from err
        return await super().handle_async_request(request)
