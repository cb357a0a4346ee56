"""The root of every error pretriever raises on purpose.

A :class:`PretrieverError` carries a message meant for a person (it names the file, line,
page or option that is wrong and says what to do) and the exit status the command line
uses for it, so the CLI needs one ``except PretrieverError`` and no list of error types.
"""

from __future__ import annotations


class PretrieverError(Exception):
    """Something the user can fix: bad input, a wrong folder, an impossible setting.

    Subclasses set ``exit_code`` when the command line must tell cases apart (corpus
    build: 3 for pages that could not be parsed, 4 for an unreadable input).
    """

    exit_code: int = 2


class ConfigError(PretrieverError, ValueError):
    """A setting is missing or wrong; the message names the key (and the TOML file when one is read)."""
