"""``pretriever serve``: the search API and the web page over an index (and a pairs folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
import uvicorn

from pretriever.cli.common import given, stage
from pretriever.config import build_config, help_for
from pretriever.index.hybrid import HybridOptions
from pretriever.progress import console
from pretriever.serve import ServeConfig, create_app


def serve_command(
    index: Path = typer.Argument(..., help=help_for(ServeConfig, "index"), show_default=False),
    pairs: Optional[Path] = typer.Option(None, "--pairs", help=help_for(ServeConfig, "pairs")),
    host: Optional[str] = typer.Option(None, "--host", help=help_for(ServeConfig, "host")),
    port: Optional[int] = typer.Option(None, "--port", help=help_for(ServeConfig, "port")),
    api_key: Optional[str] = typer.Option(None, "--api-key", help=help_for(ServeConfig, "api_key")),
    qrels: Optional[list[str]] = typer.Option(None, "--qrels", help=help_for(ServeConfig, "qrels")),
    queries: Optional[Path] = typer.Option(None, "--queries", help=help_for(ServeConfig, "queries")),
    answers: Optional[list[str]] = typer.Option(None, "--answers", help=help_for(ServeConfig, "answers")),
    fusion: Optional[str] = typer.Option(None, "--fusion", help=help_for(HybridOptions, "fusion")),
    alpha: Optional[float] = typer.Option(None, "--alpha", help=help_for(HybridOptions, "alpha")),
    device: Optional[str] = typer.Option(None, "--device", help=help_for(ServeConfig, "device")),
    max_query_chars: Optional[int] = typer.Option(None, "--max-query-chars", help=help_for(ServeConfig, "max_query_chars")),
    max_k: Optional[int] = typer.Option(None, "--max-k", help=help_for(ServeConfig, "max_k")),
    max_batch: Optional[int] = typer.Option(None, "--max-batch", help=help_for(ServeConfig, "max_batch")),
    max_body_bytes: Optional[int] = typer.Option(None, "--max-body-bytes", help=help_for(ServeConfig, "max_body_bytes")),
    encode_batch: Optional[int] = typer.Option(None, "--encode-batch", help=help_for(ServeConfig, "encode_batch")),
    batch_wait_ms: Optional[float] = typer.Option(None, "--batch-wait-ms", help=help_for(ServeConfig, "batch_wait_ms")),
    threads: Optional[int] = typer.Option(None, "--threads", help=help_for(ServeConfig, "threads")),
    config: Optional[Path] = typer.Option(None, "--config", help="TOML file whose [serve] table sets any of these options."),
) -> None:
    """Serve INDEX_DIR over HTTP: search (dense, BM25, hybrid), compare, browse pairs; a web page at /.

    OpenAPI docs at /docs. Binds 127.0.0.1 unless --host says otherwise; any other address needs --api-key
    (or $PRETRIEVER_API_KEY). Judgments and answers are read at start-up and requests name them.

    Examples:

      pretriever serve scifact-index/ --pairs pairs/

      pretriever serve scifact-index/ --qrels test=scifact/qrels/test.tsv --queries scifact/queries.jsonl --fusion convex --alpha 0.5

      PRETRIEVER_API_KEY=s3cret pretriever serve index/ --host 0.0.0.0 --port 8080
    """
    with stage():
        cfg = build_config(ServeConfig, config, "serve", index=index, pairs=pairs, host=host, port=port,
                           api_key=api_key, qrels=qrels or None, queries=queries, answers=answers or None,
                           hybrid=given(fusion=fusion, alpha=alpha), device=device, max_query_chars=max_query_chars, max_k=max_k, max_batch=max_batch,
                           max_body_bytes=max_body_bytes, encode_batch=encode_batch, batch_wait_ms=batch_wait_ms,
                           threads=threads)
        console.print(f"opening {cfg.index} ...")
        app = create_app(cfg)
    console.print(f"serving {cfg.index} on http://{cfg.host}:{cfg.port}/  (API docs: /docs)")
    uvicorn.run(app, host=cfg.host, port=cfg.port, log_level="warning")
