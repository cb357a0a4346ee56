"""Plain helpers more than one test module uses (fixtures live in conftest.py and the *_fixtures plugins it
names; the shared data paths in conftest.py)."""

from __future__ import annotations

import bz2
import io
import os
import re
import traceback
import types
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import typer

from pretriever.references.table import CITATIONS_SCHEMA


def cli_app(**commands) -> typer.Typer:
    """A command line of just ``commands`` (name=command function, or name=Typer for a group), each a
    sub-command as in the real ``pretriever`` app: `cli_app(train=train_command)` runs `train ...`."""
    app = typer.Typer()
    for name, command in commands.items():
        if isinstance(command, typer.Typer):
            app.add_typer(command, name=name)
        else:
            app.command(name)(command)

    @app.callback()
    def _root() -> None:
        """test app"""

    return app


def flat(text: str) -> str:
    """CLI output with the console's line wrapping undone."""
    return " ".join(text.split())


def table_bytes(store_dir: Path) -> dict[str, bytes]:
    """Every Parquet file of a store, by relative path (the manifest holds timings, so it is left out)."""
    return {str(p.relative_to(store_dir)): p.read_bytes() for p in sorted(store_dir.rglob("*.parquet"))}


def dump_head(dump: Path, out: Path, pages: int, also: tuple[str, ...] = ()) -> Path:
    """The first ``pages`` pages of a bz2 MediaWiki dump, and the later pages whose ids are in ``also`` (header
    and footer kept), written to ``out``: the same real articles, in fewer of them, where a test checks that
    commands run rather than what the whole sample holds."""
    xml = bz2.decompress(dump.read_bytes())
    found = list(re.finditer(rb"  <page>.*?</page>\n", xml, re.S))
    assert len(found) > pages, f"{dump} has only {len(found)} pages"
    extra = [p.group() for p in found[pages:] if re.search(rb"<id>(\d+)</id>", p.group()).group(1).decode() in also]
    assert len(extra) == len(also), f"{dump}: not every page of {also} is after the first {pages}"
    out.write_bytes(bz2.compress(xml[: found[pages].start()] + b"".join(extra) + xml[found[-1].end():]))
    return out


def make_multistream(xml: bytes, folder: Path, pages_per_stream: int) -> tuple[Path, Path]:
    """Write ``xml`` as Wikipedia does: a header stream, then bz2 streams of N pages, plus the index."""
    pages = list(re.finditer(rb"  <page>.*?</page>\n", xml, re.S))
    header, footer = xml[: pages[0].start()], xml[pages[-1].end():]
    blob, index_lines = bytearray(bz2.compress(header)), []
    for first in range(0, len(pages), pages_per_stream):
        group = pages[first:first + pages_per_stream]
        offset = len(blob)
        for page in group:
            page_id = re.search(rb"<id>(\d+)</id>", page.group()).group(1).decode()
            title = re.search(rb"<title>(.*?)</title>", page.group()).group(1).decode()
            index_lines.append(f"{offset}:{page_id}:{title}")
        body = b"".join(p.group() for p in group) + (footer if first + pages_per_stream >= len(pages) else b"")
        blob += bz2.compress(body)
    dump = folder / "sample-multistream.xml.bz2"
    dump.write_bytes(bytes(blob))
    index = folder / "sample-multistream-index.txt.bz2"
    index.write_bytes(bz2.compress(("\n".join(index_lines) + "\n").encode()))
    return dump, index


