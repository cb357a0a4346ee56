"""Load test of `pretriever serve` on SciFact against the floor, measured in the same run: what the work itself
costs in one Python process (encode + search + passage texts from a dict), for dense, BM25 and hybrid at
concurrency 1, 8 and 32.

The SciFact index (5,183 abstracts, all-MiniLM-L6-v2, flat, with bm25/) is built in
``bench/out/scifact-index`` when absent (minutes on a CPU) and reused.

* **The floor.** In this process, with the index opened as the library opens it (``IndexFolder.open``, its
  BM25 and store) and nothing of the server: one query at a time (``encode_queries([q])`` + FAISS search, or
  bm25s retrieve, or both and the fusion, + the hits' passages from the store held in memory, as the server
  holds it), and in batches of 8 and 32 (one encode call and one search per batch) for the concurrent rows.
  The lone-query floor is also split into its stages (encode, FAISS, bm25s, fusion, lookup).
* **The server.** ``pretriever serve`` started in a subprocess on 127.0.0.1 (loopback only), from this
  checkout or from ``--server-path`` (another checkout: the "before" of a change, measured in the same
  locked run), with ``--server-arg`` passed on. The test claims (queries of ``qrels/test.tsv``) are replayed
  once per cell by ``concurrency`` workers, each on its own kept-alive connection: by default as prepared
  bytes on raw asyncio connections (``--client raw``: about 0.15 ms of CPU a request), or through an
  ``httpx.AsyncClient`` (``--client httpx``: 2-3 ms a request, taken from the cores the server shares). The
  client's wall time, and the server's own ``took_ms`` from each response.
* **Interleaved.** Each cell's floor is measured just before the cell, not all floors first: on a machine
  shared with other jobs the load changes by the minute, and floor and server should see the same.
* **Cores.** ``--server-cpus`` pins the server and the floor to the same CPUs (the floor is measured with
  the cores the server gets), ``--client-cpus`` the load generator; the table gives the CPU each used.
* **The HTTP floor.** The cheapest request the same server answers (``GET /health``: uvicorn, the middleware,
  the router, a two-key JSON reply), by the same client at the same concurrency, measured in the same run: what
  the HTTP stack costs a request whatever the route does. BM25's work (bm25s, 0.2 ms a query) is below it.
* **Ratios.** Each row's p50 (the server's ``took_ms`` and the HTTP wall time) over the lone-query floor's
  p50, and its throughput over the floor's at the same batch size (concurrency 1: one at a time); and the HTTP
  p50 and throughput against the floor the stack allows: max(floor p50, HTTP floor p50), min(floor q/s, HTTP
  floor q/s).

Bounded: every request has a timeout, every cell a time budget; a failed request is reported and makes the
run exit non-zero.

    python bench/bench_serve.py [--index bench/out/scifact-index] [--k 10] [--server-path DIR]
        [--server-arg=--batch-wait-ms=0] [--client raw|httpx] [--server-cpus 1 --client-cpus 0]
        [--label NAME] [--json bench/out/serve.json]
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
from collections.abc import Callable
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import httpx  # noqa: E402
import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from pretriever.data import load_qrels, load_queries  # noqa: E402
from pretriever.index import BM25Index, HybridOptions, IndexFolder, fuse  # noqa: E402
from pretriever.retrieval import Hit, VectorSearch  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"
OUT_DIR = REPO / "bench" / "out"
MODES = ("dense", "bm25", "hybrid")
CONCURRENCY = (1, 8, 32)
RAW_TIMEOUT = 60.0  # seconds a raw request may take (httpx: its own timeout)
console = Console(width=max(shutil.get_terminal_size().columns, 150))


def ensure_index(index_dir: Path) -> Path:
    from pretriever.corpus import build as corpus_build
    from pretriever.corpus.config import CorpusConfig
    from pretriever.index import IndexConfig, encode
    from pretriever.index.meta import INDEX_JSON

    if (index_dir / INDEX_JSON).exists() and (index_dir / "bm25" / "bm25.json").exists():
        return index_dir
    store = index_dir.parent / "scifact-store"
    if not (store / "manifest.json").exists():
        corpus_build.run(CorpusConfig(input=SCIFACT / "corpus.jsonl", out=store, workers=1, overwrite=True))
    if not (index_dir / INDEX_JSON).exists():
        console.print(f"encoding SciFact into {index_dir} (minutes on a CPU) ...")
        encode.run(IndexConfig(corpus=store, out=index_dir, resume=(index_dir / "_work").exists()))
    BM25Index.build(store).save(index_dir / "bm25")
    return index_dir


def test_claims() -> list[str]:
    queries, qrels = load_queries(SCIFACT / "queries.jsonl"), load_qrels(SCIFACT / "qrels" / "test.tsv")
    return [queries[qid] for qid in qrels]


def summary(latencies: list[float], wall: float, failures: int = 0, errors: list[str] | None = None) -> dict:
    lat = np.array(latencies) if latencies else np.array([float("nan")])
    return {"requests": len(latencies), "failures": failures, "errors": (errors or [])[:3],
            "qps": len(latencies) / wall, "p50_ms": float(np.percentile(lat, 50)),
            "p99_ms": float(np.percentile(lat, 99))}


class Floor:
    """The work of a query and nothing else, in this process: the index's encoder and FAISS index, bm25s, the
    fusion, and the passages from the store read into memory once."""

    def __init__(self, index: Path, options: HybridOptions):
        folder = IndexFolder(index)
        self.dense = folder.open(require_store=True)
        if not isinstance(self.dense, VectorSearch):
            raise SystemExit(f"{index}: a {folder.kind} index, not a dense one")
        self.bm25 = folder.bm25(self.dense.lookup)[0]
        self.options = options
        if not self.dense.lookup.hold(2**40):
            raise SystemExit(f"{folder.meta.store}: the store's passages could not be held in memory")
        self.dense.encode_queries(["warm up"])
        self.stages: dict[str, list[float]] = {}

    def _timed(self, stage: str, fn: Callable, *args):
        started = time.perf_counter()
        out = fn(*args)
        self.stages.setdefault(stage, []).append((time.perf_counter() - started) * 1000)
        return out

    def _dense(self, queries: list[str], k: int) -> list[list[Hit]]:
        vectors = self._timed("encode", self.dense.encode_queries, queries)
        return self._timed("FAISS search", self.dense.search_vectors, vectors, k)

    def _bm25(self, queries: list[str], k: int) -> list[list[Hit]]:
        return self._timed("bm25s retrieve", self.bm25.search, queries, k)

    def run(self, queries: list[str], k: int, mode: str) -> list[list[dict]]:
        """Each query's top ``k`` with their passages, as one batch."""
        if mode == "dense":
            results = self._dense(queries, k)
        elif mode == "bm25":
            results = self._bm25(queries, k)
        else:
            depth = self.options.depth_for(k)
            dense, sparse = self._dense(queries, depth), self._bm25(queries, depth)
            results = self._timed("fusion", lambda: [fuse(d, s, self.options, k) for d, s in zip(dense, sparse)])
        return self._timed("passage lookup", self._passages, results)

    def _passages(self, results: list[list[Hit]]) -> list[list[dict]]:
        found = self.dense.passages(h.passage_id for hits in results for h in hits)
        return [[{"id": h.passage_id, "title": found[h.passage_id].title, "text": found[h.passage_id].text}
                 for h in hits] for hits in results]

    def cell(self, queries: list[str], k: int, mode: str, batch: int) -> dict:
        """Every query in batches of ``batch``: each query's latency is its batch's time."""
        latencies: list[float] = []
        started = time.perf_counter()
        for at in range(0, len(queries), batch):
            part = queries[at:at + batch]
            began = time.perf_counter()
            assert all(self.run(part, k, mode))
            latencies += [(time.perf_counter() - began) * 1000] * len(part)
        return summary(latencies, time.perf_counter() - started)


