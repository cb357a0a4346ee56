""":class:`IndexFolder`: any index folder, read once, opened as a searcher by the kind it records.

Every index folder says what it is (:class:`~pretriever.index.meta.IndexMeta`): a dense folder's
``index.json`` records the retriever kind (``dense``; ``refined`` for a folder written by ``pretriever
refine``), a BM25 folder has ``bm25.json``. :meth:`IndexFolder.open` is the one assembly on top of it
(pyserini's ``LuceneSearcher``: search, then ``passages(ids)``): the retriever of the recorded kind, the corpus
store its passages come from (:meth:`IndexFolder.store`, with the ``--corpus`` override for a store that moved),
the BM25 beside it (:meth:`IndexFolder.bm25`) and their fusion, or the setting ``pretriever tune`` chose, as
``mode`` asks. ``search``, ``evaluate``, ``answer``, ``reader``, ``serve``, ``tune``, ``refine`` and ``train
--negatives-from`` open indexes this way.

Index kinds. This module opens ``dense`` and ``bm25``. A stage above this one adds its kind with
:func:`register_retriever` when it is imported (``pretriever.refine.retriever`` registers ``refined``), so this
module never imports it. The command line imports ``pretriever.refine`` (its composition root,
``pretriever.cli``), so every kind is registered there; a library caller who opens a refined folder without
importing ``pretriever.refine`` gets it through the ``pretriever.retrievers`` entry point that names the
module (pyproject.toml), which is how a plug-in package adds a kind too. Example::

    from pretriever.index import IndexFolder
    folder = IndexFolder("scifact-index/")
    print(folder.kind, folder.meta.encoder.model_label, folder.meta.store)
    with folder.open("hybrid") as searcher:
        hits = searcher.search(["vitamin D and fractures"], k=10)[0]
        texts = {p.passage_id: p.text for p in searcher.passages(h.passage_id for h in hits).values()}
"""

from __future__ import annotations

import time
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pretriever.data import CorpusStore, PassageLookup, StoreError
from pretriever.index.bm25 import BM25Index, BM25Options
from pretriever.index.dense import DenseIndex
from pretriever.index.errors import NotAnIndexError
from pretriever.index.hybrid import HybridOptions
from pretriever.index.meta import BM25_DIR, BM25_FORMAT, BM25_JSON, INDEX_JSON, IndexMeta, TunedRecord
from pretriever.index.system import System
from pretriever.index.tuned import TunedSetting
from pretriever.progress import QUIET, Reporter
from pretriever.retrieval import Retriever

ENTRY_POINT_GROUP = "pretriever.retrievers"
SYSTEM_MODES = ("index", "bm25", "hybrid", "tuned")
Opener = Callable[..., Retriever]
"""``opener(folder: IndexFolder, *, device=None, model=None) -> Retriever``"""
_OPENERS: dict[str, Opener] = {}


def register_retriever(kind: str) -> Callable[[Opener], Opener]:
    """Register ``opener(folder, *, device=None, model=None) -> Retriever`` for index folders of ``kind``.

    Args:
        kind: the kind index.json records under ``retriever``.

    Returns:
        The decorator; registering a kind twice is a ValueError.
    """
    def decorate(opener: Opener) -> Opener:
        if kind in _OPENERS:
            raise ValueError(f"retriever kind {kind!r} registered twice")
        _OPENERS[kind] = opener
        return opener
    return decorate


def registered_kinds() -> list[str]:
    """The index kinds that open now or through an installed entry point."""
    return sorted({*_OPENERS, *(e.name for e in entry_points(group=ENTRY_POINT_GROUP))})


def _opener(kind: str) -> Opener | None:
    """The opener registered for ``kind``; else the entry point of that name, loaded (its module registers it)."""
    if kind not in _OPENERS:
        found = entry_points(group=ENTRY_POINT_GROUP, name=kind)
        if found:
            loaded = next(iter(found)).load()
            return _OPENERS.get(kind, loaded)
    return _OPENERS.get(kind)


