"""Parsing benchmark: ``pretriever corpus build`` against WikiExtractor on the same MediaWiki dump.

For the sample dump and a dump ``--scale`` times larger (its pages repeated with new
ids and titles, see ``make_big_dump.py``), it measures the wall clock of both tools
with the same number of processes (best of ``--repeat`` rounds; the tools take turns,
so a change in machine load hits both), the CPU seconds they use, throughput in MB of
decompressed XML per second, peak memory (RSS of the whole process tree, sampled every
20 ms in a run of its own) and pretriever's parse/finalize split, then projects the
time for full English Wikipedia. Figures are printed as a table and saved as JSON.

    python bench/bench_parse.py [--dump PATH] [--workers 2] [--scale 10] [--repeat 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import bz2
import importlib.util
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path

import psutil
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_big_dump import make_big_dump  # noqa: E402
from process_tree import watch_peak_rss  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
SAMPLE_NAME = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
OUT_DIR = REPO / "bench" / "out"
MB = 1_000_000  # throughput is in MB (10^6 bytes) of decompressed XML
ENWIKI_XML_GB = 100  # full English Wikipedia, pages-articles, decompressed (approximate)
OK_EXIT = (0, 3)  # pretriever exits 3 when the store is built but some pages failed to parse

PRODUCES = {"WikiExtractor": "text with links (JSON lines)",
            "pretriever": "+ redirects resolved, link targets, sentences, references"}

console = Console(width=max(shutil.get_terminal_size().columns, 200))  # the table stays one line a row


@dataclass
class Dump:
    """A dump file and the size of its decompressed XML."""

    label: str
    path: Path
    xml_bytes: int
    pages: int

    @property
    def megabytes(self) -> float:
        return self.xml_bytes / MB


@dataclass
class Run:
    """The timings of one tool on one dump, and what it produced."""

    tool: str
    dump: str
    seconds: list[float] = field(default_factory=list)
    cpu_seconds: list[float] = field(default_factory=list)  # user + system, all processes of the run
    produced: str = ""
    error: str | None = None
    peak_rss_sum_mib: float | None = None
    peak_rss_largest_mib: float | None = None
    phases_s: dict[str, float] | None = None
    mb_per_s: float | None = None
    mb_per_s_per_process: float | None = None
    ratio_vs_wikiextractor: float | None = None  # MB/s over WikiExtractor's (>1: pretriever is faster)
    cpu_ratio_vs_wikiextractor: float | None = None  # WikiExtractor's CPU seconds over pretriever's

    @property
    def best(self) -> float | None:
        return min(self.seconds) if self.seconds else None

    @property
    def least_cpu(self) -> float | None:
        return min(self.cpu_seconds) if self.cpu_seconds else None


# --- inputs -------------------------------------------------------------------------


def default_dump() -> Path:
    """The shared enwiki sample beside the repo, else the copy shipped in gensim's test data."""
    shared = REPO.parent / "shared" / "data" / "wiki" / SAMPLE_NAME
    if shared.exists():
        return shared
    spec = importlib.util.find_spec("gensim")
    if spec and spec.submodule_search_locations:
        bundled = Path(spec.submodule_search_locations[0]) / "test" / "test_data" / SAMPLE_NAME
        if bundled.exists():
            return bundled
    sys.exit(f"no sample dump found ({shared}, nor in gensim's test data); pass --dump")


def measure_dump(label: str, path: Path) -> Dump:
    """Decompressed size and page count of a ``.xml`` or ``.xml.bz2`` dump (one streaming pass)."""
    with open(path, "rb") as raw:
        compressed = raw.read(3) == b"BZh"
    size = pages = 0
    with (bz2.open(path) if compressed else open(path, "rb")) as f:
        for line in f:
            size += len(line)
            pages += b"<page>" in line
    return Dump(label, path, size, pages)


# --- running the tools ----------------------------------------------------------------