class RawConnection(asyncio.Protocol):
    """One kept-alive HTTP/1.1 connection that sends prepared request bytes and reads a Content-Length response:
    the least a Python client can do per request, so the load generator takes as little of the cores it shares
    with the server as it can (httpx spends 2-3 ms of CPU a request, about what the server spends)."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.waiter: asyncio.Future | None = None
        self.end: int | None = None  # where the response being read ends in the buffer
        self.body_at = 0
        self.status = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if self.end is None:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = bytes(self.buffer[:head_end]).lower()
            self.status = int(head[9:12])
            at = head.find(b"\r\ncontent-length:")
            if at < 0:
                self._fail(ConnectionError(f"a response without Content-Length: {head[:200]!r}"))
                return
            line_end = head.find(b"\r\n", at + 2)
            length = int(head[at + 17:line_end if line_end > 0 else len(head)])
            self.body_at, self.end = head_end + 4, head_end + 4 + length
        if len(self.buffer) >= self.end:
            body = bytes(self.buffer[self.body_at:self.end])
            del self.buffer[:self.end]
            self.end = None
            if self.waiter is not None and not self.waiter.done():
                self.waiter.set_result((self.status, body))

    def _fail(self, err: Exception) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(err)

    def connection_lost(self, exc: Exception | None) -> None:
        self._fail(ConnectionError(f"the server closed the connection ({exc})"))

    async def send(self, request: bytes) -> tuple[int, bytes]:
        """Status and body of the response to ``request`` (bytes of one whole HTTP/1.1 request)."""
        if self.transport.is_closing():
            raise ConnectionError("the connection was closed (uvicorn closes one idle for 5 s)")
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await asyncio.wait_for(self.waiter, RAW_TIMEOUT)


def raw_request(port: int, query: str, k: int, mode: str) -> bytes:
    """POST /search for ``query`` as bytes on the wire."""
    body = json.dumps({"q": query, "k": k, "mode": mode}).encode()
    return (f"POST /search HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
            f"content-length: {len(body)}\r\n\r\n").encode() + body


def health_caller(client: httpx.AsyncClient, connections: list[RawConnection] | None, port: int) -> Callable:
    """``call(query, worker)`` for GET /health (the query is ignored; 0.0 for took_ms), by the same client."""
    prepared = f"GET /health HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\n\r\n".encode()

    async def call(q: str, slot: int) -> float:
        if connections is None:
            (await client.get("/health")).raise_for_status()
            return 0.0
        status, raw = await connections[slot].send(prepared)
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {raw[:200]!r}")
        return 0.0
    return call


async def raw_connections(port: int, n: int) -> list[RawConnection]:
    loop = asyncio.get_running_loop()
    return [(await loop.create_connection(RawConnection, "127.0.0.1", port))[1] for _ in range(n)]


async def replay(call, queries: list[str], concurrency: int, budget: float) -> tuple[dict, list[float]]:
    """Run ``call(query, worker)`` for every query with ``concurrency`` workers (numbered from 0): the summary of
    the latencies (ms) and what each call returned (the server's took_ms); failures counted."""
    todo = list(queries)
    latencies: list[float] = []
    took: list[float] = []
    failures: list[str] = []
    deadline = time.perf_counter() + budget

    async def worker(slot: int):
        while todo and time.perf_counter() < deadline:
            query = todo.pop(0)
            started = time.perf_counter()
            try:
                took.append(await call(query, slot))
                latencies.append((time.perf_counter() - started) * 1000)
            except Exception as err:  # noqa: BLE001 - a benchmark counts every failure
                failures.append(f"{type(err).__name__}: {err}"[:200])

    started = time.perf_counter()
    await asyncio.gather(*(worker(slot) for slot in range(concurrency)))
    return summary(latencies, time.perf_counter() - started, len(failures) + len(todo), failures), took


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux /proc; its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_list(text: str) -> set[int] | None:
    """CPUs from "0", "0,1" or "0-3" (taskset's notation); None for ""."""
    cpus: set[int] = set()
    for part in filter(None, text.split(",")):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus or None


def pin(pid: int, cpus: set[int]) -> None:
    """Every thread of process ``pid`` (and the threads it starts later) onto ``cpus``."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        os.sched_setaffinity(int(tid), cpus)


def start_server(index: Path, port: int, code: Path, extra: list[str], cpus: set[int] | None) -> subprocess.Popen:
    """`pretriever serve INDEX` with the package from the checkout ``code``, on ``cpus`` (None: any)."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    proc = subprocess.Popen([sys.executable, "-c", "from pretriever.cli import main; main()", "serve", str(index),
                             "--host", "127.0.0.1", "--port", str(port), *extra], env=env, cwd=code,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None)
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


