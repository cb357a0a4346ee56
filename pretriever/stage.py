"""The shape every stage shares: what ``run(cfg, report)`` returns, and the lifecycle of its --out folder.

Each stage (corpus build, mine, train, pretrain, index build, evaluate, refine, reader, generate,
tune, references) has one entry point ``run(cfg, report) -> <Stage>Result``, where the result is a
:class:`StageResult` (``.out``, the folder written; ``.manifest``, what the folder's JSON report
says) and ``report`` a :class:`pretriever.progress.Reporter`. An :class:`OutputFolder` does the
parts of --out that were once written seven times: refuse a folder that does not carry this stage's
marker (:data:`MARKER`), --resume or --overwrite (never both; --overwrite deletes only what the stage
wrote), the fingerprint a resume must match, and the newest checkpoint.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pretriever import __version__
from pretriever.errors import PretrieverError
from pretriever.io import write_json
from pretriever.progress import QUIET, Reporter
from pretriever.training import checkpoints


@dataclass(kw_only=True)
class StageResult:
    """What a stage's ``run`` returns: the folder it wrote and its manifest (the JSON report it saved).

    Stages subclass it to add their own figures; ``out`` and ``manifest`` are keyword-only so that a
    subclass's own fields keep their positions. A stage whose folder has a typed manifest narrows ``manifest``
    to that class, which writes the file and reads it back (``to_json``/``from_json``): the index stage's and
    refine's are :class:`pretriever.index.IndexMeta`. The others still hold the dict they wrote.
    """

    out: Path
    manifest: dict[str, Any] = field(default_factory=dict)


MARKER = ".pretriever.json"
"""The file that makes a folder pretriever's: which stage wrote it, the version, when, and what it wrote."""


class FolderError(PretrieverError):
    """--out names a folder pretriever may not write into: someone else's, another stage's, or one from before
    folders carried :data:`MARKER`. Nothing in it was touched."""


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

    def marker(self) -> dict[str, Any] | None:
        """The marker's content, or None when the folder has none (or it is unreadable, so not proof)."""
        try:
            found = json.loads((self.path / MARKER).read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError):
            return None
        return found if isinstance(found, dict) and isinstance(found.get("stage"), str) else None

    def ours(self) -> bool:
        """Whether the folder carries this stage's marker."""
        marker = self.marker()
        return marker is not None and marker["stage"] == self.stage

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
        if marker["stage"] != self.stage:
            raise FolderError(f"{self.path} holds {marker.get('holds') or marker['stage']}, not {self.holds} "
                              f"(its {MARKER} names the {marker['stage']!r} stage): choose another --out")

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
            write_json(self.path / MARKER, self._new_marker())  # a new run: what it writes is listed afresh
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
        marker = self.marker() if self.ours() else self._new_marker()
        present = self._names()
        foreign = (present - self._owned_entries(marker)) | (set(marker.get("foreign", [])) & present)
        if marker.get("foreign", []) != sorted(foreign) or not (self.path / MARKER).exists():
            write_json(self.path / MARKER, {**marker, "foreign": sorted(foreign)})

    def seal(self) -> None:
        """Record in the marker every entry the stage wrote (all but those :meth:`claim` found and were not
        its), so that --overwrite can later remove exactly these; call it once the output is written."""
        marker = self.marker() or self._new_marker()
        written = self._names() - set(marker.get("foreign", []))
        write_json(self.path / MARKER, {**marker, "written": sorted(set(marker.get("written", [])) | written)})

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

    def _owned_entries(self, marker: dict[str, Any] | None) -> set[str]:
        """The top-level names this stage wrote here: those matching ``owns`` and those the marker lists."""
        names = self._names()
        matched = {name for name in names if any(fnmatch.fnmatchcase(name, pattern) for pattern in self.owns)}
        listed = set(marker.get("written", [])) if marker else set()
        return (matched | listed) & names

    def _names(self) -> set[str]:
        """The folder's top-level entries, the marker left out."""
        return {entry.name for entry in self.path.iterdir()} - {MARKER} if self.path.is_dir() else set()

    def _new_marker(self) -> dict[str, Any]:
        return {"marker": "pretriever output folder", "stage": self.stage, "holds": self.holds,
                "pretriever_version": __version__,
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"), "written": [], "foreign": []}


def differences(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The keys whose values differ, as "key: old -> new", sorted."""
    return [f"{k}: {before.get(k)!r} -> {now.get(k)!r}" for k in sorted(set(before) | set(now))
            if before.get(k) != now.get(k)]