def wikiextractor_cmd(dump: Path, workers: int, out: Path) -> list[str]:
    return [sys.executable, "-m", "wikiextractor.WikiExtractor", "--links", "--json",
            "--processes", str(workers), "-o", str(out), str(dump)]


# 1 MB chunks, so that the 6 MB sample gives every worker work (the default 4 MB would not)
CHUNK_MB = "1"


def pretriever_cmd(dump: Path, workers: int, out: Path) -> list[str]:
    script = Path(sys.executable).with_name("pretriever")
    return [str(script) if script.exists() else "pretriever", "corpus", "build", str(dump),
            "--out", str(out), "--workers", str(workers), "--chunk-mb", CHUNK_MB, "--overwrite"]


def wikiextractor_output(out: Path) -> str:
    """How many articles WikiExtractor wrote."""
    articles = sum(1 for f in out.rglob("wiki_*") for _ in f.open("rb"))
    return f"{articles:,} articles"


def pretriever_output(out: Path) -> str:
    """The store's main counts, from its manifest."""
    counts = json.loads((out / "manifest.json").read_text())["counts"]
    return (f"{counts['documents']:,} documents, {counts['redirects']:,} redirects, {counts['passages']:,} passages, "
            f"{counts['sentences']:,} sentences, {counts['links']:,} links "
            f"({counts['links_to_documents']:,} to documents), {counts['citations']:,} references")


Job = tuple[Run, Callable[[Path], list[str]], Callable[[Path], str]]  # a run, its command, how to describe its output


