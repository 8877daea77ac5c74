"""Session memory routes (seed 004): turns and a summary per session, over the workbench's session store."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from workbench.api.common import run_bounded, state_of
from workbench.sessions import SessionView

router = APIRouter(prefix="/session", tags=["session memory"])


class TurnRequest(BaseModel):
    session_id: str
    role: str
    text: str
    meta: dict[str, Any] | None = None
    return_limit: int | None = Field(None, description="recent turns returned (default SESSION_RECENT_LIMIT)")


class SummaryRequest(BaseModel):
    session_id: str
    summary: str


def _store(request: Request) -> Any:
    return state_of(request).sessions


@router.post("/turn", response_model=SessionView)
async def add_turn(body: TurnRequest, request: Request) -> SessionView:
    """Append a turn; returns the recent turns (oldest first) and the summary."""
    store = _store(request)
    return await run_bounded(
        request, lambda: store.add_turn(body.session_id, body.role, body.text, body.meta, body.return_limit)
    )


@router.get("/{session_id}", response_model=SessionView)
async def get_session(session_id: str, request: Request, limit: int | None = None) -> SessionView:
    store = _store(request)
    return await run_bounded(request, lambda: store.get(session_id, limit))


@router.post("/summary", response_model=SessionView)
async def set_summary(body: SummaryRequest, request: Request) -> SessionView:
    store = _store(request)
    return await run_bounded(request, lambda: store.set_summary(body.session_id, body.summary))


@router.delete("/{session_id}")
async def delete_session(session_id: str, request: Request) -> dict[str, Any]:
    store = _store(request)
    removed = await run_bounded(request, lambda: store.delete(session_id))
    return {"session_id": session_id, "deleted_turns": removed}
