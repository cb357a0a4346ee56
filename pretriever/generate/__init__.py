"""Stage ``generate``: doc2query candidate queries per passage (query-as-context, Wu et al. 2023)."""

from pretriever.generate.config import GenerateConfig
from pretriever.generate.errors import GenerateError
from pretriever.generate.importer import import_queries
from pretriever.data import QUERIES_FILE
from pretriever.generate.folder import GenerateResult

__all__ = ["GenerateConfig", "GenerateError", "GenerateResult", "QUERIES_FILE", "import_queries"]
