"""``pretriever serve``: the search API and the web page over an index (and a pairs folder)."""

from __future__ import annotations


import uvicorn

from pretriever.cli.common import stage
from pretriever.cli.options import config_command
from pretriever.progress import console
from pretriever.serve import ServeConfig, create_app


@config_command(ServeConfig, "serve", arguments=("index",), nested=("hybrid",))
def serve_command(cfg: ServeConfig) -> None:
    """Serve INDEX_DIR over HTTP: search (dense, BM25, hybrid), compare, browse pairs; a web page at /.

    OpenAPI docs at /docs. Binds 127.0.0.1 unless --host says otherwise; any other address needs --api-key
    (or $PRETRIEVER_API_KEY). Judgments and answers are read at start-up and requests name them.

    Examples:

      pretriever serve scifact-index/ --pairs pairs/

      pretriever serve scifact-index/ --qrels test=scifact/qrels/test.tsv --queries scifact/queries.jsonl --fusion convex --alpha 0.5

      PRETRIEVER_API_KEY=s3cret pretriever serve scifact-index/ --host 0.0.0.0 --port 8080
    """
    with stage():
        console.print(f"opening {cfg.index} ...")
        app = create_app(cfg)
    console.print(f"serving {cfg.index} on http://{cfg.host}:{cfg.port}/  (API docs: /docs)")
    uvicorn.run(app, host=cfg.host, port=cfg.port, log_level="warning")
