"""One config object per stage, filled from defaults, then a TOML file, then the command line.

A TOML file has one table per stage (``[corpus]``, ``[mine]``, ...) whose keys are
the stage config's field names, so ``pretriever corpus build --config run.toml``
and a script calling :func:`load_section` see the same settings. :func:`build_config` checks
each value of the file against its field's annotation as it reads it (``port = "8000"`` is a
:class:`ConfigError` naming the file, table and key, not a TypeError later).
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from rich.markup import escape

from pretriever.errors import ConfigError
from pretriever.progress import console

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

T = TypeVar("T")
_MISSING = dataclasses.MISSING


def option(default: Any = _MISSING, help: str = "", *, default_factory: Any = _MISSING,
           **metadata: Any) -> Any:
    """A config field whose default and help text live here once (the CLI shows them from here).

    ``default_help`` in ``metadata`` replaces the printed default when the value is computed
    (for example "all cores"); ``renamed_from`` lists old TOML keys that still set the field, with a note.
    """
    meta = {"help": help, **metadata}
    if default_factory is not _MISSING:
        return dataclasses.field(default_factory=default_factory, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


# The options many stages share, declared once: one wording each, into which a stage puts only what differs
# (what runs on the device, what a batch holds). Field factories rather than mixin dataclasses: a base class's
# fields would come first, before a stage's required fields (CORPUS, --out), which dataclasses refuse.
DEVICE_DEFAULT = "cuda when present, else mps, else cpu"  # what pretriever.models.resolve_device picks


def device_option(use: str) -> Any:
    """``--device``: where ``use`` happens ("queries are encoded"); left out, it is resolved by
    :func:`pretriever.models.resolve_device`."""
    return option(None, f"Where {use}: cpu, cuda, cuda:1, mps.", default_help=DEVICE_DEFAULT)


def batch_size_option(default: int, items: str, per: str = "forward pass", more: str = "") -> Any:
    """``--batch-size``: ``items`` ("Passages") per ``per`` ("forward pass"), then ``more`` (a note)."""
    return option(default, f"{items} per {per}{more}.")


def dataloader_workers_option(builds: str) -> Any:
    """``--dataloader-workers``: processes that load batches, each doing what ``builds`` says ("reads pairs")."""
    return option(0, f"Processes that load batches beside training, each of which {builds} (0: the training "
                     "process itself). On a GPU, where a small model's step waits on the host, a few workers "
                     "build the next batches while the device computes; on a few CPU cores they only compete "
                     "with training.")


def seed_option(decides: str, default: int = 0) -> Any:
    """``--seed``: what the seed ``decides`` ("the sample and the bootstrap"), so a run can be repeated."""
    return option(default, f"Seed of {decides}.")


def resume_option(what: str) -> Any:
    """``--resume``: continue ``what`` ("an interrupted build from its last completed chunk")."""
    return option(False, f"Continue {what}.")


def overwrite_option(what: str) -> Any:
    """``--overwrite``: replace ``what`` ("an existing store in --out")."""
    return option(False, f"Replace {what}.")


def refuse_resume_with_overwrite(resume: bool, overwrite: bool, folder: str) -> None:
    """A ValueError when both are given, worded alike in every stage that refuses them (``folder``: MODEL_DIR)."""
    if resume and overwrite:
        raise ValueError(f"--resume continues the run in {folder} and --overwrite replaces it: pick one")


def _default_text(f: dataclasses.Field) -> str | None:
    if "default_help" in f.metadata:
        return f.metadata["default_help"]
    if f.default is not _MISSING:
        value = f.default
    elif f.default_factory is not _MISSING:  # type: ignore[misc]
        value = f.default_factory()  # type: ignore[misc]
    else:
        return None
    if value is None or value == "" or value == [] or value == {}:
        return None
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


def help_for(cls: type, name: str, extra: str = "") -> str:
    """The help text of ``cls.name`` with its default appended, for a typer option (rich markup escaped, so
    ``[index.faiss]`` is shown as written)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    if name not in fields:
        raise KeyError(f"{cls.__name__} has no field {name!r}")
    f = fields[name]
    text = " ".join(part for part in (f.metadata.get("help", ""), extra) if part)
    default = _default_text(f)
    return escape(f"{text} Default: {default}." if default is not None else text)


