"""Pairs folders: what ``pretriever mine`` writes, or any folder of Parquet pair files.

A pairs folder is what ``pretriever mine`` writes (``pairs.json`` naming one Parquet file
per method, columns ``method``, ``query``, ``positive_text``, ``negative_text``, ...), or
any folder of Parquet files with at least ``query`` and ``positive_text`` (``method`` and
``negative_text`` optional; without ``method`` a file's rows belong to the method named
by the file), or the ``pretriever pairs export --format sentence-transformers`` Parquet
(``anchor``, ``positive``, ``negative``).

* :func:`open_pair_files` - the files of any such folder, checked (train and pretrain read these);
* :class:`PairsDir` - a mined folder by its manifest, method by method (export, serve);
* :class:`PairsManifest` - ``pairs.json`` typed: ``pretriever mine`` writes it, every reader reads it.

Every problem is a :class:`PairsError` naming the file.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from pretriever.errors import PretrieverError
from pretriever.io import text_pair_hashes
from pretriever.stage import Manifest

QUERY_COLUMNS = ("query", "anchor")
POSITIVE_COLUMNS = ("positive_text", "positive")
NEGATIVE_COLUMNS = ("negative_text", "negative")
MANIFEST = "pairs.json"  # what `pretriever mine` writes beside its pair files


class PairsError(PretrieverError):
    """The folder is not a usable pairs folder, or the request does not fit it."""


NOT_IN_A_NAME = frozenset("/\\*?[]{}")  # path separators and the wildcards DuckDB's read_parquet expands


def pair_file_names(manifest: Path | str, methods: dict[str, Any]) -> dict[str, str]:
    """Each method's pair file in a ``pairs.json`` (``methods``: its "methods" object), checked to be a plain
    file name inside the folder: an absolute path, ``..`` or a glob (``../elsewhere/*.parquet``) would read,
    and ``serve`` would show, Parquet files from outside it."""
    names: dict[str, str] = {}
    for method, info in methods.items():
        name = info.get("file") if isinstance(info, dict) else None
        if not name:
            continue
        if not isinstance(name, str) or name in (".", "..") or not NOT_IN_A_NAME.isdisjoint(name):
            raise PairsError(f"{manifest}: method {method!r} names the pair file {name!r}; a {MANIFEST} names "
                             "plain file names inside its folder (no path, '..' or wildcard)")
        names[method] = name
    return names


@dataclass(frozen=True, kw_only=True)
class PairsManifest(Manifest):
    """``pairs.json``: per method (``methods``, in the order mined) its title, definition, counts, pair ``file``
    or ``why_no_pairs``, and what the method reported; the ``corpus`` mined ({"path", "input", "counts"}), the
    ``options`` given, cm's in-degree threshold, the sentences flagged as never queries, the stats file's name.
    Only ``methods`` is required (a hand-made folder names its files with it alone); the file names are checked
    on reading (:func:`pair_file_names`). Recorded as written: version, time, columns, plot, seconds."""

    FILE = MANIFEST
    ERROR = PairsError
    ORDER = ("pretriever_version", "created", "corpus", "options", "duckdb_memory_limit", "join_parts",
             "total_pairs", "methods", "cm_indegree_threshold", "flagged_sentences", "columns", "stats",
             "overlap_plot", "seconds")
    FIX = "mine the folder again with `pretriever mine CORPUS_DIR --out PAIRS_DIR`"

    methods: dict[str, dict[str, Any]]
    corpus: dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    duckdb_memory_limit: str | None = None
    join_parts: int | None = None
    total_pairs: int | None = None
    cm_indegree_threshold: dict[str, Any] | None = None
    flagged_sentences: dict[str, int] | None = None
    stats: str | None = None

    @classmethod
    def from_json(cls, data: Any, source: Path | str | None = None) -> PairsManifest:
        """Parse ``data`` (the content of ``source``), its pair file names checked."""
        manifest = super().from_json(data, source)
        pair_file_names(source or MANIFEST, manifest.methods)
        return manifest

    @property
    def files(self) -> dict[str, str]:
        """Each method with pairs and its file's name, in the order mined."""
        return pair_file_names(MANIFEST, self.methods)

    @property
    def corpus_path(self) -> str | None:
        """The corpus store as given to `pretriever mine` (absolute, or relative to where it ran); None: not
        recorded."""
        return (self.corpus or {}).get("path") or None

    def option(self, name: str, default: Any = None) -> Any:
        """The mine option ``name`` as the run used it (``default`` when not recorded)."""
        return (self.options or {}).get(name, default)


class PairsDir:
    """A folder that ``pretriever mine`` wrote, read through its manifest (``pairs.json``)."""

    def __init__(self, path: Path | str):
        self.path = Path(path)
        manifest = self.path / MANIFEST
        if not manifest.exists():
            raise PairsError(f"{self.path} is not a pairs folder: {MANIFEST} is missing; "
                             "mine one with `pretriever mine CORPUS_DIR --out PAIRS_DIR`")
        self.manifest = PairsManifest.read(self.path)
        self.files = self.manifest.files  # method -> its file's name
        self.duplicates_dropped = 0  # by the last batches() over several methods

    @property
    def methods(self) -> list[str]:
        """Methods with a pairs file, in the order they were mined."""
        return list(self.files)

    def select(self, methods: str | list[str] | None) -> list[str]:
        if methods is None:
            return self.methods
        wanted = [m.strip().lower() for m in (methods.split(",") if isinstance(methods, str) else methods) if m.strip()]
        mined = self.manifest.methods
        for m in wanted:
            if m not in mined:
                raise PairsError(f"method {m!r} was not mined into {self.path} (it has: {', '.join(mined) or 'none'})")
            if not mined[m].get("file"):
                why = mined[m].get("why_no_pairs", "no pairs")
                raise PairsError(f"method {m!r} gave no pairs in {self.path}: {why}")
        return wanted

    def file(self, method: str) -> Path:
        return self.path / self.files[method]

    def batches(self, methods: list[str], columns: list[str] | None = None,
                batch_size: int = 10_000) -> Iterator[pa.RecordBatch]:
        """The pairs of ``methods`` in order; with several methods a (query, positive) that an earlier method
        gave is left out and counted in ``duplicates_dropped``."""
        self.duplicates_dropped = 0
        seen: set[int] = set()
        read = None if columns is None else list(dict.fromkeys([*columns, "query", "positive_text"]))
        for method in methods:
            for batch in pq.ParquetFile(self.file(method)).iter_batches(batch_size=batch_size, columns=read):
                if len(methods) > 1:
                    batch = self._unseen(batch, seen)
                yield batch if columns is None else batch.select(columns)

    def _unseen(self, batch: pa.RecordBatch, seen: set[int]) -> pa.RecordBatch:
        hashes = text_pair_hashes(batch.column("query"), batch.column("positive_text")).tolist()
        keep = [h not in seen for h in hashes]
        seen.update(hashes)
        self.duplicates_dropped += keep.count(False)
        return batch.filter(pa.array(keep))

    def rows(self, methods: list[str], limit: int | None = None) -> Iterator[dict[str, Any]]:
        n = 0
        for batch in self.batches(methods):
            for row in batch.to_pylist():
                if limit is not None and n >= limit:
                    return
                n += 1
                yield row


@dataclass
class PairFile:
    """One Parquet file of pairs, described from its schema alone: its rows and which columns hold the query,
    the positive and the negative (``pretriever mine``'s names, or sentence-transformers' anchor/positive/negative).
    """

    path: Path
    rows: int
    query: str
    positive: str
    negative: str | None
    method_column: str | None  # None: every row belongs to ``default_method``
    default_method: str


def _pick(names: list[str], options: tuple[str, ...]) -> str | None:
    return next((c for c in options if c in names), None)


def find_pair_files(path: Path) -> tuple[list[Path], str | None]:
    """The Parquet files of a pairs folder: those its manifest names, else every *.parquet under it; and, in
    that second case, a note naming the files read (so a stray file is seen, not trained on in silence)."""
    path = Path(path)
    if not path.exists():
        raise PairsError(f"{path} does not exist; give a pairs folder from `pretriever mine CORPUS --out PAIRS_DIR`")
    if path.is_file():
        if path.suffix != ".parquet":
            raise PairsError(f"{path} is not a Parquet file or a folder of them")
        return [path], None
    manifest = path / MANIFEST
    if manifest.exists():
        files = [path / name for name in PairsManifest.read(path).files.values()]
        missing = [str(f) for f in files if not f.exists()]
        if missing:
            raise PairsError(f"{manifest} names pair files that are missing: {', '.join(missing)}")
        if files:
            return files, None
    files = sorted(p for p in path.rglob("*.parquet")
                   if not any(part.startswith((".", "_")) for part in p.relative_to(path).parts))
    if not files:
        raise PairsError(f"{path} holds no Parquet pair files; mine some with "
                         "`pretriever mine CORPUS_DIR --out PAIRS_DIR`")
    names = ", ".join(str(f.relative_to(path)) for f in files)
    return files, (f"{path} has no {MANIFEST} naming its pair files: read every Parquet file under it "
                   f"({len(files)}): {names}")


def describe_file(path: Path) -> PairFile:
    """Describe one pairs file by its schema (nothing is read but the footer); a
    :class:`PairsError` names a file that is not Parquet or lacks a query or positive column.
    """
    try:
        meta = pq.ParquetFile(path)
    except (OSError, pa.ArrowInvalid) as err:
        raise PairsError(f"{path}: cannot read it as Parquet ({err})") from err
    names = meta.schema_arrow.names
    query, positive = _pick(names, QUERY_COLUMNS), _pick(names, POSITIVE_COLUMNS)
    if query is None or positive is None:
        need = [" or ".join(opts) for col, opts in ((query, QUERY_COLUMNS), (positive, POSITIVE_COLUMNS)) if col is None]
        raise PairsError(f"{path} lacks the column(s) {', '.join(need)} (it has: {', '.join(names) or 'none'}). "
                         "A pairs file needs query and positive_text (optionally method and negative_text), "
                         "as written by `pretriever mine`, or anchor/positive[/negative] as written by "
                         "`pretriever pairs export --format sentence-transformers`")
    negative = _pick(names, NEGATIVE_COLUMNS) if query == "query" else ("negative" if "negative" in names else None)
    return PairFile(path=path, rows=meta.metadata.num_rows, query=query, positive=positive, negative=negative,
                    method_column="method" if "method" in names else None,
                    default_method=path.stem.split(".")[0].lower())


def open_pair_files(path: Path) -> tuple[list[PairFile], str | None]:
    """The checked pair files of ``path`` (see :func:`find_pair_files`) and the note on files read unlisted."""
    paths, unlisted = find_pair_files(path)
    return [describe_file(p) for p in paths], unlisted
