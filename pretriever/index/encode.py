"""Encode a corpus store into a dense index: sharded, checkpointed, resumable.

The passages (in index order, see :mod:`pretriever.data.passages`) are cut into
*chunks* of ``checkpoint_every`` rows numbered over the whole corpus. A chunk is the
unit of work, of checkpoints and of sharding:

- each finished chunk is written atomically to ``OUT/_work/chunks/chunk-J.npy`` (vectors,
  float32) beside ``chunk-J.ids.parquet`` (its passage ids); an interrupted run resumed
  with ``resume=True`` skips the finished chunks;
- shard ``i/n`` is the contiguous run of chunks ``i*J//n ... (i+1)*J//n - 1``; each machine
  encodes its shard into its own ``--out`` (or a shared one), and :func:`merge_index`
  gathers the chunks into one index;
- within a chunk, passages are sorted by length and handed to ``SentenceTransformer.encode``
  in slices of whole batches, so every batch holds the same passages whatever the
  sharding or interruptions: resumed and sharded runs give identical vectors to a
  one-process run (on the same hardware, software and thread count).

``OUT/_work/encode.json`` records the settings; every shard, resume and merge checks
that it is continuing the same encode.
"""

from __future__ import annotations

import json
import shutil
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pretriever import __version__
from pretriever.index.bm25 import build_bm25
from pretriever.index.config import IndexConfig, Shard
from pretriever.index.dense import encoder_info, finish_dense_index, write_embeddings
from pretriever.index.errors import EncodeStateError, MergeError
from pretriever.index.faiss_index import FaissParams
from pretriever.index.meta import BM25_DIR, EMBEDDINGS_FILE, FAISS_FILE, IDS_FILE, INDEX_JSON, EncoderInfo, IndexMeta
from pretriever.index.tuned import TUNE_JSON
from pretriever.data.passages import PassageSource
from pretriever.io import atomic_path, read_json, write_json, write_parquet
from pretriever.models import load_model, resolve_device
from pretriever.progress import QUIET, Reporter
from pretriever.stage import OutputFolder, StageResult, differences
from pretriever.training import precision_dtype, resolve_precision

WORK = "_work"
ENCODE_JSON = "encode.json"
SUBCALL_BATCHES = 8  # batches per SentenceTransformer.encode call inside a chunk (progress granularity)
# the Reporter's tasks: passages encoded, chunks merged, vectors added to FAISS
ENCODING, MERGING, ADDING = "encoding", "merging chunks", "adding to FAISS"


@dataclass(frozen=True)
class EncodeState:
    """``_work/encode.json``: what an encode is (its ``fingerprint``: every shard, resume and merge must match
    it), how it encodes, and the corpus store it reads."""

    fingerprint: dict[str, Any]
    encoder: EncoderInfo
    dim: int
    store: str
    n_passages: int
    pretriever_version: str = __version__

    def to_json(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "encoder": self.encoder.to_json(), "dim": self.dim,
                "corpus": {"store": self.store, "n_passages": self.n_passages},
                "pretriever_version": self.pretriever_version}

    @classmethod
    def from_json(cls, data: dict[str, Any], source: Path | str = ENCODE_JSON) -> EncodeState:
        try:
            return cls(fingerprint=dict(data["fingerprint"]), encoder=EncoderInfo.from_json(data["encoder"]),
                       dim=int(data["dim"]), store=str(data["corpus"]["store"]),
                       n_passages=int(data["corpus"]["n_passages"]),
                       pretriever_version=str(data.get("pretriever_version", "")))
        except (KeyError, TypeError, ValueError) as err:
            raise MergeError(f"{source}: not an encode's state ({err!r} is missing or malformed); encode again "
                             "with --overwrite") from err

    @classmethod
    def read(cls, work: Path) -> EncodeState:
        """The state in the work folder ``work`` (``OUT/_work``)."""
        return cls.from_json(read_json(work / ENCODE_JSON, MergeError), work / ENCODE_JSON)

    def write(self, work: Path) -> None:
        write_json(work / ENCODE_JSON, self.to_json())


