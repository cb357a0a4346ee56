"""``pretriever corpus build``: parse an input in parallel chunks, then finalize the store.

Work happens in two phases. *Parse*: chunks of pages go to worker processes (or Spark
tasks), each of which writes its chunk's part files (atomically) under ``OUT/_work``; the
main process records how many chunks are finished from the first on in a checkpoint, so
``--resume`` restarts right after them. *Finalize*: the engine (DuckDB, or Spark SQL)
resolves redirects and link targets across the whole corpus and the store's tables are
moved into place; the manifest is written last, so a store with a manifest is a complete
store. :mod:`pretriever.corpus.engine` says what differs between the engines (nothing in
the output).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pretriever import __version__
from pretriever.corpus.config import CorpusConfig
from pretriever.corpus.engine import BuildEngine, LocalBuildEngine
from pretriever.corpus.finalize import finalize_store
from pretriever.corpus.manifest import MANIFEST, StoreManifest
from pretriever.corpus.formats import detect_format
from pretriever.corpus.formats.base import Chunk, FormatOptions, InputFormat, resolve_input
from pretriever.corpus.model import InputError
from pretriever.corpus.schema import CHUNK_TABLES, STORE_TABLES
from pretriever.corpus.segment import SegmentOptions
from pretriever.corpus.spark import SparkBuildEngine
from pretriever.progress import QUIET, Reporter
from pretriever.stage import OutputFolder, StageResult

WORK = "_work"
CHECKPOINT = "checkpoint.json"


@dataclass
class CorpusResult(StageResult):
    """A build: the store (``out``, its ``manifest``), or, ``stopped`` early as asked (--max-chunks), the chunks
    done so far (``manifest`` is then None: the store is not finished; continue with --resume)."""

    manifest: StoreManifest | None = field(default=None, kw_only=True)
    chunks_done: int
    seconds: float
    stopped: bool = False


def run(cfg: CorpusConfig, report: Reporter = QUIET, spark_session: Any = None) -> CorpusResult:
    """Build (or resume) the store described by ``cfg``; raises :class:`InputError` on fatal input errors.

    ``report`` hears the bytes of the input read so far (task "parsing NAME", with the pages parsed);
    ``spark_session``: a running Spark session to use with ``engine="spark"`` (it is left running).
    """
    started = time.perf_counter()
    input_path = resolve_input(cfg.input)
    fmt_cls = detect_format(input_path, cfg.format)
    fmt = fmt_cls(input_path, FormatOptions(multistream_index=cfg.multistream_index))
    options = SegmentOptions(
        words=fmt_cls.default_words if cfg.words is None else cfg.words,
        min_title_chars=(3 if fmt_cls.has_links else 0) if cfg.min_title_chars is None else cfg.min_title_chars,
        drop_blank=not cfg.keep_blank, keep_lists=cfg.keep_lists,
    )
    engine = open_engine(cfg, fmt, spark_session)
    try:
        return _build(cfg, input_path, fmt, options, engine, report, started)
    finally:
        engine.close()


def open_engine(cfg: CorpusConfig, fmt: InputFormat, spark_session: Any = None) -> BuildEngine:
    """The engine ``cfg.engine`` names, after it has checked that it can read ``fmt``'s input."""
    if cfg.engine == "spark":
        SparkBuildEngine.check_input(fmt)  # before a Spark session is started for nothing
        return SparkBuildEngine(cfg.workers, cfg.spark_master, spark_session)
    return LocalBuildEngine(cfg.workers)


