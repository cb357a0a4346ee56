"""pretriever: mine training signal for dense retrievers from the structure of text collections."""

__version__ = "0.1.0"