async def encoding(client: httpx.AsyncClient) -> dict | None:
    """The server's encoder counters (batches, queries) from /info; None for a BM25 index."""
    return (await client.get("/info")).json()["encoding"]


def searcher(client: httpx.AsyncClient, connections: list[RawConnection] | None, port: int, queries: list[str],
             k: int, mode: str) -> Callable:
    """``call(query, worker)`` -> the server's took_ms for one POST /search: through ``client`` (httpx), or, with
    ``connections``, as prepared bytes on the worker's own raw connection."""
    if connections is None:
        async def call(q: str, slot: int) -> float:
            r = await client.post("/search", json={"q": q, "k": k, "mode": mode})
            r.raise_for_status()
            body = r.json()
            assert len(body["hits"]) > 0
            return body["took_ms"]
        return call
    prepared = {q: raw_request(port, q, k, mode) for q in queries}

    async def raw_call(q: str, slot: int) -> float:
        status, raw = await connections[slot].send(prepared[q])
        if status != 200:
            raise RuntimeError(f"HTTP {status}: {raw[:200]!r}")
        body = json.loads(raw)
        assert len(body["hits"]) > 0
        return body["took_ms"]
    return raw_call


async def http_cell(client: httpx.AsyncClient, call: Callable, connections: list[RawConnection] | None, port: int,
                    server_pid: int, queries: list[str], c: int, budget: float) -> dict:
    """One cell against the server: every query by ``c`` workers, with the cores used and the mean batch."""
    if connections is not None:  # new ones per cell: the server closes those idle over 5 s
        for conn in connections:
            conn.transport.close()
        connections[:] = await raw_connections(port, c)
    await replay(call, queries[:c], c, budget)  # warm the connections
    before = await encoding(client)
    cpu = time.process_time(), cpu_seconds(server_pid), time.perf_counter()
    stats, took = await replay(call, queries, c, budget)
    wall = time.perf_counter() - cpu[2]
    cores = {"client_cores": (time.process_time() - cpu[0]) / wall,
             "server_cores": (cpu_seconds(server_pid) - cpu[1]) / wall}
    after = await encoding(client)
    batches = after["batches"] - before["batches"] if before else 0
    return {**stats, **cores, "took_p50_ms": float(np.percentile(took, 50)) if took else None,
            "mean_batch": (after["queries"] - before["queries"]) / batches if batches else None}


