"""GET /health: open without a token; `ready` once the models are loaded, `degraded` (503) with the reason."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from workbench.api.dependencies import State
from workbench.redact import public_name

router = APIRouter(tags=["health"])


class Health(BaseModel):
    status: str
    models: dict[str, str] = Field(default_factory=dict)
    events: dict[str, Any] = Field(default_factory=dict)
    reranker: dict[str, Any] = Field(default_factory=dict, description="what the reranker has done since start")


@router.get("/health", response_model=Health)
async def health(state: State) -> Health | JSONResponse:
    if not state.ready.is_set():
        return Health(status="starting")
    if state.warm_error:
        degraded = Health(status="degraded", models={"error": state.warm_error})
        return JSONResponse(degraded.model_dump(), status_code=503)
    reranker = state.engine.reranker() if "reranker" in state.models else None
    usage = reranker.usage.model_dump() if reranker is not None else {}
    models = dict(state.models)
    if reranker is not None:  # the backend now: torch until a background measurement swaps the chosen one in
        measuring = ", its backends being measured in the background" if getattr(reranker, "measuring", False) else ""
        models["reranker"] = f"{public_name(reranker.model_id)} ({reranker.backend}{measuring})"
    return Health(status="ready", models=models, events=state.events.stats(), reranker=usage)
