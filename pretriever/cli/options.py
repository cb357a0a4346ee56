"""Command-line options made from a stage's config dataclass, so each option is declared once.

A stage config (``FetchConfig``, ``MineConfig``, ...) holds every field's default and help text
(:func:`pretriever.config.option`). :func:`config_command` turns its fields into typer
parameters, adds ``--config FILE.toml``, and calls the command with the built config:

    @references_app.command("fetch")
    @config_command(FetchConfig, "references", arguments=("corpus",),
                    flags={"robots": Flag("--robots/--ignore-robots")})
    def fetch(cfg: FetchConfig) -> None:
        \"\"\"Download the pages ... (the command's help and examples).\"\"\"

Values the user did not give stay out, so TOML settings and the defaults apply
(:func:`pretriever.config.build_config`). A bool that defaults to off is a plain ``--flag``; one
that defaults to on is ``--flag/--no-flag``. Fields of a nested config (``IndexConfig.faiss``)
become options of their own when listed in ``nested``. An option renamed so that every stage spells it
alike (``--lr``, ``--grad-accum``) keeps its old spelling for a while: ``Flag(deprecated=...)``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import typer

from pretriever.cli.common import stage
from pretriever.config import build_config, deprecation_note, help_for

SCALARS = (str, int, float, Path)


@dataclass(frozen=True)
class Flag:
    """How one config field differs on the command line from the rule above."""

    names: str | tuple[str, ...] | None = None  # e.g. "--robots/--ignore-robots" or ("--method", "-m")
    parse: Callable[[Any], Any] | None = None  # the given value -> the config value ("1,5" -> [1, 5])
    cli_type: Any = None  # the type typer parses (default: from the field)
    extra_help: str = ""  # appended to the field's help (an example, say)
    deprecated: tuple[str, ...] = ()  # old spellings: still accepted, hidden from --help, with a note when used


def _base(hint: Any) -> tuple[Any, bool]:
    """(type without None, whether None is allowed)."""
    args = typing.get_args(hint)
    if type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return (rest[0] if len(rest) == 1 else hint), True
    return hint, False


def _cli_type(hint: Any) -> Any:
    base, _ = _base(hint)
    if base in SCALARS or base is bool:
        return base
    origin, args = typing.get_origin(base), typing.get_args(base)
    if origin in (list, tuple, Sequence) and args and args[0] in SCALARS:
        return list[args[0]]
    if origin is dict:
        return list[str]  # NAME=VALUE, repeatable; the config parses it
    return str


def _names(field: dataclasses.Field, hint: Any, flag: Flag, short: dict[str, str]) -> tuple[str, ...]:
    if flag.names:
        return _names_of(flag)
    name = "--" + field.name.replace("_", "-")
    if _base(hint)[0] is bool and field.default is True:
        name = f"{name}/--no-{field.name.replace('_', '-')}"
    return (name, short[field.name]) if field.name in short else (name,)


def _parameter(cls: type, field: dataclasses.Field, hint: Any, flag: Flag, short: dict[str, str],
               argument: bool, help_name: str | None = None) -> inspect.Parameter:
    help_text = help_for(cls, field.name, flag.extra_help)
    cli_type = flag.cli_type or _cli_type(hint)
    required = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
    if argument:
        info = typer.Argument(... if required else None, help=help_text, show_default=False,
                              metavar=(help_name or field.name).upper())
        annotation = cli_type if required else Optional[cli_type]
    else:
        info = typer.Option(None, *_names(field, hint, flag, short), help=help_text, show_default=False)
        annotation = Optional[cli_type]
    return inspect.Parameter(help_name or field.name, inspect.Parameter.KEYWORD_ONLY, default=info,
                             annotation=annotation)


OLD = "_old_"  # prefix of the hidden parameter that takes a field's deprecated spellings


def _old_spelling(field: dataclasses.Field, hint: Any, flag: Flag) -> inspect.Parameter:
    info = typer.Option(None, *flag.deprecated, hidden=True, show_default=False)
    return inspect.Parameter(OLD + field.name, inspect.Parameter.KEYWORD_ONLY, default=info,
                             annotation=Optional[flag.cli_type or _cli_type(hint)])


def _take_old_spellings(given: dict[str, Any], renamed: dict[str, tuple[tuple[str, ...], str]]) -> None:
    """Move each deprecated spelling's value to its field (the new spelling wins when both are given)."""
    for name, (old, new) in renamed.items():
        value = given.pop(OLD + name)
        if value is None:
            continue
        deprecation_note(" / ".join(old), new)
        if given.get(name) is None:
            given[name] = value


