"""What an input format is, and the registry that finds one for a path.

A format does two things: in the main process it cuts the input into numbered
chunks of raw items (cheap: no parsing), and in a worker process it parses one
chunk into :class:`ParsedPage` objects. Chunks are the unit of parallelism,
checkpointing and ``--resume``: chunk *k* always holds the same items for the same
input and options, so a resumed build writes byte-identical tables.
"""

from __future__ import annotations

import bz2
import gzip
import io
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from pretriever.corpus.model import InputError, PageError, ParsedPage


@dataclass
class Chunk:
    """A numbered batch of raw items, picklable, handed to a worker."""

    index: int
    items: list[Any]
    # where the chunk starts, for messages: e.g. "line 1201" or "byte 53,448,221"
    start: str = ""


@dataclass
class PageFailure:
    """A page that could not be parsed: recorded in the manifest, never silently dropped."""

    doc_id: str
    title: str
    where: str
    reason: str


ParseResult = ParsedPage | PageFailure


@dataclass
class FormatOptions:
    """Options a format may need (only some formats use each)."""

    multistream_index: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class InputFormat(ABC):
    """Base class of every input format; subclasses register with :func:`register`.

    Relations:
        :class:`~pretriever.corpus.formats.mediawiki.MediaWikiDump`,
        :class:`~pretriever.corpus.formats.wikiextractor.WikiExtractorFormat` and the line formats of
        :mod:`pretriever.corpus.formats.plain` (BEIR, JSONL, DPR TSV) subclass it; :func:`detect_format` picks one.

    Args:
        path: the input file or folder.
        options: what ``pretriever corpus build``'s options ask of the format (defaults: none).
    """

    name: ClassVar[str]
    description: ClassVar[str]
    # default passage length in words; 0 keeps each document whole (BEIR, DPR passages)
    default_words: ClassVar[int] = 100
    # True when the input carries hyperlinks (so an empty links table is a surprise)
    has_links: ClassVar[bool] = False

    def __init__(self, path: Path, options: FormatOptions | None = None):
        self.path = Path(path)
        self.options = options or FormatOptions()

    @classmethod
    @abstractmethod
    def sniff(cls, path: Path, head: bytes) -> bool:
        """True when ``head`` (the first decompressed KiB of ``path``) looks like this format.

        Args:
            path: the input (its name may decide, as for a BEIR folder).
            head: its first decompressed KiB.

        Returns:
            Whether this format reads it.
        """

    def context(self) -> Any:
        """Picklable per-input state sent once to every worker (e.g. namespace names)."""
        return None

    @abstractmethod
    def iter_items(self) -> Iterator[Any]:
        """Raw items in input order (picklable; parsing happens in :meth:`parse_item`)."""

    @staticmethod
    @abstractmethod
    def parse_item(item: Any, context: Any) -> ParsedPage:
        """Parse one raw item in a worker; raise :class:`PageError` when it is unusable.

        Args:
            item: one item of :meth:`iter_items`.
            context: :meth:`context`, as the worker received it.

        Returns:
            The parsed page (its passages, links and citations).
        """

    @staticmethod
    def item_bytes(item: Any) -> int:
        """Size of a raw item, for chunks cut by size (0: count items only).

        Args:
            item: one item of :meth:`iter_items`.

        Returns:
            Its size in bytes, or 0.
        """
        return 0

    def iter_chunks(self, chunk_size: int, first_chunk: int = 0, chunk_bytes: int = 0) -> Iterator[Chunk]:
        """Batch :meth:`iter_items` into chunks of ``chunk_size`` items or ``chunk_bytes`` bytes,
        whichever comes first, skipping the first ``first_chunk`` chunks.

        Cutting depends only on the items themselves, so chunk *k* is the same on every run.

        Args:
            chunk_size: items per chunk at most.
            first_chunk: chunks to skip (those a resumed build already has).
            chunk_bytes: bytes per chunk at most (0: no limit).

        Yields:
            Each :class:`Chunk`, numbered from 0 whether skipped or not.
        """
        batch: list[Any] = []
        index, size, batch_start = 0, 0, 0
        for n, item in enumerate(self.iter_items()):
            if not batch:
                batch_start = n
            batch.append(item)
            size += self.item_bytes(item)
            if len(batch) >= chunk_size or (chunk_bytes and size >= chunk_bytes):
                if index >= first_chunk:
                    yield Chunk(index, batch, start=f"item {batch_start + 1:,}")
                index += 1
                batch, size = [], 0
        if batch and index >= first_chunk:
            yield Chunk(index, batch, start=f"item {batch_start + 1:,}")

    def splittable(self) -> bool:
        """True when each chunk is a ``(start, end)`` byte range of the input that any machine can read and
        parse alone (no reader in the main process), so a cluster can parse the chunks (``--engine spark``)."""
        return False

    @classmethod
    def parse_chunk(cls, chunk: Chunk, context: Any) -> Iterator[ParseResult]:
        """Parse every item of a chunk; a failing item becomes a :class:`PageFailure`.

        Args:
            chunk: the chunk, in a worker.
            context: :meth:`context`, as the worker received it.

        Yields:
            A parsed page, or a :class:`PageFailure`, per item.
        """
        for item in chunk.items:
            try:
                yield cls.parse_item(item, context)
            except PageError as err:
                yield PageFailure(*cls.identify(item), where=err.where, reason=err.reason)
            except InputError:
                raise
            except Exception as err:  # a bug or an input we did not foresee: list the page, go on
                doc_id, title = cls.identify(item)
                yield PageFailure(doc_id, title, where=f"page {title!r} (id {doc_id})",
                                  reason=f"internal error {type(err).__name__}: {err}")

    @staticmethod
    def identify(item: Any) -> tuple[str, str]:
        """(doc_id, title) of a raw item, as far as it can be told without parsing.

        Args:
            item: one item of :meth:`iter_items`.

        Returns:
            ``(doc_id, title)``, blank where unknown.
        """
        return "", ""


