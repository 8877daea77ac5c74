"""Blind preference sessions over HTTP: POST /preferences (start one from two plans and a query source), GET
/preferences/{id}/next (the next query's two lists, blind), POST /preferences/{id}/choices and /undo, GET
/preferences/{id}/verdict. The same service as the Prefer page and `workbench preferences`."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Header
from pydantic import BaseModel, ConfigDict, Field

from workbench.api.bodies import PlanRequest
from workbench.api.dependencies import Authorised, State, run_bounded
from workbench.preferences import PreferenceSession, PreferenceVerdict
from workbench.services import preferences as blind
from workbench.vocab import DEFAULT_RATER, MAX_NAME_CHARS, MAX_QUERY_CHARS, MAX_RATER_CHARS

router = APIRouter(tags=["preferences"], dependencies=Authorised)


class StartRequest(BaseModel):
    """Two configurations (A and B: a plan's fields each) and one source of queries."""

    model_config = ConfigDict(extra="forbid")

    a: PlanRequest = Field(default_factory=PlanRequest)
    b: PlanRequest = Field(default_factory=PlanRequest)
    query_set: str | None = Field(None, max_length=MAX_NAME_CHARS, description="a kept query set's name")
    judged_of: str | None = Field(None, max_length=512, description="a collection whose judged queries to use")
    queries: list[Annotated[str, Field(max_length=MAX_QUERY_CHARS)]] = Field(default_factory=list, max_length=1000)
    name: str = Field("", max_length=MAX_NAME_CHARS)
    seed: int | None = Field(None, ge=0, le=2**31 - 1)


class ChoiceRequest(BaseModel):
    """A choice between the sides as shown for a query."""

    model_config = ConfigDict(extra="forbid")

    query_id: str = Field(..., max_length=512)
    choice: Literal["left", "same", "right", "skip"]
    rater: str = Field(DEFAULT_RATER, max_length=MAX_RATER_CHARS)


class UndoRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    rater: str = Field(DEFAULT_RATER, max_length=MAX_RATER_CHARS)


class Recorded(BaseModel):
    """Whether the request added a row (False: a retry of an idempotency key already recorded)."""

    recorded: bool


class VerdictView(BaseModel):
    """The verdict, its outcome as the gate reads it (ship, no-ship, inconclusive) and its words."""

    verdict: PreferenceVerdict
    outcome: str
    words: list[str]


@router.post("/preferences", response_model=PreferenceSession)
async def start(body: StartRequest, state: State) -> Any:
    def work() -> PreferenceSession:
        engine = state.engine
        request = blind.PreferenceRequest(
            first=body.a.plan(engine), second=body.b.plan(engine), query_set=body.query_set,
            judged_of=body.judged_of, typed=tuple(body.queries), name=body.name, seed=body.seed,
        )  # fmt: skip
        return blind.start_preferences(engine, request).shared()

    return await run_bounded(state, work)


@router.get("/preferences/{session_id}/next", response_model=blind.BlindPair | None)
async def next_query(session_id: str, state: State, rater: str = DEFAULT_RATER) -> Any:
    return await run_bounded(state, lambda: blind.next_pair(state.engine, session_id, rater))


@router.post("/preferences/{session_id}/choices", response_model=Recorded)
async def add_choice(
    session_id: str, body: ChoiceRequest, state: State,
    idempotency_key: Annotated[str | None, Header(max_length=128)] = None,
) -> Any:  # fmt: skip
    def work() -> Recorded:
        added = blind.choose(state.engine, session_id, body.query_id, body.choice, body.rater, idempotency_key)
        return Recorded(recorded=added)

    return await run_bounded(state, work)


@router.post("/preferences/{session_id}/undo", response_model=Recorded)
async def take_back(
    session_id: str, body: UndoRequest, state: State,
    idempotency_key: Annotated[str | None, Header(max_length=128)] = None,
) -> Any:  # fmt: skip
    def work() -> Recorded:
        return Recorded(recorded=blind.undo(state.engine, session_id, body.rater, idempotency_key))

    return await run_bounded(state, work)


class KeepRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field("", max_length=MAX_NAME_CHARS)
    tags: list[Annotated[str, Field(max_length=MAX_NAME_CHARS)]] = Field(default_factory=list, max_length=20)


class KeptAs(BaseModel):
    """The experiment the session was kept as (GET /experiments/{id} opens it)."""

    experiment_id: str


@router.post("/preferences/{session_id}/keep", response_model=KeptAs)
async def keep(session_id: str, body: KeepRequest, state: State) -> Any:
    def work() -> KeptAs:
        kept = blind.keep_preferences(state.engine, session_id, name=body.name, tags=tuple(body.tags))
        return KeptAs(experiment_id=kept.id)

    return await run_bounded(state, work)


@router.get("/preferences/{session_id}/verdict", response_model=VerdictView)
async def verdict(session_id: str, state: State) -> Any:
    def work() -> VerdictView:
        found = blind.verdict_of(state.engine, session_id)[1]
        return VerdictView(verdict=found, outcome=found.outcome, words=found.lines())

    return await run_bounded(state, work)
