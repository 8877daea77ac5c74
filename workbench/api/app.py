"""The HTTP API (`workbench serve`): FastAPI over one engine per process.

    POST /search          seed 002's search (+ vector and rerank scores, rank before, timings, trace id)
    POST /retrieve        seed 000's retrieve_top_docs as {"result": str}
    POST /rerank          the Cohere-style rerank of the engine's reranker; GET /models lists it
    GET  /collections     every collection; GET /collections/{name} one
    GET  /health          {"status": "starting" | "ready", ...}: ready once the models are loaded
    /session/...          session memory (seed 004)
    /docs                 OpenAPI

Errors are JSON `{"detail": ..., "message": message}`: `message` is always the readable sentence; `detail` is the
same sentence, except on a 422, where it is the list of `{loc, msg, type}` the OpenAPI declares (FastAPI's
`HTTPValidationError`, which generated clients parse). 422 names the field (an unknown field, a body that is not
JSON, nests over 32 levels or holds a lone surrogate), 400 a body that is not UTF-8, 404 an unknown collection, 401
a missing or wrong token (when WORKBENCH_API_TOKEN is set, every route but /health needs `Authorization: Bearer
<token>`), 421 a Host header that does not name this machine (on a loopback address: a guard against DNS rebinding),
413 a body over WORKBENCH_MAX_BODY_BYTES, 415 a body not sent as JSON, 503 a missing model or a store that is down
(with the setting to change), 504 a search past WORKBENCH_QUERY_TIMEOUT. Messages never show the server's own paths.
Nothing a client sends produces a 500 or a traceback.

The application: the lifespan (engine, model warm-up, event sink, session store), the body limit, errors through
the one error table (`workbench.errors`), and a router per area (`routers/`).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException

from workbench.api.dependencies import ServiceState
from workbench.api.routers import (
    collections,
    docs,
    experiments,
    explain,
    health,
    jobs,
    judgments,
    preferences,
    rerank,
    search,
    sessions,
)
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import EXPECTED_ERRORS, WorkbenchError, error_message, error_status
from workbench.heap import freeze_what_is_loaded
from workbench.inputs import host_name, is_loopback, json_depth, unpaired_surrogate_at
from workbench.redact import plain_text, public_name, redact_text, shown
from workbench.rerankers.local.backends import measure_backends_in_background
from workbench.services.backend_audit import enable_auto_audit
from workbench.vocab import MAX_JSON_DEPTH

log = logging.getLogger("workbench.api")


def _warm(state: ServiceState) -> None:
    """Load the models before saying ready: the first request must not pay for them."""
    try:
        state.models["embedder"] = public_name(state.engine.embedder().model_id) or ""
        reranker = state.engine.reranker()
        if reranker is not None:
            state.models["reranker"] = f"{public_name(reranker.model_id)} ({reranker.backend})"
        log.info("ready: %s", ", ".join(f"{kind} {name}" for kind, name in state.models.items()))
    except WorkbenchError as exc:
        state.warm_error = error_message(exc)
        log.error("models could not be loaded: %s", state.warm_error)
    finally:
        freeze_what_is_loaded()  # a full collection never walks the loaded models inside a budgeted search
        state.ready.set()


def create_app(
    settings: Settings | None = None, *, engine: Engine | None = None, warm: bool = True, host: str = "127.0.0.1"
) -> FastAPI:
    """The API over one engine, served on `host`. `warm=False` skips loading the models at start-up (tests of
    the plumbing). On a loopback address it answers only requests whose Host header names this machine: a web
    page that rebinds its own name to 127.0.0.1 (DNS rebinding) gets 421, never the data."""
    settings = settings or (engine.settings if engine else Settings())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = ServiceState(settings, engine)
        app.state.wb = state
        if warm:
            measure_backends_in_background()  # a server stays up: an unmeasured reranker answers on torch meanwhile
            enable_auto_audit(settings)  # and its faster backends, never audited here, are checked in the background
            threading.Thread(target=_warm, args=(state,), name="workbench-warm-up", daemon=True).start()
        else:
            state.ready.set()
        yield
        state.jobs.close()
        state.events.close()
        if state.clicks is not None:
            state.clicks.close()

    app = FastAPI(
        title="Rerank Workbench API",
        version="1.0",
        description=__doc__,
        lifespan=lifespan,
        docs_url=None,  # served by routers/docs.py, behind the token
        redoc_url=None,
        openapi_url=None,
    )
    app.state.only_loopback_hosts = is_loopback(host)
    app.add_middleware(BodyCheck)
    app.middleware("http")(_check_host)  # added last, so it runs first
    _error_handlers(app)
    for area in (
        health,
        search,
        rerank,
        explain,
        judgments,
        preferences,
        collections,
        sessions,
        experiments,
        jobs,
        docs,
    ):
        app.include_router(area.router, responses=ERROR_RESPONSES)
    return app


class ErrorBody(BaseModel):
    """Every error's body but a 422's: the readable sentence, twice (`detail` for clients that read FastAPI's)."""

    detail: str
    message: str


# The answers every route may give besides its own, declared in the OpenAPI so generated clients parse them (a 422
# keeps FastAPI's declaration: its `detail` is the list of `{loc, msg, type}`).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in {
        400: "the body is not UTF-8 text",
        401: "a missing or wrong token (when WORKBENCH_API_TOKEN is set)",
        404: "no such collection, experiment, query set or job",
        413: "the body is larger than WORKBENCH_MAX_BODY_BYTES",
        415: "the body was not sent as JSON",
        421: "a Host header that does not name this machine",
        429: "too many jobs already waiting (POST /jobs/...)",
        503: "a model, a store or a setting the service cannot use as configured",
        504: "the work ran past WORKBENCH_QUERY_TIMEOUT (or WORKBENCH_EVALUATION_TIMEOUT)",
    }.items()
}


