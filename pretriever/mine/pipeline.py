"""``pretriever mine``: run the chosen strategies over a corpus store and write the pairs.

For each strategy the candidates (see ``methods/``) get a sampling key
``h = md5(seed|method|key)``; then, in this order and always keeping the rows with the
smallest ``h``: exact duplicates (same query text and same positive text) are dropped,
at most ``max_per_doc_pair`` pairs are kept per (query document, positive document) and
at most ``max_per_query_passage`` per query passage, so hub documents cannot dominate.
The ``--max-pairs`` budget is then split evenly across the strategies (what one cannot
use goes to the others) and each keeps its pairs with the smallest ``h``: a seeded random
sample. Negatives and titles are attached last, and each strategy's pairs are written to
``OUT/<method>.parquet`` sorted by ``h`` (so a file's first rows are a random sample),
atomically, in parts of ``h``'s range that each fit the memory limit; ``pairs.json`` (the
manifest) is written last.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import ibis
import ibis.expr.types as ir
import pyarrow.parquet as pq

from pretriever import __version__
from pretriever.data.pairs import PairsManifest
from pretriever.data.store import CorpusStore
from pretriever.io import PARQUET_OPTIONS, atomic_path, write_json
from pretriever.mine.config import MineConfig
from pretriever.mine.context import MineContext
from pretriever.mine.engine import MineError, Part, first_per_group, hkey, open_engine
from pretriever.mine.methods import METHODS, check_methods
from pretriever.mine.negatives import Negatives
from pretriever.mine.schema import CHECKPOINTS, MANIFEST, PAIRS, PLOT, STATS
from pretriever.mine.stats import compute_stats, plot_overlap
from pretriever.progress import QUIET, Reporter
from pretriever.stage import OutputFolder, StageResult

WORK = ".work"


@dataclass
class MethodResult:
    """What one method gave in a mining run: its candidates, the pairs kept, the file written, why none (if so) and its
    own counts.
    """

    name: str
    candidates: int = 0
    pairs: int = 0
    file: str | None = None
    reason: str | None = None  # why there are no pairs
    report: dict[str, Any] | None = None  # the method's own counts (qac: its funnel)


@dataclass
class MineResult(StageResult):
    """A mining run: ``manifest`` is pairs.json (None until written), ``stats`` stats.json, ``methods`` each
    method's counts."""

    config: MineConfig
    manifest: PairsManifest | None = field(default=None, kw_only=True)
    methods: dict[str, MethodResult] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    memory_limit: str | None = None  # DuckDB's, as used (the default is computed on the machine)
    join_parts: int | None = None  # the passes DL's and CM's joins ran in (``--parts``, or as the memory needed)

    @property
    def total(self) -> int:
        return sum(m.pairs for m in self.methods.values())


def allocate(budget: int | None, available: dict[str, int]) -> dict[str, int]:
    """Split ``budget`` evenly over the methods; what one cannot use goes to the others (in order)."""
    if budget is None:
        return dict(available)
    alloc = {m: 0 for m in available}
    active = [m for m, n in available.items() if n > 0]
    remaining = budget
    while remaining > 0 and active:
        share, extra = divmod(remaining, len(active))
        for i, m in enumerate(active):
            alloc[m] += min(available[m] - alloc[m], share + (1 if i < extra else 0))
        remaining = budget - sum(alloc.values())
        active = [m for m in active if alloc[m] < available[m]]
    return alloc


def prepare_out(out: Path, overwrite: bool, resume: bool = False, report: Reporter = QUIET) -> OutputFolder:
    """Check ``out``; replace earlier pairs with ``overwrite``, or keep what methods checkpointed with ``resume``."""
    folder = OutputFolder(out, stage="mine", holds="mined pairs",
                          owns=(MANIFEST, STATS, PLOT, "*.parquet", WORK, CHECKPOINTS), error=MineError, report=report)
    folder.check()
    if not (overwrite or resume) and (out / CHECKPOINTS).is_dir() and not (out / MANIFEST).exists():
        raise MineError(f"{out} holds an interrupted run; continue it with --resume, or pass --overwrite to replace it")
    folder.prepare(resume=resume, overwrite=overwrite, need_checkpoint=False)
    if resume:  # what the methods checkpointed stays; the rest is written again
        folder.clear(keep=[CHECKPOINTS])
    return folder


NARROW = ("key", "_h", "_dup", "query_doc_id", "positive_doc_id", "query_passage_id")


