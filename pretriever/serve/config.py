"""Settings of ``pretriever serve`` (also the ``[serve]`` table of a TOML config)."""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path

from pretriever.config import device_option, option
from pretriever.errors import PretrieverError
from pretriever.index import HybridOptions

API_KEY_ENV = "PRETRIEVER_API_KEY"
MODES = ("dense", "bm25", "hybrid")
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class ServeError(PretrieverError):
    """The service cannot start as configured (a missing API key off loopback, a bad named file)."""


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(value: str) -> str:
    """The host of a Host header or an --allowed-host value, without its port, lower-cased ("[::1]:80" -> "[::1]")."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[:value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0].rstrip(".") if value.count(":") == 1 else value.rstrip(".")


def check_key(key: str) -> None:
    """Refuse a key no client could send: header values are bytes read as latin-1, so only visible ASCII
    arrives as typed."""
    for at, char in enumerate(key, 1):
        if not "!" <= char <= "~":
            raise ServeError(f"the API key (--api-key or ${API_KEY_ENV}) has U+{ord(char):04X} at character {at}: "
                             f"HTTP headers carry visible ASCII only, so no client could present it; use letters, "
                             f"digits and punctuation (python -c 'import secrets; print(secrets.token_urlsafe(32))')")


def parse_named(values: list[str] | dict[str, str] | None, what: str) -> dict[str, Path]:
    """``NAME=PATH`` items (or a TOML table) as ``{name: path}``; a bare PATH is named after its file."""
    if not values:
        return {}
    if isinstance(values, dict):
        return {str(k): Path(v) for k, v in values.items()}
    out: dict[str, Path] = {}
    for item in values:
        name, sep, path = str(item).partition("=")
        if not sep:
            name, path = Path(item).stem, str(item)
        if not name or not path:
            raise ServeError(f"--{what} {item!r}: give NAME=PATH or PATH")
        if name in out:
            raise ServeError(f"--{what}: the name {name!r} is given twice")
        out[name] = Path(path)
    return out


@dataclass
class ServeConfig:
    """Settings of ``pretriever serve`` (the HTTP search API and the page; the ``[serve]`` TOML table).

    Each field's help lives in its metadata (:func:`pretriever.config.option`), which ``--help`` and the TOML config
    read.
    """

    index: Path = option(help="The index folder to serve (dense, refined or BM25; from `pretriever index build`).")
    pairs: Path | None = option(None, "A pairs folder (from `pretriever mine`) to browse at /pairs and on the page.")
    reader: Path | None = option(None, "READER_DIR (from `pretriever reader train`): enables POST /answer and the "
                                       "page's answer box.")
    host: str = option("127.0.0.1", "Address to bind. Anything but loopback needs an API key.")
    allowed_host: list[str] = option(default_factory=list, help="A host name clients may reach the server by "
                                      "besides 127.0.0.1, localhost and [::1] (repeatable). Any other Host header "
                                      "gets 400, so a web page cannot read the server by DNS rebinding; off "
                                      "loopback the Host header is checked only when this is given.")
    port: int = option(8000, "Port to listen on.")
    api_key: str | None = option(None, f"Key clients send as `X-API-Key` (or `Authorization: Bearer KEY`); "
                                       f"required off loopback. Also read from ${API_KEY_ENV}.",
                                 default_help=f"${API_KEY_ENV} if set")
    qrels: dict[str, Path] = option(default_factory=dict, help="Judgment files (BEIR or TREC qrels) requests may "
                                    "name for /compare and the judged-query view, as NAME=PATH (repeatable). A "
                                    "refined index offers its own (sets 'feedback' and 'holdout', from index.json); "
                                    "an evaluation folder (`pretriever evaluate --out`) is not read: give its "
                                    "qrels and queries here.")
    queries: Path | None = option(None, "BEIR queries.jsonl giving the texts of the --qrels queries (judged-query "
                                        "view).")
    answers: dict[str, Path] = option(default_factory=dict, help="QA files (NQ-open JSONL, DPR TSV/JSON) requests "
                                      "may name for /compare, as NAME=PATH (repeatable).")
    device: str | None = device_option("queries are encoded (and, with --reader, the reader runs)")
    max_query_chars: int = option(1000, "Longest query accepted, in characters.")
    max_k: int = option(1000, "Largest k (hits per query) accepted.")
    max_batch: int = option(64, "Most queries in one /search/batch request.")
    max_body_bytes: int = option(65536, "Largest request body accepted, in bytes.")
    max_page_size: int = option(100, "Most pairs in one /pairs page.")
    max_read_k: int = option(100, "Most passages one /answer request has the reader read.")
    encode_batch: int = option(32, "Most queries encoded together (micro-batch across concurrent requests).")
    batch_wait_ms: float = option(2.0, "How long a batch that holds queries of several requests waits for more "
                                       "to join. A lone request is encoded at once.")
    encode_threads: int = option(os.cpu_count() or 1, "Torch threads of the query encoder, which encodes one batch "
                                 "at a time (the only torch user in the server). On a machine of its own the encoder "
                                 "is the server's work, so it gets every core; on one shared with other jobs give "
                                 "fewer: more threads than cores free at the time stall at every step of the model.",
                                 default_help="all cores")
    passages_mb: int = option(1024, "Read the store's passages into memory at start when their text takes at "
                                         "most this many MB (about twice that in memory), so a request's passages "
                                         "are a dict lookup; else each request queries the store. 0: never.")
    hybrid: HybridOptions = option(default_factory=HybridOptions, help="How mode=hybrid fuses dense and BM25 "
                                   "(the [serve.hybrid] table; RRF k=60 by default; the tuned fusion instead when "
                                   "the index's tuned setting is a hybrid one).")
    tuned: bool = option(True, "Serve the setting `pretriever tune` chose (index.json's \"tuned\"): it becomes the "
                               "mode of requests that name none, and a tuned fusion is what mode=hybrid does. "
                               "--no-tuned: dense by default, --fusion as given.")
    threads: int = option(4, "Worker threads for BM25 searches, store queries and pairs (the encoder has its "
                             "own thread).")
    bm25_inline_ms: float = option(1.0, "A mode=bm25 search expected to take at most this many ms (by the searches so "
                                        "far, per query) runs on the event loop: handing it to a worker thread costs "
                                        "about 0.2 ms, more than a small index's search. Slower ones run in the pool, "
                                        "so a large index never holds the loop; so does hybrid's BM25, which overlaps "
                                        "the encode there. 0: always in the pool.")
    header_timeout: float = option(10.0, "Seconds a client has to send a request's line and headers (from "
                                         "connecting, or from the request's first byte); then the socket is closed.")
    body_timeout: float = option(30.0, "Seconds a client has to send a request's body once its headers are in; "
                                       "then the socket is closed.")

    def __post_init__(self) -> None:
        self.index = Path(self.index)
        self.pairs = Path(self.pairs) if self.pairs is not None else None
        self.reader = Path(self.reader) if self.reader is not None else None
        self.queries = Path(self.queries) if self.queries is not None else None
        self.qrels = parse_named(self.qrels, "qrels")
        self.answers = parse_named(self.answers, "answers")
        if self.api_key is None:
            self.api_key = os.environ.get(API_KEY_ENV) or None
        for name in ("port", "max_query_chars", "max_k", "max_batch", "max_body_bytes", "max_page_size",
                     "max_read_k", "encode_batch", "encode_threads", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("batch_wait_ms", "passages_mb", "bm25_inline_ms"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be 0 or more, got {getattr(self, name)}")
        for name in ("header_timeout", "body_timeout"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be more than 0 seconds, got {getattr(self, name)}")
        self.allowed_host = [host_name(h) for h in self.allowed_host]
        if "" in self.allowed_host:
            raise ServeError("--allowed-host needs a host name (e.g. --allowed-host search.lan)")
        if self.api_key:
            check_key(self.api_key)
        if not is_loopback(self.host) and not self.api_key:
            raise ServeError(f"binding {self.host} exposes the index beyond this machine: give --api-key KEY "
                             f"(or set ${API_KEY_ENV}), or bind 127.0.0.1")

    def host_names(self) -> frozenset[str] | None:
        """The names a request's Host header may carry (None: any, off loopback without --allowed-host)."""
        if not is_loopback(self.host) and not self.allowed_host:
            return None
        own = host_name(f"[{self.host}]" if ":" in self.host else self.host)
        return frozenset((*LOOPBACK_NAMES, own, *self.allowed_host))