async def _check_host(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """421 for a Host header that does not name this machine, when the API is bound to a loopback address."""
    if request.app.state.only_loopback_hosts:
        given = request.headers.get("host", "")
        if not is_loopback(host_name(given)):
            shown = plain_text(given)[:80] or "(none)"
            return error_response(
                421,
                f"Host '{shown}' is not this server: the API on a loopback address answers requests to "
                "127.0.0.1, localhost or [::1] only (a guard against DNS rebinding).",
            )
    return await call_next(request)


class BodyCheck:
    """Every body before FastAPI reads it (plain ASGI: the body is buffered, checked and replayed to the app): at
    most WORKBENCH_MAX_BODY_BYTES (413, declared or streamed); a body sent to a route must say `Content-Type:
    application/json` (415) and be UTF-8 JSON nested at most 32 levels (422, naming what is wrong)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        limit = scope["app"].state.wb.settings.max_body_bytes
        too_large = error_response(413, f"The request body is larger than {limit} bytes.")
        declared = headers.get("content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            return await too_large(scope, receive, send)
        if scope["method"] not in {"POST", "PUT", "PATCH"}:
            return await self.app(scope, receive, send)
        body = b""
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return await self.app(scope, receive, send)  # the client went away: let the app see it
            body += message.get("body", b"")
            if len(body) > limit:
                return await too_large(scope, receive, send)
            if not message.get("more_body"):
                break
        problem = _json_problem(body, headers.get("content-type", "")) if body else None
        if problem is not None:
            return await error_response(*problem)(scope, receive, send)
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await self.app(scope, replay, send)


def _json_problem(body: bytes, content_type: str) -> tuple[int, str] | None:
    """What is wrong with a JSON body, as (status, message), or None."""
    if content_type.split(";")[0].strip().lower() != "application/json":
        shown = plain_text(content_type)[:60] or "none"
        return 415, f"Send the body as JSON with 'Content-Type: application/json' (it said '{shown}')."
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        return 400, f"The body is not UTF-8 text (byte {exc.start}): send JSON encoded as UTF-8."
    try:
        value = json.loads(text)
    except RecursionError:
        return 422, f"The body is nested too deeply: JSON is taken nested at most {MAX_JSON_DEPTH} levels."
    except ValueError as exc:
        return 422, f"The body is not valid JSON: {plain_text(str(exc))[:120]}."
    surrogate = unpaired_surrogate_at(value)
    if surrogate is not None:
        where = f" in '{plain_text(surrogate)[:60]}'" if surrogate else ""
        return 422, f"The body holds a lone surrogate (an escape like \\ud800){where}: send valid Unicode text."
    depth = json_depth(value)
    if depth > MAX_JSON_DEPTH:
        where = ""
        if isinstance(value, dict) and value:
            deepest = max(value, key=lambda key: json_depth(value[key]))
            where = f" (in '{plain_text(str(deepest))[:40]}')"
        return 422, (
            f"The body is nested {depth} levels deep{where}; JSON is taken nested at most {MAX_JSON_DEPTH} levels."
        )
    return None


def error_response(status: int, message: str, errors: list[dict[str, Any]] | None = None) -> JSONResponse:
    """The one error body: `message` readable; `detail` the message, or on a 422 the `{loc, msg, type}` list."""
    detail: Any = message
    if status == 422:
        detail = errors or [{"loc": ["body"], "msg": message, "type": "value_error"}]
    return JSONResponse({"detail": detail, "message": message}, status_code=status)


def _field_message(errors: list[dict[str, Any]]) -> str:
    parts = []
    for error in errors[:5]:
        location = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        if error.get("type") == "extra_forbidden":
            message = "not a field of this request (check its spelling against /docs)"
        parts.append(f"{location}: {message}")
    return redact_text("; ".join(parts))


def _error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": list(e.get("loc", ())), "msg": shown(e.get("msg", "")), "type": e.get("type")} for e in exc.errors()
        ]
        return error_response(422, _field_message(errors), errors)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = error_response(exc.status_code, str(exc.detail))
        for name, value in (exc.headers or {}).items():
            response.headers[name] = value
        return response

    async def expected(request: Request, exc: Exception) -> JSONResponse:
        return error_response(error_status(exc), error_message(exc, remote=True))

    # One handler per class of the error table: a handler for Exception itself would run in Starlette's outermost
    # middleware, which re-raises after answering.
    for kind in EXPECTED_ERRORS:
        app.add_exception_handler(kind, expected)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error in %s %s", request.method, request.url.path)
        return error_response(error_status(exc), error_message(exc, remote=True))
