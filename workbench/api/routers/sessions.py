"""Session memory (seed 004): turns and a summary per session, over the workbench's session store."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field

from workbench.api.dependencies import Authorised, Sessions, State, run_bounded
from workbench.services.sessions import SessionView

router = APIRouter(prefix="/session", tags=["session memory"], dependencies=Authorised)


class TurnRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_id: str
    role: str
    text: str
    meta: dict[str, Any] | None = None
    return_limit: int | None = Field(None, description="recent turns returned (default SESSION_RECENT_LIMIT)")
    turn_id: str | None = Field(None, description="idempotency key: a turn sent again with it is stored once")


class SummaryRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_id: str
    summary: str


@router.post("/turn", response_model=SessionView)
async def add_turn(body: TurnRequest, state: State, store: Sessions) -> SessionView:
    """Append a turn; returns the recent turns (oldest first) and the summary."""
    return await run_bounded(
        state,
        lambda: store.add_turn(body.session_id, body.role, body.text, body.meta, body.return_limit, body.turn_id),
    )


@router.get("/{session_id}", response_model=SessionView)
async def get_session(session_id: str, state: State, store: Sessions, limit: int | None = None) -> SessionView:
    return await run_bounded(state, lambda: store.get(session_id, limit))


@router.post("/summary", response_model=SessionView)
async def set_summary(body: SummaryRequest, state: State, store: Sessions) -> SessionView:
    return await run_bounded(state, lambda: store.set_summary(body.session_id, body.summary))


@router.delete("/{session_id}")
async def delete_session(session_id: str, state: State, store: Sessions) -> dict[str, Any]:
    removed = await run_bounded(state, lambda: store.delete(session_id))
    return {"session_id": session_id, "deleted_turns": removed}
