"""Load test of `pretriever serve` on SciFact: throughput and p50/p99 latency over HTTP, beside the same
engine called in-process (the overhead ratio), for dense, BM25 and hybrid at concurrency 1, 8 and 32.

The SciFact index (5,183 abstracts, all-MiniLM-L6-v2, flat, with bm25/) is built in
``bench/out/scifact-index`` when absent (minutes on a CPU) and reused. The 300 test claims
(queries in ``qrels/test.tsv``) are replayed once per cell by ``concurrency`` workers on an
``httpx.AsyncClient`` against the server started as ``pretriever serve`` in a subprocess on
127.0.0.1 (loopback only). The peer is :class:`pretriever.serve.engine.Engine` in this process
doing the same work per query (search + passage lookup) with the same concurrency. Bounded:
every request has a timeout, every cell a time budget; any failed request is reported and
makes the run exit non-zero. Two sizes: k = 10 and k = 100 hits per query.

    python bench/bench_serve.py [--index bench/out/scifact-index] [--k 10,100] [--json bench/out/serve.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import httpx  # noqa: E402
import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from pretriever.data import load_qrels, load_queries  # noqa: E402
from pretriever.serve import ServeConfig  # noqa: E402
from pretriever.serve.engine import Engine  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"
OUT_DIR = REPO / "bench" / "out"
MODES = ("dense", "bm25", "hybrid")
CONCURRENCY = (1, 8, 32)
console = Console(width=max(shutil.get_terminal_size().columns, 130))


def ensure_index(index_dir: Path) -> Path:
    from pretriever.corpus.build import build_corpus
    from pretriever.corpus.config import CorpusConfig
    from pretriever.index import BM25Index, IndexConfig, build_index
    from pretriever.index.dense import INDEX_JSON

    store = index_dir.parent / "scifact-store"
    if not (store / "manifest.json").exists():
        build_corpus(CorpusConfig(input=SCIFACT / "corpus.jsonl", out=store, workers=1, overwrite=True))
    if not (index_dir / INDEX_JSON).exists():
        console.print(f"encoding SciFact into {index_dir} (minutes on a CPU) ...")
        build_index(IndexConfig(corpus=store, out=index_dir, resume=(index_dir / "_work").exists()))
    if not (index_dir / "bm25" / "bm25.json").exists():
        BM25Index.build(store).save(index_dir / "bm25")
    return index_dir


def test_claims() -> list[str]:
    queries, qrels = load_queries(SCIFACT / "queries.jsonl"), load_qrels(SCIFACT / "qrels" / "test.tsv")
    return [queries[qid] for qid in qrels]


async def replay(call, queries: list[str], concurrency: int, budget: float) -> dict:
    """Run ``call(query)`` for every query with ``concurrency`` workers; latencies in ms, failures counted."""
    todo = list(enumerate(queries))
    latencies: list[float] = []
    failures: list[str] = []
    deadline = time.perf_counter() + budget

    async def worker():
        while todo and time.perf_counter() < deadline:
            _, query = todo.pop(0)
            started = time.perf_counter()
            try:
                await call(query)
                latencies.append((time.perf_counter() - started) * 1000)
            except Exception as err:  # noqa: BLE001 - a benchmark counts every failure
                failures.append(f"{type(err).__name__}: {err}"[:200])

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - started
    lat = np.array(latencies) if latencies else np.array([float("nan")])
    return {"requests": len(latencies), "failures": len(failures) + len(todo), "errors": failures[:3],
            "qps": len(latencies) / wall, "p50_ms": float(np.percentile(lat, 50)), "p99_ms": float(np.percentile(lat, 99))}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(index: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    proc = subprocess.Popen([sys.executable, "-c", "from pretriever.cli import main; main()", "serve", str(index),
                             "--host", "127.0.0.1", "--port", str(port)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(600):
        if proc.poll() is not None:
            raise SystemExit(f"the server exited: {proc.stderr.read().decode()[-2000:]}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not start in 120 s")


async def http_cells(port: int, queries: list[str], ks: list[int], budget: float) -> dict:
    limits = httpx.Limits(max_connections=max(CONCURRENCY), max_keepalive_connections=max(CONCURRENCY))
    out = {}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60, limits=limits) as client:
        for k in ks:
            for mode in MODES:
                for c in CONCURRENCY:
                    async def call(q, mode=mode, k=k):
                        r = await client.post("/search", json={"q": q, "k": k, "mode": mode})
                        r.raise_for_status()
                        assert len(r.json()["hits"]) > 0
                    await replay(call, queries[:c], c, budget)  # warm the connections
                    out[(k, mode, c)] = await replay(call, queries, c, budget)
    return out


async def engine_cells(engine: Engine, queries: list[str], ks: list[int], budget: float) -> dict:
    out = {}
    for k in ks:
        for mode in MODES:
            for c in CONCURRENCY:
                async def call(q, mode=mode, k=k):  # what POST /search does, without HTTP and JSON
                    [hits] = await engine.search([q], k, mode)
                    passages = await engine.passages([h.passage_id for h in hits])
                    assert hits and len(passages) == len(hits)
                await replay(call, queries[:c], c, budget)
                out[(k, mode, c)] = await replay(call, queries, c, budget)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, default=OUT_DIR / "scifact-index")
    parser.add_argument("--k", default="10,100", help="hits per query, one run per value (two sizes)")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds at most per cell")
    parser.add_argument("--json", type=Path, default=OUT_DIR / "serve.json")
    args = parser.parse_args()
    if not SCIFACT.exists():
        sys.exit(f"SciFact not found at {SCIFACT}")
    ks = [int(k) for k in args.k.split(",")]
    index = ensure_index(args.index)
    queries = test_claims()
    console.print(f"{len(queries)} SciFact test claims; index {index}; cores: {os.cpu_count()}")

    port = free_port()
    server = start_server(index, port)
    try:
        http = asyncio.run(http_cells(port, queries, ks, args.budget))
    finally:
        server.terminate()
        server.wait(30)
    engine = Engine.open(ServeConfig(index=index))
    inproc = asyncio.run(engine_cells(engine, queries, ks, args.budget))

    table = Table(title="pretriever serve on SciFact (300 test claims): HTTP vs the engine in-process")
    for col in ("k", "mode", "conc.", "HTTP q/s", "HTTP p50 ms", "HTTP p99 ms", "in-proc q/s", "in-proc p50 ms",
                "in-proc p99 ms", "q/s ratio", "p50 ratio", "failed"):
        table.add_column(col, justify="right")
    rows = []
    for key in http:
        h, e = http[key], inproc[key]
        ratio, p50_ratio = e["qps"] / h["qps"], h["p50_ms"] / e["p50_ms"]
        rows.append({"k": key[0], "mode": key[1], "concurrency": key[2], "http": h, "in_process": e,
                     "throughput_ratio_inproc_over_http": ratio, "p50_ratio_http_over_inproc": p50_ratio})
        table.add_row(str(key[0]), key[1], str(key[2]), f"{h['qps']:.1f}", f"{h['p50_ms']:.1f}", f"{h['p99_ms']:.1f}",
                      f"{e['qps']:.1f}", f"{e['p50_ms']:.1f}", f"{e['p99_ms']:.1f}", f"{ratio:.2f}x",
                      f"{p50_ratio:.2f}x", str(h["failures"] + e["failures"]))
    console.print(table)
    console.print("q/s ratio = in-process throughput / HTTP throughput; p50 ratio = HTTP p50 / in-process p50.")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"queries": len(queries), "index": str(index), "cores": os.cpu_count(),
                                     "rows": rows}, indent=1), encoding="utf-8")
    failed = sum(r["http"]["failures"] + r["in_process"]["failures"] for r in rows)
    if failed:
        console.print(f"[red]{failed} request(s) failed[/red]: {[r['http']['errors'] for r in rows if r['http']['errors']][:3]}")
        sys.exit(1)


if __name__ == "__main__":
    main()