@dataclass
class IndexResult(StageResult):
    """An encode: ``manifest`` is the index's metadata (index.json) when the index was merged; None after a shard
    or a stop."""

    manifest: IndexMeta | None = field(default=None, kw_only=True)
    shard: Shard | None
    chunks: range  # the chunks this run is responsible for
    chunks_encoded: int  # encoded by this run (the others were finished before: --resume)
    passages_encoded: int
    encode_seconds: float
    stopped: bool  # stopped early by max_chunks

    @property
    def rate(self) -> float:
        return self.passages_encoded / self.encode_seconds if self.encode_seconds > 0 else 0.0


def n_chunks(n_passages: int, every: int) -> int:
    """How many checkpoint chunks of ``every`` passages a corpus of ``n_passages`` makes (the last may be short)."""
    return -(-n_passages // every)


def shard_chunks(shard: Shard | None, total_chunks: int) -> range:
    """The chunks shard i/n encodes (all of them without a shard)."""
    if shard is None:
        return range(total_chunks)
    return range(shard.index * total_chunks // shard.count, (shard.index + 1) * total_chunks // shard.count)


def chunk_path(work: Path, j: int) -> Path:
    """Where chunk ``j``'s vectors are saved under an encode's work folder."""
    return work / "chunks" / f"chunk-{j:06d}.npy"


def chunk_ids_path(work: Path, j: int) -> Path:
    """Where chunk ``j``'s passage ids are saved, beside its vectors."""
    return work / "chunks" / f"chunk-{j:06d}.ids.parquet"


def encode_texts(model, texts: list[str], batch_size: int, normalize: bool, prompt: str = "",
                 on_step: Callable[[int], None] | None = None) -> np.ndarray:
    """Vectors of ``texts`` in their order, longest first in whole-batch slices (deterministic batches)."""
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    out: np.ndarray | None = None
    step = batch_size * SUBCALL_BATCHES
    for start in range(0, len(order), step):
        rows = order[start:start + step]
        # encode_document: a model with separate query/passage encoders routes passages to its passage side
        vectors = model.encode_document([texts[i] for i in rows], batch_size=batch_size, convert_to_numpy=True,
                                        show_progress_bar=False, normalize_embeddings=normalize, prompt=prompt or None)
        if out is None:
            out = np.empty((len(texts), vectors.shape[1]), dtype=np.float32)
        out[rows] = vectors
        if on_step is not None:
            on_step(len(rows))
    return out if out is not None else np.empty((0, embedding_dim(model)), dtype=np.float32)


def embedding_dim(model) -> int:
    """The vector size of a sentence-transformers ``model`` (the method's name changed in 5.x)."""
    get = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    return int(get())


def _fingerprint(encoder: EncoderInfo, source: PassageSource, every: int, precision: str) -> dict[str, Any]:
    """What must be equal for two runs to be parts of the same encode."""
    keys = ("model_label", "max_length", "normalize", "prepend_title", "passage_prompt")
    return {**{k: getattr(encoder, k) for k in keys}, "checkpoint_every": every, **source.fingerprint(),
            **({"precision": precision} if precision != "fp32" else {})}  # fp32: as older encodes recorded none


def index_folder(out: Path, report: Reporter = QUIET) -> OutputFolder:
    """An index folder: the dense index's files, the work of an encode, an attached BM25 index and what tune wrote
    about the index are its own."""
    return OutputFolder(out, stage="index", holds="an index",
                        owns=(INDEX_JSON, IDS_FILE, EMBEDDINGS_FILE, FAISS_FILE, WORK, BM25_DIR, TUNE_JSON),
                        error=EncodeStateError, report=report)


def _clear_index_files(out: Path) -> None:
    for name in (INDEX_JSON, IDS_FILE, EMBEDDINGS_FILE, FAISS_FILE):
        (out / name).unlink(missing_ok=True)


def _read_chunk(source: PassageSource, every: int, rows_of: dict[int, int], prepend_title: bool,
                j: int) -> tuple[list[str], list[str]]:
    return source.read(j * every, j * every + rows_of[j], prepend_title)


def _chunk_done(work: Path, j: int, rows: int | None = None) -> bool:
    path = chunk_path(work, j)
    if not path.exists() or not chunk_ids_path(work, j).exists():
        return False
    if rows is None:
        return True
    try:
        return np.load(path, mmap_mode="r").shape[0] == rows
    except (ValueError, OSError):
        return False


def run(cfg: IndexConfig, report: Reporter = QUIET, model=None) -> IndexResult:
    """Encode ``cfg.corpus`` into ``cfg.out`` (one shard with ``cfg.shard``), then merge unless sharded.

    Raises :class:`EncodeStateError` when ``cfg.out`` holds other work that ``resume`` or
    ``overwrite`` would have to be asked for, or is not ours. ``model``: a loaded encoder to use as it is
    instead of loading ``cfg.model`` (``cfg.precision`` casts only a model this loads; the caller's is left
    alone); ``report`` hears passages encoded, chunks merged, vectors added.
    """
    out, shard = cfg.out, cfg.shard_spec
    folder = index_folder(out, report)
    if cfg.resume and cfg.overwrite:
        folder.prepare(resume=True, overwrite=True)  # refused: one of them
    folder.check()
    if (out / INDEX_JSON).exists():
        if not cfg.overwrite:
            raise EncodeStateError(f"{out} already holds an index ({INDEX_JSON}); choose another --out or "
                                   "pass --overwrite to replace it")
        _clear_index_files(out)
    folder.claim()
    source = PassageSource(cfg.corpus)
    reader = None
    try:
        precision = resolve_precision(cfg.precision, cfg.device or resolve_device())
        if model is None:
            model = load_model(cfg.model, device=cfg.device)
            if precision != "fp32":  # our own copy: cast once, as sentence-transformers' users do (model.half())
                model.to(precision_dtype(precision))
        else:  # the caller's encoder, as it is: record its own precision
            dtype = next(model.parameters()).dtype
            precision = next((p for p in ("fp32", "bf16", "fp16") if precision_dtype(p) == dtype), str(dtype))
        if cfg.max_length is not None:
            model.max_seq_length = cfg.max_length
        encoder = encoder_info(cfg.model, model.max_seq_length, cfg.normalize, cfg.prepend_title,
                               cfg.passage_prompt, cfg.query_prompt)
        fingerprint = _fingerprint(encoder, source, cfg.checkpoint_every, precision)
        work = out / WORK
        _prepare_work(folder, work, fingerprint, cfg, shard)
        EncodeState(fingerprint, encoder, embedding_dim(model), str(source.store.path.resolve()),
                    source.total).write(work)

        total_chunks = n_chunks(source.total, cfg.checkpoint_every)
        chunks = shard_chunks(shard, total_chunks)
        every = cfg.checkpoint_every
        rows_of = {j: min(source.total, (j + 1) * every) - j * every for j in chunks}
        if not cfg.resume:
            done = [j for j in chunks if _chunk_done(work, j)]
            if done and not cfg.overwrite:
                what = f"shard {shard}" if shard else "this encode"
                raise EncodeStateError(f"{out} already holds {len(done)} finished chunk(s) of {what}; continue "
                                       "with --resume, or start again with --overwrite")
            for j in done:
                chunk_path(work, j).unlink(missing_ok=True)
                chunk_ids_path(work, j).unlink(missing_ok=True)
        todo = [j for j in chunks if not _chunk_done(work, j, rows_of[j])]
        stopped = cfg.max_chunks is not None and len(todo) > cfg.max_chunks
        if stopped:
            todo = todo[:cfg.max_chunks]
        total_rows = sum(rows_of[j] for j in todo)
        encoded = passages = 0
        started = time.perf_counter()
        report.progress(ENCODING, 0, total_rows, unit="passages")
        # the next chunk is read from the store (DuckDB) while this one is encoded
        reader = ThreadPoolExecutor(max_workers=1)
        read = partial(_read_chunk, source, every, rows_of, cfg.prepend_title)
        pending = reader.submit(read, todo[0]) if todo else None
        for pos, j in enumerate(todo):
            ids, texts = pending.result()
            pending = reader.submit(read, todo[pos + 1]) if pos + 1 < len(todo) else None

            def step(count: int) -> None:
                nonlocal passages
                passages += count
                report.progress(ENCODING, passages, total_rows, unit="passages")

            vectors = encode_texts(model, texts, cfg.batch_size, cfg.normalize, cfg.passage_prompt, step)
            write_parquet(pa.table({"passage_id": pa.array(ids, pa.string())}), chunk_ids_path(work, j))
            with atomic_path(chunk_path(work, j)) as tmp, open(tmp, "wb") as fh:
                np.save(fh, vectors)
            encoded += 1
        seconds = time.perf_counter() - started
    finally:
        if reader is not None:
            reader.shutdown(wait=True, cancel_futures=True)
        source.close()

    result = IndexResult(out=out, shard=shard, chunks=chunks, chunks_encoded=encoded, passages_encoded=passages,
                         encode_seconds=seconds, stopped=stopped)
    if stopped:
        return result
    if shard is not None:
        write_json(work / "shards" / f"{shard.index}-of-{shard.count}.json",
                   {"shard": str(shard), "chunks": [chunks.start, chunks.stop], "encode_seconds": round(seconds, 3)})
        return result
    result.manifest = merge_index(out, params=cfg.faiss, dtype=cfg.dtype, keep_work=cfg.keep_work, report=report,
                                  encode_stats={"passages_per_second": round(result.rate, 2),
                                                "precision": precision})
    _attach_bm25(cfg, result.manifest, report)
    return result


def merge(cfg: IndexConfig, sources: Iterable[Path | str] = (), report: Reporter = QUIET) -> IndexMeta:
    """``pretriever index merge``: :func:`merge_index` of ``cfg.out`` (and the shards' folders ``sources``) with
    ``cfg``'s FAISS settings and dtype, then its BM25 with ``cfg.build_bm25``; returns index.json's metadata."""
    meta = merge_index(cfg.out, sources, cfg.faiss, cfg.dtype, cfg.keep_work, report)
    _attach_bm25(cfg, meta, report)
    return meta


def _attach_bm25(cfg: IndexConfig, meta: IndexMeta, report: Reporter) -> None:
    """With ``cfg.build_bm25``, BM25 over the index's store in INDEX_DIR/bm25, where search, evaluate and serve
    look for it."""
    if cfg.build_bm25:
        build_bm25(meta.store, cfg.out / BM25_DIR, cfg.bm25, report)


def _prepare_work(folder: OutputFolder, work: Path, fingerprint: dict[str, Any], cfg: IndexConfig,
                  shard: Shard | None) -> None:
    """Keep the work of the same encode (resume, other shards); discard other work only with --overwrite."""
    state_path = work / ENCODE_JSON
    if state_path.exists():
        previous = json.loads(state_path.read_text(encoding="utf-8")).get("fingerprint", {})
        if previous != fingerprint:
            if not cfg.overwrite:
                folder.check_fingerprint(state_path, fingerprint, "; use another --out, or --overwrite to discard "
                                         "that work")
            shutil.rmtree(work)
        elif cfg.overwrite and shard is None and not cfg.resume:
            shutil.rmtree(work)
    elif work.exists() and cfg.overwrite:
        shutil.rmtree(work)
    (work / "chunks").mkdir(parents=True, exist_ok=True)


def _work_dir(path: Path) -> Path:
    path = Path(path)
    return path if (path / ENCODE_JSON).exists() else path / WORK


def merge_index(out: Path | str, sources: Iterable[Path | str] = (), params: FaissParams | None = None,
                dtype: str = "float32", keep_work: bool = False, report: Reporter = QUIET,
                encode_stats: dict[str, Any] | None = None) -> IndexMeta:
    """Gather the chunks of a sharded encode into the index folder ``out`` and build its FAISS index.

    Chunks are looked for in ``out/_work`` and in every folder of ``sources`` (the ``--out``
    folders of shards encoded elsewhere, or their ``_work`` folders). All must come from the
    same encode (same settings and corpus), and every chunk must be there; otherwise a
    :class:`MergeError` names the missing shards. ``out/_work`` is removed afterwards unless
    ``keep_work``. Returns the index's metadata (index.json).

    Args:
        out: the index folder (its ``_work`` holds the encode, or the shards' chunks are in ``sources``).
        sources: other shards' ``--out`` (or ``_work``) folders.
        params: the FAISS index to build (default: flat).
        dtype: ``float32`` or ``float16`` for the stored vectors.
        keep_work: keep ``out/_work`` after merging.
        report: hears the progress.
        encode_stats: the encode's figures, recorded in index.json.

    Returns:
        The index's metadata, as written to index.json.
    """
    out = Path(out)
    folder = index_folder(out, report)
    folder.check()
    works = [w for w in [out / WORK, *(_work_dir(Path(s)) for s in sources)] if (w / ENCODE_JSON).exists()]
    if not works:
        if (out / INDEX_JSON).exists():
            raise MergeError(f"{out} is already a merged index (nothing left to merge)")
        named = ", ".join(str(p) for p in [out, *sources])
        raise MergeError(f"no encode to merge in {named}: none holds {WORK}/{ENCODE_JSON} "
                         "(encode shards with `pretriever index build CORPUS_DIR --out DIR --shard i/n`)")
    states = [EncodeState.read(w) for w in works]
    for work, state in zip(works[1:], states[1:]):
        diff = differences(states[0].fingerprint, state.fingerprint)
        if diff:
            raise MergeError(f"{work} is part of another encode than {works[0]} ({'; '.join(diff)})")
    state = states[0]
    fingerprint = state.fingerprint
    n, every, dim = fingerprint["n_passages"], fingerprint["checkpoint_every"], state.dim
    total_chunks = n_chunks(n, every)
    found: dict[int, Path] = {}
    for j in range(total_chunks):
        rows = min(n, (j + 1) * every) - j * every
        for work in works:
            if _chunk_done(work, j, rows):
                found[j] = work
                break
    missing = [j for j in range(total_chunks) if j not in found]
    if missing:
        raise MergeError(_missing_message(missing, total_chunks, works))

    report.progress(MERGING, 0, total_chunks, unit="chunks")
    folder.claim()
    _clear_index_files(out)

    def blocks():
        for j in range(total_chunks):
            yield np.load(chunk_path(found[j], j))
            report.progress(MERGING, j + 1, total_chunks, unit="chunks")

    write_embeddings(out / EMBEDDINGS_FILE, blocks(), n, dim, dtype)
    ids = pa.chunked_array([pq.read_table(chunk_ids_path(found[j], j)).column("passage_id")
                            for j in range(total_chunks)], pa.string())
    shard_counts = sorted({int(p.stem.split("-of-")[1]) for w in works for p in (w / "shards").glob("*-of-*.json")})
    encode = {"checkpoint_every": every, "chunks": total_chunks, "shards": shard_counts or [1], **(encode_stats or {})}
    report.progress(ADDING, 0, n, unit="vectors")
    meta = finish_dense_index(out, ids.combine_chunks(), state.encoder, params, dtype,
                              on_add=lambda done: report.progress(ADDING, done, n, unit="vectors"),
                              store=state.store, n_passages=state.n_passages, recorded={"encode": encode})
    if not keep_work and (out / WORK).exists():
        shutil.rmtree(out / WORK)
    folder.seal()
    return meta


def _missing_message(missing: list[int], total_chunks: int, works: list[Path]) -> str:
    spans: list[str] = []
    start = prev = missing[0]
    for j in missing[1:] + [None]:
        if j is not None and j == prev + 1:
            prev = j
            continue
        spans.append(f"{start}" if start == prev else f"{start}-{prev}")
        if j is not None:
            start = prev = j
    counts = sorted({int(p.stem.split("-of-")[1]) for w in works for p in (w / "shards").glob("*-of-*.json")})
    shards = ""
    if counts:
        count = counts[-1]
        lacking = sorted({i for i in range(count) for j in missing if j in shard_chunks(Shard(i, count), total_chunks)})
        shards = (f"; shard(s) {', '.join(f'{i}/{count}' for i in lacking)} are not finished: run "
                  f"`pretriever index build CORPUS_DIR --out DIR --shard i/{count} --resume` for each, "
                  "then merge again, naming every shard's --out folder")
    return (f"cannot merge: {len(missing)} of {total_chunks} chunk(s) are missing (chunks {', '.join(spans)}) "
            f"in {', '.join(str(w) for w in works)}{shards}")

