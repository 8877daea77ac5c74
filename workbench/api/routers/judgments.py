"""POST /judgments (grade a document for a query, as a named rater) and GET /judgments/{collection} (the current
grades, the judged queries, and how far the raters agree)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header
from pydantic import BaseModel, ConfigDict, Field, StrictInt, model_validator

from workbench.api.dependencies import Authorised, State, run_bounded
from workbench.errors import InputError
from workbench.judgments import Agreement, Rating, judge, judgment_rows, load_judgments, rater_agreement
from workbench.vocab import DEFAULT_RATER, MAX_DOC_ID_CHARS, MAX_QUERY_CHARS, MAX_RATER_CHARS

router = APIRouter(tags=["judgments"], dependencies=Authorised)


class JudgmentRequest(BaseModel):
    """One grade: the query by its text or the id of a judged query, the document, the grade, the rater."""

    model_config = ConfigDict(extra="forbid")

    collection: str = Field(..., max_length=512)
    document_id: str = Field(..., max_length=MAX_DOC_ID_CHARS)
    grade: StrictInt = Field(..., description="0 not relevant, 1 partly relevant, 2 relevant, 3 perfectly relevant")
    query: str | None = Field(None, max_length=MAX_QUERY_CHARS)
    query_id: str | None = Field(None, max_length=512)
    rater: str = Field(DEFAULT_RATER, max_length=MAX_RATER_CHARS)
    idempotency_key: str | None = Field(
        None,
        max_length=128,
        description="a key of your own (a UUID): a retry with the same key stores nothing new and answers "
        "`replayed: true` (the Idempotency-Key header does the same)",
    )

    @model_validator(mode="after")
    def _one_query(self) -> JudgmentRequest:
        if (self.query is None) == (self.query_id is None):
            raise ValueError("give either query (its text) or query_id (a judged query's id), not both")
        return self


class JudgmentsView(BaseModel):
    """A collection's current grades (query id -> document id -> grade) under the policy, its judged queries,
    how many grades were ever given, and the raters' agreement."""

    collection: str
    policy: str
    queries: dict[str, str]
    qrels: dict[str, dict[str, int]]
    given: int
    raters: list[str]
    agreement: Agreement


@router.post("/judgments", response_model=Rating)
async def add_judgment(
    body: JudgmentRequest, state: State, idempotency_key: Annotated[str | None, Header(max_length=256)] = None
) -> Rating:
    """Store one grade. With an idempotency key (the body's field or the Idempotency-Key header), a retried
    request stores nothing new."""
    key = body.idempotency_key if body.idempotency_key is not None else idempotency_key  # "" is refused, not none

    def work() -> Rating:
        return judge(
            state.engine, body.collection, body.document_id, body.grade, query=body.query, query_id=body.query_id,
            rater=body.rater, idempotency_key=key,
        )  # fmt: skip

    return await run_bounded(state, work)


@router.get("/judgments/{collection}", response_model=JudgmentsView)
async def read_judgments(collection: str, state: State, policy: str | None = None) -> Any:
    def work() -> JudgmentsView:
        rows = judgment_rows(state.settings, collection)  # read once: the grades and the agreement both come from it
        judgments = load_judgments(state.settings, collection, policy, rows)
        if judgments is None:
            raise InputError(f"'{collection}' has no judgments yet: POST /judgments or import qrels first.")
        return JudgmentsView(
            collection=judgments.collection, policy=judgments.policy, queries=judgments.queries,
            qrels=judgments.qrels, given=judgments.given, raters=judgments.raters, agreement=rater_agreement(rows),
        )  # fmt: skip

    return await run_bounded(state, work)
