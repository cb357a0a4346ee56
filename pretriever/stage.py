"""The shape every stage shares: what ``run(cfg, report)`` returns, and the lifecycle of its --out folder.

Each stage (corpus build, mine, train, pretrain, index build, evaluate, refine, reader, generate,
tune, references) has one entry point ``run(cfg, report) -> <Stage>Result``, where the result is a
:class:`StageResult` (``.out``, the folder written; ``.manifest``, what the folder's JSON report
says) and ``report`` a :class:`pretriever.progress.Reporter`. An :class:`OutputFolder` does the
parts of --out that were once written seven times: refuse a folder that is not ours, --resume or
--overwrite (never both), the fingerprint a resume must match, and the newest checkpoint.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pretriever.errors import PretrieverError
from pretriever.io import write_json
from pretriever.training import checkpoints


@dataclass(kw_only=True)
class StageResult:
    """What a stage's ``run`` returns: the folder it wrote and its manifest (the JSON report it saved).

    Stages subclass it to add their own figures; ``out`` and ``manifest`` are keyword-only so that a
    subclass's own fields keep their positions.
    """

    out: Path
    manifest: dict[str, Any] = field(default_factory=dict)


@dataclass
class OutputFolder:
    """A stage's --out folder: prepare it, resume it or replace it, and find its last checkpoint.

    Requirements: ``markers`` are names (glob patterns) of which at least one lies in a folder this
    stage wrote; a non-empty folder with none of them is someone else's and is never deleted.
    ``error`` is the stage's error class (its exit status goes with it). Checkpoints are
    ``{prefix}{step}{suffix}`` entries of ``path / checkpoints``; ``complete`` names a file a
    checkpoint folder holds once whole (None: single files written atomically).

    Example::

        folder = OutputFolder(cfg.out, holds="a model", markers=("train.json", "checkpoints"), error=TrainError)
        last = folder.prepare(resume=cfg.resume, overwrite=cfg.overwrite)   # None: start afresh
    """

    path: Path
    holds: str
    markers: tuple[str, ...]
    error: type[PretrieverError] = PretrieverError
    checkpoints: str = "checkpoints"
    prefix: str = "checkpoint-"
    suffix: str = ""
    complete: str | None = "trainer_state.json"

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    def ours(self) -> bool:
        """Whether the folder holds something this stage wrote (any marker)."""
        return any(any(self.path.glob(m)) for m in self.markers)

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
        """Refuse a path that is a file, or a non-empty folder this stage did not write."""
        if self.path.exists() and not self.path.is_dir():
            raise self.error(f"{self.path} exists and is not a folder")
        if not self.is_empty() and not self.ours():
            raise self.error(f"{self.path} is a non-empty folder that does not hold {self.holds}; choose another --out")

    def prepare(self, *, resume: bool = False, overwrite: bool = False, need_checkpoint: bool = True,
                keep: Iterable[str] = ()) -> Path | None:
        """Make the folder ready; the checkpoint to resume from (None: start afresh).

        ``resume``: keep the folder; with ``need_checkpoint`` a folder without a checkpoint is an
        error. ``overwrite``: delete an earlier run first, except the entries named in ``keep``.
        A non-empty folder of ours with neither is refused, naming both options.
        """
        if resume and overwrite:
            raise self.error("--resume continues the run in --out and --overwrite replaces it; give one of them")
        self.check()
        if resume:
            last = self.last_checkpoint()
            if last is None and need_checkpoint:
                raise self.error(f"nothing to resume in {self.path}: no checkpoint in {self.path / self.checkpoints}")
            self.path.mkdir(parents=True, exist_ok=True)
            return last
        if not self.is_empty():
            if not overwrite:
                hint = " or continue the interrupted run with --resume" if self.last_checkpoint() else ""
                raise self.error(f"{self.path} already holds {self.holds}; pass --overwrite to replace it{hint}")
            self.clear(keep)
        self.path.mkdir(parents=True, exist_ok=True)
        return None

    def clear(self, keep: Iterable[str] = ()) -> None:
        """Delete what the folder holds, except the entries named in ``keep``."""
        kept = set(keep)
        if not kept:
            shutil.rmtree(self.path)
            return
        for entry in self.path.iterdir():
            if entry.name not in kept:
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()

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


def differences(before: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """The keys whose values differ, as "key: old -> new", sorted."""
    return [f"{k}: {before.get(k)!r} -> {now.get(k)!r}" for k in sorted(set(before) | set(now))
            if before.get(k) != now.get(k)]

