"""Input formats. Importing this package registers every built-in format."""

from pretriever.corpus.formats import mediawiki, plain, wikiextractor  # noqa: F401  (registers the formats)
from pretriever.corpus.formats.base import FORMATS, InputFormat, detect_format, register

__all__ = ["FORMATS", "InputFormat", "detect_format", "register"]
