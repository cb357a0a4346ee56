"""Cited URLs in one canonical spelling, so that a URL cited many times is fetched once.

:func:`redact` hides the credentials of URLs in whatever is written.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

DEFAULT_PORTS = {"http": 80, "https": 443}
USERINFO = re.compile(r"(?<=://)[^/\s?#]*@")


def normalise_url(raw: str | None) -> str | None:
    """The fetchable form of a cited URL, or None when it is not an http(s) URL with a host.

    Scheme and host are lower-cased, the default port and the fragment dropped, an empty path
    becomes ``/``; protocol-relative ``//host/path`` (common in wikitext) becomes https. Path and
    query are kept byte for byte: servers may treat other spellings as other pages.

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
