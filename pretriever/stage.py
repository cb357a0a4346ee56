"""The shape every stage shares: what ``run(cfg, report)`` returns, and the lifecycle of its --out folder.

Each stage (corpus build, mine, train, pretrain, index build, evaluate, refine, reader, generate,
tune, references) has one entry point ``run(cfg, report) -> <Stage>Result``, where the result is a
:class:`StageResult` (``.out``, the folder written; ``.manifest``, what the folder's JSON report
says) and ``report`` a :class:`pretriever.progress.Reporter`. An :class:`OutputFolder` does the
parts of --out that were once written seven times: refuse a folder that does not carry this stage's
marker (:data:`MARKER`), --resume or --overwrite (never both; --overwrite deletes only what the stage
wrote), the fingerprint a resume must match, and the newest checkpoint. A :class:`Manifest` is a folder's
JSON report as a dataclass that writes and reads the file; :class:`FolderMarker` is the marker's.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
import types
import typing
from collections.abc import Iterable
from dataclasses import MISSING, dataclass, field, fields, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pretriever import __version__
from pretriever.errors import PretrieverError
from pretriever.io import read_json, write_json
from pretriever.progress import QUIET, Reporter
from pretriever.training import checkpoints


M = TypeVar("M", bound="Manifest")


@dataclass(frozen=True, kw_only=True)
class Manifest:
    """A stage folder's JSON report, typed: one class writes the file (:meth:`write`) and reads it back
    (:meth:`read`), so no reader digs keys out of a dict the writer shaped elsewhere.

    A subclass declares its file (``FILE``), the error a bad file raises (``ERROR``) and, as dataclass fields
    named like the file's top-level keys, the keys its readers use: a field without a default is a key the file
    must have, one defaulting to None a key it may lack (and that is not written while None). Every other key is
    kept as written in :attr:`recorded`, and :meth:`to_json` puts the keys back in ``ORDER`` (the writer's
    order), so a folder written before the class existed reads the same and writes back byte for byte.
    """

    FILE: ClassVar[str]
    ERROR: ClassVar[type[PretrieverError]] = PretrieverError
    ORDER: ClassVar[tuple[str, ...]] = ()
    FIX: ClassVar[str] = "run the stage again"  # what to do about a file that does not fit

    recorded: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """The file's content: typed keys and recorded ones, in ``ORDER`` (keys it does not name last)."""
        typed = {f.name: getattr(self, f.name) for f in self._typed()
                 if not (getattr(self, f.name) is None and f.default is None)}
        data = {**typed, **self.recorded}
        rank = {key: i for i, key in enumerate(self.ORDER)}
        return dict(sorted(data.items(), key=lambda item: rank.get(item[0], len(rank))))

    @classmethod
    def from_json(cls: type[M], data: Any, source: Path | str | None = None) -> M:
        """Parse ``data`` (the content of ``source``, by default ``FILE``); ``ERROR`` names the file and the key
        that is missing or of the wrong type."""
        where = source if source is not None else cls.FILE
        if not isinstance(data, dict):
            raise cls.ERROR(f"{where}: not a JSON object; {cls.FIX}")
        hints = typing.get_type_hints(cls)
        values: dict[str, Any] = {}
        for f in cls._typed():
            if f.name not in data:
                if f.default is MISSING and f.default_factory is MISSING:
                    raise cls.ERROR(f"{where}: the key {f.name!r} is missing; {cls.FIX}")
                continue
            values[f.name] = _checked(data[f.name], hints[f.name], f"{where}: the key {f.name!r}", cls)
        typed = {f.name for f in cls._typed()}
        return cls(**values, recorded={key: value for key, value in data.items() if key not in typed})

    @classmethod
    def read(cls: type[M], folder: Path | str) -> M:
        """The manifest of ``folder`` (its ``FILE``)."""
        path = Path(folder) / cls.FILE
        return cls.from_json(read_json(path, cls.ERROR), path)

    def write(self, folder: Path | str) -> None:
        """Write ``FILE`` into ``folder`` (atomically)."""
        write_json(Path(folder) / self.FILE, self.to_json())

    @classmethod
    def _typed(cls) -> list[Any]:
        return [f for f in fields(cls) if f.name != "recorded"]


