"""The citation fetcher against servers on 127.0.0.1 that the tests start themselves."""

from __future__ import annotations

import gzip
import time
from urllib.parse import urlsplit

import pyarrow.parquet as pq
import pytest

from pretriever.references.citations import cited_urls
from pretriever.references.config import FetchConfig
from pretriever.references.fetch import fetch_cited
from pretriever.references.urls import normalise_url
from helpers import citations
from references_server import LoopbackServer, article, fake_dns, send

FACTS = "The Eiffel Tower was completed in 1889 for the World's Fair in Paris and is 330 metres tall."
PAGE = article("Eiffel Tower facts", FACTS).encode()


def page(handler) -> None:
    send(handler, 200, PAGE, "text/html; charset=utf-8")


def fetch(tmp_path, urls, archives=None, **options) -> tuple[dict[str, dict], dict]:
    settings = dict(allow_private=True, host_delay=0.0, per_host=4, retries=2, backoff=0.01,
                    read_timeout=2.0, total_timeout=5.0)
    settings.update(options)
    cfg = FetchConfig(corpus=tmp_path, out=tmp_path / "refs", **settings)
    manifest = fetch_cited(cfg, cited_urls(citations(urls, archives)))
    rows = pq.read_table(tmp_path / "refs" / "references.parquet").to_pylist()
    return {r["url"]: r for r in rows}, manifest.to_json()


def test_a_page_cited_three_times_is_fetched_once_and_its_text_extracted(tmp_path):
    with LoopbackServer({"/a": page}) as server:
        url = server.url("/a")
        rows, manifest = fetch(tmp_path, [url, url, url.replace("http://", "HTTP://") + "#frag"])
        assert server.hits["/a"] == 1
    row = rows[url]
    assert row["status"] == 200 and row["error"] is None and row["source"] == "fetch"
    assert "completed in 1889" in row["text"] and "Privacy policy" not in row["text"]
    assert row["title"].startswith("Eiffel Tower facts") and row["bytes"] == len(PAGE)
    assert manifest["funnel"] == {"citations": 3, "with_url": 3, "fetchable_url": 3, "unique_urls": 1, "hosts": 1,
                                  "fetched": 1, "text_extracted": 1}
    mapping = pq.read_table(tmp_path / "refs" / "citations.parquet").to_pylist()
    assert [m["url"] for m in mapping] == [url] * 3


def test_a_slow_server_times_out(tmp_path):
    def slow(handler):
        time.sleep(1.5)
        page(handler)

    with LoopbackServer({"/slow": slow}) as server:
        rows, manifest = fetch(tmp_path, [server.url("/slow")], read_timeout=0.3, total_timeout=0.5)
    assert rows[server.url("/slow")]["error"] == "timeout"
    assert manifest["failures"] == {"timeout": 1}


def test_a_50_mb_body_and_a_gzip_bomb_stop_at_the_cap(tmp_path):
    sent = {}
    bomb = gzip.compress(b"\0" * 50_000_000, compresslevel=9)

    def huge(handler):  # no Content-Length: the cap must act on the stream itself
        handler.send_response(200)
        handler.send_header("Content-Type", "text/html")
        handler.end_headers()
        sent["bytes"] = 0
        for _ in range(50 * 16):
            handler.wfile.write(b"<p>" + b"x" * 65_529 + b"</p>")
            sent["bytes"] += 65_536

    def gzipped(handler):
        send(handler, 200, bomb, "text/html", {"Content-Encoding": "gzip"})

    with LoopbackServer({"/huge": huge, "/bomb": gzipped}) as server:
        rows, _ = fetch(tmp_path, [server.url("/huge"), server.url("/bomb")], max_bytes=1_000_000)
    assert len(bomb) < 1_000_000  # small on the wire, 50 MB inflated
    assert rows[server.url("/huge")]["error"] == "too_large"
    assert rows[server.url("/bomb")]["error"] == "too_large"
    assert sent["bytes"] < 50_000_000  # the download was aborted, not read to the end


def test_a_redirect_loop_gives_up_after_the_hop_limit(tmp_path):
    def loop(handler):
        send(handler, 302, headers={"Location": "/loop2" if handler.path == "/loop1" else "/loop1"})

    with LoopbackServer({"/loop1": loop, "/loop2": loop}) as server:
        rows, _ = fetch(tmp_path, [server.url("/loop1")], max_redirects=5)
        assert server.hits["/loop1"] + server.hits["/loop2"] == 6
    assert rows[server.url("/loop1")]["error"] == "redirects"


