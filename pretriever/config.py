"""One config object per stage, filled from defaults, then a TOML file, then the command line.

A TOML file has one table per stage (``[corpus]``, ``[mine]``, ...) whose keys are
the stage config's field names, so ``pretriever corpus build --config run.toml``
and a script calling :func:`load_section` see the same settings.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path
from typing import Any, TypeVar

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

T = TypeVar("T")


class ConfigError(ValueError):
    """A config file or value is wrong; the message names the file and the key."""


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


def build_config(cls: type[T], path: Path | None, section: str, **cli: Any) -> T:
    """Defaults < TOML ``[section]`` < command-line values that were actually given (not None)."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    values = load_section(path, section)
    unknown = sorted(set(values) - set(fields))
    if unknown:
        raise ConfigError(f"{path}: unknown key(s) in [{section}]: {', '.join(unknown)}; "
                          f"known: {', '.join(sorted(fields))}")
    values.update({k: v for k, v in cli.items() if v is not None})
    for name, value in values.items():
        if isinstance(value, str) and fields[name].type in ("Path", "Path | None"):
            values[name] = Path(value)
    return cls(**values)
