"""``pretriever index ...`` and ``pretriever search``: encode a store, build FAISS/BM25 indexes, query them."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.table import Table

from pretriever.config import ConfigError, build_config
from pretriever.index.config import IndexConfig
from pretriever.index.errors import IndexStageError
from pretriever.progress import console, count_progress

index_app = typer.Typer(
    help=(
        "Stage 4: encode a corpus store with a sentence-transformers model into a FAISS index "
        "(exact inner product by default; HNSW or IVF-PQ on request), and build BM25 indexes.\n\n"
        "An index folder holds index.json (model, corpus, settings), passage_ids.parquet, "
        "embeddings.npy and index.faiss; search it with `pretriever search INDEX_DIR \"query\"`.\n\n"
        "Example:  pretriever index build scifact-store/ --out scifact-index/ --bm25"
    ),
    no_args_is_help=True,
)

EXIT_USAGE = 2


def _fail(err: Exception) -> None:
    console.print(f"[red]error:[/red] {err}")
    raise typer.Exit(EXIT_USAGE) from err


class _StageProgress:
    """One rich progress line per stage (encode, merge, index, bm25) with a rate in items/s."""

    LABELS = {"encode": ("encoding", "passages"), "merge": ("merging chunks", "chunks"),
              "index": ("adding to FAISS", "vectors"), "bm25": ("BM25 tokenizing", "passages")}

    def __init__(self, progress):
        self.progress = progress
        self.tasks: dict[str, tuple[int, float]] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        label, unit = self.LABELS.get(stage, (stage, "items"))
        if stage not in self.tasks:
            self.tasks[stage] = (self.progress.add_task(label, total=total or None, rate=""), time.perf_counter())
        task, started = self.tasks[stage]
        elapsed = time.perf_counter() - started
        rate = f"{done / elapsed:,.1f} {unit}/s" if elapsed > 0 and done else ""
        self.progress.update(task, completed=done, total=total or None, rate=rate)


_INDEX_OPTIONS_HELP = "Index type: flat (exact inner product, the default), hnsw or ivfpq."


@index_app.command("build")
def build(
    corpus: Path = typer.Argument(..., help="A corpus store (`pretriever corpus build`).", show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help="Index folder (created)."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="sentence-transformers model: a local folder or a name. Default: the packaged all-MiniLM-L6-v2."),
    device: Optional[str] = typer.Option(None, "--device", help="cpu, cuda, cuda:1, mps. Default: sentence-transformers' choice."),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="Passages per forward pass (default 64)."),
    max_length: Optional[int] = typer.Option(None, "--max-length", help="Word pieces per passage; longer ones are cut. Default: the model's max_seq_length (256 for all-MiniLM-L6-v2)."),
    normalize: Optional[bool] = typer.Option(None, "--normalize/--no-normalize", help="L2-normalise passage and query vectors (default: no; all-MiniLM-L6-v2 normalises by itself)."),
    title: Optional[bool] = typer.Option(None, "--title/--no-title", help="Encode \"title text\" (default, BEIR practice) or the passage text alone."),
    passage_prompt: Optional[str] = typer.Option(None, "--passage-prompt", help="Text put before every passage, e.g. \"passage: \" for E5 models."),
    query_prompt: Optional[str] = typer.Option(None, "--query-prompt", help="Text put before every query at search time, e.g. \"query: \"."),
    checkpoint_every: Optional[int] = typer.Option(None, "--checkpoint-every", help="Passages per checkpoint chunk (default 8192); each finished chunk is saved atomically."),
    shard: Optional[str] = typer.Option(None, "--shard", help="Encode only shard i of n (i/n, counted from 0, e.g. 0/4) and stop; then `pretriever index merge`."),
    resume: bool = typer.Option(False, "--resume", help="Continue an interrupted encode from its last finished chunk."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace an existing index (or this shard's chunks) in --out."),
    max_chunks: Optional[int] = typer.Option(None, "--max-chunks", help="Stop after encoding this many chunks; finish later with --resume."),
    keep_work: Optional[bool] = typer.Option(None, "--keep-work", help="Keep the per-chunk files (OUT/_work) after merging."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="float32 (default) or float16 for the stored embeddings (and the flat/HNSW index)."),
    index_type: Optional[str] = typer.Option(None, "--index-type", help=_INDEX_OPTIONS_HELP),
    hnsw_m: Optional[int] = typer.Option(None, "--hnsw-m", help="HNSW: links per node (default 32)."),
    hnsw_ef_construction: Optional[int] = typer.Option(None, "--hnsw-ef-construction", help="HNSW: candidate list size while building (default 200)."),
    hnsw_ef_search: Optional[int] = typer.Option(None, "--hnsw-ef-search", help="HNSW: candidate list size while searching (default 128)."),
    ivf_nlist: Optional[int] = typer.Option(None, "--ivf-nlist", help="IVF-PQ: inverted lists (default 4*sqrt(N), at most N/39)."),
    ivf_nprobe: Optional[int] = typer.Option(None, "--ivf-nprobe", help="IVF-PQ: lists visited per query (default 16)."),
    pq_m: Optional[int] = typer.Option(None, "--pq-m", help="IVF-PQ: sub-quantizers, must divide the dimension (default dim/8)."),
    pq_nbits: Optional[int] = typer.Option(None, "--pq-nbits", help="IVF-PQ: bits per sub-quantizer code (default 8)."),
    train_size: Optional[int] = typer.Option(None, "--train-size", help="IVF-PQ: training vectors, an even sample (default all, up to 1,000,000)."),
    rerank: Optional[int] = typer.Option(None, "--rerank", help="HNSW/IVF-PQ: fetch RERANK x k candidates and re-score them exactly with the stored embeddings (default 0: off; 4 lifts IVF-PQ's recall a lot)."),
    bm25: Optional[bool] = typer.Option(None, "--bm25", help="Also build a BM25 index in OUT/bm25 (used by `pretriever search --bm25`)."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file whose [index] table sets any of these options (and the bm25_* ones)."),
) -> None:
    """Encode the passages of CORPUS into a dense index in OUT.

    Passages are encoded as "title text" with the model's own maximum length and searched by exact inner product: the BEIR zero-shot setting (all-MiniLM-L6-v2 on SciFact: nDCG@10 0.649). Encoding is checkpointed every --checkpoint-every passages; an interrupted run continues with --resume and gives identical vectors.

    To spread the encode over machines, run shard i of n on each (all reading the same store) and merge; shard and one-process runs give identical vectors.

    Examples:

      pretriever index build scifact-store/ --out scifact-index/ --bm25

      pretriever index build enwiki/ --out enwiki-index/ --model my-model/ --device cuda --batch-size 512 --shard 0/8

      pretriever index merge enwiki-index/ shard1-out/ shard2-out/ ...   (once every shard is done)
    """
    try:
        cfg = build_config(IndexConfig, config, "index", corpus=corpus, out=out, model=model, device=device,
                           batch_size=batch_size, max_length=max_length, normalize=normalize, prepend_title=title,
                           passage_prompt=passage_prompt, query_prompt=query_prompt,
                           checkpoint_every=checkpoint_every, shard=shard, resume=resume or None,
                           overwrite=overwrite or None, max_chunks=max_chunks, keep_work=keep_work, dtype=dtype,
                           index_type=index_type, hnsw_m=hnsw_m, hnsw_ef_construction=hnsw_ef_construction,
                           hnsw_ef_search=hnsw_ef_search, ivf_nlist=ivf_nlist, ivf_nprobe=ivf_nprobe, pq_m=pq_m,
                           pq_nbits=pq_nbits, train_size=train_size, rerank=rerank, bm25=bm25)
    except (ConfigError, ValueError) as err:
        _fail(err)
    run_build(cfg)


def run_build(cfg: IndexConfig):
    """Build under progress bars; print what was done and what to run next."""
    from pretriever.corpus.store import StoreError
    from pretriever.index.encode import build_index

    try:
        with count_progress() as progress:
            result = build_index(cfg, on_progress=_StageProgress(progress))
    except (IndexStageError, StoreError, ValueError) as err:
        _fail(err)
    done_now = f"{result.chunks_encoded} chunk(s), {result.passages_encoded:,} passages in " \
               f"{result.encode_seconds:.1f} s ({result.rate:,.1f} passages/s)"
    if result.stopped:
        console.print(f"Stopped after {done_now} as asked (--max-chunks); continue with --resume.")
        return result
    if result.meta is None:
        console.print(f"Shard {result.shard} done: {done_now}. When every shard is done, run: "
                      f"pretriever index merge {cfg.out} [OTHER_SHARD_OUT_DIRS...]")
        return result
    console.print(f"Encoded {done_now}.")
    if cfg.bm25:
        _build_bm25(cfg.corpus, cfg.out / "bm25", cfg.bm25_options())
    print_meta(result.meta, cfg.out)
    return result


@index_app.command("merge")
def merge(
    index_dir: Path = typer.Argument(..., help="The index folder to write (and the --out of the shards run there)."),
    shard_dirs: Optional[list[Path]] = typer.Argument(None, help="Other shards' --out folders, when they were encoded elsewhere.", show_default=False),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="float32 (default) or float16."),
    index_type: Optional[str] = typer.Option(None, "--index-type", help=_INDEX_OPTIONS_HELP),
    hnsw_m: Optional[int] = typer.Option(None, "--hnsw-m", help="HNSW: links per node (default 32)."),
    hnsw_ef_construction: Optional[int] = typer.Option(None, "--hnsw-ef-construction", help="HNSW: build candidate list (default 200)."),
    hnsw_ef_search: Optional[int] = typer.Option(None, "--hnsw-ef-search", help="HNSW: search candidate list (default 128)."),
    ivf_nlist: Optional[int] = typer.Option(None, "--ivf-nlist", help="IVF-PQ: inverted lists (default 4*sqrt(N), at most N/39)."),
    ivf_nprobe: Optional[int] = typer.Option(None, "--ivf-nprobe", help="IVF-PQ: lists visited per query (default 16)."),
    pq_m: Optional[int] = typer.Option(None, "--pq-m", help="IVF-PQ: sub-quantizers (default dim/8)."),
    pq_nbits: Optional[int] = typer.Option(None, "--pq-nbits", help="IVF-PQ: bits per code (default 8)."),
    train_size: Optional[int] = typer.Option(None, "--train-size", help="IVF-PQ: training vectors (default all, up to 1,000,000)."),
    rerank: Optional[int] = typer.Option(None, "--rerank", help="HNSW/IVF-PQ: re-score RERANK x k candidates exactly (default 0: off)."),
    keep_work: Optional[bool] = typer.Option(None, "--keep-work", help="Keep INDEX_DIR/_work after merging."),
    bm25: Optional[bool] = typer.Option(None, "--bm25", help="Also build INDEX_DIR/bm25 from the corpus store."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file whose [index] table sets any of these options."),
) -> None:
    """Merge the shards of an encode into one index and build its FAISS index.

    Chunks are gathered from INDEX_DIR/_work and from each SHARD_DIR (another machine's --out); every chunk must be there and all must come from the same encode (model, settings, corpus), else the missing shards are named.

    Example (4 machines sharing a file system, each running its shard into the same folder):

      pretriever index build enwiki/ --out idx/ --shard 2/4      (on machine 2; likewise 0, 1, 3)

      pretriever index merge idx/ --index-type hnsw
    """
    from pretriever.index.encode import ENCODE_JSON, WORK, merge_index

    corpus = Path(".")
    for work in [index_dir / WORK, *((d / WORK) for d in shard_dirs or [])]:
        if (work / ENCODE_JSON).exists():
            corpus = Path(json.loads((work / ENCODE_JSON).read_text(encoding="utf-8"))["corpus"]["store"])
            break
    try:
        cfg = build_config(IndexConfig, config, "index", corpus=corpus, out=index_dir, dtype=dtype,
                           index_type=index_type, hnsw_m=hnsw_m, hnsw_ef_construction=hnsw_ef_construction,
                           hnsw_ef_search=hnsw_ef_search, ivf_nlist=ivf_nlist, ivf_nprobe=ivf_nprobe, pq_m=pq_m,
                           pq_nbits=pq_nbits, train_size=train_size, rerank=rerank, keep_work=keep_work,
                           bm25=bm25)
    except (ConfigError, ValueError) as err:
        _fail(err)
    try:
        with count_progress() as progress:
            meta = merge_index(index_dir, shard_dirs or [], cfg.faiss_params(), cfg.dtype, cfg.keep_work,
                               on_progress=_StageProgress(progress))
    except (IndexStageError, ValueError, OSError) as err:
        _fail(err)
    if cfg.bm25:
        _build_bm25(cfg.corpus, index_dir / "bm25", cfg.bm25_options())
    print_meta(meta, index_dir)


@index_app.command("bm25")
def bm25_command(
    corpus: Path = typer.Argument(..., help="A corpus store.", show_default=False),
    out: Path = typer.Option(..., "--out", "-o", help="Folder for the BM25 index; INDEX_DIR/bm25 attaches it to a dense index."),
    k1: Optional[float] = typer.Option(None, "--k1", help="Term-frequency saturation (default 1.5)."),
    b: Optional[float] = typer.Option(None, "--b", help="Length normalisation (default 0.75)."),
    method: Optional[str] = typer.Option(None, "--method", help="lucene (default), robertson, atire, bm25l or bm25+."),
    stopwords: Optional[str] = typer.Option(None, "--stopwords", help="Stop-word list: en (default), de, fr, ... or none."),
    stemmer: Optional[str] = typer.Option(None, "--stemmer", help="Snowball stemmer: english (default), porter, german, ... or none."),
    title: Optional[bool] = typer.Option(None, "--title/--no-title", help="Index \"title text\" (default) or the text alone."),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file whose [index] table sets bm25_k1, bm25_b, ..."),
) -> None:
    """Build a BM25 index (bm25s) over the passages of CORPUS.

    Defaults are the usual BEIR BM25 baseline: Lucene scoring, k1=1.5, b=0.75, English stop words, Snowball English stemming, "title text" (SciFact test nDCG@10 0.686).

    Example:  pretriever index bm25 scifact-store/ --out scifact-index/bm25
    """
    try:
        cfg = build_config(IndexConfig, config, "index", corpus=corpus, out=out, bm25_k1=k1, bm25_b=b,
                           bm25_method=method, bm25_stopwords=stopwords, bm25_stemmer=stemmer,
                           bm25_prepend_title=title)
        options = cfg.bm25_options()
    except (ConfigError, ValueError) as err:
        _fail(err)
    index = _build_bm25(cfg.corpus, out, options)
    console.print(f"BM25 index of {len(index):,} passages ({index.meta['vocabulary']:,} terms) in {out}")


def _build_bm25(corpus: Path, out: Path, options):
    from pretriever.corpus.store import StoreError
    from pretriever.index.bm25 import BM25Index

    try:
        with count_progress() as progress:
            index = BM25Index.build(corpus, options, on_progress=lambda d, t: _bm25_progress(progress, d, t))
        index.save(out)
    except (StoreError, IndexStageError, ValueError) as err:
        _fail(err)
    return index


def _bm25_progress(progress, done: int, total: int) -> None:
    if not progress.tasks:
        progress.add_task("BM25 tokenizing", total=total, rate="")
    task = progress.tasks[0]
    elapsed = task.elapsed or 0
    progress.update(task.id, completed=done, rate=f"{done / elapsed:,.0f} passages/s" if elapsed and done else "")


@index_app.command("info")
def info(index_dir: Path = typer.Argument(..., help="An index folder.")) -> None:
    """Print what an index holds and how it was built (from its index.json)."""
    from pretriever.index.dense import read_index_meta

    try:
        print_meta(read_index_meta(index_dir), index_dir)
    except IndexStageError as err:
        _fail(err)


def print_meta(meta: dict, path: Path) -> None:
    table = Table(title=f"dense index {path}")
    table.add_column("what")
    table.add_column("value")
    enc = meta["encoder"]
    rows = [("model", f"{enc['model_label']} ({enc['model']})"), ("passages", f"{meta['count']:,}"),
            ("dimension", str(meta["dim"])), ("dtype", meta["dtype"]),
            ("index", ", ".join(f"{k}={v}" for k, v in meta["index"].items())),
            ("max length", str(enc["max_length"])), ("title prepended", str(enc["prepend_title"])),
            ("normalize", str(enc["normalize"])), ("corpus", meta.get("corpus", {}).get("store", "?"))]
    if (Path(path) / "bm25" / "bm25.json").exists():
        rows.append(("bm25", str(Path(path) / "bm25")))
    for row in rows:
        table.add_row(*row)
    console.print(table)


def search_command(
    index_dir: Path = typer.Argument(..., help="A dense index folder (or a BM25 index folder).", show_default=False),
    queries: list[str] = typer.Argument(..., help="One or more queries.", show_default=False),
    k: int = typer.Option(10, "-k", "--k", help="Passages to show per query."),
    bm25: bool = typer.Option(False, "--bm25", help="Show BM25's ranking beside the dense one: INDEX_DIR/bm25 when present, else built on the fly from the index's corpus store (default options)."),
    device: Optional[str] = typer.Option(None, "--device", help="Device for encoding the queries."),
    words: int = typer.Option(30, "--words", help="Words of each passage to show (0: titles only)."),
) -> None:
    """Search an index and print the ranked passages with their titles and scores.

    With --bm25, BM25's ranking is printed beside the dense one; it uses INDEX_DIR/bm25 (see `pretriever index build --bm25` or `pretriever index bm25 STORE --out INDEX_DIR/bm25`) and otherwise builds one in memory from the corpus store named in index.json (seconds for SciFact, long for Wikipedia: save one).

    Examples:

      pretriever search scifact-index/ "vitamin D deficiency increases the risk of multiple sclerosis" -k 5 --bm25

      pretriever search scifact-index/bm25 "0-dimensional biomaterials show inductive properties"
    """
    from pretriever.corpus.store import CorpusStore, StoreError
    from pretriever.index.bm25 import BM25_JSON, BM25Index
    from pretriever.index.dense import DenseIndex

    try:
        if (index_dir / BM25_JSON).exists() and not (index_dir / "index.json").exists():
            lexical = BM25Index.load(index_dir)
            systems = [lexical]
            store_path = lexical.meta.get("corpus", {}).get("store")
        else:
            dense = DenseIndex.load(index_dir, device=device)
            systems = [dense]
            store_path = dense.meta.get("corpus", {}).get("store")
            if bm25:
                if (index_dir / "bm25" / BM25_JSON).exists():
                    systems.append(BM25Index.load(index_dir / "bm25"))
                else:
                    console.print(f"[dim]building BM25 over {store_path} (save one with `pretriever index bm25 "
                                  f"{store_path} --out {index_dir / 'bm25'}` to skip this)[/dim]")
                    systems.append(BM25Index.build(store_path))
        results = [system.search(list(queries), k) for system in systems]
    except (IndexStageError, StoreError, ValueError) as err:
        _fail(err)
    store = None
    if store_path and Path(store_path).exists():
        try:
            store = CorpusStore(store_path)
        except StoreError:
            store = None
    wanted = sorted({h.passage_id for per_system in results for hits in per_system for h in hits})
    details = _passage_details(store, wanted, words) if store is not None else {}
    out = Console()  # results go to stdout (progress and messages to stderr)
    for qi, query in enumerate(queries):
        table = Table(title=f"[bold]{query}[/bold]", show_lines=True)
        table.add_column("#", justify="right")
        for system in systems:
            table.add_column(f"{system.name} score", justify="right")
            table.add_column(f"{system.name} passage")
        for rank in range(k):
            row = [str(rank + 1)]
            for per_system in results:
                hits = per_system[qi]
                if rank < len(hits):
                    hit = hits[rank]
                    title, text = details.get(hit.passage_id, ("", ""))
                    cell = f"[bold]{title or '(no title)'}[/bold] [dim]{hit.passage_id}[/dim]"
                    row += [f"{hit.score:.3f}", cell + (f"\n{text}" if text else "")]
                else:
                    row += ["", ""]
            table.add_row(*row)
        out.print(table)


def _passage_details(store, passage_ids: list[str], words: int) -> dict[str, tuple[str, str]]:
    """passage_id -> (document title, first ``words`` words of the passage)."""
    if not passage_ids:
        return {}
    con = store.connect()
    try:
        con.execute("CREATE TEMP TABLE wanted(passage_id VARCHAR)")
        con.executemany("INSERT INTO wanted VALUES (?)", [[p] for p in passage_ids])
        rows = con.sql("SELECT p.passage_id, d.title, p.text FROM passages p JOIN wanted w USING (passage_id) "
                       "LEFT JOIN documents d ON p.doc_id = d.doc_id").fetchall()
    finally:
        con.close()
    out = {}
    for pid, title, text in rows:
        cut = (text or "").split()
        snippet = " ".join(cut[:words]) + (" ..." if len(cut) > words else "") if words else ""
        out[pid] = (title or "", snippet)
    return out
