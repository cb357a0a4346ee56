"""Fetch benchmark: ``references fetch`` against a plain httpx.AsyncClient loop, on a loopback server.

A server process answers every request after ``--latency`` seconds (20 ms) with a ~3 KB article
page (robots.txt: 404). URLs are spread over ``--hosts`` host names (100) pinned to 127.0.0.1 with
``resolve``, so per-host politeness acts as on the web. For two sizes (500 and 2,000 URLs) it
runs, each in a process of its own with its peak memory sampled:

- pretriever with the default politeness (32 in flight, 2 per host, 1 s between requests to a
  host): bound = hosts / host_delay pages/s;
- pretriever with ``host_delay`` 0: bound = min(concurrency, hosts * per_host) / latency;
- the peer: an httpx.AsyncClient loop with the same global concurrency and no politeness,
  robots, checks or text extraction (its bound is concurrency / latency).

    python bench/bench_fetch.py [--sizes 500 2000] [--hosts 100] [--latency 0.02] [--json OUT]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from process_tree import run_watched  # noqa: E402

PAGE = ("<!DOCTYPE html><html><head><title>Bench article</title></head><body><nav>Home | About</nav>"
        "<article><h1>Bench article</h1>" + "<p>The bridge opened in 1932 after four years of work and "
        "carried two railway tracks across the river to the city centre.</p>" * 20
        + "</article><footer>Copyright</footer></body></html>").encode()


def serve(port_out, latency: float) -> None:
    """A minimal keep-alive HTTP/1.1 server: every GET waits ``latency`` s, then gets PAGE (404 for robots.txt)."""
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                await asyncio.sleep(latency)
                status, body = (b"404 Not Found", b"") if path.endswith(b"/robots.txt") else (b"200 OK", PAGE)
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html; charset=utf-8\r\n"
                             b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        port_out.put(server.sockets[0].getsockname()[1])
        await server.serve_forever()

    asyncio.run(main())


def urls_for(n: int, hosts: int, port: int) -> list[str]:
    return [f"http://h{i % hosts}.bench:{port}/p{i}" for i in range(n)]


def child_ours(args: argparse.Namespace) -> None:
    import pyarrow as pa

    from pretriever.references.citations import cited_urls
    from pretriever.references.config import FetchConfig
    from pretriever.references.fetch import fetch_cited
    from pretriever.references.table import CITATIONS_SCHEMA

    urls = urls_for(args.n, args.hosts, args.port)
    table = pa.Table.from_pylist([{"doc_id": "d", "citation_idx": i, "url": u, "archive_url": None}
                                  for i, u in enumerate(urls)], schema=CITATIONS_SCHEMA)
    with tempfile.TemporaryDirectory() as tmp:
        cfg = FetchConfig(corpus=tmp, out=Path(tmp) / "out", host_delay=args.host_delay, allow_private=True,
                          resolve={f"h{i}.bench": "127.0.0.1" for i in range(args.hosts)})
        started = time.monotonic()
        manifest = fetch_cited(cfg, cited_urls(table))
        seconds = time.monotonic() - started
    print(json.dumps({"seconds": seconds, "ok": manifest["funnel"]["text_extracted"]}))


def child_peer(args: argparse.Namespace) -> None:
    import httpx

    async def main() -> int:
        gate = asyncio.Semaphore(args.concurrency)
        limits = httpx.Limits(max_connections=args.concurrency, max_keepalive_connections=args.concurrency)
        async with httpx.AsyncClient(limits=limits, trust_env=False) as client:
            async def one(i: int) -> bool:
                async with gate:
                    response = await client.get(f"http://127.0.0.1:{args.port}/p{i}",
                                                headers={"Host": f"h{i % args.hosts}.bench"})
                    return response.status_code == 200 and len(response.content) > 0
            return sum(await asyncio.gather(*(one(i) for i in range(args.n))))

    started = time.monotonic()
    ok = asyncio.run(main())
    print(json.dumps({"seconds": time.monotonic() - started, "ok": ok}))


def run_child(kind: str, n: int, port: int, args: argparse.Namespace, host_delay: float = 1.0) -> dict:
    command = [sys.executable, __file__, "--child", kind, "--n", str(n), "--port", str(port), "--hosts",
               str(args.hosts), "--host-delay", str(host_delay), "--concurrency", str(args.concurrency)]
    _, stdout, _, peak, _ = run_watched(command)
    result = json.loads(stdout.strip().splitlines()[-1])
    return {**result, "pages_s": n / result["seconds"], "peak_mb": peak / 1e6}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 2000])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--child", choices=["ours", "peer"])
    parser.add_argument("--n", type=int)
    parser.add_argument("--port", type=int)
    parser.add_argument("--host-delay", type=float, default=1.0)
    args = parser.parse_args()
    if args.child:
        return (child_ours if args.child == "ours" else child_peer)(args)

    ports: multiprocessing.Queue = multiprocessing.Queue()
    server = multiprocessing.Process(target=serve, args=(ports, args.latency), daemon=True)
    server.start()
    port = ports.get(timeout=30)
    per_host, delay = 2, 1.0
    concurrency_bound = min(args.concurrency, args.hosts * per_host) / args.latency
    table = Table(title=f"fetch: {args.hosts} hosts, {args.latency * 1000:.0f} ms latency, "
                        f"{args.concurrency} in flight, {per_host} per host")
    for column in ("URLs", "run", "pages/s", "bound pages/s", "of bound", "peak MB", "vs httpx loop"):
        table.add_column(column, justify="right")
    figures = []
    try:
        for n in args.sizes:
            peer = run_child("peer", n, port, args)
            polite = run_child("ours", n, port, args, host_delay=delay)
            fast = run_child("ours", n, port, args, host_delay=0.0)
            runs = [("pretriever, host delay 1 s", polite, args.hosts / delay),
                    ("pretriever, host delay 0", fast, concurrency_bound),
                    ("httpx.AsyncClient loop", peer, args.concurrency / args.latency)]
            for name, result, bound in runs:
                ratio = result["pages_s"] / peer["pages_s"]
                table.add_row(f"{n:,}", name, f"{result['pages_s']:.0f}", f"{bound:.0f}",
                              f"{result['pages_s'] / bound:.0%}", f"{result['peak_mb']:.0f}", f"{ratio:.2f}x")
                figures.append({"urls": n, "run": name, **result, "bound_pages_s": bound, "vs_peer": ratio})
    finally:
        server.terminate()
    Console().print(table)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
