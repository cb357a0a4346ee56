"""Benchmark of ``pretriever mine`` (dl,cm, random negatives) on synthetic stores of 10^5..10^8 links.

    python bench/bench_mine.py [--sizes 1e5,1e6,1e7] [--spark-size 1e7] [--memory-limit 8GiB] [--max-spill 30GB]
                               [--workdir DIR] [--keep-stores] [--merge] [--json bench/out/mine.json]

For each size a store is generated (``synthetic_corpus.py``, not timed with mining), then
``mine`` runs in a subprocess with the paper's default settings on DuckDB (memory limit:
pretriever's default, half of the RAM, unless ``--memory-limit``); the wall clock of that
subprocess (imports and statistics included) is timed, the RSS of its process tree sampled by
psutil every 0.2 s and the disk used under its output folder (pairs + DuckDB's spill + work
files) every 2 s. The growth exponent between consecutive sizes is log(t2/t1)/log(n2/n1), and
from 10^6 to the largest size; the largest size's time is projected to full English Wikipedia
(about 150M links) with the last exponent. Spark (local mode, ``local[*]``) is run on
``--spark-size`` right after DuckDB on the same store: the ratio of the wall clocks, and
whether both gave the same number of pairs per method.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from synthetic_corpus import generate  # noqa: E402
from process_tree import run_watched  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
ENWIKI_LINKS, ENWIKI_PASSAGES = 150_000_000, 22_000_000

MINE_SNIPPET = """
import sys
from pretriever.mine.config import MineConfig
from pretriever import mine
r = mine.run(MineConfig(corpus=sys.argv[1], out=sys.argv[2], methods="dl,cm", negatives="random",
                        engine=sys.argv[3], overwrite=True, memory_limit=sys.argv[4] or None,
                        max_spill=sys.argv[5] or None))
