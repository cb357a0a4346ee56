"""Open any index folder as a :class:`~pretriever.retrieval.Retriever`, by the kind it records.

Every index folder says what it is: a dense folder's ``index.json`` has ``retriever``
(``dense``; ``refined`` for a folder written by ``pretriever refine``), a BM25 folder has
``bm25.json``. :func:`open_retriever` reads that and calls the opener registered for the
kind, so ``search``, ``evaluate``, ``answer`` and ``serve`` open every kind the same way and
a refined index always brings its query side along.

Stages above this one register their kinds as entry points of the group
``pretriever.retrievers`` (``refined = "pretriever.refine.retriever:open_refined"`` in
pyproject.toml), so this module never imports them; a plug-in package can add a kind the
same way. Example::

    from pretriever.index import open_retriever
    hits = open_retriever("scifact-index/").search(["vitamin D and fractures"], k=10)
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from pretriever.data import CorpusStore
from pretriever.index.bm25 import BM25_JSON, BM25Index, BM25Options
from pretriever.index.dense import INDEX_JSON, DenseIndex, read_index_meta
from pretriever.index.errors import NotAnIndexError
from pretriever.retrieval import Retriever

ENTRY_POINT_GROUP = "pretriever.retrievers"
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


def retriever_kind(path: Path | str) -> str:
    """The kind an index folder records (``dense``, ``refined``, ``bm25``, ...)."""
    path = Path(path)
    if (path / BM25_JSON).exists() and not (path / INDEX_JSON).exists():
        return "bm25"
    meta = read_index_meta(path)  # a clear error for anything that is not a complete index
    return meta.get("retriever") or ("refined" if "refine" in meta else "dense")


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


def bm25_beside(store: Path | str, candidates: list[Path], save_to: Path | None = None,
                say: Callable[[str], None] = lambda message: None) -> tuple[BM25Index, str]:
    """BM25 over ``store``: the first of ``candidates`` that is a BM25 folder of that store, else one built
    now (and saved to ``save_to`` when given); returns it and where it came from."""
    for candidate in candidates:
        if (candidate / BM25_JSON).exists():
            loaded = BM25Index.load(candidate)
            built_on = (loaded.meta.get("corpus") or {}).get("store")
            if built_on and Path(built_on).resolve() != Path(store).resolve():
                if candidate == save_to:
                    raise NotAnIndexError(f"{candidate} is a BM25 index of {built_on}, not of {store}")
                continue
            say(f"loaded BM25 from {candidate}")
            return loaded, str(candidate)
    say(f"building BM25 over {store} (save one with `pretriever index bm25 {store} --out DIR` to skip this)")
    index = BM25Index.build(CorpusStore(store), BM25Options())
    if save_to is not None:
        index.save(save_to)
        return index, f"built and saved to {save_to}"
    return index, "built for this run"