def _checked(value: Any, hint: Any, what: str, cls: type[Manifest]) -> Any:
    """``value`` if it has the type ``hint`` names (an int where a float is declared), else ``cls.ERROR``
    saying ``what`` does not fit."""
    options = typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)
    for option in options:
        if option is Any:
            return value
        origin = typing.get_origin(option) or option
        if origin is float and isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, origin if origin is not type(None) else type(None)):
            return value
    raise cls.ERROR(f"{what} holds {json.dumps(value)[:80]}, not a {_describe(hint)}; {cls.FIX}")


def _describe(hint: Any) -> str:
    return " or ".join(getattr(option, "__name__", str(option)) for option in
                       (typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType)
                        else (hint,)))


@dataclass(kw_only=True)
class StageResult:
    """What a stage's ``run`` returns: the folder it wrote and its manifest (the JSON report it saved).

    Stages subclass it to add their own figures; ``out`` and ``manifest`` are keyword-only so that a
    subclass's own fields keep their positions. A stage whose folder has a typed manifest narrows ``manifest``
    to that class, which writes the file and reads it back (``to_json``/``from_json``): the index stage's and
    refine's are :class:`pretriever.index.IndexMeta`, the others' :class:`Manifest` subclasses (corpus
    :class:`~pretriever.corpus.manifest.StoreManifest`, mine :class:`~pretriever.data.pairs.PairsManifest`,
    train, finetune, pretrain, evaluate, generate, tune, references, reader train); reader prepare's is its
    counts (:class:`~pretriever.reader.prepare.PrepareCounts`: it writes no file of its own).
    """

    out: Path
    manifest: dict[str, Any] = field(default_factory=dict)


MARKER = ".pretriever.json"
"""The file that makes a folder pretriever's: which stage wrote it, the version, when, and what it wrote."""


class FolderError(PretrieverError):
    """--out names a folder pretriever may not write into: someone else's, another stage's, or one from before
    folders carried :data:`MARKER`. Nothing in it was touched."""


@dataclass(frozen=True, kw_only=True)
class FolderMarker(Manifest):
    """What :data:`MARKER` holds: the stage that owns the folder and what it holds, the pretriever version and
    time that made it, and the top-level entries the stage ``written`` (what --overwrite may delete) and found
    there that are not its own (``foreign``)."""

    FILE = MARKER
    ERROR = FolderError
    ORDER = ("marker", "stage", "holds", "pretriever_version", "created", "written", "foreign")
    FIX = "move the folder aside, or choose another --out"

    stage: str
    holds: str | None = None
    pretriever_version: str | None = None
    created: str | None = None
    written: list[str] = field(default_factory=list)
    foreign: list[str] = field(default_factory=list)

    @classmethod
    def new(cls, stage: str, holds: str) -> FolderMarker:
        """The marker of a folder this pretriever makes now (nothing written in it yet)."""
        return cls(stage=stage, holds=holds, pretriever_version=__version__,
                   created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                   recorded={"marker": "pretriever output folder"})