FORMATS: dict[str, type[InputFormat]] = {}


def register(cls: type[InputFormat]) -> type[InputFormat]:
    """Class decorator: make a format available to ``--format`` and to detection.

    Args:
        cls: the format class.

    Returns:
        ``cls``, unchanged.
    """
    FORMATS[cls.name] = cls
    return cls


def open_binary(path: Path) -> io.BufferedIOBase:
    """Open a file, decompressing ``.bz2`` and ``.gz`` by their magic bytes, not their names."""
    with open(path, "rb") as raw:
        magic = raw.read(3)
    if magic == b"BZh":
        return bz2.open(path, "rb")
    if magic[:2] == b"\x1f\x8b":
        return gzip.open(path, "rb")
    return open(path, "rb")


def read_head(path: Path, size: int = 4096) -> bytes:
    """The first ``size`` decompressed bytes of ``path``."""
    try:
        with open_binary(path) as stream:
            return stream.read(size)
    except (OSError, EOFError) as err:
        raise InputError(f"{path}: cannot read the start of the file ({err})") from err


# the file a BEIR dataset folder is read from
BEIR_CORPUS_NAMES = ("corpus.jsonl", "corpus.jsonl.gz", "corpus.jsonl.bz2")


def resolve_input(path: Path) -> Path:
    """The path to read for ``path``: a folder holding ``corpus.jsonl`` (a BEIR dataset) gives that file.

    Any other file or folder is returned unchanged (a folder is read as all its files,
    see :func:`input_files`).
    """
    path = Path(path)
    if path.is_dir():
        for name in BEIR_CORPUS_NAMES:
            if (path / name).is_file():
                return path / name
    return path


def input_files(path: Path) -> list[Path]:
    """The files of an input: the file itself, or every non-hidden file under a folder, in sorted order."""
    path = resolve_input(path)
    if not path.is_dir():
        return [path]
    files = sorted(
        (p.relative_to(path) for p in path.rglob("*") if p.is_file()),
        key=lambda rel: rel.as_posix(),
    )
    files = [path / rel for rel in files if not any(part.startswith(".") for part in rel.parts)]
    if not files:
        raise InputError(f"{path}: the folder holds no input files")
    return files


def detect_format(path: Path, name: str = "auto") -> type[InputFormat]:
    """The format named by ``--format``, or the first registered format whose sniff matches.

    A folder is sniffed by its first file (see :func:`resolve_input` and :func:`input_files`).

    Args:
        path: the input file or folder.
        name: ``--format``; ``auto`` sniffs.

    Returns:
        The format class.

    Raises:
        InputError: an unknown name, or content no format recognises.
    """
    if name != "auto":
        if name not in FORMATS:
            raise InputError(f"unknown --format {name!r}; choose one of: auto, {', '.join(sorted(FORMATS))}")
        return FORMATS[name]
    path = resolve_input(path)
    head = read_head(input_files(path)[0])
    for cls in FORMATS.values():
        if cls.sniff(path, head):
            return cls
    raise InputError(
        f"{path}: cannot tell the input format from its content (starts with {head[:60]!r}); "
        f"pass --format, one of: {', '.join(sorted(FORMATS))}"
    )
