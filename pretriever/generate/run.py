"""``pretriever generate``: C candidate queries per passage from a seq2seq model, or imported from a file.

The store's passages, in index order (the order of ``pretriever index``), are cut into
chunks of ``checkpoint_every``; each chunk's queries are written atomically to
``QUERIES_DIR/parts/part-NNNNNN.parquet``. ``--resume`` skips the parts already there,
``--shard i/n`` does every n-th chunk, and whichever run finds every part present writes
``generated_queries.parquet`` (passage_id, candidate, text; sorted by passage order, then
candidate) and ``manifest.json``. Every sequence samples from its own seeded generator
(:mod:`pretriever.generate.sampling`), so batching, sharding and resuming never change a
query.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pretriever import __version__
from pretriever.generate.config import GenerateConfig
from pretriever.generate.errors import GenerateError
from pretriever.generate.manifest import GenerateManifest
from pretriever.generate.prefix import resolve_prefix
from pretriever.generate.sampling import row_seed, seeded_sampler
from pretriever.data import QUERIES_FILE, PassageSource
from pretriever.io import read_json, write_json, write_parquet
from pretriever.models import resolve_device
from pretriever.progress import QUIET, Reporter
from pretriever.stage import OutputFolder, StageResult
from pretriever.training import precision_dtype, resolve_precision

MANIFEST = GenerateManifest.FILE
PARTS = "parts"
STATE = "state.json"
SCHEMA = pa.schema([("passage_id", pa.string()), ("candidate", pa.int32()), ("text", pa.string())])

GENERATING = "generating"  # the Reporter's task: passages done of those this run does


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


def _part(out: Path, j: int) -> Path:
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


def _load_generator(cfg: GenerateConfig):
    """(tokenizer, model, device) with bf16 on GPU unless told otherwise."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    device = resolve_device(cfg.device)
    precision = resolve_precision(cfg.precision, device)
    dtype = precision_dtype(precision)
    try:
        tokenizer = AutoTokenizer.from_pretrained(cfg.model)
        model = AutoModelForSeq2SeqLM.from_pretrained(cfg.model, dtype=dtype)
    except (OSError, ValueError) as err:
        raise GenerateError(f"cannot load seq2seq model {cfg.model!r}: {err}") from err
    return tokenizer, model.to(device).eval(), device


def generate_batch(tokenizer, model, device: str, ids: list[str], texts: list[str], cfg: GenerateConfig) -> list[str]:
    """``per_passage`` queries for each passage, passage-major (passage 0's candidates first)."""
    import torch  # heavy

    enc = tokenizer([cfg.prefix + t for t in texts], max_length=cfg.max_input_length, truncation=True,
                    padding=True, return_tensors="pt", return_token_type_ids=False)
    # one row per (passage, candidate): greedy search over the sampler's choice allows no num_return_sequences
    enc = {k: v.repeat_interleave(cfg.per_passage, dim=0).to(device) for k, v in enc.items()}
    seeds = [row_seed(cfg.seed, pid, c) for pid in ids for c in range(cfg.per_passage)]
    with torch.inference_mode():
        out = model.generate(**enc, do_sample=False, num_beams=1, max_new_tokens=cfg.max_output_length,
                             top_k=None, top_p=None, temperature=None,
                             logits_processor=[seeded_sampler(seeds, cfg.top_k, cfg.top_p)])
    return [t.strip() for t in tokenizer.batch_decode(out, skip_special_tokens=True)]


def run(cfg: GenerateConfig, report: Reporter = QUIET) -> GenerateResult:
    """Generate the queries of ``cfg.corpus`` (or this shard of it) into ``cfg.out``; without ``cfg.prefix``
    the model's own (:mod:`pretriever.generate.prefix`), recorded in the run's settings and manifest (and why, in
    ``prefix_note``). ``report`` hears the passages done. ``cfg.from_file`` is imported by
    :func:`pretriever.generate.importer.import_queries` instead."""
    started = time.perf_counter()
    prefix, note = resolve_prefix(str(cfg.model), cfg.prefix)
    cfg = replace(cfg, prefix=prefix)
    source = open_passages(cfg.corpus)
    total = min(len(source), cfg.limit) if cfg.limit is not None else len(source)
    state = {**cfg.run_settings(), "passages": source.fingerprint()}
    prepare(cfg, state, report)
    every = cfg.checkpoint_every
    chunks = range((total + every - 1) // every)
    mine = [j for j in chunks if cfg.shard is None or j % cfg.shard.count == cfg.shard.index]
    todo = [j for j in mine if not _part(cfg.out, j).exists()]
    result = GenerateResult(cfg, out=cfg.out, skipped={"empty_passages": 0}, prefix_note=note)
    to_do = sum(min(every, total - j * every) for j in todo)
    if todo:
        tokenizer, model, device = _load_generator(cfg)
    for j in todo:
        lo, hi = j * every, min((j + 1) * every, total)
        ids, texts = source.read(lo, hi, cfg.prepend_title)
        rows: dict[str, list] = {"passage_id": [], "candidate": [], "text": []}
        for b in range(0, len(ids), cfg.batch_size):
            bids, btexts = ids[b:b + cfg.batch_size], texts[b:b + cfg.batch_size]
            keep = [i for i, t in enumerate(btexts) if t.strip()]
            result.skipped["empty_passages"] += len(bids) - len(keep)
            bids, btexts = [bids[i] for i in keep], [btexts[i] for i in keep]
            if bids:
                queries = generate_batch(tokenizer, model, device, bids, btexts, cfg)
                for i, pid in enumerate(bids):
                    for c in range(cfg.per_passage):
                        rows["passage_id"].append(pid)
                        rows["candidate"].append(c)
                        rows["text"].append(queries[i * cfg.per_passage + c])
            result.passages += len(bids)
            report.progress(GENERATING, result.passages + result.skipped["empty_passages"], to_do, unit="passages")
        write_parquet(pa.table(rows, schema=SCHEMA), _part(cfg.out, j))
        result.queries += len(rows["text"])
    source.close()
    result.seconds = time.perf_counter() - started
    if all(_part(cfg.out, j).exists() for j in chunks):
        finish(cfg, [_part(cfg.out, j) for j in chunks], result, total, {"skipped_last_run": result.skipped})
    return result


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
