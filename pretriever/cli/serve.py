"""``pretriever serve``: the search API and the web page over an index (and a pairs folder)."""

from __future__ import annotations

from pretriever.cli.common import stage
from pretriever.cli.options import config_command
from pretriever.progress import console
from pretriever.serve import ServeConfig


@config_command(ServeConfig, "serve", arguments=("index",), nested=("hybrid",))
def serve_command(cfg: ServeConfig) -> None:
    """Serve INDEX_DIR over HTTP: search (dense, BM25, hybrid), compare, browse pairs, answer; a web page
    at /.

    OpenAPI at /openapi.json, shown at /docs by Swagger UI served from here (no CDN). Judgments and
    answers are read at start-up and requests name them; a refined index offers the qrels its refinement
    recorded (sets feedback and holdout), any other index needs --qrels and --queries. With --reader
    READER_DIR, POST /answer retrieves and reads (as `pretriever answer`) and the page shows an answer box.

    Safety: binds 127.0.0.1 unless --host says otherwise; any other address needs --api-key (or
    $PRETRIEVER_API_KEY; visible ASCII), checked before the request's body is read, on every path but the
    page, /docs, /openapi.json and /health. On loopback a request's Host header must be 127.0.0.1,
    localhost, [::1] or an --allowed-host, else 400, so that no web page can read the server by DNS
    rebinding. Every response carries X-Content-Type-Options: nosniff and X-Frame-Options: DENY; the page
    and /docs also a Content-Security-Policy of their own origin only. Every error is JSON, {"error":
    "message"} (a 422 adds "detail"), malformed requests included, and names no file of the server. A
    request's URL may be 16 KiB (else 414), a header line 16 KiB and all its headers 64 KiB (else 431). A
    client has --header-timeout seconds to send a request's headers and --body-timeout for its body, then
    the socket is closed.

    Examples:

      pretriever serve scifact-index/ --pairs pairs/

      pretriever serve scifact-index/ --qrels test=scifact/qrels/test.tsv --queries scifact/queries.jsonl
          --fusion convex --alpha 0.5

      PRETRIEVER_API_KEY=s3cret pretriever serve scifact-index/ --host 0.0.0.0 --port 8080
    """
    # the server stack (FastAPI, uvicorn) only when serving: not imported for every `pretriever --help`
    import uvicorn

    from pretriever.serve import create_app  # FastAPI: see above
    from pretriever.serve.server import uvicorn_options  # uvicorn: see above

    with stage():
        console.print(f"opening {cfg.index} ...")
        app = create_app(cfg)
    console.print(f"serving {cfg.index} on http://{cfg.host}:{cfg.port}/  (API docs: /docs)")
    uvicorn.run(app, **uvicorn_options(cfg))
