"""The FastAPI application: lifespan (engine, model warm-up, event sink, session store), auth, body limits,
error mapping, and the routes (search, retrieve, collections, health; sessions in `sessions.py`)."""

from __future__ import annotations

import hmac
import logging
import re
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field, field_validator

from workbench.api.common import run_bounded, state_of
from workbench.compat import SearchResponse, retrieve_text, search_documents
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import (
    CollectionNotFoundError,
    ConfigError,
    InputError,
    ModelError,
    QueryTimeoutError,
    StoreError,
    WorkbenchError,
)
from workbench.events import open_sink
from workbench.inputs import parse_filters, validate_query
from workbench.redact import redact_text
from workbench.sessions import open_session_store
from workbench.types import CollectionInfo
from workbench.vocab import DEFAULT_TOP_K, MAX_K, MAX_TOP_K

log = logging.getLogger("workbench.api")
_TRACE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class SearchRequest(BaseModel):
    """Seed 002's request, with the workbench's options."""

    query: str = Field(..., description="1-512 characters after trimming")
    top_k: int = Field(DEFAULT_TOP_K, ge=1, le=MAX_TOP_K, description="results returned (1-20)")
    collection: str | None = Field(None, description="default: WORKBENCH_COLLECTION")
    filters: dict[str, Any] | None = Field(None, description="metadata equalities, e.g. {'page': 2}")
    k: int | None = Field(None, ge=1, le=MAX_K, description="candidates reranked (default max(top_k, 50))")
    rerank: bool = True
    retrieval: str | None = Field(None, description="dense, bm25 or hybrid")

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        return validate_query(value)

    @field_validator("filters")
    @classmethod
    def _filters(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        return parse_filters(value) if value is not None else None


class RetrieveRequest(BaseModel):
    """Seed 000's arguments (the store and embeddings are the service's own)."""

    collection_name: str
    query: str
    k: int = 10
    top_n: int = 3


class Health(BaseModel):
    status: str
    models: dict[str, str] = Field(default_factory=dict)
    events: dict[str, Any] = Field(default_factory=dict)


class _State:
    def __init__(self, settings: Settings, engine: Engine | None) -> None:
        self.settings = settings
        self.engine = engine or Engine(settings)
        self.ready = threading.Event()
        self.models: dict[str, str] = {}
        self.warm_error: str | None = None
        self.events = open_sink(settings)
        self.sessions = open_session_store(settings)


def _warm(state: _State) -> None:
    """Load the models before saying ready: the first request must not pay for them."""
    try:
        state.models["embedder"] = state.engine.embedder().model_id
        reranker = state.engine.reranker()
        if reranker is not None:
            state.models["reranker"] = f"{reranker.model_id} ({reranker.backend})"
    except WorkbenchError as exc:
        state.warm_error = redact_text(str(exc))
        log.error("models could not be loaded: %s", state.warm_error)
    finally:
        state.ready.set()


def create_app(settings: Settings | None = None, *, engine: Engine | None = None, warm: bool = True) -> FastAPI:
    """The API over one engine. `warm=False` skips loading the models at start-up (tests of the plumbing)."""
    settings = settings or (engine.settings if engine else Settings())

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state = _State(settings, engine)
        app.state.wb = state
        if warm:
            threading.Thread(target=_warm, args=(state,), name="workbench-warm-up", daemon=True).start()
        else:
            state.ready.set()
        yield
        state.events.close()

    app = FastAPI(
        title="Rerank Workbench API",
        version="1.0",
        description=__doc__,
        lifespan=lifespan,
    )
    app.middleware("http")(_limit_body)
    app.middleware("http")(_authorised)  # added last, so it runs first: even /docs needs the token
    _error_handlers(app)
    _routes(app)
    from workbench.api.sessions import router as sessions_router

    app.include_router(sessions_router)
    return app


async def _authorised(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Bearer-token check (constant time) when WORKBENCH_API_TOKEN is set; only /health is open."""
    token = state_of(request).settings.api_token
    if token is not None and request.url.path != "/health":
        header = request.headers.get("authorization", "")
        scheme, _, given = header.partition(" ")
        expected = token.get_secret_value().encode("utf-8")
        if scheme.lower() != "bearer" or not hmac.compare_digest(given.strip().encode("utf-8"), expected):
            return JSONResponse(
                {"detail": "Missing or wrong token: send 'Authorization: Bearer <WORKBENCH_API_TOKEN>'."},
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
    return await call_next(request)


async def _limit_body(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    """Refuse bodies over the limit, whether the client declares the length or streams it."""
    limit = request.app.state.wb.settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and (not declared.isdigit() or int(declared) > limit):
        return JSONResponse({"detail": f"The request body is larger than {limit} bytes."}, status_code=413)
    if request.method in {"POST", "PUT", "PATCH"} and declared is None:
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > limit:
                return JSONResponse({"detail": f"The request body is larger than {limit} bytes."}, status_code=413)

        async def replay() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        request = Request(request.scope, replay)
    return await call_next(request)


def _field_message(errors: list[dict[str, Any]]) -> str:
    parts = []
    for error in errors[:5]:
        location = ".".join(str(p) for p in error.get("loc", ()) if p != "body") or "body"
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        parts.append(f"{location}: {message}")
    return redact_text("; ".join(parts))


def _error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [{k: v for k, v in e.items() if k in {"loc", "msg", "type"}} for e in exc.errors()]
        return JSONResponse({"detail": _field_message(errors), "errors": errors}, status_code=422)

    @app.exception_handler(WorkbenchError)
    async def workbench_error(request: Request, exc: WorkbenchError) -> JSONResponse:
        status = 500
        if isinstance(exc, InputError):
            status = 422
        elif isinstance(exc, CollectionNotFoundError):
            status = 404
        elif isinstance(exc, ModelError | StoreError | ConfigError):
            status = 503
        elif isinstance(exc, QueryTimeoutError):
            status = 504
        return JSONResponse({"detail": redact_text(str(exc))}, status_code=status)

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unexpected error in %s %s", request.method, request.url.path)
        return JSONResponse(
            {"detail": f"Unexpected error ({type(exc).__name__}); see the server log."}, status_code=500
        )


def _routes(app: FastAPI) -> None:
    @app.get("/health", response_model=Health)
    async def health(request: Request) -> Health:
        state = state_of(request)
        if not state.ready.is_set():
            return Health(status="starting")
        if state.warm_error:
            return JSONResponse(  # type: ignore[return-value]
                Health(status="degraded", models={"error": state.warm_error}).model_dump(), status_code=503
            )
        return Health(status="ready", models=state.models, events=state.events.stats())

    @app.post("/search", response_model=SearchResponse)
    async def search(body: SearchRequest, request: Request) -> SearchResponse:
        state = state_of(request)
        given = request.headers.get("x-trace-id", "")
        trace = given if _TRACE.match(given) else None
        return await run_bounded(
            request,
            lambda: search_documents(
                state.engine,
                body.query,
                body.top_k,
                collection=body.collection,
                filters=body.filters,
                k=body.k,
                rerank=body.rerank,
                retrieval=body.retrieval,
                trace_id=trace,
                events=state.events,
            ),
        )

    @app.post("/retrieve")
    async def retrieve(body: RetrieveRequest, request: Request) -> dict[str, str]:
        state = state_of(request)
        text = await run_bounded(
            request, lambda: retrieve_text(state.engine, body.collection_name, body.query, body.k, body.top_n)
        )
        return {"result": text}

    @app.get("/collections", response_model=list[CollectionInfo])
    async def collections(request: Request) -> list[CollectionInfo]:
        return await run_bounded(request, state_of(request).engine.collections)

    @app.get("/collections/{name}", response_model=CollectionInfo)
    async def collection(name: str, request: Request) -> CollectionInfo:
        return await run_bounded(request, lambda: state_of(request).engine.collection_info(name))