@dataclass
class OutputFolder:
    """A stage's --out folder: prepare it, resume it or replace it, and find its last checkpoint.

    Ownership: a folder is this stage's only when it holds :data:`MARKER` naming ``stage``; the marker is
    written when the folder is prepared. A non-empty folder without it is never written into, resumed or
    deleted (:class:`FolderError`, exit status 2), nor is one whose marker names another stage. --overwrite
    removes only what the stage wrote: the entries matching ``owns`` (glob patterns of the top-level names the
    stage writes, its work and checkpoint folders among them) and those the marker lists as written
    (:meth:`seal`); anything else stays and is named through ``report``.

    ``error`` is the stage's error class for the other refusals (its exit status goes with it). Checkpoints
    are ``{prefix}{step}{suffix}`` entries of ``path / checkpoints``; ``complete`` names a file a checkpoint
    folder holds once whole (None: single files written atomically).

    Example::

        folder = OutputFolder(cfg.out, stage="train", holds="a model", owns=("train.json", "checkpoints"),
                              error=TrainError, report=report)
        last = folder.prepare(resume=cfg.resume, overwrite=cfg.overwrite)   # None: start afresh
        ...                                                                 # write the model
        folder.seal()                                                       # the marker lists what was written
    """

    path: Path
    stage: str
    holds: str
    owns: tuple[str, ...]
    error: type[PretrieverError] = PretrieverError
    checkpoints: str = "checkpoints"
    prefix: str = "checkpoint-"
    suffix: str = ""
    complete: str | None = "trainer_state.json"
    report: Reporter = QUIET
    created: bool = field(default=False, init=False, repr=False)  # by claim(): the folder did not exist before

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    def marker(self) -> FolderMarker | None:
        """The marker, or None when the folder has none (or it is unreadable, so not proof)."""
        try:
            return FolderMarker.read(self.path)
        except (OSError, UnicodeDecodeError, FolderError):
            return None

    def ours(self) -> bool:
        """Whether the folder carries this stage's marker."""
        marker = self.marker()
        return marker is not None and marker.stage == self.stage

    def is_empty(self) -> bool:
        return not self.path.exists() or not any(self.path.iterdir())

    def all_checkpoints(self) -> list[Path]:
        """The checkpoints, oldest step first."""
        return checkpoints(self.path / self.checkpoints, self.prefix, self.suffix, self.complete)

    def last_checkpoint(self) -> Path | None:
        """The newest complete checkpoint, or None."""
        found = self.all_checkpoints()
        return found[-1] if found else None

    def check(self) -> None:
        """Refuse a path that is a file, or a non-empty folder that does not carry this stage's marker."""
        if self.path.exists() and not self.path.is_dir():
            raise FolderError(f"{self.path} exists and is not a folder")
        if self.is_empty():
            return
        marker = self.marker()
        if marker is None:
            if self._owned_entries(None):
                raise FolderError(
                    f"{self.path} looks like {self.holds} written by an earlier pretriever, but it carries no "
                    f"{MARKER}, so pretriever will not write into, resume or replace it: move or delete it yourself "
                    "(after checking what it holds), or choose another --out")
            raise FolderError(f"{self.path} is a non-empty folder that pretriever did not write (no {MARKER}); "
                              "nothing in it was touched: choose another --out")
        if marker.stage != self.stage:
            raise FolderError(f"{self.path} holds {marker.holds or marker.stage}, not {self.holds} "
                              f"(its {MARKER} names the {marker.stage!r} stage): choose another --out")

    def prepare(self, *, resume: bool = False, overwrite: bool = False, need_checkpoint: bool = True,
                keep: Iterable[str] = ()) -> Path | None:
        """Make the folder ready and mark it; the checkpoint to resume from (None: start afresh).

        ``resume``: keep the folder; with ``need_checkpoint`` a folder without a checkpoint is an
        error. ``overwrite``: delete what an earlier run wrote first, except the entries named in ``keep``.
        A non-empty folder of ours with neither is refused, naming both options.
        """
        if resume and overwrite:
            raise self.error("--resume continues the run in --out and --overwrite replaces it; give one of them")
        self.check()
        if resume:
            last = self.last_checkpoint()
            if last is None and need_checkpoint:
                raise self.error(f"nothing to resume in {self.path}: no checkpoint in {self.path / self.checkpoints}")
            self.claim()
            return last
        if self._owned_entries(self.marker()):
            if not overwrite:
                hint = " or continue the interrupted run with --resume" if self.last_checkpoint() else ""
                raise self.error(f"{self.path} already holds {self.holds}; pass --overwrite to replace it{hint}")
            self.clear(keep)
            FolderMarker.new(self.stage, self.holds).write(self.path)  # a new run: what it writes is listed afresh
        self.claim()
        return None

    def clear(self, keep: Iterable[str] = ()) -> None:
        """Delete what this stage wrote in the folder, except the marker and the entries named in ``keep``;
        name through ``report`` what stays because pretriever did not write it. The folder must be ours."""
        if not self.ours():
            raise FolderError(f"{self.path} does not carry the {self.stage!r} stage's {MARKER}; nothing deleted")
        kept = set(keep)
        doomed = self._owned_entries(self.marker()) - kept
        for entry in sorted(self.path.iterdir()):
            if entry.name in doomed:
                shutil.rmtree(entry) if entry.is_dir() and not entry.is_symlink() else entry.unlink()
        left = self._names() - kept
        if left:
            self.report.message(f"{self.path}: left what pretriever did not write there: {', '.join(sorted(left))}")

    def claim(self) -> None:
        """Create the folder and its marker (a folder of ours keeps the one it has), which also lists what the
        folder holds that is not the stage's (so that :meth:`seal` never takes it for output).

        Stages that add to their folder without --overwrite (evaluate, exports): :meth:`check` first, then this."""
        self.created = self.created or not self.path.exists()
        self.path.mkdir(parents=True, exist_ok=True)
        marker = self.marker() if self.ours() else FolderMarker.new(self.stage, self.holds)
        present = self._names()
        foreign = sorted((present - self._owned_entries(marker)) | (set(marker.foreign) & present))
        if marker.foreign != foreign or not (self.path / MARKER).exists():
            replace(marker, foreign=foreign).write(self.path)

    def seal(self) -> None:
        """Record in the marker every entry the stage wrote (all but those :meth:`claim` found and were not
        its), so that --overwrite can later remove exactly these; call it once the output is written."""
        marker = self.marker() or FolderMarker.new(self.stage, self.holds)
        written = self._names() - set(marker.foreign)
        replace(marker, written=sorted(set(marker.written) | written)).write(self.path)

    def abandon(self) -> None:
        """A run that failed before writing anything: take the marker away again, and the folder if the run made it
        (an empty folder a person made stays)."""
        if self.path.is_dir() and not self._names() and self.ours():
            (self.path / MARKER).unlink()
            if self.created:
                self.path.rmdir()

    def check_fingerprint(self, saved: Path, fingerprint: dict[str, Any], advice: str = "") -> None:
        """Refuse to resume when ``fingerprint`` differs from the one saved at ``saved`` (a JSON file).

        The error names every setting that changed, as "key: old -> new"; a missing file passes.
        """
        if not saved.exists():
            return
        before = json.loads(saved.read_text(encoding="utf-8")).get("fingerprint", {})
        changed = differences(before, fingerprint)
        if changed:
            raise self.error(f"{self.path} holds a run with other settings ({'; '.join(changed)}){advice}")

    @staticmethod
    def save_fingerprint(saved: Path, fingerprint: dict[str, Any], **extra: Any) -> None:
        """Write ``{"fingerprint": ..., **extra}`` to ``saved`` atomically."""
        saved.parent.mkdir(parents=True, exist_ok=True)
        write_json(saved, {"fingerprint": fingerprint, **extra})

    def _owned_entries(self, marker: FolderMarker | None) -> set[str]:
        """The top-level names this stage wrote here: those matching ``owns`` and those the marker lists."""
        names = self._names()
        matched = {name for name in names if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.owns)}
        listed = set(marker.written) if marker else set()
        return (matched | listed) & names

    def _names(self) -> set[str]:
        """The folder's top-level entries, the marker left out."""
        return {entry.name for entry in self.path.iterdir()} - {MARKER} if self.path.is_dir() else set()


def differences(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The keys whose values differ, as "key: old -> new", sorted."""
    return [f"{k}: {before.get(k)!r} -> {now.get(k)!r}" for k in sorted(set(before) | set(now))
            if before.get(k) != now.get(k)]