def test_private_addresses_are_refused_including_a_redirect_hop(tmp_path):
    routes = {"/page": page}
    with LoopbackServer(routes) as server:
        routes["/to-private"] = lambda h: send(h, 301, headers={"Location": server.url("/page")})
        public = server.url("/to-private", host="public.example")  # pinned by --resolve: trusted
        direct, by_name = server.url("/page"), server.url("/page", host="localhost")
        rows, manifest = fetch(tmp_path / "strict", [public, direct, by_name], allow_private=False,
                               resolve={"public.example": "127.0.0.1"})
        assert server.hits["/page"] == 0  # no request reached the loopback page
        assert {rows[u]["error"] for u in (public, direct, by_name)} == {"refused_address"}
        assert server.hits["/to-private"] == 1
        rows, _ = fetch(tmp_path / "open", [public], allow_private=True, resolve={"public.example": "127.0.0.1"})
        assert rows[public]["error"] is None and rows[public]["final_url"] == direct


def test_robots_txt_disallow_is_honoured_and_read_once(tmp_path):
    robots = b"User-agent: *\nDisallow: /private/\n"
    with LoopbackServer({"/robots.txt": lambda h: send(h, 200, robots, "text/plain"), "/open": page,
                     "/private/x": page}) as server:
        rows, _ = fetch(tmp_path, [server.url("/open"), server.url("/private/x")])
        assert server.hits["/private/x"] == 0 and server.hits["/robots.txt"] == 1
    assert rows[server.url("/private/x")]["error"] == "robots"
    assert rows[server.url("/open")]["error"] is None


def test_429_with_retry_after_and_503_are_retried(tmp_path):
    calls = {"/busy": 0, "/flaky": 0}

    def busy(handler):
        calls["/busy"] += 1
        if calls["/busy"] == 1:
            return send(handler, 429, b"slow down", "text/plain", {"Retry-After": "1"})
        page(handler)

    def flaky(handler):
        calls["/flaky"] += 1
        if calls["/flaky"] == 1:
            return send(handler, 503, b"unavailable", "text/plain")
        page(handler)

    with LoopbackServer({"/busy": busy, "/flaky": flaky, "/down": lambda h: send(h, 503)}) as server:
        started = time.monotonic()
        rows, manifest = fetch(tmp_path, [server.url("/busy"), server.url("/flaky"), server.url("/down")],
                               retries=2)
        waited = time.monotonic() - started
        assert server.hits["/busy"] == 2 and server.hits["/flaky"] == 2 and server.hits["/down"] == 3
    assert rows[server.url("/busy")]["error"] is None and rows[server.url("/flaky")]["error"] is None
    assert rows[server.url("/down")]["error"] == "status" and rows[server.url("/down")]["status"] == 503
    assert waited >= 1.0  # Retry-After: 1 was waited out, not skipped


def test_a_wrong_content_type_is_refused_before_the_body(tmp_path):
    with LoopbackServer({"/img": lambda h: send(h, 200, b"\x89PNG" + b"\0" * 100, "image/png")}) as server:
        rows, _ = fetch(tmp_path, [server.url("/img")])
    row = rows[server.url("/img")]
    assert row["error"] == "content_type" and row["content_type"] == "image/png" and row["text"] is None


def test_charset_from_the_header_and_from_a_meta_tag(tmp_path):
    facts = "Софийският университет е основан през 1888 година и е най-старото висше училище в България."
    in_header = article("Университет", facts, charset="utf-8").replace('charset="utf-8"', "").encode("cp1251")
    in_meta = article("Университет", facts, charset="koi8-r").encode("koi8_r")
    with LoopbackServer({"/header": lambda h: send(h, 200, in_header, "text/html; charset=windows-1251"),
                     "/meta": lambda h: send(h, 200, in_meta, "text/html")}) as server:
        rows, _ = fetch(tmp_path, [server.url("/header"), server.url("/meta")])
    for path in ("/header", "/meta"):
        assert "основан през 1888 година" in rows[server.url(path)]["text"], path


