"""Corpus build on Spark (local mode) against the local engine, on the same multistream dumps.

The sample dump and a dump ``--scale`` times larger (its pages repeated with new ids and
titles, see ``make_big_dump.py``) are both written in Wikipedia's multistream layout (100
pages per bz2 stream, plus the index). For each size, in one run:

- **End to end**: ``pretriever corpus build DUMP --out TMP --engine local|spark --workers N
  --chunk-pages P`` as a subprocess (interpreter, imports and, for Spark, the JVM start
  included); the engines take turns, ``--repeat`` rounds, the best wall clock is kept;
  the ratio is Spark over local (>1: Spark is slower).
- **Phases**: in-process builds (``--repeat`` per engine, the fastest kept), Spark with a
  session started once (its start is reported alone): parse seconds (until the last chunk is
  done) and finalize seconds.
- **Identity**: every Parquet file of the two stores is compared byte for byte.

    python bench/bench_build_spark.py [--workers 2] [--scale 10] [--chunk-pages 100] [--repeat 2] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from rich.table import Table

from pretriever.backends import spark_session
from pretriever.corpus import build as corpus_build
from pretriever.corpus.config import CorpusConfig
from pretriever.progress import Reporter

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_parse import Dump, console, default_dump, fmt, machine, measure_dump  # noqa: E402
from make_big_dump import make_big_dump, multistream_index  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "bench" / "out"
ENGINES = ("local", "spark")


@dataclass
class Run:
    """One engine on one dump: end-to-end wall clocks and the in-process phase split."""

    engine: str
    dump: str
    seconds: list[float] = field(default_factory=list)
    phases_s: dict[str, float] | None = None
    error: str | None = None

    @property
    def best(self) -> float | None:
        return min(self.seconds) if self.seconds else None


def cli(dump: Path, out: Path, engine: str, workers: int, chunk_pages: int) -> list[str]:
    script = Path(sys.executable).with_name("pretriever")
    return [str(script) if script.exists() else "pretriever", "corpus", "build", str(dump), "--out", str(out),
            "--engine", engine, "--workers", str(workers), "--chunk-pages", str(chunk_pages), "--overwrite"]


def time_cli(run: Run, dump: Path, workers: int, chunk_pages: int) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        started = time.perf_counter()
        done = subprocess.run(cli(dump, Path(tmp) / "out", run.engine, workers, chunk_pages),
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        seconds = time.perf_counter() - started
    if done.returncode not in (0, 3):
        run.error = f"exit {done.returncode}: " + done.stderr.decode(errors="replace").strip()[-600:]
    else:
        run.seconds.append(round(seconds, 3))


def in_process(run: Run, dump: Path, out: Path, workers: int, chunk_pages: int, session) -> None:
    """Parse and finalize seconds of one build in this process (parse ends when the last chunk is done);
    the fastest of the runs so far is kept."""
    started = last_chunk = time.perf_counter()

    class LastChunk(Reporter):  # hears each chunk as it is done
        def progress(self, task: str, done: int, total: int | None = None, unit: str = "items", **fields) -> None:
            nonlocal last_chunk
            last_chunk = time.perf_counter()

    corpus_build.run(CorpusConfig(input=dump, out=out, engine=run.engine, workers=workers, chunk_pages=chunk_pages,
                                   overwrite=True), LastChunk(), spark_session=session)
    total = time.perf_counter() - started
    if run.phases_s is None or total < run.phases_s["total"]:
        run.phases_s = {"parse": round(last_chunk - started, 3),
                        "finalize": round(total - (last_chunk - started), 3), "total": round(total, 3)}


def identical(a: Path, b: Path) -> bool:
    """Whether two stores hold the same Parquet files, byte for byte."""
    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.parquet"))}
    return files(a) == files(b)


def ratio(runs: list[Run], dump: str, value) -> float | None:
    local, spark = (next(r for r in runs if r.dump == dump and r.engine == e) for e in ENGINES)
    a, b = value(local), value(spark)
    return round(b / a, 2) if a and b else None


def print_table(runs: list[Run], dumps: dict[str, Dump], same: dict[str, bool], workers: int, repeat: int,
                session_s: float) -> None:
    table = Table(title=f"corpus build, local engine vs Spark local mode (local[{workers}]), {workers} workers, "
                        f"best of {repeat}")
    for name in ("dump", "XML MB", "pages", "engine", "end to end s", "spark/local", "parse s", "finalize s",
                 "in-process s", "spark/local in-process", "stores identical"):
        table.add_column(name, justify="left" if name in ("dump", "engine") else "right")
    for run in runs:
        dump = dumps[run.dump]
        p = run.phases_s or {}
        spark = run.engine == "spark"
        table.add_row(dump.label, f"{dump.megabytes:.1f}", f"{dump.pages:,}", run.engine,
                      f"{run.best:.2f}" if run.best else f"failed: {run.error}",
                      fmt(ratio(runs, run.dump, lambda r: r.best), ".2f", "x") if spark else "",
                      f"{p.get('parse', 0):.2f}", f"{p.get('finalize', 0):.2f}", f"{p.get('total', 0):.2f}",
                      fmt(ratio(runs, run.dump, lambda r: (r.phases_s or {}).get("total")), ".2f", "x") if spark else "",
                      ("yes" if same[run.dump] else "NO") if spark else "")
    console.print(table)
    console.print(f"Spark session start (in process, once): {session_s:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", type=Path, help="MediaWiki dump (default: the enwiki sample)")
    parser.add_argument("--workers", type=int, default=2, help="local worker processes and local Spark cores")
    parser.add_argument("--scale", type=int, default=10, help="the big dump is the sample's pages this many times")
    parser.add_argument("--chunk-pages", type=int, default=100, help="pages per chunk (100: one stream per task)")
    parser.add_argument("--repeat", type=int, default=2, help="end-to-end runs per engine and dump (best is kept)")
    parser.add_argument("--json", type=Path, default=OUT_DIR / "build_spark.json", help="where to save the figures")
    args = parser.parse_args()

    info = machine()
    sample = (args.dump or default_dump()).resolve()
    stem = sample.name.split(".")[0]
    paths = {"sample": make_big_dump(sample, OUT_DIR / f"{stem}-x1-multistream.xml.bz2", 1, 100),
             f"x{args.scale}": make_big_dump(sample, OUT_DIR / f"{stem}-x{args.scale}-multistream.xml.bz2",
                                             args.scale, 100)}
    dumps = {label: measure_dump(label, path) for label, path in paths.items()}
    assert all(multistream_index(p).exists() for p in paths.values())

    runs: list[Run] = []
    for label, path in paths.items():
        pair = [Run(engine, label) for engine in ENGINES]
        for _ in range(args.repeat):
            for run in pair:
                if run.error is None:
                    time_cli(run, path, args.workers, args.chunk_pages)
        runs += pair

    started = time.perf_counter()
    session = spark_session(args.workers)
    session_s = time.perf_counter() - started
    same = {}
    with tempfile.TemporaryDirectory(prefix="bench-build-") as tmp:
        for label, path in paths.items():
            for _ in range(args.repeat):
                for run in (r for r in runs if r.dump == label):
                    in_process(run, path, Path(tmp) / label / run.engine, args.workers, args.chunk_pages,
                               session if run.engine == "spark" else None)
            same[label] = identical(Path(tmp) / label / "local", Path(tmp) / label / "spark")
    session.stop()
    info["load_1m_at_end"] = os.getloadavg()[0]

    print_table(runs, dumps, same, args.workers, args.repeat, session_s)
    console.print(f"Machine: {info['cores']} cores, {info['cpu']}, {info['memory_gb']} GB RAM, "
                  f"Python {info['python']}; load average (1 min) {info['load_1m_at_start']:.2f} at start, "
                  f"{info['load_1m_at_end']:.2f} at end")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": " ".join(sys.argv), "machine": info,
        "workers": args.workers, "scale": args.scale, "chunk_pages": args.chunk_pages, "repeat": args.repeat,
        "dumps": {k: {**asdict(d), "path": str(d.path)} for k, d in dumps.items()},
        "spark_session_start_s": round(session_s, 3), "stores_identical": same,
        "runs": [{**asdict(r), "best_s": r.best} for r in runs],
        "ratio_spark_over_local": {label: ratio(runs, label, lambda r: r.best) for label in dumps},
        "ratio_spark_over_local_in_process": {label: ratio(runs, label, lambda r: (r.phases_s or {}).get("total"))
                                              for label in dumps},
    }, indent=2))
    console.print(f"saved {args.json}")


if __name__ == "__main__":
    main()