"""


def folder_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_size
            except OSError:  # a spill or temporary file removed meanwhile
                pass
    return total


class DiskPeak(threading.Thread):
    """Peak bytes under a folder, sampled every ``every`` seconds until ``stop()``."""

    def __init__(self, path: Path, every: float = 2.0):
        super().__init__(daemon=True)
        self.path, self.every, self.peak, self._done = path, every, 0, threading.Event()

    def run(self) -> None:
        while not self._done.wait(self.every):
            self.peak = max(self.peak, folder_bytes(self.path))

    def stop(self) -> int:
        self._done.set()
        self.join()
        return max(self.peak, folder_bytes(self.path))


def run_mine(store: Path, out: Path, engine: str, memory_limit: str = "", max_spill: str = "") -> dict:
    cmd = [sys.executable, "-c", MINE_SNIPPET, str(store), str(out), engine, memory_limit, max_spill]
    disk = DiskPeak(out)
    disk.start()
    started = time.perf_counter()
    returncode, _, stderr, peak_sum, peak_one = run_watched(cmd, every=0.2)
    seconds = time.perf_counter() - started
    peak_disk = disk.stop()
    measured = {"engine": engine, "seconds": round(seconds, 2), "peak_rss_sum_mib": round(peak_sum / 2**20, 1),
                "peak_rss_largest_mib": round(peak_one / 2**20, 1), "peak_disk_gib": round(peak_disk / 2**30, 2)}
    if returncode != 0:  # kept: how far it got and why it stopped is the result
        return {**measured, "error": stderr.strip().splitlines()[-1][:2000] if stderr.strip() else f"exit {returncode}"}
    manifest = json.loads((out / "pairs.json").read_text())
    methods = {m: {"candidates": v["candidates"], "pairs": v["pairs"]} for m, v in manifest["methods"].items()}
    return {**measured, "mine_seconds": manifest["seconds"],
            "memory_limit": manifest.get("duckdb_memory_limit") if engine == "duckdb" else None,
            "pairs_gib": round(folder_bytes(out) / 2**30, 2),
            "methods": methods, "cm_indegree_threshold": manifest.get("cm_indegree_threshold")}


def store_for(work: Path, n: int, keep: bool) -> tuple[Path, dict, float]:
    """A synthetic store of ``n`` links (reused from an earlier ``--keep-stores`` run when there is one)."""
    store = work / f"store-{n}"
    if keep and (store / "manifest.json").exists():
        m = json.loads((store / "manifest.json").read_text())
        if m["options"]["links"] == n:
            return store, m, m["build_seconds"]
    t0 = time.perf_counter()
    m = generate(store, n)
    return store, m, time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1e5,1e6,1e7")
    ap.add_argument("--spark-size", default="1e7", help="size to run Spark on ('' to skip)")
    ap.add_argument("--workdir", type=Path, default=None, help="where stores and pairs go (default: a temp dir)")
    ap.add_argument("--keep-stores", action="store_true", help="keep the generated stores in --workdir and reuse them")
    ap.add_argument("--memory-limit", default="", help="DuckDB memory limit, e.g. 8GiB (default: pretriever's, "
                                                        "half of the RAM)")
    ap.add_argument("--max-spill", default="", help="most disk DuckDB may spill to, e.g. 30GB (default: DuckDB's)")
    ap.add_argument("--merge", action="store_true", help="keep other sizes already in --json")
    ap.add_argument("--json", type=Path, default=REPO / "bench" / "out" / "mine.json")
    args = ap.parse_args()
    sizes = [int(float(s)) for s in args.sizes.split(",") if s]
    spark_size = int(float(args.spark_size)) if args.spark_size else None
    work = args.workdir or Path(tempfile.mkdtemp(prefix="bench-mine-"))
    work.mkdir(parents=True, exist_ok=True)
    console = Console()
    info = {"cores": os.cpu_count(), "memory_gib": round(psutil.virtual_memory().total / 2**30, 1),
            "python": platform.python_version(), "load_1m_at_start": os.getloadavg()[0],
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "disk_free_gib_at_start": round(shutil.disk_usage(work).free / 2**30, 1)}
    runs, spark = [], None
    if args.merge and args.json.exists():  # keep the sizes measured by an earlier invocation
        old = json.loads(args.json.read_text())
        runs = [r for r in old.get("runs", []) + old.get("failed", []) if r["links"] not in sizes]
        spark = old.get("spark") if spark_size not in sizes else None
    for n in sizes:
        store, m, gen_s = store_for(work, n, args.keep_stores)
        console.print(f"[dim]{n:,} links: store generated in {gen_s:.1f}s, mining...[/dim]")
        load = os.getloadavg()[0]
        r = run_mine(store, work / f"pairs-{n}", "duckdb", args.memory_limit, args.max_spill)
        r.update(links=n, passages=m["counts"]["passages"], documents=m["counts"]["documents"],
                 generate_seconds=round(gen_s, 2), store_gib=round(folder_bytes(store) / 2**30, 2),
                 load_1m_before=load, load_1m_after=os.getloadavg()[0],
                 date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        r.setdefault("memory_limit", args.memory_limit or "pretriever's default")
        runs.append(r)
        console.print(f"[dim]  {r['seconds']}s, peak {r['peak_rss_sum_mib']} MiB, disk {r['peak_disk_gib']} GiB, "
                      f"{r.get('methods') or r.get('error')}[/dim]")
        shutil.rmtree(work / f"pairs-{n}", ignore_errors=True)
        if spark_size == n and "error" not in r:
            load = os.getloadavg()[0]
            spark = run_mine(store, work / f"pairs-{n}-spark", "spark")
            spark.update(links=n, ratio_spark_over_duckdb=round(spark["seconds"] / r["seconds"], 2),
                         duckdb_seconds=r["seconds"], same_pair_counts=spark.get("methods") == r["methods"],
                         load_1m_before=load, load_1m_after=os.getloadavg()[0])
            console.print(f"[dim]  spark {spark['seconds']}s, same pair counts: {spark['same_pair_counts']}[/dim]")
            shutil.rmtree(work / f"pairs-{n}-spark", ignore_errors=True)
        if not args.keep_stores:
            shutil.rmtree(store, ignore_errors=True)
        info["load_1m_at_start"] = os.getloadavg()[0]
        save(args.json, info, runs, spark)  # after every size, so a cut-short run keeps what it measured
    report(console, *save(args.json, info, runs, spark))


def save(path: Path, info: dict, runs_in: list[dict], spark: dict | None) -> tuple:
    runs = sorted((r for r in runs_in if "error" not in r), key=lambda r: r["links"])
    failed = [r for r in runs_in if "error" in r]
    for r in runs:
        r.pop("exponent", None)
    for prev, cur in zip(runs, runs[1:]):
        cur["exponent"] = exponent(prev, cur)
    projection = None
    if runs:
        last = runs[-1]
        e = last.get("exponent", 1.0)
        projection = {"links": ENWIKI_LINKS, "passages": ENWIKI_PASSAGES, "exponent": e,
                      "from_links": last["links"],
                      "hours": round(last["seconds"] * (ENWIKI_LINKS / last["links"]) ** e / 3600, 2)}
    base = next((r for r in runs if r["links"] == 10**6), None)
    if base and runs[-1]["links"] > base["links"]:
        projection["exponent_from_1e6"] = exponent(base, runs[-1])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"machine": info, "runs": runs, "failed": failed, "spark": spark,
                                "projection": projection}, indent=1))
    return path, runs, spark, projection, failed


def exponent(small: dict, large: dict) -> float:
    return round(math.log(large["seconds"] / small["seconds"]) / math.log(large["links"] / small["links"]), 3)


def report(console: Console, path: Path, runs: list[dict], spark: dict | None, projection: dict | None,
           failed: list[dict]) -> None:
    table = Table(title="pretriever mine (dl,cm + random negatives, DuckDB)")
    for col in ("links", "passages", "memory limit", "seconds", "peak RSS MiB (tree)", "peak disk GiB", "dl pairs",
                "cm pairs", "exponent"):
        table.add_column(col, justify="right")
    for r in runs:
        table.add_row(f"{r['links']:,}", f"{r['passages']:,}", str(r.get("memory_limit")), f"{r['seconds']:.1f}",
                      f"{r['peak_rss_sum_mib']:,.0f}", str(r.get("peak_disk_gib", "")),
                      f"{r['methods']['dl']['pairs']:,}", f"{r['methods']['cm']['pairs']:,}",
                      str(r.get("exponent", "")))
    console.print(table)
    for r in failed:
        console.print(f"[red]{r['links']:,} links did not finish[/red] (memory limit {r.get('memory_limit')}): stopped "
                      f"after {r['seconds']:.0f} s, peak RSS {r['peak_rss_sum_mib']:,.0f} MiB, peak disk "
                      f"{r['peak_disk_gib']} GiB: {r['error']}")
    if spark:
        console.print(f"Spark local on {spark['links']:,} links: {spark['seconds']}s "
                      f"(Spark/DuckDB = {spark['ratio_spark_over_duckdb']}), peak {spark['peak_rss_sum_mib']} MiB, "
                      f"same pair counts as DuckDB: {spark.get('same_pair_counts')}")
    if projection:
        console.print(f"Projection to English Wikipedia ({ENWIKI_LINKS:,} links) with exponent "
                      f"{projection['exponent']}: {projection['hours']} h; exponent from 10^6: "
                      f"{projection.get('exponent_from_1e6', 'n/a')}")
    console.print(f"saved {path}")

if __name__ == "__main__":
    main()
