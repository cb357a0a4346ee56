"""``pretriever index ...`` and ``pretriever search``: encode a store, build FAISS/BM25 indexes, query them."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Optional

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from pretriever.cli.common import fail, stage
from pretriever.cli.options import Flag, config_command
from pretriever.data import CorpusStore
from pretriever.index import IndexConfig, IndexFolder, IndexMeta, SearchConfig, System, encode
from pretriever.index.bm25 import build_bm25
from pretriever.index.encode import ENCODE_JSON, WORK, EncodeState
from pretriever.index.meta import BM25_DIR, BM25_JSON
from pretriever.index.export import INDEX_EXPORT_FORMATS, export_pyserini
from pretriever.progress import RichReporter, console

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

_FAISS_FLAGS = {"type": Flag("--index-type"), "build_bm25": Flag("--bm25")}


@index_app.command("build")
@config_command(IndexConfig, "index", arguments=("corpus",), short={"model": "-m"}, nested=("faiss",), skip=("bm25",),
                flags={**_FAISS_FLAGS, "prepend_title": Flag("--title/--no-title")})
def build(cfg: IndexConfig) -> None:
    """Encode the passages of CORPUS into a dense index in OUT.

    Passages are encoded as "title text" with the model's own maximum length and searched by exact inner
    product: the BEIR zero-shot setting (all-MiniLM-L6-v2 on SciFact: nDCG@10 0.649). Encoding is
    checkpointed every --checkpoint-every passages; an interrupted run continues with --resume and gives
    identical vectors.

    To spread the encode over machines, run shard i of n on each (all reading the same store) and merge;
    shard and one-process runs give identical vectors.

    Examples:

      pretriever index build scifact-store/ --out scifact-index/ --bm25

      pretriever index build enwiki/ --out enwiki-index/ --model hlp-minilm/ --max-length 128 --bm25

      pretriever index build scifact-store/ --out scifact-shards/ --shard 0/2
          (then 1/2, on another machine, then `pretriever index merge`)
    """
    run_build(cfg)


def run_build(cfg: IndexConfig) -> encode.IndexResult:
    """Build under progress bars; print what was done and what to run next."""
    with RichReporter() as report, stage(report):
        result = encode.run(cfg, report)
    done_now = f"{result.chunks_encoded} chunk(s), {result.passages_encoded:,} passages in " \
               f"{result.encode_seconds:.1f} s ({result.rate:,.1f} passages/s)"
    if result.stopped:
        console.print(f"Stopped after {done_now} as asked (--max-chunks); continue with --resume.")
        return result
    if not result.manifest:
        console.print(f"Shard {result.shard} done: {done_now}. When every shard is done, run: "
                      f"pretriever index merge {cfg.out} [OTHER_SHARD_OUT_DIRS...]")
        return result
    console.print(f"Encoded {done_now}.")
    print_meta(result.manifest, cfg.out)
    return result


def _corpus_of_shards(values: dict, extras: dict) -> None:
    """The corpus store the shards were encoded from (recorded in their work folders)."""
    values["corpus"] = Path(".")
    for work in [Path(values["out"]) / WORK, *((d / WORK) for d in extras["shard_dirs"] or [])]:
        if (work / ENCODE_JSON).exists():
            values["corpus"] = Path(EncodeState.read(work).store)
            break


_SHARD_DIRS = inspect.Parameter(
    "shard_dirs", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[list[Path]],
    default=typer.Argument(None, help="Other shards' --out folders, when they were encoded elsewhere.", show_default=False))


@index_app.command("merge")
@config_command(IndexConfig, "index", arguments=("out",), only=("dtype", "keep_work", "build_bm25"), nested=("faiss",),
                flags={**_FAISS_FLAGS, "out": Flag(extra_help="The folder the shards ran in (INDEX_DIR).")},
                extra=[_SHARD_DIRS], before=_corpus_of_shards)
def merge(cfg: IndexConfig, shard_dirs: Optional[list[Path]]) -> None:
    """Merge the shards of an encode into one index and build its FAISS index.

    Chunks are gathered from INDEX_DIR/_work and from each SHARD_DIR (another machine's --out); every
    chunk must be there and all must come from the same encode (model, settings, corpus), else the missing
    shards are named.

    Example (2 machines sharing a file system, each running its shard into the same folder):

      pretriever index build scifact-store/ --out scifact-shards/ --shard 1/2
          (on machine 1; machine 0 ran 0/2)

      pretriever index merge scifact-shards/ --index-type hnsw
    """
    with RichReporter() as report, stage(report):
        meta = encode.merge(cfg, shard_dirs or [], report)
    print_meta(meta, cfg.out)


@index_app.command("bm25")
@config_command(IndexConfig, "index", arguments=("corpus",), only=("out",), nested=("bm25",),
                flags={"prepend_title": Flag("--title/--no-title"),
                       "out": Flag(extra_help="INDEX_DIR/bm25 attaches it to a dense index.")})
def bm25_command(cfg: IndexConfig) -> None:
    """Build a BM25 index (bm25s) over the passages of CORPUS.

    Defaults are the usual BEIR BM25 baseline: Lucene scoring, k1=1.5, b=0.75, English stop words,
    Snowball English stemming, "title text" (SciFact test nDCG@10 0.686).

    Example:  pretriever index bm25 scifact-store/ --out scifact-index/bm25
    """
    with RichReporter() as report, stage(report):
        index = build_bm25(CorpusStore(cfg.corpus), cfg.out, cfg.bm25, report)
    console.print(f"BM25 index of {len(index):,} passages ({index.meta.vocabulary:,} terms) in {cfg.out}")


@index_app.command("export")
def export(
    index_dir: Path = typer.Argument(..., help="A dense index folder (from `pretriever index build`).", show_default=False),
    format: str = typer.Option("pyserini", "--format", "-f", help="pyserini: the folder Pyserini's FaissSearcher "
                               "reads (index: the FAISS index, docid: one passage id a line, row order)."),
    out: Path = typer.Option(..., "--out", "-o", help="Folder to write.", show_default=False),
) -> None:
    """Export a dense index for another toolkit.

    pyserini: OUT/index is the FAISS index itself (a hard link to INDEX_DIR/index.faiss when both are on
    one disk, so no second copy; else a copy), OUT/docid the passage ids, OUT/pretriever-index.json says
    which model, pooling settings and prompts the queries need. Search it in Pyserini with
    FaissSearcher(OUT, AutoQueryEncoder(MODEL, pooling="mean", l2_norm=True)) for all-MiniLM-L6-v2. A
    refined index cannot be exported: its query side needs pretriever.

    Example:

      pretriever index export scifact-index/ --format pyserini --out scifact-pyserini/
    """
    if format not in INDEX_EXPORT_FORMATS:
        fail(f"unknown format {format!r}; choose from {', '.join(INDEX_EXPORT_FORMATS)}")
    with stage():
        done = export_pyserini(index_dir, out)
    how = "hard link" if done["linked"] else "copy"
    console.print(escape(f"{done['count']:,} vectors of dimension {done['dim']} ({done['index']['type']}) written to "
                         f"{out} for Pyserini: index ({how} of the FAISS index), docid, pretriever-index.json"))


@index_app.command("info")
def info(index_dir: Path = typer.Argument(..., help="An index folder.")) -> None:
    """Print what an index holds and how it was built (from its index.json)."""
    with stage():
        print_meta(IndexMeta.read(index_dir, dense=True), index_dir)


def print_meta(meta: IndexMeta, path: Path) -> None:
    """What a dense index holds (index build, merge and info print it): model, size, FAISS, store, BM25."""
    table = Table(title=f"dense index {path}")
    table.add_column("what")
    table.add_column("value")
    enc = meta.encoder
    rows = [("model", f"{enc.model_label} ({enc.model})"), ("passages", f"{meta.count:,}"),
            ("dimension", str(meta.dim)), ("dtype", str(meta.dtype)),
            ("index", ", ".join(f"{k}={v}" for k, v in (meta.faiss or {}).items())),
            ("max length", str(enc.max_length)), ("title prepended", str(enc.prepend_title)),
            ("normalize", str(enc.normalize)), ("corpus", meta.store or "?")]
    if (Path(path) / BM25_DIR / BM25_JSON).exists():
        rows.append(("bm25", str(Path(path) / BM25_DIR)))
    if meta.tuned is not None:
        rows.append(("tuned", f"{meta.tuned.setting.label} (`pretriever tune`, {meta.tuned.created or '?'})"))
    for row in rows:
        table.add_row(*row)
    console.print(table)


@config_command(SearchConfig, "search", arguments=("index_dir", "queries"), nested=("fusion",),
                flags={"k": Flag(("-k", "--k"))})
def search_command(cfg: SearchConfig) -> None:
    """Search an index and print the ranked passages with their titles and scores.

    The folder is opened by the kind it records, as `pretriever evaluate` opens it: a refined index
    (`pretriever refine run`) searches with its refined query side. An index tuned by `pretriever tune` is
    searched as the tune chose (the column says "tuned: ..."); --no-tuned searches the index alone. With
    --hybrid, the index's ranking fused with BM25's (reciprocal rank fusion, or --fusion convex) is shown
    too. With --bm25, BM25's ranking is printed beside; it uses INDEX_DIR/bm25 (see `pretriever index build
    --bm25` or `pretriever index bm25 STORE --out INDEX_DIR/bm25`) and otherwise builds one in memory from
    the corpus store named in index.json (seconds for SciFact, long for Wikipedia: save one).

    Examples:

      pretriever search scifact-index/ "vitamin D deficiency increases the risk of multiple sclerosis" -k
          5 --bm25

      pretriever search scifact-index/bm25 "0-dimensional biomaterials show inductive properties"

      pretriever search scifact-index/ "ALDH1 expression is associated with poorer prognosis for breast
          cancer" --hybrid --fusion convex --alpha 0.5
    """
    queries, k = cfg.queries, cfg.k
    with RichReporter() as report, stage(report):
        folder = IndexFolder(cfg.index_dir)
        with folder.open(device=cfg.device) as system:
            tuned = folder.tuned(system, report) if cfg.tuned else None
            systems = [tuned or system]
            if (cfg.bm25 or cfg.hybrid) and not folder.is_bm25:
                lexical, _ = folder.bm25(system.lookup, report)
                systems += [lexical] if cfg.bm25 else []
                if cfg.hybrid:
                    systems.append(system.fused(lexical, cfg.fusion))
            results = [s.search(list(queries), k) for s in systems]
            wanted = sorted({h.passage_id for per_system in results for hits in per_system for h in hits})
            details = _passage_details(system, wanted, cfg.words)
    out = Console()  # results go to stdout (progress and messages to stderr)
    for qi, query in enumerate(queries):
        table = Table(title=f"[bold]{escape(query)}[/bold]", show_lines=True)
        table.add_column("#", justify="right")
        for s in systems:
            table.add_column(f"{s.name} score", justify="right")
            table.add_column(f"{s.name} passage")
        for rank in range(k):
            row = [str(rank + 1)]
            for per_system in results:
                hits = per_system[qi]
                if rank < len(hits):
                    hit = hits[rank]
                    title, text = details.get(hit.passage_id, ("", ""))
                    cell = f"[bold]{escape(title) or '(no title)'}[/bold] [dim]{escape(hit.passage_id)}[/dim]"
                    row += [f"{hit.score:.3f}", cell + (f"\n{escape(text)}" if text else "")]
                else:
                    row += ["", ""]
            table.add_row(*row)
        out.print(table)


def _passage_details(system: System, passage_ids: list[str], words: int) -> dict[str, tuple[str, str]]:
    """passage_id -> (document title, first ``words`` words of the passage); empty without a store."""
    out = {}
    for pid, passage in system.passages(passage_ids).items():
        cut = (passage.text or "").split()
        snippet = " ".join(cut[:words]) + (" ..." if len(cut) > words else "") if words else ""
        out[pid] = (passage.title or "", snippet)
    return out