def sampled(ctx: MineContext, method: str, candidates: ir.Table) -> ir.Table:
    """The candidates, materialized with their sampling key ``_h``, after exact dedup and the caps.

    The candidates are written once with their hashes; dedup and the caps are windows over the
    narrow columns (``NARROW``) alone, and the winners' full rows are kept by their ``key``, a
    candidate's identity (``schema.CANDIDATE``): windows over the full rows would sort every query
    and passage text three times (at 10^8 links, tens of GB of spill).
    """
    cls = METHODS[method]
    cfg = ctx.config
    t = candidates.mutate(_h=hkey(ctx.seed, method, candidates.key))
    t = t.mutate(_dup=hkey(0, "dedup", t.query, t.positive_text))
    full = ctx.engine.materialize(t, f"raw-{method}")
    n = first_per_group(full.select(*NARROW), ["_dup"], ["_h", "key"])
    if cls.cap_doc_pairs:
        n = first_per_group(n, ["query_doc_id", "positive_doc_id"], ["_h", "key"], cfg.max_per_doc_pair)
    if cls.cap_query_passages:
        n = first_per_group(n, ["query_passage_id"], ["_h", "key"], cfg.max_per_query_passage)
    keep = n.select(_k=n.key, _kd=n._dup)
    kept = full.semi_join(keep, (full.key == keep._k) & (full._dup == keep._kd)).drop("_dup")
    table = ctx.engine.materialize(kept, f"candidates-{method}")
    ctx.engine.release(full)
    return table


def finish(ctx: MineContext, method: str, pairs: ir.Table, negatives: Negatives, chosen: ir.Table | None,
           part: Part = Part()) -> ir.Table:
    """The selected pairs of one part of ``_h`` -> the rows of ``PAIRS`` (plus ``_h`` and ``key``), sorted.

    ``chosen``: their negatives (``Negatives.choose``)."""
    cfg = ctx.config
    t = negatives.attach(pairs.filter(part.holds(pairs._h.substr(0, 4))), chosen, part)
    docs = ctx.engine.table("documents").select("doc_id", "title")
    for prefix in ("query", "positive", "negative"):
        d = docs.select(**{f"{prefix}_d": docs.doc_id, f"{prefix}_title": docs.title})
        t = t.left_join(d, t[f"{prefix}_doc_id"] == d[f"{prefix}_d"]).drop(f"{prefix}_d")
    cols: dict[str, Any] = {name: t[name] for name in PAIRS.names if name in t.columns}
    cols["pair_id"] = ibis.literal(method) + "-" + t._h.substr(0, 16)
    cols["method"] = ibis.literal(method)
    cols["positive_title"] = t.positive_title.fill_null(t.reference_title)  # qac: the cited page's title
    if cfg.prepend_title:
        for prefix in ("positive", "negative"):
            title, text = t[f"{prefix}_title"], t[f"{prefix}_text"]
            cols[f"{prefix}_text"] = title.isnull().ifelse(text, title + ". " + text)
        shift = (t.positive_title.length() + 2).fill_null(0).cast("int32")
        for name in ("positive_anchor_start", "positive_anchor_end", "entity_anchor_start", "entity_anchor_end"):
            cols[name] = t[name] + shift
    out = t.select(_h=t._h, key=t.key, **{name: cols[name] for name in PAIRS.names})
    return out.order_by([out._h, out.key])


# A finished pair's share of a write part's memory. Set by measuring, not from a row's size: every part is one
# more pass over the candidates, passages and documents, and DuckDB's sort spills what does not fit. 10^7 links
# at a 1.5 GiB limit (bench/README, "Mining"): 15 parts (3000) wrote DL in 67 s, 5 parts (1000) in 43 s with
# 0.05 GiB more spill, 1 part in 46 s with 2.9 GiB more spill and the peak RSS 0.3 GiB higher.
WRITE_ROW_BYTES = 1000


def write_pairs(ctx: MineContext, method: str, pairs: ir.Table, negatives: Negatives, path: Path) -> int:
    """Stream the finished pairs into one Parquet file sorted by ``_h``, atomically; returns the number of rows.

    The rows go in parts of ``_h``'s range, in order (see ``Part``), each part sorted and joined to its
    negatives' texts alone, so no sort or join holds all the texts: enough parts that one fits the engine's
    memory (at 10^8 links a method's pairs are tens of GB before compression).
    """
    engine = ctx.engine
    chosen = negatives.choose(pairs, method, ctx.config.negatives)
    parts = engine.parts_for(engine.count(pairs), WRITE_ROW_BYTES)
    rows = 0
    with atomic_path(path) as tmp:
        with pq.ParquetWriter(tmp, PAIRS, **PARQUET_OPTIONS) as writer:
            for index in range(parts):
                for batch in engine.batches(finish(ctx, method, pairs, negatives, chosen, Part(index, parts)), PAIRS):
                    writer.write_batch(batch)
                    rows += batch.num_rows
    if chosen is not None:
        engine.release(chosen)
    return rows