def test_archive_copy_is_used_when_the_original_is_dead(tmp_path):
    with LoopbackServer({"/archived": page}) as server:
        dead, archive = server.url("/gone"), server.url("/archived")
        rows, manifest = fetch(tmp_path, [dead], [archive])
        assert server.hits["/gone"] == 1 and server.hits["/archived"] == 1
        assert rows[dead]["via_archive"] is True and rows[dead]["final_url"] == archive
        assert manifest["via_archive"] == 1
        rows, _ = fetch(tmp_path / "prefer", [server.url("/archived-first")], [archive], prefer_archive=True)
        assert server.hits["/archived-first"] == 0  # the archive answered, so the original was not asked


def test_existing_output_needs_resume_or_overwrite(tmp_path):
    with LoopbackServer({"/a": page}) as server:
        fetch(tmp_path, [server.url("/a")])
        with pytest.raises(Exception, match="--resume"):
            fetch(tmp_path, [server.url("/a")])
        rows, _ = fetch(tmp_path, [server.url("/a"), server.url("/b")], resume=True)
        assert server.hits["/a"] == 1 and set(rows) == {server.url("/a"), server.url("/b")}


def _pdf(text: str) -> bytes:
    """A one-page PDF whose page shows ``text`` in Helvetica (objects and xref offsets written by hand)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode("latin-1")
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
               b"/Resources << /Font << /F1 5 0 R >> >> >>",
               b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for n, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % n + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def test_pdf_is_refused_by_default_and_read_with_the_pdf_extra(tmp_path):
    pytest.importorskip("pypdf")
    body = _pdf("The Eiffel Tower was completed in 1889.")
    with LoopbackServer({"/paper.pdf": lambda h: send(h, 200, body, "application/pdf")}) as server:
        url = server.url("/paper.pdf")
        rows, _ = fetch(tmp_path / "html-only", [url])
        assert rows[url]["error"] == "content_type" and rows[url]["text"] is None
        rows, _ = fetch(tmp_path / "with-pdf", [url], pdf=True)
    assert rows[url]["error"] is None and "completed in 1889" in rows[url]["text"]


def test_the_socket_goes_to_the_checked_address_when_dns_changes(monkeypatch):
    """DNS rebinding: the name answers a public address when checked and a loopback one afterwards. The
    connection must go to the address that was checked (never a second lookup of the name), and a later
    connection, which resolves again, is refused."""
    import asyncio

    from pretriever.references.errors import RefusedAddress
    from pretriever.references.safety import AddressGuard, CheckedBackend

    answers = iter(["93.184.216.34", "127.0.0.1"])

    async def getaddrinfo(self, host, port, **_):
        assert host == "rebind.test"
        return [(2, 1, 6, "", (next(answers), port))]

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", getaddrinfo)
    backend = CheckedBackend(AddressGuard())
    opened = []

    async def connect_tcp(host, port, **_):
        opened.append(host)
        return object()

    backend._inner.connect_tcp = connect_tcp

    async def two_connections():
        await backend.connect_tcp("rebind.test", 80)
        with pytest.raises(RefusedAddress, match="127.0.0.1"):
            await backend.connect_tcp("rebind.test", 80)

    asyncio.run(two_connections())
    assert opened == ["93.184.216.34"]  # the checked address itself, not the name


def test_a_proxy_does_not_switch_off_the_address_guard(tmp_path, monkeypatch):
    """$HTTP_PROXY set: loopback targets (by name, as an integer, on the proxy's own address, or as a redirect
    hop) are refused before any request reaches the proxy; a public name still goes through it."""
    asked = []

    def proxy(handler):  # a recording fake proxy: answers every absolute-form request itself
        asked.append(handler.path)
        if handler.path.endswith("/robots.txt"):
            return send(handler, 404, b"", "text/plain")
        if handler.path == "http://public.example/hop":
            return send(handler, 302, headers={"Location": f"http://127.0.0.1:{server.port}/admin"})
        page(handler)

    with LoopbackServer({"*": proxy}) as server:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.port}")
        fake_dns(monkeypatch, {"public.example": "93.184.216.34"})
        private = [f"http://localhost:{server.port}/admin", "http://127.0.0.1:6379/",
                   f"http://2130706433:{server.port}/", f"http://127.0.0.1:{server.port}/admin",
                   "http://public.example/hop"]
        rows, manifest = fetch(tmp_path, private + ["http://public.example/ok"], allow_private=False, retries=0)
    read = {url: normalise_url(url) for url in private}  # the integer host is read as 127.0.0.1, as browsers do
    assert read[f"http://2130706433:{server.port}/"] == f"http://127.0.0.1:{server.port}/"
    assert {url: rows[read[url]]["error"] for url in private} == {url: "refused_address" for url in private}
    assert rows["http://public.example/ok"]["error"] is None
    assert "completed in 1889" in rows["http://public.example/ok"]["text"]
    assert {urlsplit(url).hostname for url in asked} == {"public.example"}  # no private target reached it
    assert manifest["failures"] == {"refused_address": len(private)}


def test_a_robots_txt_over_500_kib_is_applied_not_ignored(tmp_path):
    """RFC 9309 2.5: the first 500 KiB are parsed; a longer file is not taken as 'allow everything'."""
    rules = b"User-agent: *\nDisallow: /private/\n"
    robots = rules + b"# " + b"x" * 100 + b"\n" * 6000 + b"# filler line that goes on past the limit\n" * 20_000
    assert len(robots) > 600_000
    assert_only_private_refused(tmp_path, robots)


def assert_only_private_refused(tmp_path, robots: bytes) -> None:
    """``robots`` (meaning "Disallow: /private/") is obeyed: /private/x is never asked for, /open is fetched."""
    with LoopbackServer({"/robots.txt": lambda h: send(h, 200, robots, "text/plain"), "/open": page,
                         "/private/x": page}) as server:
        rows, _ = fetch(tmp_path, [server.url("/open"), server.url("/private/x")])
        assert server.hits["/private/x"] == 0
    assert rows[server.url("/private/x")]["error"] == "robots"
    assert rows[server.url("/open")]["error"] is None


@pytest.mark.parametrize("address", ["2002:7f00:1::1", "2002:a00:1::", "2002:c0a8:101::1", "2002:a9fe:a9fe::"])
def test_6to4_addresses_embedding_a_private_ipv4_are_refused(address):
    from pretriever.references.errors import RefusedAddress
    from pretriever.references.safety import AddressGuard, is_public

    assert not is_public(address)
    with pytest.raises(RefusedAddress, match=address):
        AddressGuard().check("six.example", [address])
    assert is_public("2002:5db8:d822::1")  # 6to4 of the public 93.184.216.34 stays allowed


def test_help_says_how_a_proxy_and_the_address_guard_work_together():
    from typer.testing import CliRunner

    from pretriever.cli import app

    result = CliRunner().invoke(app, ["references", "fetch", "--help"], terminal_width=200)
    text = " ".join(result.output.replace("│", " ").split())
    assert "The address guard still applies" in text and "never as a target" in text


def test_a_name_that_does_not_exist_is_not_retried(tmp_path, monkeypatch):
    import asyncio
    import socket

    lookups = []

    async def getaddrinfo(self, host, port, **_):
        lookups.append(host)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(asyncio.BaseEventLoop, "getaddrinfo", getaddrinfo)
    rows, _ = fetch(tmp_path, ["http://no-such-host.example/page"], retries=3, robots=False)
    assert rows["http://no-such-host.example/page"]["error"] == "connection"
    assert lookups == ["no-such-host.example"]  # a permanent answer: asked once, not 1 + 3 retries


def test_no_single_url_stops_the_fetch_each_failure_is_listed_with_its_reason(tmp_path):
    """Redirects to data:, javascript: and http:\\x, hosts and URLs httpx refuses (0177.0.0.1 is read as a
    browser reads it, 127.0.0.1, and refused by the address check), a timeout, a corrupt body, a protocol error
    and a TLS failure: each is its URL's failure, with its reason and a message, and every good page is kept;
    💩.la is fetched, as xn--ls8h.la."""
    def garbage(handler):  # not HTTP at all
        handler.wfile.write(b"this is no HTTP response\r\n\r\n")

    def slow(handler):
        time.sleep(1.5)
        page(handler)

    hosts = []

    def good(handler):
        hosts.append(handler.headers["Host"])
        page(handler)

    routes = {"/good": good, "/robots.txt": lambda h: send(h, 404), "/slow": slow, "/garbage": garbage,
              "/garbled": lambda h: send(h, 200, b"not gzip at all", "text/html", {"Content-Encoding": "gzip"})}
    for name, location in {"data": "data:text/html,x", "js": "javascript:alert(1)", "backslash": "http:\\x",
                           "bad-ip": "http://1.2.3.256/"}.items():
        routes[f"/to-{name}"] = lambda h, location=location: send(h, 302, headers={"Location": location})
    with LoopbackServer(routes) as server:
        site = f"http://site.test:{server.port}"
        expected = {f"{site}/good": None, f"http://xn--ls8h.la:{server.port}/good": None,
                    f"{site}/to-data": "redirects", f"{site}/to-js": "redirects", f"{site}/to-backslash": "status",
                    f"{site}/to-bad-ip": "invalid_url", f"http://127.0.0.1:{server.port}/good": "refused_address",
                    "http://1.2.3.256/": "invalid_url", f"{site}/slow": "timeout", f"{site}/garbled": "decode",
                    f"{site}/garbage": "connection", f"https://site.test:{server.port}/good": "tls",
                    f"{site}/a\x01b": "invalid_url"}  # a control character: httpx builds no request
        cited = [url.replace("127.0.0.1", "0177.0.0.1").replace("xn--ls8h", "💩") for url in expected]
        rows, manifest = fetch(tmp_path, cited, allow_private=False, retries=0, read_timeout=0.5, total_timeout=1.0,
                               resolve={"site.test": "127.0.0.1", "xn--ls8h.la": "127.0.0.1"})
    assert {url: row["error"] for url, row in rows.items()} == expected
    assert sorted(hosts) == sorted([f"site.test:{server.port}", f"xn--ls8h.la:{server.port}"])  # IDNA: punycode
    assert all(row["error_detail"] for row in rows.values() if row["error"])
    assert "data:text/html,x" in rows[f"{site}/to-data"]["error_detail"]
    assert "1.2.3.256" in rows["http://1.2.3.256/"]["error_detail"]
    failed = [reason for reason in expected.values() if reason]
    assert manifest["failures"] == {reason: failed.count(reason) for reason in set(failed)}
    assert manifest["funnel"]["text_extracted"] == 2


@pytest.mark.parametrize("raw, url", [
    ("http://💩.la/", "http://xn--ls8h.la/"), ("http://Bücher.DE:80/x?q", "http://xn--bcher-kva.de/x?q"),
    ("http://faß.de/", "http://xn--fa-hia.de/"),  # UTS #46 non-transitional, as browsers
    ("http://0177.0.0.1/", "http://127.0.0.1/"), ("http://0x7f.1:8080/", "http://127.0.0.1:8080/"),
    ("http://2130706433/", "http://127.0.0.1/"), ("http://%31%32%37.0.0.1/", "http://127.0.0.1/"),
    ("http://[::FFFF:7F00:1]/", "http://[::ffff:7f00:1]/"),
    ("http://1.2.3.256/", "http://1.2.3.256/"), ("http://1.2.3.4.5/", "http://1.2.3.4.5/"),  # kept, fail as invalid_url
])
def test_hosts_are_read_as_a_browser_reads_them(raw, url):
    from pretriever.references.urls import InvalidUrl

    assert normalise_url(raw) == url
    if raw.startswith(("http://1.2.3.",)):
        with pytest.raises(InvalidUrl, match="not a valid IPv4 address"):
            normalise_url(raw, strict=True)


def test_an_internationalised_name_goes_to_the_proxy_in_punycode(tmp_path, monkeypatch):
    asked = []

    def proxy(handler):
        asked.append((handler.path, handler.headers["Host"]))
        send(handler, 404) if handler.path.endswith("/robots.txt") else page(handler)

    with LoopbackServer({"*": proxy}) as server:
        monkeypatch.setenv("HTTP_PROXY", f"http://127.0.0.1:{server.port}")
        fake_dns(monkeypatch, {"xn--ls8h.la": "93.184.216.34"})
        rows, _ = fetch(tmp_path, ["http://💩.la/page"], allow_private=False, retries=0)
    assert rows["http://xn--ls8h.la/page"]["error"] is None
    assert ("http://xn--ls8h.la/page", "xn--ls8h.la") in asked


UNREACHABLE = {
    "a 503": lambda h: send(h, 503),
    "a timeout": lambda h: (time.sleep(1.5), send(h, 404)),
    "corrupt gzip": lambda h: send(h, 200, b"User-agent: *\nAllow: /\n", "text/plain", {"Content-Encoding": "gzip"}),
}


@pytest.mark.parametrize("case", UNREACHABLE)
def test_an_unreachable_robots_txt_disallows_the_whole_host(tmp_path, case):
    """RFC 9309 2.3.1.4: a robots.txt the server fails to give (5xx, corrupt) or that the network cannot bring
    (a timeout) means nothing on the host is fetched; each URL's failure says so."""
    with LoopbackServer({"/robots.txt": UNREACHABLE[case], "/open": page}) as server:
        rows, _ = fetch(tmp_path, [server.url("/open")], retries=0, read_timeout=0.5, total_timeout=1.0)
        assert server.hits["/open"] == 0
    row = rows[server.url("/open")]
    assert row["error"] == ("timeout" if case == "a timeout" else "robots")
    assert "robots.txt unreachable" in row["error_detail"]


