"""Sentence splitting: pretriever's rule-based splitter against blingfire and pySBD, in one run.

Input: the paragraphs (lines) of the enwiki sample's clean text, as the corpus build
splits them. For each splitter: CPU seconds over all lines (pySBD, being slow, over
the first ``--pysbd-lines``), MB of text per CPU second, the number of sentences, and
its answers on the known hard cases ("Brig. Gen.", "vz.", initials, "U.S.", "No. 5",
"St."). A splitter that is not installed is reported as such (they are not
dependencies of pretriever: ``pip install blingfire pysbd`` to compare).

    python bench/bench_sentences.py [--dump PATH] [--pysbd-lines 2000] [--json bench/out/sentences.json]
"""

from __future__ import annotations

import argparse
import bz2
import json
import re
import sys
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from pretriever.corpus.sentences import split_sentences
from pretriever.corpus.titles import Namespaces
from pretriever.corpus.wikitext import clean_wikitext

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_parse import OUT_DIR, default_dump  # noqa: E402

CASES = [
    "He was promoted to Brig. Gen. Smith in 1942. He retired.",
    "The rifle is the Sa vz. 58. It was made in Czechoslovakia.",
    "J. R. R. Tolkien wrote it. J.R.R. Tolkien was British.",
    "The U.S. Army grew. It was big.",
    "He wore No. 5 for the team. Then he left.",
    "They lived on St. Mark's Place. It was loud.",
]
EXPECTED = [2, 2, 2, 2, 2, 2]


def paragraphs(dump: Path) -> list[str]:
    xml = bz2.decompress(dump.read_bytes()).decode()
    lines = []
    for m in re.finditer(r"<ns>0</ns>.*?<text[^>]*>(.*?)</text>", xml, re.S):
        text = clean_wikitext(m.group(1).replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
                              .replace("&amp;", "&"), Namespaces()).text
        lines.extend(line for line in text.split("\n") if line)
    return lines


def splitters(pysbd_lines: int):
    yield "pretriever", lambda line: [line[s:e] for s, e in split_sentences(line)], None
    try:
        import blingfire
        yield "blingfire", lambda line: blingfire.text_to_sentences(line).split("\n"), None
    except ImportError:
        yield "blingfire", None, None
    try:
        import pysbd
        seg = pysbd.Segmenter(language="en", clean=False)
        yield "pySBD", lambda line: [s.strip() for s in seg.segment(line)], pysbd_lines
    except ImportError:
        yield "pySBD", None, None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", type=Path, help="MediaWiki dump (default: the enwiki sample)")
    parser.add_argument("--pysbd-lines", type=int, default=2000, help="lines timed for pySBD (it is slow)")
    parser.add_argument("--json", type=Path, default=OUT_DIR / "sentences.json")
    args = parser.parse_args()
    lines = paragraphs(args.dump or default_dump())
    rows = []
    for name, split, limit in splitters(args.pysbd_lines):
        if split is None:
            rows.append({"splitter": name, "error": "not installed"})
            continue
        sub = lines[:limit] if limit else lines
        started = time.process_time()
        n = sum(len(split(line)) for line in sub)
        cpu = time.process_time() - started
        mb = sum(len(line.encode()) for line in sub) / 1e6
        cases = [len(split(c)) == e for c, e in zip(CASES, EXPECTED)]
        rows.append({"splitter": name, "lines": len(sub), "mb": round(mb, 3), "sentences": n, "cpu_s": round(cpu, 3),
                     "mb_per_cpu_s": round(mb / cpu, 2), "hard_cases_right": sum(cases),
                     "hard_cases_wrong": [c for c, ok in zip(CASES, cases) if not ok]})
    ours = rows[0]["mb_per_cpu_s"]
    table = Table(title="Sentence splitting, one core")
    for col in ("splitter", "lines", "MB", "sentences", "CPU s", "MB/CPU s", "pretriever/it", "hard cases right"):
        table.add_column(col)
    for r in rows:
        if "error" in r:
            table.add_row(r["splitter"], *["–"] * 6, r["error"])
            continue
        table.add_row(r["splitter"], f"{r['lines']:,}", f"{r['mb']:.2f}", f"{r['sentences']:,}", f"{r['cpu_s']:.2f}",
                      f"{r['mb_per_cpu_s']:.2f}", f"{ours / r['mb_per_cpu_s']:.1f}x",
                      f"{r['hard_cases_right']}/{len(CASES)}")
    Console(width=160).print(table)
    for r in rows:
        for case in r.get("hard_cases_wrong", []):
            print(f"{r['splitter']} splits wrongly: {case!r}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"date": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "command": " ".join(sys.argv),
                                     "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
