"""The folder ``pretriever generate`` writes, shared by generation (:mod:`pretriever.generate.run`) and the
import of queries made elsewhere (:mod:`pretriever.generate.importer`): its result type, its parts, preparing a
run (start, resume, join a shard) and finishing it (the table and the manifest)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pretriever import __version__
from pretriever.data import QUERIES_FILE, PassageSource
from pretriever.generate.config import GenerateConfig
from pretriever.generate.errors import GenerateError
from pretriever.generate.manifest import GenerateManifest
from pretriever.io import read_json, write_json, write_parquet
from pretriever.progress import QUIET, Reporter
from pretriever.stage import OutputFolder, StageResult

MANIFEST = GenerateManifest.FILE
PARTS = "parts"
STATE = "state.json"
SCHEMA = pa.schema([("passage_id", pa.string()), ("candidate", pa.int32()), ("text", pa.string())])


@dataclass
class GenerateResult(StageResult):
    """A run (or an import): ``manifest`` is manifest.json once every part is there (``complete``), else None."""

    manifest: GenerateManifest | None = field(default=None, kw_only=True)
    config: GenerateConfig
    passages: int = 0  # passages given queries in this run
    queries: int = 0  # rows written in this run
    skipped: dict[str, int] = field(default_factory=dict)  # what was left out, and why
    prefix_note: str = ""  # which prefix was used, and why
    seconds: float = 0.0
    complete: bool = False  # generated_queries.parquet was written

    @property
    def rate(self) -> float:
        return self.passages / self.seconds if self.seconds > 0 else 0.0


def open_passages(corpus: Path) -> PassageSource:
    """The store's passages in index order: the one place this stage reads the corpus."""
    return PassageSource(corpus)


def part_path(out: Path, j: int) -> Path:
    """Where chunk ``j``'s queries are written until every part is there."""
    return out / PARTS / f"part-{j:06d}.parquet"


def queries_folder(out: Path, report: Reporter = QUIET) -> OutputFolder:
    """QUERIES_DIR: the table, the manifest and the parts of an unfinished run are the stage's."""
    return OutputFolder(out, stage="generate", holds="generated queries", owns=(QUERIES_FILE, MANIFEST, PARTS),
                        error=GenerateError, report=report)


def prepare(cfg: GenerateConfig, state: dict[str, Any], report: Reporter = QUIET) -> None:
    """Start, resume or join (another shard) a run in ``cfg.out``; refuse to mix settings."""
    out = cfg.out
    folder = queries_folder(out, report)
    folder.check()
    saved_path = out / PARTS / STATE
    if cfg.overwrite:
        if folder.ours():
            folder.clear()
    elif (out / MANIFEST).exists():
        raise GenerateError(f"{out} already holds generated queries; pass --overwrite to replace them")
    elif saved_path.exists():
        saved = read_json(saved_path, GenerateError)
        if saved != state:
            diff = sorted(k for k in set(saved) | set(state) if saved.get(k) != state.get(k))
            raise GenerateError(f"{out} holds a run with other settings ({', '.join(diff)} differ); use the same "
                                "settings, or --overwrite to start again")
        if not cfg.resume and cfg.shard is None:
            raise GenerateError(f"{out} holds an interrupted run; continue it with --resume or start again with "
                                "--overwrite")
    folder.claim()
    write_json(saved_path, state)


def finish(cfg: GenerateConfig, parts: list[Path], result: GenerateResult, passages: int,
            extra: dict[str, Any] | None = None) -> None:
    """Concatenate the parts into the table, write the manifest, drop the parts."""
    table = pa.concat_tables([pq.read_table(p, schema=SCHEMA) for p in parts]) if parts else SCHEMA.empty_table()
    write_parquet(table, cfg.out / QUERIES_FILE)
    empty = sum(1 for t in table.column("text").to_pylist() if not t)
    result.complete = True
    result.manifest = GenerateManifest.from_json({
        "pretriever_version": __version__,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "corpus": str(cfg.corpus),
        "table": QUERIES_FILE,
        "columns": SCHEMA.names,
        "passages": passages,
        "passages_with_queries": len(set(table.column("passage_id").to_pylist())),
        "queries": table.num_rows,
        "empty_queries": empty,
        "options": cfg.to_json(),
        "seconds_last_run": round(result.seconds, 2),
        **(extra or {}),
    })
    result.manifest.write(cfg.out)
    shutil.rmtree(cfg.out / PARTS, ignore_errors=True)
    queries_folder(cfg.out).seal()
