"""Open any index folder as a searcher: :func:`open_system`, by the kind the folder records.

Every index folder says what it is: a dense folder's ``index.json`` has ``retriever``
(``dense``; ``refined`` for a folder written by ``pretriever refine``), a BM25 folder has
``bm25.json``. :func:`open_retriever` reads that and calls the opener registered for the
kind, so every command opens every kind the same way and a refined index always brings its
query side along.

:func:`open_system` is the one assembly on top of it (pyserini's ``LuceneSearcher``: search, then
``passages(ids)``): the index, the corpus store its passages come from (:func:`store_lookup`, the one
place that reads it out of the metadata, with the ``--corpus`` override for a store that moved), the
BM25 beside it (:func:`bm25_system`) and their fusion, as ``mode`` asks. ``search``, ``evaluate``,
``answer``, ``reader``, ``serve`` and ``train --negatives-from`` open indexes this way.

Stages above this one register their kinds as entry points of the group
``pretriever.retrievers`` (``refined = "pretriever.refine.retriever:open_refined"`` in
pyproject.toml), so this module never imports them; a plug-in package can add a kind the
same way. Example::

    from pretriever.index import open_system
    with open_system("scifact-index/", "hybrid") as searcher:
        hits = searcher.search(["vitamin D and fractures"], k=10)[0]
        texts = {p.passage_id: p.text for p in searcher.passages(h.passage_id for h in hits).values()}
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pretriever.data import CorpusStore, PassageLookup, StoreError
from pretriever.index.bm25 import BM25_JSON, BM25Index, BM25Options
from pretriever.index.dense import BM25_DIR, INDEX_JSON, DenseIndex, read_index_meta
from pretriever.index.errors import NotAnIndexError
from pretriever.index.hybrid import HybridOptions
from pretriever.index.system import System
from pretriever.index.tuned import tuned_setting
from pretriever.io import read_json
from pretriever.progress import QUIET, Reporter
from pretriever.retrieval import Retriever

ENTRY_POINT_GROUP = "pretriever.retrievers"
SYSTEM_MODES = ("index", "bm25", "hybrid", "tuned")
Opener = Callable[..., Retriever]
_OPENERS: dict[str, Opener] = {}


def register_retriever(kind: str) -> Callable[[Opener], Opener]:
    """Register ``opener(path, *, device=None, model=None) -> Retriever`` for index folders of ``kind``."""
    def decorate(opener: Opener) -> Opener:
        if kind in _OPENERS:
            raise ValueError(f"retriever kind {kind!r} registered twice")
        _OPENERS[kind] = opener
        return opener
    return decorate


def _is_bm25(path: Path) -> bool:
    return (path / BM25_JSON).exists() and not (path / INDEX_JSON).exists()


def index_meta(path: Path | str) -> dict[str, Any]:
    """What an index folder records: its index.json, or its bm25.json for a BM25 folder (a clear error for
    anything that is not a complete index)."""
    path = Path(path)
    return read_json(path / BM25_JSON, NotAnIndexError) if _is_bm25(path) else read_index_meta(path)


def retriever_kind(path: Path | str) -> str:
    """The kind an index folder records (``dense``, ``refined``, ``bm25``, ...)."""
    if _is_bm25(Path(path)):
        return "bm25"
    meta = index_meta(path)
    return meta.get("retriever") or ("refined" if "refine" in meta else "dense")


def recorded_store(meta: dict[str, Any]) -> str | None:
    """The corpus store an index's metadata (index.json, bm25.json) says it was built from."""
    return (meta.get("corpus") or {}).get("store")


def store_lookup(path: Path | str, meta: dict[str, Any], corpus: Path | str | None = None,
                 required: bool = False) -> PassageLookup | None:
    """The corpus store whose passages the index in ``path`` holds, opened: ``corpus`` when given (the store
    moved), else the store ``meta`` (its index.json or bm25.json) names, when it is there. None when there is
    none, unless ``required``: then a :class:`~pretriever.data.StoreError` says what to do."""
    if corpus is not None:
        return PassageLookup(corpus)
    named = recorded_store(meta)
    if named and Path(named).exists():
        return PassageLookup(named)
    if not required:
        return None
    recorded = Path(path) / (BM25_JSON if _is_bm25(Path(path)) else INDEX_JSON)
    if not named:
        raise StoreError(f"{recorded} names no corpus store; give the store with --corpus")
    raise StoreError(f"{recorded} names the corpus store {named}, which is not there (moved?); give its new place "
                     "with --corpus")


def _opener(kind: str) -> Opener | None:
    if kind in _OPENERS:
        return _OPENERS[kind]
    found = entry_points(group=ENTRY_POINT_GROUP, name=kind)
    return next(iter(found)).load() if found else None


def open_retriever(path: Path | str, *, device: str | None = None, model: Any = None) -> Retriever:
    """The retriever stored in ``path``, opened by its recorded kind (``model`` shares a loaded encoder)."""
    kind = retriever_kind(path)
    opener = _opener(kind)
    if opener is None:
        known = sorted({*_OPENERS, *(e.name for e in entry_points(group=ENTRY_POINT_GROUP))})
        raise NotAnIndexError(f"{path}: its index kind {kind!r} is not installed (known: {', '.join(known)}); "
                              "is the package that wrote it installed?")
    return opener(Path(path), device=device, model=model)


