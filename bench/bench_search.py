"""Search benchmark: queries/s and Recall@100 (against exact search) of HNSW and IVF-PQ on SciFact.

Encodes SciFact with ``pretriever index build`` (exact flat index, the defaults; reused
from ``--index`` when it exists), then re-indexes the same vectors as HNSW and IVF-PQ
with :meth:`DenseIndex.reindex` and sweeps their search-time parameter (efSearch,
nprobe). Queries are all 1,109 SciFact claims (the 300 test claims and the train
claims), encoded once; timing covers FAISS search only, best of ``--repeat``.
Recall@100 is the share of the exact top 100 that the approximate top 100 holds,
averaged over queries. Prints a table and saves JSON.

    python bench/bench_search.py [--index /tmp/pretriever-bench/scifact-index] [--json bench/out/search.json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SCIFACT = REPO.parent / "shared" / "data" / "beir" / "scifact"
OUT_DIR = REPO / "bench" / "out"
K = 100

console = Console(width=max(shutil.get_terminal_size().columns, 120))


def ensure_index(index_dir: Path) -> Path:
    from pretriever.corpus import build as corpus_build
    from pretriever.corpus.config import CorpusConfig
    from pretriever.index import IndexConfig, encode
    from pretriever.index.meta import INDEX_JSON

    if (index_dir / INDEX_JSON).exists():
        return index_dir
    store = index_dir.parent / "scifact-store"
    if not (store / "manifest.json").exists():
        corpus_build.run(CorpusConfig(input=SCIFACT, out=store, workers=1, overwrite=True))
    console.print(f"encoding SciFact into {index_dir} (minutes on a CPU) ...")
    encode.run(IndexConfig(corpus=store, out=index_dir, resume=(index_dir / "_work").exists()))
    return index_dir


def timed_search(index, queries: np.ndarray, repeat: int) -> tuple[np.ndarray, float]:
    best = float("inf")
    rows = None
    for _ in range(repeat):
        started = time.perf_counter()
        _, rows = index.search_arrays(queries, K)
        best = min(best, time.perf_counter() - started)
    return rows, best


def recall(rows: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(a[a >= 0]) & set(e[e >= 0])) / K for a, e in zip(rows, exact)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, default=Path("/tmp/pretriever-bench/scifact-index"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path, default=OUT_DIR / "search.json")
    args = parser.parse_args()
    if not SCIFACT.exists():
        sys.exit(f"SciFact not found at {SCIFACT}")

    import faiss

    from pretriever.index import DenseIndex, FaissParams

    flat = DenseIndex.load(ensure_index(args.index))
    claims = [json.loads(line)["text"] for line in (SCIFACT / "queries.jsonl").read_text(encoding="utf-8").splitlines()]
    queries = flat.encode_queries(claims)
    exact, flat_s = timed_search(flat, queries, args.repeat)
    results = [{"index": "flat (exact)", "param": "", "recall_at_100": 1.0, "qps": len(queries) / flat_s,
                "build_s": flat.meta.recorded.get("index_seconds"), "bytes": os.path.getsize(args.index / "index.faiss")}]

    scratch = args.index.parent / "bench-search"
    # (kind, build parameters, search settings to sweep; rerank = exact re-scoring of rerank x k candidates)
    sweeps = [("hnsw", FaissParams(type="hnsw"), [{"ef_search": v} for v in (16, 32, 64, 128, 256)]),
              ("ivfpq", FaissParams(type="ivfpq"), [{"nprobe": v, "rerank": 0} for v in (1, 4, 16, 64)]
               + [{"nprobe": v, "rerank": 4} for v in (16, 64)])]
    for kind, params, settings in sweeps:
        started = time.perf_counter()
        index = flat.reindex(scratch / kind, params)
        build_s = time.perf_counter() - started
        built = {k: v for k, v in index.meta.faiss.items() if k not in ("type", "rerank", "hnsw_ef_search",
                                                                         "ivf_nprobe")}
        for setting in settings:
            index.set_search_params(**setting)
            rows, seconds = timed_search(index, queries, args.repeat)
            label = f"{kind} ({', '.join(f'{k}={v}' for k, v in built.items())})"
            results.append({"index": label, "param": ", ".join(f"{k}={v}" for k, v in setting.items()),
                            "recall_at_100": recall(rows, exact), "qps": len(queries) / seconds,
                            "build_s": round(build_s, 2), "bytes": os.path.getsize(scratch / kind / "index.faiss")})
    shutil.rmtree(scratch, ignore_errors=True)

    table = Table(title=f"SciFact: {len(flat):,} passages, {len(queries):,} claims, top {K}, "
                        f"{faiss.omp_get_max_threads()} threads, {flat.name}")
    for column in ("index", "search param", "Recall@100 vs exact", "queries/s", "build s", "index MB"):
        table.add_column(column, justify="left" if column in ("index", "search param") else "right")
    for r in results:
        table.add_row(r["index"], r["param"], f"{r['recall_at_100']:.4f}", f"{r['qps']:,.0f}",
                      f"{r['build_s']}", f"{r['bytes'] / 1e6:.1f}")
    console.print(table)
    payload = {"passages": len(flat), "queries": len(queries), "k": K, "model": flat.name,
               "threads": faiss.omp_get_max_threads(), "load_average": list(os.getloadavg()), "results": results}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(payload, indent=2) + "\n", encoding="utf-8")
    console.print(f"saved {args.json}")


if __name__ == "__main__":
    main()
