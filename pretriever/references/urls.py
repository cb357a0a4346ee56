"""Cited URLs in one canonical spelling, so that a URL cited many times is fetched once.

The host is read as a browser reads it (the WHATWG URL standard): percent-decoded, an
internationalised name mapped (UTS #46, non-transitional) and written in punycode, and an IPv4
address in any legacy spelling (``0177.0.0.1``, ``0x7f.1``, ``2130706433``) written as a dotted
quad. So ``http://💩.la/`` is fetched as browsers fetch it, and the address check sees the address
a browser would connect to. :func:`redact` hides the credentials of URLs in whatever is written.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import unquote, urlsplit, urlunsplit

import idna

DEFAULT_PORTS = {"http": 80, "https": 443}
# WHATWG "forbidden domain code points": C0 controls, space, DEL and the characters that end a host
FORBIDDEN_IN_HOST = re.compile(r"[\x00-\x20\x7f#%/:<>?@\[\\\]^|]")
NUMERIC_LABEL = re.compile(r"^(?:[0-9]+|0[xX][0-9a-fA-F]*)$")
USERINFO = re.compile(r"(?<=://)[^/\s?#]*@")


class InvalidUrl(ValueError):
    """An http(s) URL that no browser would request (its host cannot be read)."""


def web_host(host: str) -> str:
    """``host`` as a browser connects to it, or :class:`InvalidUrl` saying why it cannot.

    >>> web_host("Bücher.DE"), web_host("0177.0.0.1"), web_host("💩.la")
    ('xn--bcher-kva.de', '127.0.0.1', 'xn--ls8h.la')
    """
    if ":" in host:
        try:
            return str(ipaddress.IPv6Address(host))
        except ValueError as err:
            raise InvalidUrl(f"{host!r} is not an IPv6 address ({err})") from err
    try:
        name = idna.uts46_remap(unquote(host, errors="strict"), std3_rules=False, transitional=False)
        name = ".".join(label if label.isascii() else "xn--" + label.encode("punycode").decode("ascii")
                        for label in name.split("."))
    except (UnicodeError, idna.IDNAError) as err:
        raise InvalidUrl(f"{host!r} is not a valid domain name ({err})") from err
    if FORBIDDEN_IN_HOST.search(name):
        raise InvalidUrl(f"{host!r} holds a character that is not allowed in a host name")
    last = name.rstrip(".").rpartition(".")[2]
    if NUMERIC_LABEL.match(last):  # WHATWG: a host ending in a number is an IPv4 address or nothing
        try:  # inet_aton reads the legacy spellings exactly as the WHATWG IPv4 parser does
            return socket.inet_ntoa(socket.inet_aton(name.rstrip(".")))
        except OSError as err:
            raise InvalidUrl(f"{host!r} is not a valid IPv4 address") from err
    return name.rstrip(".")


def normalise_url(raw: str | None, *, strict: bool = False) -> str | None:
    """The fetchable form of a cited URL, or None when it is not an http(s) URL with a host.

    Scheme and host are lower-cased (the host read as :func:`web_host` reads it), the default port
    and the fragment dropped, an empty path becomes ``/``; protocol-relative ``//host/path``
    (common in wikitext) becomes https. Path and query are kept byte for byte: servers may treat
    other spellings as other pages. A host that cannot be read is kept as written (lower-cased), so
    the citation is still listed, and fails when fetched; ``strict`` raises :class:`InvalidUrl`
    for it instead.

    >>> normalise_url("HTTP://Example.COM:80/a?b=1#top")
    'http://example.com/a?b=1'
    """
    if not raw:
        return None
    text = raw.strip()
    if text.startswith("//"):
        text = "https:" + text
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").rstrip(".")
    if scheme not in DEFAULT_PORTS or not host or any(c.isspace() for c in text):
        return None
    try:
        host = web_host(host)
    except InvalidUrl:
        if strict:
            raise
    if ":" in host:
        host = f"[{host}]"
    netloc = host if port in (None, DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    return urlunsplit((scheme, netloc, parts.path or "/", parts.query, ""))


def host_of(url: str) -> str:
    """``host[:port]`` of a normalised URL: the unit of per-host politeness and robots.txt."""
    return urlsplit(url).netloc


def redact(text: str) -> str:
    """``text`` with the credentials of every URL in it (``user:password@``) replaced by ``***@``: used
    wherever a URL, a proxy or an error message about one is written (manifest, rows, messages).

    >>> redact("http://user:s3cret@proxy.example:3128 refused")
    'http://***@proxy.example:3128 refused'
    """
    return USERINFO.sub("***@", text)