def floor_cell(floor: Floor, queries: list[str], k: int, mode: str, c: int, threads: list[int]) -> tuple[dict, dict]:
    """The floor of one cell, the best over torch's intra-op ``threads`` (throughput; the p50 for lone queries),
    and its stages (p50 ms)."""
    import torch

    best, stages = None, {}
    for n in threads:
        torch.set_num_threads(n)
        floor.cell(queries[:c], k, mode, c)  # warm
        floor.stages.clear()
        got = {**floor.cell(queries, k, mode, c), "torch_threads": n}
        if best is None or (got["p50_ms"] < best["p50_ms"] if c == 1 else got["qps"] > best["qps"]):
            best = got
            stages = {"torch_threads": n, **{s: float(np.percentile(v, 50)) for s, v in floor.stages.items()}}
    return best, stages


async def cells(floor: Floor, port: int, server_pid: int, queries: list[str], ks: list[int], modes: list[str],
                budget: float, raw: bool, threads: list[int], floor_cpus: set[int], client_cpus: set[int]
                ) -> tuple[dict, dict, dict]:
    """Every cell, its floor measured just before it (each on its CPUs), so both see the same load from whatever
    else runs on the machine; the HTTP floor (GET /health) at each concurrency just before BM25's cell (or the
    first mode's): (HTTP cells, floors, HTTP floors by concurrency, the lone queries' floor stages at the first
    k)."""
    limits = httpx.Limits(max_connections=max(CONCURRENCY), max_keepalive_connections=max(CONCURRENCY))
    http, floors, http_floors, stages = {}, {}, {}, {}
    async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60, limits=limits) as client:
        connections: list[RawConnection] | None = [] if raw else None
        health = health_caller(client, connections, port)
        for k in ks:
            for mode in modes:
                call = searcher(client, connections, port, queries, k, mode)
                for c in CONCURRENCY:
                    if k == ks[0] and mode == ("bm25" if "bm25" in modes else modes[0]):
                        pin(os.getpid(), client_cpus)
                        http_floors[c] = {**await http_cell(client, health, connections, port, server_pid, queries,
                                                            c, budget), "took_p50_ms": None}
                    pin(os.getpid(), floor_cpus)
                    floors[(k, mode, c)], stage = floor_cell(floor, queries, k, mode, c, threads)
                    if c == 1 and k == ks[0]:
                        stages[mode] = stage
                    pin(os.getpid(), client_cpus)
                    http[(k, mode, c)] = await http_cell(client, call, connections, port, server_pid, queries, c,
                                                         budget)
        for conn in connections or []:
            conn.transport.close()
    return http, floors, http_floors, stages


