"""Serve and look: an HTTP search API and a web page over an index and a pairs folder.

The top layer, beside the CLI: it opens indexes with :meth:`pretriever.index.IndexFolder.open`
(which reads the index's passages from its store), the pairs' store through :mod:`pretriever.data`, pairs through
:class:`pretriever.data.pairs.PairsDir` and answers with :class:`pretriever.reader.predict.Reader`;
no stage imports it.

* :mod:`~pretriever.serve.config` - :class:`ServeConfig` (the ``[serve]`` TOML table);
* :mod:`~pretriever.serve.engine` - :class:`QueryEngine`: the model loaded once, query encoding
  micro-batched across concurrent requests and searched with FAISS on the encoder's thread, BM25 on the event loop
  when it is cheaper than a thread hop (else in the pool), hybrid by
  :func:`pretriever.index.hybrid.fuse` (RRF or convex, ``[serve.hybrid]``);
* :mod:`~pretriever.serve.pair_pages` - :class:`PairsView`: pages of mined pairs with their spans;
* :mod:`~pretriever.serve.judged` - the qrels and answer sets requests name (command line, or recorded by
  a refined index);
* :mod:`~pretriever.serve.answer` - ``POST /answer`` with ``--reader``;
* :mod:`~pretriever.serve.app` - :func:`create_app`: the FastAPI application and the page at ``/``;
* :mod:`~pretriever.serve.guards` - the Host check, the API key, the body cap and the security headers (ASGI
  middleware);
* :mod:`~pretriever.serve.handlers` - every error as ``{"error": message}``, with no server path in it;
* :mod:`~pretriever.serve.server` - the options ``pretriever serve`` runs uvicorn with: read deadlines, the
  request head's caps, JSON answers to malformed requests.

Example::

    from pretriever.serve import ServeConfig, create_app
    from pretriever.serve.server import uvicorn_options
    config = ServeConfig(index="scifact-index/", pairs="pairs/", reader="reader/")
    app = create_app(config)
    # uvicorn.run(app, **uvicorn_options(config))
"""

from pretriever.serve.config import ServeConfig, ServeError

__all__ = ["ServeConfig", "ServeError", "create_app"]


def __getattr__(name: str):
    """``create_app`` on first use (PEP 562): FastAPI takes most of a second to import, and the command line
    reads :class:`ServeConfig` for every ``pretriever --help``."""
    if name == "create_app":
        from pretriever.serve.app import create_app  # lazily: see above

        return create_app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