def _bom(rules: bytes) -> bytes:
    return b"\xef\xbb\xbf" + rules


def _cr_only_over_the_cap(rules: bytes) -> bytes:
    return rules.replace(b"\n", b"\r") + b"# filler line that goes on past the limit\r" * 20_000


@pytest.mark.parametrize("shape", [_bom, _cr_only_over_the_cap])
def test_a_robots_txt_with_a_bom_or_cr_only_lines_over_the_cap_is_applied(tmp_path, shape):
    """RFC 9309 2.2: CR alone ends a line, and a UTF-8 byte-order mark is no part of the first rule."""
    assert_only_private_refused(tmp_path, shape(b"User-agent: *\nDisallow: /private/\n"))


@pytest.mark.parametrize("address", ["fec0::1", "feff::1", "::7f00:1", "64:ff9b::7f00:1", "64:ff9b::a00:1"])
def test_site_local_ipv4_compatible_and_nat64_of_private_addresses_are_refused(address):
    """Python's is_global lets fec0::/10 (site-local) through: only global unicast (2000::/3) is public, and
    an address that carries an IPv4 address (NAT64 too) is judged by it."""
    from pretriever.references.errors import RefusedAddress
    from pretriever.references.safety import AddressGuard, is_public

    assert not is_public(address)
    with pytest.raises(RefusedAddress, match=address):
        AddressGuard().check("six.example", [address])
    assert is_public("64:ff9b::5db8:d822") and is_public("2606:4700::1111")  # NAT64 of a public address; global


