"""POST /search (seed 002's search, with scores, rank before, timings, trace id; interleaved on request), POST
/clicks (a click on an interleaved result) and POST /retrieve (seed 000's retrieve_top_docs as {"result": str})."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Header
from pydantic import BaseModel, ConfigDict, Field, field_validator

from workbench.api.bodies import PlanRequest
from workbench.api.dependencies import (
    Authorised,
    RerankBudget,
    ServiceState,
    State,
    deadline,
    header_budget,
    run_bounded,
)
from workbench.clicks.online import ClickReceipt
from workbench.inputs import parse_filters, validate_query
from workbench.services.search import SearchResponse, retrieve_text, search_documents, seed_plan
from workbench.vocab import DEFAULT_TOP_K, MAX_DOC_ID_CHARS, MAX_K, MAX_TOP_K

router = APIRouter(tags=["search"], dependencies=Authorised)
_TRACE = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")


class SearchRequest(BaseModel):
    """Seed 002's request, with the workbench's options."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(..., description="1-512 characters after trimming")
    top_k: int = Field(DEFAULT_TOP_K, ge=1, le=MAX_TOP_K, description="results returned (1-20)")
    collection: str | None = Field(None, description="default: WORKBENCH_COLLECTION")
    filters: dict[str, Any] | None = Field(None, description="metadata equalities, e.g. {'page': 2}")
    k: int | None = Field(None, ge=1, le=MAX_K, description="candidates reranked (default max(top_k, 50))")
    rerank: bool = True
    retrieval: str | None = Field(None, description="dense, bm25 or hybrid")
    fusion: str | None = Field(
        None,
        max_length=80,
        description="hybrid's fusion: 'rrf k=60', or 'minmax', 'zscore' or 'l2' and the dense "
        "weight ('minmax 0.7'); given alone, it makes the first stage hybrid",
    )
    min_score: float | None = Field(
        None, allow_inf_nan=False, description="drop results scoring below this (the reranker's score when reranking)"
    )
    skip_gap: float | None = Field(
        None, ge=0, allow_inf_nan=False,
        description="a skip policy: rerank only when the first stage's top two scores differ by less than this",
    )  # fmt: skip
    interleave: bool = Field(
        False,
        description="an online test: the top_k are a team-draft interleaving of the first stage's order (team A) and "
        "the reranked order (team B), each result with its team and id; send clicks to POST /clicks with the "
        "response's impression_id",
    )
    rerank_budget_ms: RerankBudget = Field(
        None,
        description="milliseconds the reranker may take (1-600000); past it, or when the reranker fails, the first "
        "stage's order is served with reranked false and rerank_fallback saying why, never an error (default: the "
        "X-Rerank-Budget-Ms header, else WORKBENCH_RERANK_BUDGET_MS, else none)",
    )
    against: PlanRequest | None = Field(
        None,
        description="with interleave: another plan (its reranker, first stage, fusion or k; the rest as this "
        "request's) whose results are team B against this request's as team A",
    )

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

    model_config = ConfigDict(extra="forbid")

    collection_name: str
    query: str
    k: int = 10
    top_n: int = 3
    rerank_budget_ms: RerankBudget = Field(
        None, description="as /search's: past it, or when the reranker fails, the vector order is served"
    )


def _search(
    state: ServiceState, body: SearchRequest, trace: str | None, until: float | None, budget: float | None
) -> SearchResponse:
    """The request's plan, and `against`'s over it (the same adapter as every plan a request sends), searched."""
    plan = seed_plan(
        state.engine, body.top_k, k=body.k, rerank=body.rerank, collection=body.collection, retrieval=body.retrieval,
        filters=body.filters, min_score=body.min_score, fusion=body.fusion, skip_gap=body.skip_gap,
    )  # fmt: skip
    against = body.against.plan(state.engine, over=plan) if body.against is not None else None
    return search_documents(
        state.engine, body.query, plan, trace_id=trace, events=state.events, deadline=until,
        interleave=body.interleave, interleaving=state.interleaving, against=against, rerank_budget_ms=budget,
    )  # fmt: skip


@router.post("/search", response_model=SearchResponse)
async def search(
    body: SearchRequest,
    state: State,
    x_trace_id: Annotated[str, Header()] = "",
    x_rerank_budget_ms: Annotated[str, Header()] = "",
) -> SearchResponse:
    trace = x_trace_id if _TRACE.match(x_trace_id) else None
    until = deadline(state)
    budget = body.rerank_budget_ms if body.rerank_budget_ms is not None else header_budget(x_rerank_budget_ms)
    return await run_bounded(state, lambda: _search(state, body, trace, until, budget))


class ClickRequest(BaseModel):
    """A click on a result of an interleaved /search answer."""

    model_config = ConfigDict(extra="forbid")

    impression_id: str = Field(..., max_length=64, description="the impression_id /search answered")
    id: str = Field(..., max_length=MAX_DOC_ID_CHARS, description="the clicked result's id, as /search gave it")


@router.post("/clicks", response_model=ClickReceipt)
async def clicks(body: ClickRequest, state: State) -> ClickReceipt:
    """Log a click on an interleaved result, credited to its team (`workbench interleaving analyse` reads the log)."""
    return await run_bounded(state, lambda: state.interleaving.click(body.impression_id, body.id))


@router.post("/retrieve")
async def retrieve(
    body: RetrieveRequest, state: State, x_rerank_budget_ms: Annotated[str, Header()] = ""
) -> dict[str, str]:
    until = deadline(state)
    budget = body.rerank_budget_ms if body.rerank_budget_ms is not None else header_budget(x_rerank_budget_ms)
    text = await run_bounded(
        state,
        lambda: retrieve_text(
            state.engine, body.collection_name, body.query, body.k, body.top_n, remote=True, deadline=until,
            rerank_budget_ms=budget,
        ),
    )  # fmt: skip
    return {"result": text}