class IndexFolder:
    """An index folder (dense, refined or BM25) with its metadata read once (:attr:`meta`, an
    :class:`~pretriever.index.meta.IndexMeta`); opens its retriever, its store and its BM25.

    ``corpus``: the corpus store, when it is not where the metadata says (it moved). A folder that is not a
    complete index is refused here, with a :class:`NotAnIndexError` saying what to run.

    Relations: :class:`pretriever.data.CorpusStore` and :class:`pretriever.data.PairsDir` are the other folders
    that stages hand on; :class:`System` is what :meth:`open` returns.

    Args:
        path: the index folder.
        corpus: the store's new place (None: where the metadata says).
    """

    def __init__(self, path: Path | str, corpus: Path | str | None = None):
        self.path = Path(path)
        self.corpus = Path(corpus) if corpus is not None else None
        self.meta = IndexMeta.read(self.path)

    def __repr__(self) -> str:
        return f"IndexFolder({str(self.path)!r}, kind={self.kind!r})"

    @property
    def kind(self) -> str:
        """The retriever kind it records: ``dense``, ``refined``, ``bm25``, or one a plug-in registered."""
        return self.meta.kind

    @property
    def is_bm25(self) -> bool:
        return self.meta.format == BM25_FORMAT

    @property
    def meta_file(self) -> Path:
        """The file the metadata was read from (index.json, or bm25.json)."""
        return self.path / (BM25_JSON if self.is_bm25 else INDEX_JSON)

    @property
    def bm25_dir(self) -> Path:
        """Where a dense index keeps its BM25 (``INDEX_DIR/bm25``)."""
        return self.path / BM25_DIR

    def store(self, required: bool = False) -> PassageLookup | None:
        """The corpus store whose passages the index holds, opened: ``corpus`` when given (the store moved), else
        the store the metadata names, when it is there. None when there is none, unless ``required``: then a
        :class:`~pretriever.data.StoreError` says what to do.

        Args:
            required: raise rather than return None.

        Returns:
            The store's passages, or None.
        """
        if self.corpus is not None:
            return PassageLookup(self.corpus)
        named = self.meta.store
        if named and Path(named).exists():
            return PassageLookup(named)
        if not required:
            return None
        if not named:
            raise StoreError(f"{self.meta_file} names no corpus store; give the store with --corpus")
        raise StoreError(f"{self.meta_file} names the corpus store {named}, which is not there (moved?); give its new "
                         "place with --corpus")

    def retriever(self, *, device: str | None = None, model: Any = None) -> Retriever:
        """The retriever stored here, opened by its recorded kind (``model`` shares a loaded encoder).

        Args:
            device: where the query encoder runs (None: :func:`~pretriever.models.resolve_device` picks).
            model: an encoder already loaded, shared (None: load the recorded one).

        Returns:
            The retriever (dense, refined, BM25 or a registered kind).
        """
        opener = _opener(self.kind)
        if opener is None:
            raise NotAnIndexError(f"{self.path}: its index kind {self.kind!r} is not installed (known: "
                                  f"{', '.join(registered_kinds())}); is the package that wrote it installed?")
        return opener(self, device=device, model=model)

    def dense(self, *, device: str | None = None, model: Any = None) -> DenseIndex:
        """The folder's passage vectors as a :class:`DenseIndex`, whatever its kind records (a refined folder's
        without its query side: what ``pretriever refine`` starts from); a BM25 folder is refused.

        Args:
            device: where the query encoder runs (None: :func:`~pretriever.models.resolve_device` picks).
            model: an encoder already loaded, shared (None: load the recorded one).

        Returns:
            The dense index.
        """
        if self.is_bm25:
            raise NotAnIndexError(f"{self.path} is a BM25 index, not a dense one: give a dense index folder")
        return DenseIndex(self.path, self.meta, model=model, device=device)

    def open(self, mode: str = "index", *, fusion: HybridOptions | None = None, device: str | None = None,
             model: Any = None, require_store: bool = False, report: Reporter = QUIET) -> System:
        """The folder opened as a :class:`System` that searches and returns its passages.

        ``mode``: ``index`` (the folder as its kind says: dense, refined or BM25), ``bm25`` (the folder when it
        is BM25, else :meth:`bm25`), ``hybrid`` (the index fused with that BM25 as ``fusion`` says; RRF by
        default) or ``tuned`` (the setting ``pretriever tune`` recorded, named "tuned: LABEL"; the index as it
        is when none is recorded, and ``fusion`` is then ignored). ``require_store``: refuse an index whose store
        is not there (else its passages have no text). ``model`` shares an encoder already loaded; ``report``
        hears where BM25 came from. Close the system (or use it in a ``with`` block) to release the store.

        Args:
            mode: ``index``, ``bm25``, ``hybrid`` or ``tuned`` (:data:`SYSTEM_MODES`).
            fusion: how ``hybrid`` fuses (default: RRF).
            device: where the query encoder runs (None: :func:`~pretriever.models.resolve_device` picks).
            model: an encoder already loaded, shared (None: load the recorded one).
            require_store: refuse a folder whose store is missing.
            report: hears where BM25 came from.

        Returns:
            The system, with its store open.
        """
        if mode not in SYSTEM_MODES:
            raise ValueError(f"mode must be one of {', '.join(SYSTEM_MODES)}, got {mode!r}")
        if mode == "hybrid" and self.is_bm25:
            raise NotAnIndexError(f"{self.path} is a BM25 index: hybrid retrieval fuses a dense (or refined) index "
                                  "with BM25")
        lookup = self.store(require_store)
        if mode == "bm25":
            return self.bm25(lookup, report)[0]
        system = System.of(self.retriever(device=device, model=model), lookup, self.meta)
        if mode == "hybrid":
            return system.fused(self.bm25(lookup, report)[0], fusion)
        if mode == "tuned":
            return self.tuned(system, report) or system
        return system

    def bm25(self, lookup: PassageLookup | None = None, report: Reporter = QUIET) -> tuple[System, str]:
        """This folder's BM25, reading passages through ``lookup`` (a store already opened, shared; None: the
        folder's own store, when there is one), and where it came from: the folder itself when it is a BM25
        index, else ``INDEX_DIR/bm25``, else one built now from the store (:func:`bm25_system`).

        Args:
            lookup: the store's passages, already opened (None: open the folder's own).
            report: hears where BM25 came from or that it is being built.

        Returns:
            ``(system, source)``: the BM25 system and the folder it came from.
        """
        lookup = lookup if lookup is not None else self.store()
        if self.is_bm25:
            return System.of(self.retriever(), lookup, self.meta), str(self.path)
        return bm25_system(lookup, [self.bm25_dir], report=report)

    def tuned(self, system: System, report: Reporter = QUIET) -> System | None:
        """The setting ``pretriever tune`` recorded, built on ``system`` (this folder, opened; BM25 from beside it
        or its store) and named "tuned: LABEL"; None when the index records none.

        Args:
            system: this folder, opened.
            report: hears where BM25 came from.

        Returns:
            The tuned system, or None.
        """
        setting = self.meta.tuned_setting
        if setting is None:
            return None
        if setting.mode == "index":
            return system.renamed(f"tuned: {setting.label}")
        bm25 = self.bm25(system.lookup, report)[0]
        chosen = bm25 if setting.mode == "bm25" else system.fused(bm25, setting.fusion)
        return chosen.renamed(f"tuned: {setting.label}")

    def record_tuned(self, setting: TunedSetting, source: str) -> TunedRecord:
        """Write ``setting`` into index.json (atomically; every other key is kept) as chosen by the report
        ``source``; returns the record.

        Args:
            setting: what ``pretriever tune`` chose.
            source: the report it was chosen in (``tune.json``).

        Returns:
            The record written.
        """
        record = TunedRecord(setting, source, time.strftime("%Y-%m-%dT%H:%M:%S%z"))
        self.meta = self.meta.with_tuned(record)
        self.meta.write(self.path)
        return record


