"""What an index folder records, typed: :class:`IndexMeta` (its ``index.json``, or ``bm25.json`` for a BM25
folder) and :class:`EncoderInfo` (how its passages were, and queries must be, encoded).

One class writes these files and reads them back (:meth:`IndexMeta.to_json`, :meth:`IndexMeta.from_json`), so
every stage that reads an index (evaluate, tune, serve, search, refine, finetune) gets the same typed fields
instead of digging keys out of a dict. Keys pretriever only records (version, files, timings, encode
statistics) are kept as written in :attr:`IndexMeta.recorded`; a folder written before this class existed
reads the same, because the JSON did not change.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from pretriever.index.errors import NotAnIndexError
from pretriever.index.tuned import TUNED_KEY, TunedSetting
from pretriever.io import read_json, write_json

INDEX_JSON = "index.json"
BM25_JSON = "bm25.json"
IDS_FILE = "passage_ids.parquet"
EMBEDDINGS_FILE = "embeddings.npy"
FAISS_FILE = "index.faiss"
BM25_DIR = "bm25"
DENSE_FORMAT = "pretriever-dense-index"  # the "kind" key of index.json
BM25_FORMAT = "pretriever-bm25-index"  # the "kind" key of bm25.json
BUILD_HINT = "build one with `pretriever index build CORPUS_DIR --out INDEX_DIR`"


@dataclass(frozen=True)
class EncoderInfo:
    """How passages were (and queries must be) encoded: ``encoder`` in index.json (:func:`encoder_info` makes one).

    ``model`` is what loads the model (a local path, or the packaged model's name); ``model_label`` names it in
    tables.
    """

    model: str
    model_label: str
    max_length: int
    normalize: bool
    prepend_title: bool
    passage_prompt: str = ""
    query_prompt: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> EncoderInfo:
        """The encoder as index.json records it (an older folder's missing keys get their defaults then).

        Args:
            data: index.json's ``encoder`` object.

        Returns:
            The encoder's settings.
        """
        return cls(model=str(data["model"]), model_label=str(data.get("model_label") or data["model"]),
                   max_length=int(data["max_length"]), normalize=bool(data["normalize"]),
                   prepend_title=bool(data.get("prepend_title", True)),
                   passage_prompt=data.get("passage_prompt") or "", query_prompt=data.get("query_prompt") or "")


@dataclass(frozen=True)
class TunedRecord:
    """What ``pretriever tune`` recorded under ``tuned`` in index.json: the setting, the report it came from and
    when."""

    setting: TunedSetting
    source: str | None = None
    created: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {**self.setting.to_json(), "from": self.source, "created": self.created}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TunedRecord:
        """The record as index.json holds it.

        Args:
            data: index.json's ``tuned`` object.

        Returns:
            The record.

        Raises:
            ValueError: the entry is not one ``pretriever tune`` wrote.
        """
        try:
            setting = TunedSetting.from_json(data)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            raise ValueError(f"the {TUNED_KEY!r} entry of {INDEX_JSON} is not a setting `pretriever tune` wrote "
                             f"({err}); run `pretriever tune` again") from err
        return cls(setting, data.get("from"), data.get("created"))


# index.json / bm25.json keys that IndexMeta types; every other key is kept in ``recorded`` as written
_TYPED = ("kind", "name", "count", "corpus", "encoder", "dim", "dtype", "index", "options", "vocabulary",
          "retriever", "refine", TUNED_KEY)


@dataclass
class IndexMeta:
    """An index folder's ``index.json`` (dense, refined) or ``bm25.json`` (BM25), parsed once; the index stage's
    manifest (:attr:`pretriever.index.IndexResult.manifest`).

    ``format`` is the file's ``kind`` (:data:`DENSE_FORMAT` or :data:`BM25_FORMAT`); :attr:`kind` is the
    retriever kind an :class:`~pretriever.index.IndexFolder` opens it as (``dense``, ``refined``, ``bm25``, or
    one a plug-in registered). ``store`` is the corpus store the index was built from (None: not recorded).
    Dense fields (``encoder``, ``dim``, ``dtype``, ``faiss``) are None for BM25, BM25's (``options``,
    ``vocabulary``) None for a dense index. ``refine`` is the record ``pretriever refine`` wrote, kept as the
    dict refine reads (the refine stage owns its shape); ``tuned`` what ``pretriever tune`` chose.
    ``recorded``: the other keys (version, files, timings, encode statistics), as written.
    """

    format: str
    name: str
    count: int
    store: str | None = None
    n_passages: int | None = None
    encoder: EncoderInfo | None = None
    dim: int | None = None
    dtype: str | None = None
    faiss: dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    vocabulary: int | None = None
    retriever: str | None = None
    refine: dict[str, Any] | None = None
    tuned: TunedRecord | None = None
    recorded: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """The retriever kind: ``bm25`` for a BM25 folder, else the recorded one, ``refined`` for a folder with a
        refine record (written before the kind was recorded), else ``dense``."""
        if self.format == BM25_FORMAT:
            return "bm25"
        return self.retriever or ("refined" if self.refine is not None else "dense")

    @property
    def index_type(self) -> str | None:
        """The FAISS index type (flat, hnsw, ivfpq); None for BM25."""
        return (self.faiss or {}).get("type")

    @property
    def tuned_setting(self) -> TunedSetting | None:
        return self.tuned.setting if self.tuned is not None else None

    def corpus(self) -> dict[str, Any]:
        """The ``corpus`` record ({"store", "n_passages"}; empty when none), to copy into an index made from this
        one."""
        return {key: value for key, value in (("store", self.store), ("n_passages", self.n_passages))
                if value is not None}

    def with_tuned(self, tuned: TunedRecord | None) -> IndexMeta:
        """A copy recording ``tuned`` (or none); the file is written by :meth:`write`.

        Args:
            tuned: the record, or None to drop it.

        Returns:
            The new metadata.
        """
        return replace(self, tuned=tuned)

    def to_json(self) -> dict[str, Any]:
        """The file's content (keys in the order the writers have always used)."""
        typed: dict[str, Any] = {"kind": self.format, "name": self.name}
        if self.encoder is not None:
            typed["encoder"] = self.encoder.to_json()
        for key, value in (("dim", self.dim), ("count", self.count), ("dtype", self.dtype), ("index", self.faiss),
                           ("options", self.options), ("vocabulary", self.vocabulary),
                           ("retriever", self.retriever), ("refine", self.refine)):
            if value is not None:
                typed[key] = value
        if self.corpus():
            typed["corpus"] = self.corpus()
        if self.tuned is not None:
            typed[TUNED_KEY] = self.tuned.to_json()
        return {**typed, **self.recorded}

    @classmethod
    def from_json(cls, data: dict[str, Any], source: Path | str = INDEX_JSON) -> IndexMeta:
        """Parse ``data`` (the content of ``source``); a :class:`NotAnIndexError` names the file and the key that
        does not fit.

        Args:
            data: the parsed JSON.
            source: the file it came from, named in errors.

        Returns:
            The metadata.
        """
        if not isinstance(data, dict) or data.get("kind") not in (DENSE_FORMAT, BM25_FORMAT):
            raise NotAnIndexError(f"{source} was not written by pretriever (kind is not {DENSE_FORMAT!r} or "
                                  f"{BM25_FORMAT!r})")
        try:
            tuned = TunedRecord.from_json(data[TUNED_KEY]) if data.get(TUNED_KEY) else None
        except ValueError as err:
            raise NotAnIndexError(f"{source}: {err}") from err
        try:
            corpus = data.get("corpus") or {}
            encoder = data.get("encoder")
            return cls(
                format=data["kind"], name=str(data.get("name") or ("bm25" if data["kind"] == BM25_FORMAT else "")),
                count=int(data["count"]), store=corpus.get("store"), n_passages=corpus.get("n_passages"),
                encoder=EncoderInfo.from_json(encoder) if encoder is not None else None,
                dim=_int(data.get("dim")), dtype=data.get("dtype"), faiss=data.get("index"),
                options=data.get("options"), vocabulary=_int(data.get("vocabulary")), retriever=data.get("retriever"),
                refine=data.get("refine"), tuned=tuned,
                recorded={key: value for key, value in data.items() if key not in _TYPED})
        except ValueError as err:
            raise NotAnIndexError(f"{source}: a value does not fit ({err}); rebuild the index") from err
        except (KeyError, TypeError, AttributeError) as err:
            raise NotAnIndexError(f"{source}: the key {err} is missing or malformed; rebuild the index") from err

    @classmethod
    def read(cls, path: Path | str, dense: bool = False) -> IndexMeta:
        """The metadata of the index folder ``path`` (index.json, or bm25.json for a BM25 folder unless ``dense``),
        checked to be a complete index: a :class:`NotAnIndexError` says what is missing and what to run.

        Args:
            path: the index folder.
            dense: read index.json even where a BM25 folder's bm25.json is.

        Returns:
            The metadata.
        """
        path = Path(path)
        if not dense and is_bm25_folder(path):
            return cls.from_json(read_json(path / BM25_JSON, NotAnIndexError), path / BM25_JSON)
        if not path.is_dir():
            raise NotAnIndexError(f"{path} is not a folder; {BUILD_HINT}")
        meta_path = path / INDEX_JSON
        if not meta_path.exists():
            if (path / "_work").exists():
                hint = ("it holds an unfinished encode: continue it with `pretriever index build ... --resume`, "
                        f"or merge finished shards with `pretriever index merge {path}`")
            elif (path / "manifest.json").exists():
                hint = "it is a corpus store; index it with `pretriever index build CORPUS_DIR --out INDEX_DIR`"
            elif (path / BM25_JSON).exists():
                hint = "it is a BM25 index (open it with IndexFolder, or BM25Index.load)"
            else:
                hint = BUILD_HINT
            raise NotAnIndexError(f"{path} is not a dense index: {INDEX_JSON} is missing; {hint}")
        meta = cls.from_json(read_json(meta_path, NotAnIndexError), meta_path)
        if meta.format != DENSE_FORMAT:
            raise NotAnIndexError(f"{meta_path} was not written by `pretriever index` (kind is not {DENSE_FORMAT!r})")
        for name in (IDS_FILE, EMBEDDINGS_FILE, FAISS_FILE):
            if not (path / name).exists():
                raise NotAnIndexError(f"{path}: {name} is missing; rebuild the index")
        return meta

    def write(self, path: Path | str) -> None:
        """Write this metadata into the index folder ``path`` (atomically; index.json or bm25.json by format).

        Args:
            path: the index folder.
        """
        write_json(Path(path) / (BM25_JSON if self.format == BM25_FORMAT else INDEX_JSON), self.to_json())


def is_bm25_folder(path: Path) -> bool:
    """Whether ``path`` is a BM25 index folder (bm25.json and no index.json)."""
    return (path / BM25_JSON).exists() and not (path / INDEX_JSON).exists()


def _int(value: Any) -> int | None:
    return None if value is None else int(value)
