"""FAISS index build: seconds and bytes per vector at growing N, projected to 22M x 768 (DPR's Wikipedia).

    python bench/bench_faiss_build.py [--sizes 20000,80000] [--dim 768] [--json bench/out/faiss_build.json]

Random unit vectors (seeded) of ``--dim`` dimensions stand in for passage embeddings: build
cost does not depend on what the vectors mean (HNSW's graph search may be a little slower on
random data than on clustered text embeddings). For each size and index type, pretriever's
``build_faiss_index`` (the defaults of ``pretriever index build``: flat; HNSW M 32,
efConstruction 200; IVF-PQ with nlist 4*sqrt(N), dim/8 sub-quantizers of 8 bits, trained on
all vectors up to 10^6) is timed beside the peer, FAISS's own ``index_factory`` with the same
structure and parameters, in the same process (its training and adding timed apart: IVF-PQ's
training works on at most 10^6 vectors, so only adding grows with N). The index's size is that of
``faiss.serialize_index`` (what ``index.faiss`` holds and what search keeps in memory).
Growth exponents between the sizes, then a projection to 22M vectors, are printed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from pathlib import Path

import faiss
import numpy as np
from rich.console import Console
from rich.table import Table

from pretriever.index.faiss_index import FaissParams, build_faiss_index

REPO = Path(__file__).resolve().parent.parent
WIKI_PASSAGES = 22_000_000


def peer(vectors: np.ndarray, params: FaissParams, phases: dict):
    """The same index through FAISS's index_factory; ``phases`` gets the seconds of training and adding."""
    n, dim = vectors.shape
    p = params.resolved(n, dim)
    spec = {"flat": "Flat", "hnsw": f"HNSW{p.hnsw_m}", "ivfpq": f"IVF{p.ivf_nlist},PQ{p.pq_m}x{p.pq_nbits}"}[p.type]
    index = faiss.index_factory(dim, spec, faiss.METRIC_INNER_PRODUCT)
    if p.type == "hnsw":
        index.hnsw.efConstruction = p.hnsw_ef_construction
    if p.type == "ivfpq":
        faiss.downcast_index(faiss.extract_index_ivf(index)).do_polysemous_training = False  # as pretriever
        rows = np.linspace(0, n - 1, p.train_size).round().astype(np.int64) if p.train_size < n else np.arange(n)
        started = time.perf_counter()
        index.train(vectors[rows])
        phases["train"] = time.perf_counter() - started
    started = time.perf_counter()
    index.add(vectors)
    phases["add"] = time.perf_counter() - started
    return index


def timed(build) -> tuple[float, object]:
    started = time.perf_counter()
    index = build()
    return time.perf_counter() - started, index


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="20000,80000")
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--types", default="flat,hnsw,ivfpq")
    ap.add_argument("--json", type=Path, default=REPO / "bench" / "out" / "faiss_build.json")
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    console = Console()
    rng = np.random.default_rng(0)
    runs = []
    for n in sizes:
        vectors = rng.standard_normal((n, args.dim), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        for kind in args.types.split(","):
            params = FaissParams(type=kind)
            ours_s, index = timed(lambda: build_faiss_index(vectors, params))
            phases: dict = {}
            peer_s, other = timed(lambda: peer(vectors, params, phases))
            size = faiss.serialize_index(index).nbytes
            assert index.ntotal == other.ntotal == n
            runs.append({"n": n, "dim": args.dim, "type": kind, "params": params.resolved(n, args.dim).to_json(),
                         "seconds": round(ours_s, 2), "peer_seconds": round(peer_s, 2),
                         "ratio_peer_over_ours": round(peer_s / max(ours_s, 1e-3), 3), "bytes": size,
                         "bytes_per_vector": round(size / n, 1),
                         "peer_phases_seconds": {k: round(v, 2) for k, v in phases.items()}})
            console.print(f"[dim]{n:,} {kind}: {ours_s:.1f}s (faiss {peer_s:.1f}s), {size / n:,.0f} B/vector[/dim]")
    for kind in args.types.split(","):
        mine = [r for r in runs if r["type"] == kind]
        for small, large in zip(mine, mine[1:]):
            large["exponent"] = round(math.log(max(large["seconds"], 1e-3) / max(small["seconds"], 1e-3)) / math.log(large["n"] / small["n"]), 3)
        last = mine[-1]
        e = last.get("exponent", 1.0)
        last["projection_22M"] = {"exponent": e, "hours": round(last["seconds"] * (WIKI_PASSAGES / last["n"]) ** e / 3600, 2),
                                  "gib": round(last["bytes_per_vector"] * WIKI_PASSAGES / 2**30, 1)}
    table = Table(title=f"FAISS index build, random unit vectors, dim {args.dim}")
    for col in ("type", "vectors", "pretriever s", "faiss s", "faiss/pretriever", "bytes/vector", "exponent",
                "22M: hours (projected)", "22M: GiB (projected)"):
        table.add_column(col, justify="right")
    for r in runs:
        p = r.get("projection_22M", {})
        table.add_row(r["type"], f"{r['n']:,}", f"{r['seconds']:.1f}", f"{r['peer_seconds']:.1f}",
                      f"{r['ratio_peer_over_ours']:.2f}", f"{r['bytes_per_vector']:,.0f}", str(r.get("exponent", "")),
                      str(p.get("hours", "")), str(p.get("gib", "")))
    console.print(table)
    info = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "cores": os.cpu_count(),
            "faiss": faiss.__version__, "load_1m": os.getloadavg()[0]}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"machine": info, "runs": runs}, indent=1))
    console.print(f"saved {args.json}")


if __name__ == "__main__":
    main()