@register_retriever("dense")
def _open_dense(path: Path, *, device: str | None = None, model: Any = None) -> DenseIndex:
    return DenseIndex.load(path, model=model, device=device)


@register_retriever("bm25")
def _open_bm25(path: Path, *, device: str | None = None, model: Any = None) -> BM25Index:
    return BM25Index.load(path)


def open_system(path: Path | str, mode: str = "index", *, fusion: HybridOptions | None = None,
                device: str | None = None, model: Any = None, corpus: Path | str | None = None,
                require_store: bool = False, report: Reporter = QUIET) -> System:
    """The index folder ``path`` opened as a :class:`System` that searches and returns its passages.

    ``mode``: ``index`` (the folder as its kind says: dense, refined or BM25), ``bm25`` (the folder when
    it is BM25, else the BM25 beside it, ``INDEX_DIR/bm25``, or one built from its store) or ``hybrid``
    (the index fused with that BM25 as ``fusion`` says; RRF by default) or ``tuned`` (the setting
    ``pretriever tune`` recorded in index.json, named "tuned: LABEL"; the index as it is when none is recorded,
    and ``fusion`` is then ignored). ``corpus``: the store, when it
    is not where the index says (moved); ``require_store``: refuse an index whose store is not there
    (else its passages have no text). ``model`` shares an encoder already loaded; ``report`` hears where
    BM25 came from. Close the system (or use it in a ``with`` block) to release the store.
    """
    if mode not in SYSTEM_MODES:
        raise ValueError(f"mode must be one of {', '.join(SYSTEM_MODES)}, got {mode!r}")
    path = Path(path)
    if mode == "tuned":
        system = open_system(path, "index", device=device, model=model, corpus=corpus, require_store=require_store,
                             report=report)
        return tuned_of(system, path, report) or system
    lexical_folder = _is_bm25(path)
    if mode == "hybrid" and lexical_folder:
        raise NotAnIndexError(f"{path} is a BM25 index: hybrid retrieval fuses a dense (or refined) index with BM25")
    meta = index_meta(path)
    lookup = store_lookup(path, meta, corpus, require_store)
    if mode == "bm25" and not lexical_folder:
        return bm25_system(lookup, [path / BM25_DIR], report=report)[0]
    system = System.of(open_retriever(path, device=device, model=model), lookup, meta)
    if mode == "hybrid":
        return system.fused(bm25_system(lookup, [path / BM25_DIR], report=report)[0], fusion)
    return system


def tuned_of(system: System, path: Path | str, report: Reporter = QUIET) -> System | None:
    """The setting ``pretriever tune`` recorded for the index ``system`` opened from ``path``, built on it (BM25
    from beside it or its store) and named "tuned: LABEL"; None when the index records none."""
    setting = None if _is_bm25(Path(path)) else tuned_setting(system.meta)
    if setting is None:
        return None
    if setting.mode == "index":
        return system.renamed(f"tuned: {setting.label}")
    bm25 = bm25_system(system.lookup, [Path(path) / BM25_DIR], report=report)[0]
    chosen = bm25 if setting.mode == "bm25" else system.fused(bm25, setting.fusion)
    return chosen.renamed(f"tuned: {setting.label}")


def bm25_system(lookup: PassageLookup | None, candidates: list[Path], save_to: Path | None = None,
                report: Reporter = QUIET) -> tuple[System, str]:
    """BM25 over the store of ``lookup`` (:func:`bm25_beside`) as a system that reads passages from it, and
    where the BM25 came from."""
    bm25, source = bm25_beside(lookup.path if lookup is not None else None, candidates, save_to, report)
    return System.of(bm25, lookup, bm25.meta), source


def bm25_beside(store: Path | str | None, candidates: list[Path], save_to: Path | None = None,
                report: Reporter = QUIET) -> tuple[BM25Index, str]:
    """BM25 over ``store``: the first of ``candidates`` that is a BM25 folder of that store (of any store when
    ``store`` is None: it is not known), else one built now (and saved to ``save_to`` when given); returns it
    and where it came from."""
    for candidate in candidates:
        if (candidate / BM25_JSON).exists():
            loaded = BM25Index.load(candidate)
            built_on = recorded_store(loaded.meta)
            if built_on and store is not None and Path(built_on).resolve() != Path(store).resolve():
                if candidate == save_to:
                    raise NotAnIndexError(f"{candidate} is a BM25 index of {built_on}, not of {store}")
                continue
            report.message(f"loaded BM25 from {candidate}")
            return loaded, str(candidate)
    if store is None:
        raise StoreError(f"no BM25 index in {' or '.join(map(str, candidates)) or 'any folder given'}, and no corpus "
                         "store is known to build one from (has the store the index names moved?)")
    report.message(f"building BM25 over {store} (save one with `pretriever index bm25 {store} --out DIR` to skip this)")
    index = BM25Index.build(CorpusStore(store), BM25Options())
    if save_to is not None:
        index.save(save_to)
        return index, f"built and saved to {save_to}"
    return index, "built for this run"

