"""Every error the API sends is ``{"error": message}`` (422s add ``detail``, pydantic's list): a route's own
errors, the stages' errors, unknown routes and methods, bodies that do not parse, and failures.

A message never shows a client where the server's files are: absolute paths in it are cut to their last
part before it is sent, and the whole message goes to the server log. The cut depends on the text alone, never on
what exists on this machine: a message that quotes the client's own input cannot tell it which folders are here.
"""

import logging
import re
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException
from starlette.routing import Match, Mount

from pretriever.data.pairs import PairsError
from pretriever.errors import PretrieverError
from pretriever.serve.judged import UnknownSetError
from pretriever.serve.pair_pages import PageOutOfRange

log = logging.getLogger(__name__)
_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
_ABSOLUTE = re.compile(r"(?<![\w/.~:-])/[^\s'\"()<>,;:]+")


def error_reply(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    """The API's error response: ``{"error": message}``."""
    return JSONResponse({"error": message}, status, headers=headers)


def without_paths(text: str, base: Path | None = None) -> str:
    """``text`` with each absolute path of two parts or more cut to its last part ("/srv/x/pairs is ..." ->
    "pairs is ..."), or, under the folder ``base``, shown relative to it; "/answer" (one part: a route) stays."""

    def cut(match: re.Match) -> str:
        path = Path(match.group(0))
        if len(path.parts) < 3:
            return match.group(0)
        if base is not None and path.is_relative_to(base) and path != base:
            return str(path.relative_to(base))
        return path.name

    return _ABSOLUTE.sub(cut, text)


def _public(request: Request, status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    shown = without_paths(message)
    if shown != message:
        log.warning("%s %s -> %d: %s", request.method, request.url.path, status, message)
    return error_reply(status, shown, headers)


def _message(errors: list[dict]) -> str:
    parts = []
    for err in errors:
        if err.get("type") == "json_invalid":
            parts.append(f"the body is not valid JSON ({(err.get('ctx') or {}).get('error', 'decode error')})")
            continue
        loc = list(err.get("loc", ()))
        where = ".".join(str(p) for p in (loc[1:] if loc and loc[0] in ("body", "query", "path", "header") else loc))
        parts.append(f"{where}: {err.get('msg')}" if where else str(err.get("msg")))
    return "; ".join(parts) or "invalid request"


def install_error_handlers(app: FastAPI) -> None:
    """Make every error of ``app`` ``{"error": message}``."""

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        detail = [{k: v for k, v in e.items() if k in ("loc", "msg", "type")} for e in errors]
        return JSONResponse({"error": _message(list(errors)), "detail": detail}, 422)

    @app.exception_handler(HTTPException)  # Starlette's: FastAPI's, and the router's 404 and 405
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        # the router's own answers quote only the request, so they are sent as they are, for any path alike
        if exc.status_code == 404 and exc.detail == "Not Found":
            return error_reply(404, f"no such route: {request.method} {request.url.path} (the API is described "
                                    f"at /docs)")
        if exc.status_code == 405 and exc.detail == "Method Not Allowed":
            allowed = ", ".join(_allowed_methods(request))
            return error_reply(405, f"{request.url.path} does not take {request.method} (allowed: {allowed})",
                               {"allow": allowed})
        return _public(request, exc.status_code, str(exc.detail), exc.headers)

    @app.exception_handler(PretrieverError)
    async def domain_error(request: Request, exc: PretrieverError) -> JSONResponse:
        status = 404 if isinstance(exc, (UnknownSetError, PageOutOfRange, PairsError)) else 400
        return _public(request, status, str(exc))

    @app.exception_handler(Exception)  # a bug: the trace goes to the server log (uvicorn prints it), not here
    async def failure(request: Request, exc: Exception) -> JSONResponse:
        return error_reply(500, "internal error: the server log has the details")


def _allowed_methods(request: Request) -> list[str]:
    """The methods the request's path takes, over every route (the router's 405 names only the first route's: GET
    of /search, not its POST): those a route matches fully; a mount here serves static files (GET and HEAD)."""
    allowed: set[str] = set()
    probe = {"type": "http", "path": request.url.path, "root_path": ""}  # as the app saw it, not as a mount does
    for route in request.app.router.routes:
        if isinstance(route, Mount):
            if route.matches({**probe, "method": "GET"})[0] is not Match.NONE:
                allowed |= {"GET", "HEAD"}
            continue
        allowed |= {m for m in _METHODS if route.matches({**probe, "method": m})[0] is Match.FULL}
    return sorted(allowed)
