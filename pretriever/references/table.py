"""The ``references`` table and its crash-safe writer (journal + Parquet parts + final compaction).

Each finished URL is appended at once as one JSON line to a journal (so a kill -9 loses only the
pages in flight; a torn last line is ignored); every ``part_rows`` rows the journal becomes an
atomic Parquet part and is deleted. :meth:`ReferenceWriter.close` merges the parts, and the
``references.parquet`` of an earlier finished run when resuming, into one table sorted by URL.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pretriever.errors import PretrieverError
from pretriever.io import write_parquet
from pretriever.progress import QUIET, Reporter
from pretriever.stage import OutputFolder

REFERENCES_SCHEMA = pa.schema([
    ("url", pa.string()), ("final_url", pa.string()), ("status", pa.int32()), ("content_type", pa.string()),
    ("fetched_at", pa.string()), ("bytes", pa.int64()), ("title", pa.string()), ("text", pa.string()),
    ("error", pa.string()), ("error_detail", pa.string()), ("source", pa.string()), ("via_archive", pa.bool_()),
])
CITATIONS_SCHEMA = pa.schema([("doc_id", pa.string()), ("citation_idx", pa.int32()), ("url", pa.string()),
                              ("archive_url", pa.string())])
REFERENCES_FILE, CITATIONS_FILE, MANIFEST_FILE, WORK_DIR = (
    "references.parquet", "citations.parquet", "manifest.json", "_work")


class OutputExists(PretrieverError):
    """--out already holds results and neither --resume nor --overwrite was given."""


def _read_journal(path: Path) -> list[dict[str, Any]]:
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:  # the line being written when the process died
            break
    return rows


def references_folder(out: Path, report: Reporter = QUIET) -> OutputFolder:
    """REFS_DIR: the two tables, the manifest and the work folder of an unfinished run are the stage's."""
    return OutputFolder(out, stage="references", holds="references",
                        owns=(REFERENCES_FILE, CITATIONS_FILE, MANIFEST_FILE, WORK_DIR), error=OutputExists,
                        report=report)


class ReferenceWriter:
    """Append finished rows durably; ``done`` holds the URLs finished in this and earlier runs, ``failed``
    those of earlier runs whose row is a failure (a URL written again replaces its earlier row)."""

    def __init__(self, out: Path, *, resume: bool, overwrite: bool, part_rows: int = 500, report: Reporter = QUIET):
        self.out, self.work, self.part_rows = Path(out), Path(out) / WORK_DIR, part_rows
        final = self.out / REFERENCES_FILE
        folder = references_folder(self.out, report)
        folder.check()
        if (final.exists() or self.work.exists()) and not (resume or overwrite):
            raise OutputExists(f"{self.out} already holds references; give --resume to continue or "
                               "--overwrite to start again")
        folder.prepare(resume=resume, overwrite=overwrite, need_checkpoint=False)
        self.work.mkdir(parents=True, exist_ok=True)
        for journal in sorted(self.work.glob("journal-*.jsonl")):  # left by a killed run
            self._write_part(_read_journal(journal), journal.stem.replace("journal", "part"))
            journal.unlink()
        self.sources = sorted(self.work.glob("part-*.parquet")) + ([final] if final.exists() else [])
        self.done: set[str] = set()
        self.failed: set[str] = set()
        for source in self.sources:
            rows = pq.read_table(source, columns=["url", "error"]).to_pylist()
            self.done.update(r["url"] for r in rows)
            self.failed.update(r["url"] for r in rows if r["error"])
        self._next = len(list(self.work.glob("part-*.parquet")))
        self._rows: list[dict[str, Any]] = []
        self._journal = None
        self.written = 0  # rows added by this run

    def _write_part(self, rows: list[dict[str, Any]], stem: str) -> None:
        if rows:
            write_parquet(pa.Table.from_pylist(rows, schema=REFERENCES_SCHEMA), self.work / f"{stem}.parquet")

    def add(self, row: dict[str, Any]) -> None:
        if self._journal is None:
            self._journal = open(self.work / f"journal-{self._next:06d}.jsonl", "a", encoding="utf-8")
        self._journal.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._journal.flush()
        self._rows.append(row)
        self.written += 1
        self.done.add(row["url"])
        if len(self._rows) >= self.part_rows:
            self.flush()

    def flush(self) -> None:
        if self._journal is None:
            return
        self._journal.close()
        journal = Path(self._journal.name)
        self._write_part(self._rows, f"part-{self._next:06d}")
        journal.unlink()
        self._journal, self._rows, self._next = None, [], self._next + 1

    def abandon(self) -> int:
        """Stop after a failure: keep the journal for --resume, or drop the work folder when no run has
        written anything to it (so it blocks no new run). Returns the rows this run kept."""
        if self._journal is not None:
            self._journal.close()
            self._journal = None
        if not self.written and not self.sources:
            shutil.rmtree(self.work, ignore_errors=True)
        return self.written

    def close(self) -> pa.Table:
        """Write ``references.parquet`` (every row, sorted by URL, one per URL: the newest) and drop the
        work folder."""
        self.flush()
        newest_first = sorted(self.work.glob("part-*.parquet"), reverse=True)
        sources = newest_first + [s for s in self.sources if s.parent == self.out]
        tables = [pq.read_table(s, schema=REFERENCES_SCHEMA) for s in sources]
        table = pa.concat_tables(tables) if tables else REFERENCES_SCHEMA.empty_table()
        table = table.sort_by("url")
        if table.num_rows:  # one row per URL, the newest: the sort is stable (a part and its journal may
            # overlap after a kill; --retry-failed writes a URL again)
            keep = pc.invert(pc.equal(table["url"][1:], table["url"][:-1]))
            table = table.filter(pa.concat_arrays([pa.array([True]), keep.combine_chunks()]))
        write_parquet(table, self.out / REFERENCES_FILE)
        shutil.rmtree(self.work, ignore_errors=True)
        return table