def run_once(run: Run, make_cmd: Callable[[Path], list[str]], describe: Callable[[Path], str]) -> None:
    """Run a command into a fresh folder; record its wall and CPU seconds and its output, or its error."""
    with tempfile.TemporaryDirectory(prefix="bench-parse-") as tmp:
        out = Path(tmp) / "out"
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(make_cmd(out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        seconds = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in OK_EXIT:
            run.error = f"exit {done.returncode}: " + done.stderr.decode(errors="replace").strip()[-600:]
            return
        run.seconds.append(seconds)
        run.cpu_seconds.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        run.produced = describe(out)


def time_tools(jobs: list[Job], repeat: int) -> None:
    """``repeat`` rounds in which each tool runs once; a tool that fails is not run again."""
    for _ in range(repeat):
        for run, make_cmd, describe in jobs:
            if run.error is None:
                run_once(run, make_cmd, describe)


def peak_rss(cmd: list[str]) -> tuple[float, float, int]:
    """(peak of the summed RSS of the process tree, peak RSS of its largest process) in MiB, and the exit code."""
    with psutil.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as proc:
        peak_sum, peak_one = watch_peak_rss(proc)
    return peak_sum / 2**20, peak_one / 2**20, proc.returncode


def measure_memory(run: Run, make_cmd: Callable[[Path], list[str]]) -> None:
    """Peak RSS of one more run (a run of its own, so sampling does not slow the timed runs)."""
    with tempfile.TemporaryDirectory(prefix="bench-parse-") as tmp:
        total, largest, code = peak_rss(make_cmd(Path(tmp) / "out"))
    if code in OK_EXIT:
        run.peak_rss_sum_mib, run.peak_rss_largest_mib = round(total, 1), round(largest, 1)


def phase_split(run: Run, dump: Path, workers: int) -> None:
    """Parse and finalize seconds of one in-process build (parse ends when the last chunk is done)."""
    from pretriever.corpus import build as corpus_build
    from pretriever.corpus.config import CorpusConfig
    from pretriever.progress import Reporter

    last_chunk = started = time.perf_counter()

    class LastChunk(Reporter):  # hears each chunk as it is done
        def progress(self, task: str, done: int, total: int | None = None, unit: str = "items", **fields) -> None:
            nonlocal last_chunk
            last_chunk = time.perf_counter()

    with tempfile.TemporaryDirectory(prefix="bench-parse-") as tmp:
        try:
            corpus_build.run(CorpusConfig(input=dump, out=Path(tmp) / "out", workers=workers, overwrite=True,
                                           chunk_mb=float(CHUNK_MB)), LastChunk())
        except Exception as err:  # noqa: BLE001 -- the subprocess runs already recorded the error
            run.error = run.error or f"in-process build: {type(err).__name__}: {err}"
            return
    total = time.perf_counter() - started
    run.phases_s = {"parse": round(last_chunk - started, 3), "finalize": round(total - (last_chunk - started), 3),
                    "total": round(total, 3)}


def add_rates(runs: list[Run], dumps: dict[str, Dump], workers: int) -> None:
    """Fill MB/s, MB/s per process and pretriever/WikiExtractor ratios (wall clock and CPU)."""
    for run in runs:
        if run.error is None and run.best:
            run.mb_per_s = round(dumps[run.dump].megabytes / run.best, 3)
            run.mb_per_s_per_process = round(run.mb_per_s / workers, 3)
    for run in runs:
        other = next(r for r in runs if r.dump == run.dump and r.tool != run.tool)
        if run.tool == "pretriever" and run.mb_per_s and other.mb_per_s:
            run.ratio_vs_wikiextractor = round(run.mb_per_s / other.mb_per_s, 3)
            run.cpu_ratio_vs_wikiextractor = round(other.least_cpu / run.least_cpu, 3)


# --- report ---------------------------------------------------------------------------


def machine() -> dict[str, str | int | float]:
    """Cores, CPU model, memory, Python version and 1-minute load average of this machine."""
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cores": os.cpu_count() or 0, "cpu": model, "memory_gb": round(psutil.virtual_memory().total / 2**30, 1),
            "python": platform.python_version(), "platform": platform.platform(),
            "load_1m_at_start": os.getloadavg()[0]}


def projection(run: Run, workers: int) -> dict[str, float] | None:
    """Hours for ``ENWIKI_XML_GB`` of XML at ``run``'s rate, here and on a 16-core machine (linear scaling assumed)."""
    if not run.mb_per_s:
        return None
    megabytes = ENWIKI_XML_GB * 1000
    return {"xml_gb": ENWIKI_XML_GB, "workers": workers,
            "hours_here": round(megabytes / run.mb_per_s / 3600, 2),
            "hours_per_16_core_machine": round(megabytes / (run.mb_per_s_per_process * 16) / 3600, 2)}


def fmt(value: float | None, spec: str = ".2f", unit: str = "") -> str:
    return "–" if value is None else f"{value:{spec}}{unit}"


def ratio(run: Run) -> str:
    """Wall-clock ratio, with the CPU-time ratio in brackets (steadier on a busy machine)."""
    if run.ratio_vs_wikiextractor is None:
        return "–"
    return f"{run.ratio_vs_wikiextractor:.2f}x ({run.cpu_ratio_vs_wikiextractor:.2f}x)"


def print_table(runs: list[Run], dumps: dict[str, Dump], workers: int, repeat: int) -> None:
    """The figures side by side, one row per tool and dump size."""
    table = Table(title=f"MediaWiki dump parsing, {workers} processes each, best of {repeat}")
    for name, justify in [("tool", "left"), ("dump", "left"), ("XML MB", "right"), ("pages", "right"),
                          ("best s", "right"), ("CPU s", "right"), ("MB/s", "right"), ("MB/s/proc", "right"),
                          ("pretriever/WE (CPU)", "right"), ("peak RSS sum", "right"), ("peak RSS largest", "right"),
                          ("produces", "left")]:
        table.add_column(name, justify=justify, overflow="fold")
    for run in runs:
        dump = dumps[run.dump]
        table.add_row(run.tool, dump.label, f"{dump.megabytes:.1f}", f"{dump.pages:,}", fmt(run.best), fmt(run.least_cpu),
                      fmt(run.mb_per_s), fmt(run.mb_per_s_per_process), ratio(run),
                      fmt(run.peak_rss_sum_mib, ".0f", " MiB"), fmt(run.peak_rss_largest_mib, ".0f", " MiB"),
                      PRODUCES[run.tool] if run.error is None else f"[red]failed: {run.error.splitlines()[-1]}[/red]")
    console.print(table)


def print_notes(runs: list[Run], proj: dict[str, float] | None, info: dict[str, str | int | float]) -> None:
    """Outputs, phase split, projection, errors and the machine, below the table."""
    for run in runs:
        if run.produced:
            console.print(f"{run.tool} on {run.dump} wrote {run.produced}")
    for run in runs:
        if run.phases_s:
            p = run.phases_s
            console.print(f"pretriever on {run.dump} (in-process): parse {p['parse']:.2f} s + "
                          f"finalize {p['finalize']:.2f} s = {p['total']:.2f} s")
    if proj:
        console.print(f"Projection: full English Wikipedia (~{proj['xml_gb']} GB of decompressed XML) at the big-dump "
                      f"rate takes {proj['hours_here']:.1f} h with {proj['workers']} workers on this machine, "
                      f"{proj['hours_per_16_core_machine']:.1f} h per 16-core machine "
                      "(assuming throughput scales linearly with cores).")
    for run in runs:
        if run.error:
            console.print(f"[red]{run.tool} on {run.dump} failed[/red]: {run.error}")
    console.print(f"Machine: {info['cores']} cores, {info['cpu']}, {info['memory_gb']} GB RAM, "
                  f"Python {info['python']} ({info['platform']}); load average (1 min) "
                  f"{info['load_1m_at_start']:.2f} at start, {info['load_1m_at_end']:.2f} at end")


# --- main -----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", type=Path, help="MediaWiki dump (default: the enwiki sample)")
    parser.add_argument("--workers", type=int, default=2, help="processes for both tools")
    parser.add_argument("--scale", type=int, default=10, help="the big dump is the sample's pages this many times")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per tool and dump (best is kept)")
    parser.add_argument("--json", type=Path, default=OUT_DIR / "parse.json", help="where to save the figures")
    args = parser.parse_args()

    info = machine()
    sample = (args.dump or default_dump()).resolve()
    big = make_big_dump(sample, OUT_DIR / f"{sample.name.split('.')[0]}-x{args.scale}.xml.bz2", args.scale)
    dumps = {"sample": measure_dump("sample", sample), f"x{args.scale}": measure_dump(f"x{args.scale}", big)}

    runs: list[Run] = []
    for label, dump in dumps.items():
        console.print(f"[bold]{label}[/bold]: {dump.path.name}, {dump.megabytes:.1f} MB XML, {dump.pages:,} pages")
        jobs: list[Job] = [(Run(tool, label), partial(make_cmd, dump.path, args.workers), describe)
                           for tool, make_cmd, describe in [("WikiExtractor", wikiextractor_cmd, wikiextractor_output),
                                                            ("pretriever", pretriever_cmd, pretriever_output)]]
        time_tools(jobs, args.repeat)
        for run, make_cmd, _ in jobs:
            if run.error is None:
                measure_memory(run, make_cmd)
            if run.error is None and run.tool == "pretriever":
                phase_split(run, dump.path, args.workers)
            runs.append(run)
    add_rates(runs, dumps, args.workers)
    big_pretriever = next(r for r in runs if r.tool == "pretriever" and r.dump != "sample")
    proj = projection(big_pretriever, args.workers)
    info["load_1m_at_end"] = os.getloadavg()[0]

    print_table(runs, dumps, args.workers, args.repeat)
    print_notes(runs, proj, info)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": " ".join(sys.argv), "machine": info,
        "workers": args.workers, "repeat": args.repeat, "scale": args.scale, "mb": MB,
        "dumps": {k: {**asdict(d), "path": str(d.path)} for k, d in dumps.items()},
        "runs": [{**asdict(r), "best_s": r.best, "least_cpu_s": r.least_cpu} for r in runs], "projection": proj,
    }, indent=2))
    console.print(f"saved {args.json}")


if __name__ == "__main__":
    main()