@register_retriever("dense")
def _open_dense(folder: IndexFolder, *, device: str | None = None, model: Any = None) -> DenseIndex:
    return folder.dense(device=device, model=model)


@register_retriever("bm25")
def _open_bm25(folder: IndexFolder, *, device: str | None = None, model: Any = None) -> BM25Index:
    return BM25Index.load(folder.path)


def bm25_system(lookup: PassageLookup | None, candidates: list[Path], save_to: Path | None = None,
                report: Reporter = QUIET) -> tuple[System, str]:
    """BM25 over the store of ``lookup`` as a system that reads passages from it, and where the BM25 came from:
    the first of ``candidates`` that is a BM25 folder of that store (of any store when ``lookup`` is None: it is
    not known), else one built now (and saved to ``save_to`` when given).

    Args:
        lookup: the store's passages (None: unknown).
        candidates: BM25 folders to try, in order.
        save_to: where a BM25 built now is saved (None: not saved).
        report: hears where BM25 came from.

    Returns:
        ``(system, source)``: the BM25 system and its folder (or what it was built from).
    """
    store = lookup.path if lookup is not None else None
    for candidate in candidates:
        if (candidate / BM25_JSON).exists():
            loaded = BM25Index.load(candidate)
            built_on = loaded.meta.store
            if built_on and store is not None and Path(built_on).resolve() != Path(store).resolve():
                if candidate == save_to:
                    raise NotAnIndexError(f"{candidate} is a BM25 index of {built_on}, not of {store}")
                continue
            report.message(f"loaded BM25 from {candidate}")
            return System.of(loaded, lookup, loaded.meta), str(candidate)
    if store is None:
        raise StoreError(f"no BM25 index in {' or '.join(map(str, candidates)) or 'any folder given'}, and no corpus "
                         "store is known to build one from (has the store the index names moved?)")
    report.message(f"building BM25 over {store} (save one with `pretriever index bm25 {store} --out DIR` to skip this)")
    index = BM25Index.build(CorpusStore(store), BM25Options())
    if save_to is not None:
        index.save(save_to)
        return System.of(index, lookup, index.meta), f"built and saved to {save_to}"
    return System.of(index, lookup, index.meta), "built for this run"