def _names_of(flag: Flag) -> tuple[str, ...]:
    return (flag.names,) if isinstance(flag.names, str) else tuple(flag.names or ())


def config_command(cls: type, section: str, *, arguments: Sequence[str] = (), flags: dict[str, Flag] | None = None,
                   short: dict[str, str] | None = None, skip: Sequence[str] = (), only: Sequence[str] = (),
                   nested: Sequence[str] = (), extra: Sequence[inspect.Parameter] = (),
                   before: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
                   ) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """A decorator: ``run(cfg, **extra)`` becomes a typer command whose options are ``cls``'s fields.

    ``arguments`` are positional; ``flags`` override single fields; ``short`` adds aliases (``--out``
    always has ``-o``); ``skip`` leaves fields out (nested ones too), or ``only`` keeps just those (with
    the arguments and ``nested``); ``nested`` names nested-config fields whose own fields become options;
    ``extra`` are further parameters (not config fields) passed to ``run`` as keyword arguments;
    ``before(values, extras)`` may fill values the command derives (a merge's corpus).
    """
    flags, short = flags or {}, {"out": "-o", **(short or {})}
    hints = typing.get_type_hints(cls)
    keep = set(only) | set(arguments) | set(nested) if only else None
    fields = [f for f in dataclasses.fields(cls) if f.name not in skip and (keep is None or f.name in keep)]
    params, parse, inner, renamed = [], {}, {}, {}
    top = {f.name for f in fields if f.name not in nested}
    for name in arguments:
        field = next(f for f in fields if f.name == name)
        params.append(_parameter(cls, field, hints[name], flags.get(name, Flag()), short, True))
    for field in fields:
        if field.name in arguments:
            continue
        if field.name in nested:
            sub = hints[field.name]
            sub_hints = typing.get_type_hints(sub)
            for f in dataclasses.fields(sub):
                if f.name in top or f.name in skip:  # the outer field keeps the name; TOML sets the inner one
                    continue
                params.append(_parameter(sub, f, sub_hints[f.name], flags.get(f.name, Flag()), short, False))
                inner[f.name] = field.name
                parse[f.name] = flags.get(f.name, Flag()).parse
            continue
        flag = flags.get(field.name, Flag())
        params.append(_parameter(cls, field, hints[field.name], flag, short, False))
        parse[field.name] = flag.parse
        if flag.deprecated:
            params.append(_old_spelling(field, hints[field.name], flag))
            renamed[field.name] = (flag.deprecated, _names(field, hints[field.name], flag, short)[0])
    params.append(inspect.Parameter("config", inspect.Parameter.KEYWORD_ONLY, annotation=Optional[Path],
                                    default=typer.Option(None, "--config", show_default=False,
                                                         help=f"TOML file whose \\[{section}] table sets any of "
                                                              f"these options (keys as the option names, with _).")))
    params.extend(extra)
    extra_names = {p.name for p in extra}

    def decorate(run: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(run)
        def command(**given: Any) -> None:
            config = given.pop("config")
            passed = {name: given.pop(name) for name in list(given) if name in extra_names}
            _take_old_spellings(given, renamed)
            values: dict[str, Any] = {}
            for name, value in given.items():
                if value is None or value == []:
                    continue
                value = parse[name](value) if parse.get(name) else value
                if name in inner:
                    values.setdefault(inner[name], {})[name] = value
                else:
                    values[name] = value
            if before is not None:
                before(values, passed)
            with stage():
                cfg = build_config(cls, config, section, **values)
            run(cfg, **passed)

        del command.__wrapped__  # typer must read the signature below, not run's
        command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in params}
        return command

    return decorate