def run(config: MineConfig, report: Reporter = QUIET, spark_session: Any = None) -> MineResult:
    """Mine pairs from ``config.corpus`` into ``config.out``; see the module docstring. ``report`` hears each
    step ("dl: finding candidate pairs"); ``spark_session``: a running session for ``engine="spark"``.

    Args:
        config: the settings.
        report: hears each step.
        spark_session: a running Spark session (``engine="spark"``; None: one is started).

    Returns:
        The run: the folder, its manifest (pairs.json), its stats and each method's counts.
    """
    started = time.perf_counter()
    check_methods(config.methods)
    store = CorpusStore(config.corpus)  # StoreError names a missing table or column
    for name in config.methods:
        METHODS[name].preflight(config)
    folder = prepare_out(config.out, config.overwrite, config.resume, report)
    engine = open_engine(config.engine, store, config.out / WORK, threads=config.threads,
                         memory_limit=config.memory_limit, spark_master=config.spark_master,
                         spark_session=spark_session, max_spill=config.max_spill)  # MineError: no Spark, bad sizes
    result = MineResult(config, out=config.out)
    try:
        ctx = MineContext(engine, config)
        candidates: dict[str, ir.Table] = {}
        for name in config.methods:
            report.message(f"{name}: finding candidate pairs")
            method = METHODS[name]()
            table = sampled(ctx, name, method.candidates(ctx))
            candidates[name] = table
            count = engine.count(table)
            result.methods[name] = MethodResult(name, candidates=count, report=method.report(ctx, count))
            if count == 0:
                result.methods[name].reason = method.why_empty(ctx)
            engine.release_owned(name)  # its joins' work tables: the candidates hold what is left to do
        if config.negatives != "overlap" and "elinks" in ctx.__dict__:  # only overlap negatives read it again
            engine.release(ctx.elinks)
        quota = allocate(config.max_pairs, {n: r.candidates for n, r in result.methods.items()})
        negatives = Negatives(ctx)
        for name in config.methods:
            if quota[name] == 0:
                continue
            report.message(f"{name}: writing {quota[name]:,} pairs")
            chosen = candidates[name]
            if quota[name] < result.methods[name].candidates:  # else all of them: `finish` sorts anyway
                first = chosen.select("_h", "key").order_by(["_h", "key"]).limit(quota[name])
                first = first.select(_fh=first._h, _fk=first.key)  # narrow: the texts are not sorted
                chosen = engine.materialize(chosen.semi_join(first, (chosen._h == first._fh) & (chosen.key == first._fk)),
                                            f"chosen-{name}")
            path = config.out / f"{name}.parquet"
            rows = write_pairs(ctx, name, chosen, negatives, path)
            engine.release(chosen)
            engine.release(candidates[name])
            result.methods[name].pairs = rows
            result.methods[name].file = path.name
        cm = ctx.__dict__.get("indegree_threshold")
        result.memory_limit = getattr(engine, "memory_limit", None)
        result.join_parts = ctx.__dict__.get("parts")
        flagged = ctx.flagged_sentences
    finally:
        engine.close()

    report.message("statistics")
    result.stats = compute_stats(config.out, [n for n in config.methods if result.methods[n].pairs],
                                 sample=config.stats_sample, tokenizer=config.tokenizer,
                                 memory_limit=config.memory_limit, work=config.out / WORK, max_spill=config.max_spill)
    for name, r in result.methods.items():
        if r.report:
            result.stats["methods"].setdefault(name, {}).update(r.report)
    result.stats["flagged_sentences"] = flagged
    write_json(config.out / STATS, result.stats)
    plot_overlap(result.stats, config.out / PLOT)
    result.seconds = time.perf_counter() - started
    result.manifest = manifest(config, store, result, cm, flagged)
    result.manifest.write(config.out)
    folder.seal()
    return result


def manifest(config: MineConfig, store: CorpusStore, result: MineResult, cm: dict | None,
             flagged: dict[str, int]) -> PairsManifest:
    """pairs.json's content: the run's corpus, options and per-method counts, what was flagged, and where the stats and
    plot are.
    """
    return PairsManifest.from_json({
        "pretriever_version": __version__,
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "corpus": {"path": str(config.corpus), "input": store.manifest.input,
                   "counts": {k: v for k, v in store.counts.items() if not isinstance(v, dict)}},
        "options": config.to_json(),
        **({"duckdb_memory_limit": result.memory_limit} if result.memory_limit else {}),
        **({"join_parts": result.join_parts} if result.join_parts else {}),
        "total_pairs": result.total,
        "methods": {
            name: {"title": METHODS[name].title, "definition": METHODS[name].summary,
                   "candidates": r.candidates, "pairs": r.pairs, "file": r.file, **(r.report or {}),
                   **({"why_no_pairs": r.reason} if r.reason else {})}
            for name, r in result.methods.items()
        },
        **({"cm_indegree_threshold": cm} if cm else {}),
        # sentences that never become queries: a hole where markup stood, or a list item
        "flagged_sentences": flagged,
        "columns": PAIRS.names,
        "stats": STATS,
        "overlap_plot": PLOT,
        "seconds": round(result.seconds, 2),
    })