def report(http: dict, floors: dict, http_floors: dict, stages: dict, title: str) -> list[dict]:
    """Print each cell beside its floor and the HTTP floor, with the ratios, and return the rows."""
    table = Table(title=title)
    for col in ("k", "mode", "conc.", "floor q/s", "floor p50", "floor thr.", "HTTP q/s", "HTTP p50", "HTTP p99",
                "took p50", "batch", "cores: server / client", "took / floor p50", "HTTP / floor p50", "q/s / floor q/s",
                "HTTP / stack floor p50", "q/s / stack floor q/s", "failed"):
        table.add_column(col, justify="right")
    for c, h in http_floors.items():
        table.add_row("-", "GET /health", str(c), "-", "-", "-", f"{h['qps']:.1f}", f"{h['p50_ms']:.2f}",
                      f"{h['p99_ms']:.1f}", "-", "-", f"{h['server_cores']:.2f} / {h['client_cores']:.2f}",
                      "-", "-", "-", "-", "-", str(h["failures"]))
    rows = []
    for (k, mode, c), h in http.items():
        f, hf = floors[(k, mode, c)], http_floors.get(c)
        ratios = {"took_over_floor_p50": (h["took_p50_ms"] or float("nan")) / f["p50_ms"],
                  "http_over_floor_p50": h["p50_ms"] / f["p50_ms"], "qps_over_floor": h["qps"] / f["qps"],
                  "http_over_stack_floor_p50": h["p50_ms"] / max(f["p50_ms"], hf["p50_ms"]) if hf else float("nan"),
                  "qps_over_stack_floor": h["qps"] / min(f["qps"], hf["qps"]) if hf else float("nan")}
        rows.append({"k": k, "mode": mode, "concurrency": c, "floor": f, "http": h, "http_floor": hf, **ratios})
        batch = f"{h['mean_batch']:.1f}" if h["mean_batch"] else "-"
        table.add_row(str(k), mode, str(c), f"{f['qps']:.1f}", f"{f['p50_ms']:.2f}", str(f["torch_threads"]),
                      f"{h['qps']:.1f}", f"{h['p50_ms']:.2f}", f"{h['p99_ms']:.1f}",
                      f"{h['took_p50_ms'] or float('nan'):.2f}", batch,
                      f"{h['server_cores']:.2f} / {h['client_cores']:.2f}",
                      *(f"{ratios[r]:.2f}x" for r in ratios), str(h["failures"]))
    console.print(table)
    console.print("floor = in-process encode + search + passages held in memory, one query at a time (conc. 1) "
                  "or in batches of conc. (its p50: the batch's time), the best over torch threads --floor-threads (floor "
                  "thr.); GET /health = the HTTP floor, the cheapest request the server answers, same client and "
                  "concurrency; stack floor = max(floor, HTTP floor) p50, min(floor, HTTP floor) q/s; batch = mean "
                  "queries per encoder call in the server; took = the server's took_ms; cores = CPU seconds per "
                  "second of the server process and of this bench's client while the cell ran; ms.")
    for mode, times in stages.items():
        console.print(f"lone {mode} query, floor stages (p50 ms, torch threads {times['torch_threads']}): "
                      + ", ".join(f"{s} {t:.2f}" for s, t in times.items() if s != "torch_threads"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, default=OUT_DIR / "scifact-index")
    parser.add_argument("--k", default="10", help="hits per query, one run per value (e.g. 10,100)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--queries", type=int, default=0, help="use the first N test claims (0: all 300)")
    parser.add_argument("--budget", type=float, default=120.0, help="seconds at most per cell")
    parser.add_argument("--server-path", type=Path, default=REPO,
                        help="the checkout whose `pretriever serve` is measured (default: this one)")
    parser.add_argument("--server-arg", action="append", default=[],
                        help="an argument for `pretriever serve` (repeatable), e.g. --server-arg=--batch-wait-ms=0")
    parser.add_argument("--floor-threads", default="",
                        help="torch intra-op thread counts the floor is measured with; each cell keeps the best "
                             "(default: 1 and every core the floor may use)")
    parser.add_argument("--client", choices=("raw", "httpx"), default="raw",
                        help="the load generator: raw (prepared bytes on kept-alive asyncio connections, the "
                             "lightest) or httpx (AsyncClient, 2-3 ms of CPU a request)")
    parser.add_argument("--server-cpus", default="",
                        help="CPUs (taskset notation: 0,1 or 0-3) for the server and for the floor, so the floor "
                             "is measured with the cores the server gets (default: any)")
    parser.add_argument("--client-cpus", default="", help="CPUs for the load generator (default: any)")
    parser.add_argument("--label", default="", help="a name for this run in the table and the JSON")
    parser.add_argument("--json", type=Path, default=OUT_DIR / "serve.json")
    args = parser.parse_args()
    if not SCIFACT.exists():
        sys.exit(f"SciFact not found at {SCIFACT}")
    ks, modes = [int(k) for k in args.k.split(",")], args.modes.split(",")
    server_cpus, client_cpus = cpu_list(args.server_cpus), cpu_list(args.client_cpus)
    index = ensure_index(args.index)
    queries = test_claims()[:args.queries or None]
    load = [os.getloadavg()[0]]
    console.print(f"{len(queries)} SciFact test claims; index {index}; cores: {os.cpu_count()}; server and floor "
                  f"CPUs: {sorted(server_cpus) if server_cpus else 'any'}; client CPUs: "
                  f"{sorted(client_cpus) if client_cpus else 'any'} ({args.client}); load average {load[0]:.2f}")

    every = set(range(os.cpu_count()))
    port = free_port()
    extra = list(args.server_arg)
    if server_cpus and not any(a.startswith("--encode-threads") for a in extra):
        extra.append(f"--encode-threads={len(server_cpus)}")  # torch threads for the cores it is pinned to
    server = start_server(index, port, args.server_path.resolve(), extra, server_cpus)
    try:
        pin(os.getpid(), server_cpus or every)
        floor = Floor(index, HybridOptions())
        threads = sorted({int(n) for n in (args.floor_threads or f"1,{len(server_cpus or every)}").split(",")})
        http, floors, http_floors, stages = asyncio.run(cells(floor, port, server.pid, queries, ks, modes, args.budget,
                                                 args.client == "raw", threads, server_cpus or every,
                                                 client_cpus or every))
    finally:
        server.terminate()
        server.wait(30)
    load.append(os.getloadavg()[0])

    rows = report(http, floors, http_floors, stages, f"pretriever serve on SciFact ({len(queries)} test claims) against the "
                  f"floor" + (f": {args.label}" if args.label else ""))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    console.print(f"load average {load[0]:.2f} at the start, {load[1]:.2f} at the end")
    args.json.write_text(json.dumps({"label": args.label, "queries": len(queries), "index": str(index),
                                     "server": str(args.server_path), "server_args": args.server_arg,
                                     "client": args.client, "server_cpus": sorted(server_cpus or []),
                                     "client_cpus": sorted(client_cpus or []), "load_average": load,
                                     "cores": os.cpu_count(), "floor_stages_p50_ms": stages,
                                     "http_floor": {str(c): h for c, h in http_floors.items()}, "rows": rows},
                                    indent=1), encoding="utf-8")
    failed = sum(r["http"]["failures"] for r in rows)
    if failed:
        errors = [r["http"]["errors"] for r in rows if r["http"]["errors"]][:3]
        console.print(f"[red]{failed} request(s) failed[/red]: {errors}")
        sys.exit(1)


if __name__ == "__main__":
    main()