def _build(cfg: CorpusConfig, input_path: Path, fmt: InputFormat, options: SegmentOptions, engine: BuildEngine,
           report: Reporter, started: float) -> CorpusResult:
    fmt_cls = type(fmt)
    work = cfg.out / WORK
    fingerprint = _fingerprint(input_path, fmt_cls.name, options, cfg)
    folder = _store_folder(cfg.out, report)
    first_chunk = _prepare_output(cfg, folder, work, fingerprint)
    task, size = f"parsing {input_path.name}", input_path.stat().st_size if input_path.is_file() else None
    pages = 0

    done, finished = first_chunk, set()
    context = fmt.context()
    chunks = fmt.iter_chunks(cfg.chunk_pages, first_chunk, cfg.chunk_bytes)
    if cfg.max_chunks is not None:
        chunks = _take(chunks, cfg.max_chunks - first_chunk)
    position = getattr(fmt, "position", None)
    try:
        for summary, read in engine.run_chunks(chunks, fmt_cls, context, options, work, position):
            finished.add(summary.index)
            while done in finished:  # the checkpoint counts chunks finished from the first on
                done += 1
            OutputFolder.save_fingerprint(work / CHECKPOINT, fingerprint, chunks_done=done)
            pages += summary.pages
            report.progress(task, read or 0, size, unit="bytes", pages=pages)
    except InputError as err:
        raise InputError(f"{err}\n{done} chunk(s) before the error are saved "
                         f"in {work}; fix the input and run again with --resume to continue.") from err

    sample = cfg.max_chunks is not None and done >= cfg.max_chunks and _has_more(fmt, cfg, done)
    if sample and not cfg.sample:
        return CorpusResult(out=cfg.out, chunks_done=done, seconds=time.perf_counter() - started, stopped=True)
    if size:
        report.progress(task, size, size, unit="bytes", pages=pages)
    head = _manifest_head(cfg, input_path, fmt_cls, options)
    if sample:  # a reader of the store must not take a sample for the whole input
        head["sample"] = {"chunks": done, "chunk_pages": cfg.chunk_pages, "chunk_mb": cfg.chunk_mb}
    tables = finalize_store(cfg.out, work, engine)
    shutil.rmtree(work)
    seconds = round(time.perf_counter() - started, 3)
    manifest = StoreManifest.from_json({**head, **tables, "build_seconds": seconds})
    manifest.write(cfg.out)
    folder.seal()
    return CorpusResult(out=cfg.out, manifest=manifest, chunks_done=done, seconds=seconds)


def _take(chunks: Iterator[Chunk], n: int) -> Iterator[Chunk]:
    for i, chunk in enumerate(chunks):
        if i >= n:
            return
        yield chunk


def _has_more(fmt: InputFormat, cfg: CorpusConfig, done: int) -> bool:
    return next(iter(fmt.iter_chunks(cfg.chunk_pages, done, cfg.chunk_bytes)), None) is not None


def _fingerprint(input_path: Path, fmt_name: str, options: SegmentOptions, cfg: CorpusConfig) -> dict[str, Any]:
    """What must not change between an interrupted build and its --resume."""
    return {"input": str(input_path.resolve()), "format": fmt_name, **options.__dict__, "chunk_pages": cfg.chunk_pages,
            "chunk_mb": cfg.chunk_mb, "multistream_index": str(cfg.multistream_index), "pretriever": __version__}


def _store_folder(out: Path, report: Reporter = QUIET) -> OutputFolder:
    """A store's folder: the manifest, the work folder of an unfinished build and the tables are the build's."""
    tables = [name if is_dir else f"{name}.parquet" for name, (_, is_dir) in STORE_TABLES.items()]
    return OutputFolder(out, stage="corpus", holds="a corpus store", owns=(MANIFEST, WORK, *tables),
                        error=InputError, report=report)


def _prepare_output(cfg: CorpusConfig, out: OutputFolder, work: Path, fingerprint: dict[str, Any]) -> int:
    """Make the output folder ready; return the first chunk still to do (0 for a fresh build)."""
    out.check()  # before anything in it is read: an unmarked folder is nobody's business here
    checkpoint = work / CHECKPOINT
    if cfg.resume and not cfg.overwrite:
        if not checkpoint.exists():
            if (cfg.out / MANIFEST).exists():
                raise InputError(f"{cfg.out} is already a complete store; nothing to resume")
            raise InputError(f"{cfg.out} has no interrupted build to resume (no {checkpoint})")
        out.prepare(resume=True, need_checkpoint=False)
        out.check_fingerprint(checkpoint, fingerprint, "; the interrupted build used other input or options: "
                              "run with the same ones, or start afresh with --overwrite")
        done = int(json.loads(checkpoint.read_text())["chunks_done"])
        for part in work.glob("*/part-*"):  # chunks finished out of order past the checkpoint
            if int(part.name.split("-")[1].split(".")[0]) >= done:
                part.unlink()
        return done
    if checkpoint.exists() and not cfg.overwrite:
        raise InputError(f"{cfg.out} holds an interrupted build; pass --resume to continue it or --overwrite to "
                         "replace it")
    out.prepare(resume=cfg.resume, overwrite=cfg.overwrite)  # both: refused
    for name in [*CHUNK_TABLES, "summaries"]:
        (work / name).mkdir(parents=True, exist_ok=True)
    return 0


def _manifest_head(cfg: CorpusConfig, input_path: Path, fmt_cls: type[InputFormat], options: SegmentOptions) -> dict[str, Any]:
    return {
        "pretriever_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "input": {"path": str(input_path.resolve()), "bytes": input_path.stat().st_size if input_path.is_file() else None,
                  "format": fmt_cls.name},
        "options": {**cfg.to_json(), "words": options.words, "min_title_chars": options.min_title_chars},
    }