def test_proxy_credentials_are_in_no_manifest_row_or_output(tmp_path, monkeypatch):
    """The password of $HTTP_PROXY reaches the proxy (Proxy-Authorization) and nothing that is written."""
    import base64
    import json

    from typer.testing import CliRunner

    from pretriever.cli import app

    authorised = []

    def proxy(handler):
        authorised.append(handler.headers["Proxy-Authorization"])
        if handler.path.endswith("/robots.txt"):
            return send(handler, 404)
        page(handler) if handler.path.endswith("/ok") else send(handler, 502)

    with LoopbackServer({"*": proxy}) as server:
        monkeypatch.setenv("HTTP_PROXY", f"http://user:s3cret@127.0.0.1:{server.port}")
        fake_dns(monkeypatch, {"public.example": "93.184.216.34"})
        urls = ["http://public.example/ok", "http://public.example/bad", "https://public.example/tunnel"]
        monkeypatch.setattr("pretriever.references.fetch.CorpusStore", lambda path: path)
        monkeypatch.setattr("pretriever.references.fetch.load_citation_urls", lambda store: citations(urls))
        result = CliRunner().invoke(app, ["references", "fetch", str(tmp_path), "--out", str(tmp_path / "refs"),
                                          "--retries", "0", "--host-delay", "0"])
        assert result.exit_code == 0, result.output
        bad = CliRunner().invoke(app, ["references", "fetch", str(tmp_path), "--out", str(tmp_path / "again"),
                                       "--proxy", "socks5://user:s3cret@127.0.0.1:1080"])
    assert authorised and set(authorised) == {"Basic " + base64.b64encode(b"user:s3cret").decode()}
    manifest = (tmp_path / "refs" / "manifest.json").read_text()
    assert json.loads(manifest)["config"]["proxy"] == f"http://***@127.0.0.1:{server.port}"
    rows = pq.read_table(tmp_path / "refs" / "references.parquet").to_pylist()
    assert {r["url"]: r["error"] for r in rows} == {urls[0]: None, urls[1]: "status", urls[2]: "connection"}
    assert bad.exit_code == 2 and "socks5://***@127.0.0.1:1080" in bad.output
    for text in [manifest, json.dumps(rows), result.output, bad.output]:
        assert "s3cret" not in text
