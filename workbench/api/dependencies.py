"""What the routes depend on, as typed dependencies: the service's state (engine, settings, event sink, session
store), the bearer-token check, and engine work run in a thread under the query timeout."""

from __future__ import annotations

import asyncio
import hmac
import threading
import time
from collections.abc import Callable
from typing import Annotated, Any

import anyio
from fastapi import Depends, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BeforeValidator

from workbench.clicks.online import InterleavingLog
from workbench.clicks.queue import open_click_consumer
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import QueryTimeoutError
from workbench.inputs import validate_rerank_budget_ms
from workbench.services.events import EventSink, open_sink
from workbench.services.jobs import JobBoard
from workbench.services.sessions import SessionStore, open_session_store


class ServiceState:
    """One per running API: the engine every request shares, its settings, the event sink, the session store,
    the interleaving log, the jobs, and whether the models are loaded (`ready`, `models`, `warm_error`)."""

    def __init__(self, settings: Settings, engine: Engine | None) -> None:
        self.settings = settings
        self.engine = engine or Engine(settings)
        self.ready = threading.Event()
        self.models: dict[str, str] = {}
        self.warm_error: str | None = None
        self.events: EventSink = open_sink(settings)
        self.sessions: SessionStore = open_session_store(settings)
        self.interleaving = InterleavingLog(settings)
        self.clicks = open_click_consumer(settings, self.interleaving)  # clicks from the events queue, with AMQP
        self.jobs = JobBoard()  # evaluations and gates run as jobs (POST /jobs/...)


def service_state(request: Request) -> ServiceState:
    return request.app.state.wb


State = Annotated[ServiceState, Depends(service_state)]


def engine(state: State) -> Engine:
    return state.engine


def session_store(state: State) -> SessionStore:
    return state.sessions


EngineDep = Annotated[Engine, Depends(engine)]
Sessions = Annotated[SessionStore, Depends(session_store)]
_bearer = HTTPBearer(auto_error=False, description="WORKBENCH_API_TOKEN, when it is set")


def require_token(state: State, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]) -> None:
    """When WORKBENCH_API_TOKEN is set, the request must carry `Authorization: Bearer <token>` (compared in
    constant time); 401 otherwise."""
    token = state.settings.api_token
    if token is None:
        return
    given = credentials.credentials.strip().encode("utf-8") if credentials else b""
    if not hmac.compare_digest(given, token.get_secret_value().encode("utf-8")):
        raise HTTPException(
            status_code=401,
            detail="Missing or wrong token: send 'Authorization: Bearer <WORKBENCH_API_TOKEN>'.",
            headers={"WWW-Authenticate": "Bearer"},
        )


Authorised = [Depends(require_token)]


# A request's rerank budget (a body's `rerank_budget_ms`), checked where the limits live (one line naming the problem)
RerankBudget = Annotated[
    float | None, BeforeValidator(lambda value: validate_rerank_budget_ms(value) if value is not None else None)
]


def header_budget(header: str) -> float | None:
    """The X-Rerank-Budget-Ms header's budget (None when absent); a bad one is refused in one line (422)."""
    return validate_rerank_budget_ms(header.strip()[:40]) if header.strip() else None


def deadline(state: ServiceState) -> float:
    """When a request's engine work must stop (time.monotonic()): WORKBENCH_QUERY_TIMEOUT from now. Passed into
    the engine, so that a search answered with 504 also stops using the model."""
    return time.monotonic() + state.settings.query_timeout


async def run_bounded(
    state: ServiceState,
    function: Callable[[], Any],
    *,
    evaluation: bool = False,
    smaller: str = "try a smaller k",
) -> Any:
    """Run engine work in a worker thread, at most WORKBENCH_QUERY_TIMEOUT seconds (504 after that); an
    `evaluation` (a whole judged query set) at most WORKBENCH_EVALUATION_TIMEOUT. `smaller` says what the caller
    can send less of (a search's k, a rerank's documents)."""
    timeout = state.settings.evaluation_timeout if evaluation else state.settings.query_timeout
    try:
        return await asyncio.wait_for(anyio.to_thread.run_sync(function, abandon_on_cancel=True), timeout)
    except TimeoutError as exc:
        if evaluation:
            raise QueryTimeoutError(
                f"The evaluation took longer than {timeout:g} s (WORKBENCH_EVALUATION_TIMEOUT); try max_queries or "
                "raise the limit."
            ) from exc
        raise QueryTimeoutError(
            f"The request took longer than {timeout:g} s (WORKBENCH_QUERY_TIMEOUT); {smaller} or raise the limit."
        ) from exc