def citations(urls: list[str], archives: list[str | None] | None = None) -> pa.Table:
    """A citations table (three per document) citing ``urls``, with their archive copies if given."""
    archives = archives or [None] * len(urls)
    return pa.Table.from_pylist([{"doc_id": str(i // 3), "citation_idx": i % 3, "url": u, "archive_url": a}
                                 for i, (u, a) in enumerate(zip(urls, archives))], schema=CITATIONS_SCHEMA)


def warc_bytes(records: list[tuple[str, int, str, bytes]], gzip: bool = True) -> bytes:
    """A WARC file of HTTP responses (url, status, type, body), gzipped one member per record unless ``gzip`` is
    False."""
    from warcio.statusandheaders import StatusAndHeaders  # only the WARC tests need warcio
    from warcio.warcwriter import WARCWriter

    buffer = io.BytesIO()
    writer = WARCWriter(buffer, gzip=gzip)
    for url, status, kind, body in records:
        headers = StatusAndHeaders(f"{status} OK", [("Content-Type", kind)], protocol="HTTP/1.1")
        writer.write_record(writer.create_warc_record(url, "response", payload=io.BytesIO(body),
                                                      http_headers=headers))
    return buffer.getvalue()


def probe_instead_of_serving(served: list[dict]):
    """A stand-in for ``uvicorn.run``: the app a command built answers /health and a search, then returns."""
    from fastapi.testclient import TestClient

    def run(app, **_):
        key = os.environ.get("PRETRIEVER_API_KEY")  # an example that binds off loopback sets one
        with TestClient(app, base_url="http://127.0.0.1", headers={"X-API-Key": key} if key else {}) as client:
            health = client.get("/health")
            assert health.status_code == 200, health.text
            search = client.get("/search", params={"q": "cancer prognosis", "k": 3})
            assert search.status_code == 200, search.text
            served.append(search.json())

    return run


class _FastClock(types.ModuleType):
    """A stand-in for the ``time`` or ``asyncio`` module: ``overrides`` replace some names, the rest are the real
    module's."""

    def __init__(self, real: types.ModuleType, **overrides) -> None:
        super().__init__(real.__name__)
        self.__dict__.update(overrides)
        self._real = real

    def __getattr__(self, name: str):
        return getattr(self._real, name)


def fast_clock(monkeypatch, module: str, factor: float = 20.0) -> None:
    """``time.monotonic`` and ``asyncio.sleep`` as ``module`` sees them run ``factor`` times fast: its waits
    (politeness between two requests to one host, back-off before a retry) come in the same order and
    proportions, in a ``factor``-th of the wall time. Timeouts (``asyncio.wait_for``) stay real."""
    import asyncio
    import importlib
    import time

    target = importlib.import_module(module)
    real_sleep, real_monotonic = asyncio.sleep, time.monotonic

    async def sleep(delay: float, result=None):
        return await real_sleep(delay / factor, result)

    monkeypatch.setattr(target, "time", _FastClock(time, monotonic=lambda: real_monotonic() * factor))
    monkeypatch.setattr(target, "asyncio", _FastClock(asyncio, sleep=sleep))


@contextmanager
def offline_cli(monkeypatch, workspace: Path, served: list[dict]) -> Iterator[Callable[..., tuple[int, str, str]]]:
    """The CLI as a person runs it in ``workspace``, offline; yields ``invoke(words, env) -> (exit code, output,
    traceback)``.

    ``serve`` answers a probe instead of listening (its search goes to ``served``); every host resolves to a
    public address and every request goes to a loopback proxy that answers 404. The fetcher's clock runs 20
    times fast (:func:`fast_clock`): a sample's failed pages fall back to their web.archive.org copies, one
    host that politeness allows one request a second, 25 s of waiting for `references fetch --limit 100` on a
    real clock.
    """
    from references_server import LoopbackServer, fake_dns, send
    from typer.testing import CliRunner

    from pretriever.cli import app

    monkeypatch.chdir(workspace)
    monkeypatch.setattr("uvicorn.run", probe_instead_of_serving(served))
    fake_dns(monkeypatch, {}, default="93.184.216.34")  # fetching resolves its hosts before the proxy
    fast_clock(monkeypatch, "pretriever.references.client")
    runner = CliRunner()
    with LoopbackServer({"*": lambda handler: send(handler, 404, b"not found", "text/plain")}) as proxy:
        base = {"COLUMNS": "160", "HTTP_PROXY": proxy.url(""), "HTTPS_PROXY": proxy.url("")}

        def invoke(words: list[str], env: dict[str, str] | None = None) -> tuple[int, str, str]:
            result = runner.invoke(app, words, env={**base, **(env or {})})
            trace = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else ""
            return result.exit_code, result.output, trace

        yield invoke
