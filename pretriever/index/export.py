"""Export a dense index folder for other toolkits: Pyserini's FAISS index layout.

Pyserini's ``FaissSearcher(index_dir, query_encoder)`` reads two files from a folder:
``index`` (``faiss.read_index``: any FAISS index, so our flat, HNSW and IVF-PQ indexes all
load) and ``docid`` (one id a line, row ``r`` of the index on line ``r``). The export
writes exactly those, plus ``pretriever-index.json`` (our ``index.json``: which model,
normalisation, prompts and maximum length the queries must be encoded with). ``index`` is
a hard link to our ``index.faiss`` when both sit on one file system (no second copy of
22M x 768 floats), else a copy; ``docid`` is streamed from ``passage_ids.parquet``.

Only plain dense indexes are exported: a refined index (``pretriever refine``) searches
with a refined query side that Pyserini's query encoders cannot apply. Example::

    pretriever index export scifact-index/ --format pyserini --out scifact-pyserini/

    # then, with Pyserini installed (all-MiniLM-L6-v2: mean pooling, normalised):
    from pyserini.search.faiss import FaissSearcher, AutoQueryEncoder
    encoder = AutoQueryEncoder("sentence-transformers/all-MiniLM-L6-v2", pooling="mean", l2_norm=True)
    hits = FaissSearcher("scifact-pyserini/", encoder).search("vitamin D and fractures", k=10)
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq

from pretriever.index.errors import IndexExportError
from pretriever.index.folder import IndexFolder
from pretriever.index.meta import FAISS_FILE, IDS_FILE, INDEX_JSON
from pretriever.io import atomic_path
from pretriever.stage import OutputFolder

INDEX_EXPORT_FORMATS = ("pyserini",)
PYSERINI_INDEX, PYSERINI_DOCIDS, PYSERINI_META = "index", "docid", "pretriever-index.json"


def export_pyserini(index_dir: Path | str, out: Path | str) -> dict[str, Any]:
    """Write ``out/index``, ``out/docid`` and ``out/pretriever-index.json`` from a dense index folder.

    Returns ``{"count", "dim", "index", "linked"}`` (``linked``: ``index`` is a hard link, not a copy).
    """
    index_dir, out = Path(index_dir), Path(out)
    meta = IndexFolder(index_dir).meta  # NotAnIndexError names what is missing
    if meta.kind != "dense":
        raise IndexExportError(f"{index_dir} is a {meta.kind} index; only plain dense indexes export to Pyserini "
                               "(a refined index's query side, or BM25, has no Pyserini FAISS equivalent)")
    if out.resolve() == index_dir.resolve():
        raise IndexExportError(f"--out must be another folder than the index ({index_dir})")
    folder = OutputFolder(out, stage="pyserini export", holds="a Pyserini export",
                          owns=(PYSERINI_INDEX, PYSERINI_DOCIDS, PYSERINI_META))
    folder.check()
    folder.claim()
    linked = _link_or_copy(index_dir / FAISS_FILE, out / PYSERINI_INDEX)
    rows = 0
    with atomic_path(out / PYSERINI_DOCIDS) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for batch in pq.ParquetFile(index_dir / IDS_FILE).iter_batches(batch_size=65_536, columns=["passage_id"]):
            ids = batch.column(0).to_pylist()
            f.writelines(f"{i}\n" for i in ids)
            rows += len(ids)
    if rows != meta.count:
        raise IndexExportError(f"{index_dir / IDS_FILE} holds {rows} ids, {INDEX_JSON} says {meta.count}; "
                               "rebuild the index")
    shutil.copyfile(index_dir / INDEX_JSON, out / PYSERINI_META)
    folder.seal()
    return {"count": rows, "dim": meta.dim, "index": meta.faiss, "linked": linked}


def _link_or_copy(src: Path, dst: Path) -> bool:
    """``dst`` as a hard link to ``src`` (True), or a copy when the file system cannot link (False)."""
    dst.unlink(missing_ok=True)
    try:
        os.link(src, dst)
        return True
    except OSError:
        with atomic_path(dst) as tmp:
            shutil.copyfile(src, tmp)
        return False
