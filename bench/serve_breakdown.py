"""Where a lone dense request's time goes in `pretriever serve`: the stages of one request, timed inside the
server process, over SciFact test claims sent one at a time.

The server is the engine and app of the ``pretriever`` on ``PYTHONPATH`` (so a checkout of an older version is
measured the same way), served by uvicorn with `pretriever serve`'s options in this process; the client is a
subprocess (so it does not share this process's GIL). Timers wrap the index's ``encode_queries`` and
``search_vectors`` (they run wherever the engine runs them), the store's ``passages``, and the engine's
``search`` and ``passages`` as the route awaits them; the event loop's CPU per request is the main thread's
CPU time over the run. Printed: p50 over the requests, in ms.

    PYTHONPATH=. python bench/serve_breakdown.py --index bench/out/scifact-index [--queries 200] [--set encode_threads=1]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import uvicorn  # noqa: E402

from pretriever.serve import ServeConfig, create_app  # noqa: E402
from pretriever.serve.engine import QueryEngine  # noqa: E402
from pretriever.serve.server import uvicorn_options  # noqa: E402

SCIFACT = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "beir" / "scifact"
CLIENT = """
import httpx, json, sys, time
port, n, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
queries = [json.loads(line)["text"] for line in open(sys.argv[4], encoding="utf-8")][:n + 10]
seen = []
with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
    for query in queries[:10]:  # warm up
        client.post("/search", json={"q": query, "k": 10, "mode": "dense"}).raise_for_status()
    client.get("/health", params={"measure": "start"})
    for query in queries[10:]:
        started = time.perf_counter()
        r = client.post("/search", json={"q": query, "k": 10, "mode": "dense"})
        r.raise_for_status()
        seen.append([time.perf_counter() - started, r.json()["took_ms"] / 1000])
json.dump(seen, open(out, "w"))
"""


class Stages:
    """Timers around the engine's parts: ``spans`` (seconds per call) and the last start/end of each."""

    def __init__(self):
        self.spans: dict[str, list[float]] = defaultdict(list)
        self.at: dict[str, float] = {}

    def wrap(self, owner, name: str, label: str) -> None:
        fn = getattr(owner, name)

        def timed(*args, **kwargs):
            self.at[label + " start"] = started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.at[label + " end"] = time.perf_counter()
                self.spans[label].append(self.at[label + " end"] - started)
        setattr(owner, name, timed)

    def wrap_async(self, owner, name: str, label: str) -> None:
        fn = getattr(owner, name)

        async def timed(*args, **kwargs):
            self.at[label + " start"] = started = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                self.at[label + " end"] = time.perf_counter()
                self.spans[label].append(self.at[label + " end"] - started)
                if label == "engine.search":
                    self.spans["to the encoder (queue, batch wait, thread hop)"].append(
                        self.at["encode start"] - started)
                    self.spans["back to the request (hops; FAISS excluded)"].append(
                        self.at[label + " end"] - self.at["encode end"] - self.spans["FAISS search"][-1])
        setattr(owner, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--set", action="append", default=[], help="a ServeConfig field, NAME=VALUE (repeatable)")
    args = parser.parse_args()
    options = {name: json.loads(value) for name, value in (item.split("=", 1) for item in args.set)}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = ServeConfig(index=args.index, port=port, **options)
    engine = QueryEngine.open(cfg)
    stages = Stages()
    stages.wrap(engine.dense.retriever, "encode_queries", "encode")
    stages.wrap(engine.dense.retriever, "search_vectors", "FAISS search")
    stages.wrap(engine.lookup, "passages", "store lookup")
    stages.wrap_async(engine, "search", "engine.search")
    stages.wrap_async(engine, "passages", "engine.passages")
    app = create_app(cfg, engine=engine)
    cpu: dict[str, float] = {}

    async def measured(scope, receive, send):  # plain ASGI: the client marks where the measured requests begin
        if scope["type"] == "http" and scope.get("query_string") == b"measure=start":
            cpu["start"], stages.spans = time.thread_time(), defaultdict(list)
        await app(scope, receive, send)
        cpu["end"] = time.thread_time()

    server = uvicorn.Server(uvicorn.Config(measured, **uvicorn_options(cfg)))
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "client.json"

        def client() -> None:
            try:
                subprocess.run([sys.executable, "-c", CLIENT, str(port), str(args.queries), str(out),
                                str(SCIFACT / "queries.jsonl")], check=True, timeout=1800)
            finally:
                server.should_exit = True

        threading.Thread(target=client, daemon=True).start()
        server.run()
        seen = json.loads(out.read_text())
    p50 = lambda values: statistics.median(values) * 1000  # noqa: E731
    rows = [("HTTP wall time (client)", p50([w for w, _ in seen])), ("server took_ms", p50([t for _, t in seen])),
            ("HTTP - took_ms (HTTP, validation, JSON, client)", p50([w - t for w, t in seen]))]
    rows += [(label, p50(values)) for label, values in stages.spans.items()]
    rows.append(("event-loop CPU per request", (cpu["end"] - cpu["start"]) / len(seen) * 1000))
    print(f"{len(seen)} lone dense requests, k = 10; encoder torch threads: "
          f"{engine.encoder.submit(_torch_threads).result() if getattr(engine, 'encoder', None) else 'pool default'}")
    for label, ms in rows:
        print(f"  {label:50s} {ms:8.2f} ms")


def _torch_threads() -> int:
    import torch

    return torch.get_num_threads()


if __name__ == "__main__":
    main()