def load_section(path: Path | None, section: str) -> dict[str, Any]:
    """The ``[section]`` table of a TOML file ({} when no file is given)."""
    if path is None:
        return {}
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"{path}: cannot read TOML config: {err}") from err
    table = data.get(section, {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [{section}] must be a table")
    return table


def deprecation_note(old: str, new: str) -> None:
    """Tell the user (stderr) that a spelling still works but will go: renamed flags and TOML keys alike."""
    console.print(f"[yellow]{escape(old)} is deprecated and will go: use {escape(new)}[/yellow]")


def _renamed(fields: dict[str, dataclasses.Field], values: dict[str, Any], path: Path | None,
             table: str) -> dict[str, Any]:
    """``values`` with each old key of a renamed field (``renamed_from``) moved to the field, with a note."""
    out = dict(values)
    for f in fields.values():
        for old in f.metadata.get("renamed_from", ()):
            if old not in out:
                continue
            if f.name in out:
                raise ConfigError(f"{path or 'options'}: [{table}] sets both {old} and {f.name}; {old} is the old "
                                  f"name of {f.name}: keep only {f.name}")
            deprecation_note(f"[{table}] {old}", f.name)
            out[f.name] = out.pop(old)
    return out


def _is_config(tp: Any) -> bool:
    return dataclasses.is_dataclass(tp) and isinstance(tp, type)


def _coerce(cls: type, values: dict[str, Any], path: Path | None, table: str) -> dict[str, Any]:
    """Old key names to their fields, paths from strings and nested tables into their dataclasses
    (``[index.bm25]``)."""
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = _renamed(fields, values, path, table)
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(f"{path or 'options'}: unknown key(s) in [{table}]: {', '.join(unknown)}; "
                          f"known: {', '.join(sorted(fields))}")
    out = dict(values)
    for name, value in values.items():
        hint = hints.get(name)
        if _is_config(hint) and isinstance(value, dict):
            out[name] = construct(hint, _coerce(hint, value, path, f"{table}.{name}"), _where(path, f"{table}.{name}"))
        elif isinstance(value, str) and hint in (Path, Path | None):
            out[name] = Path(value)
    return out


_KINDS: dict[Any, tuple[str, str]] = {  # type -> (one, several) in words
    bool: ("true or false", "true/false values"), int: ("an integer", "integers"), float: ("a number", "numbers"),
    str: ("a string", "strings"), Path: ("a path (a string)", "paths (strings)")}
_TOML_NAMES = {"str": "string", "int": "integer", "bool": "boolean", "list": "array", "dict": "table"}


def _described(hint: Any, several: bool = False) -> str:
    """What a TOML value for a field annotated ``hint`` must be, in words (``several``: the plural, for items)."""
    if hint in _KINDS:
        return _KINDS[hint][several]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_described(a, several) for a in args if a is not type(None))
    if _is_config(hint):
        return f"a table of {hint.__name__} settings"
    if origin in (list, tuple, Sequence):
        return f"a list of {_described(args[0], True) if args else 'values'} (or one string, as on the command line)"
    if origin is dict:
        return (f"a table of {_described(args[1], True) if args else 'values'} (or a list of NAME=VALUE strings, "
                "as on the command line)")
    return getattr(hint, "__name__", str(hint))


def _fits(hint: Any, value: Any) -> bool:
    """Whether a TOML value can set a field annotated ``hint``: an int where a float is expected, a string for a
    Path, and the command line's forms of lists (``"dl,cm"``) and tables (``["NAME=VALUE"]``) do; a bool is not an
    int."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_fits(a, value) for a in args)
    if origin is typing.Literal:
        return value in args
    if hint is Any:
        return True
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is Path:
        return isinstance(value, str)
    if _is_config(hint):
        return isinstance(value, dict)
    if origin in (list, tuple, Sequence):
        item = args[0] if args else Any
        if isinstance(value, list):
            return all(_fits(item, v) for v in value)
        return isinstance(value, str) or _fits(item, value)
    if origin is dict:
        key, item = args or (Any, Any)
        if isinstance(value, dict):
            return all(_fits(key, k) and _fits(item, v) for k, v in value.items())
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, origin or hint)


def _check_types(cls: type, values: dict[str, Any], path: Path | None, table: str) -> None:
    """Refuse a TOML value whose type its field cannot take (``port = "8000"``, ``api_key = ["x"]``), naming the
    file, table and key; old key names are checked as their fields, nested tables (``[index.faiss]``) as theirs,
    and unknown keys are left to :func:`_coerce`."""
    hints = typing.get_type_hints(cls)
    names = {f.name: f.name for f in dataclasses.fields(cls)}
    names.update({old: f.name for f in dataclasses.fields(cls) for old in f.metadata.get("renamed_from", ())})
    for key, value in values.items():
        if key not in names:
            continue
        hint = hints[names[key]]
        if _is_config(hint) and isinstance(value, dict):
            _check_types(hint, value, path, f"{table}.{key}")
        elif not _fits(hint, value):
            got = _TOML_NAMES.get(type(value).__name__, type(value).__name__)
            raise ConfigError(f"{_where(path, table)} {key}: expected {_described(hint)}, got a TOML {got}")


def _where(path: Path | None, table: str) -> str:
    return f"{path} [{table}]" if path is not None else f"[{table}]"


def construct(cls: type[T], values: dict[str, Any], where: str) -> T:
    """``cls(**values)``, with a missing required key or a bad value reported as a :class:`ConfigError`."""
    required = [f.name for f in dataclasses.fields(cls)
                if f.default is _MISSING and f.default_factory is _MISSING and f.name not in values]  # type: ignore[misc]
    if required:
        flags = ", ".join(f"--{name.replace('_', '-')}" for name in required)
        raise ConfigError(f"{where}: {', '.join(required)} is required (give {flags}, or set it in the "
                          "TOML table of --config)")
    try:
        return cls(**values)
    except ConfigError:
        raise
    except ValueError as err:
        raise ConfigError(f"{where}: {err}") from err


def build_config(cls: type[T], path: Path | None, section: str, **cli: Any) -> T:
    """Defaults < TOML ``[section]`` < command-line values that were actually given (not None).

    A field whose type is itself a config dataclass is filled from the nested table
    ``[section.field]`` (``[index.bm25]``) or from a dict on the command line.
    """
    values = load_section(path, section)
    _check_types(cls, values, path, section)
    for name, value in cli.items():
        if value is None:
            continue
        if isinstance(value, dict) and isinstance(values.get(name), dict):
            values[name] = {**values[name], **value}
        else:
            values[name] = value
    return construct(cls, _coerce(cls, values, path, section), _where(path, section))
