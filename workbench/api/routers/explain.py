"""POST /explain: why the reranker scored a passage as it did (each sentence's and query term's effect)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from workbench.api.dependencies import Authorised, State, run_bounded
from workbench.errors import InputError
from workbench.inputs import validate_query
from workbench.redact import public_name
from workbench.services.explain import Explanation, explain_document, explain_pair
from workbench.vocab import MAX_K

router = APIRouter(tags=["explain"], dependencies=Authorised)
MAX_EXPLAIN_CHARS = 20_000


class ExplainRequest(BaseModel):
    """A query and either a document the search finds (`document_id`, a chunk id or a document id) or a passage's
    `text` to explain as it is."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(..., description="1-512 characters after trimming")
    document_id: str | None = Field(None, max_length=512)
    text: str | None = Field(None, max_length=MAX_EXPLAIN_CHARS)
    collection: str | None = Field(None, description="default: WORKBENCH_COLLECTION")
    k: int | None = Field(None, ge=1, le=MAX_K, description="candidates searched for the document (default 50)")
    retrieval: str | None = Field(None, description="dense, bm25 or hybrid")
    fusion: str | None = Field(None, max_length=80, description="hybrid's fusion ('rrf k=60', 'minmax 0.7', ...)")

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        return validate_query(value)

    @model_validator(mode="after")
    def _one_target(self) -> ExplainRequest:
        if (self.document_id is None) == (self.text is None):
            raise ValueError("give either document_id (a document the search finds) or text (a passage), not both")
        return self


@router.post("/explain", response_model=Explanation)
async def explain(body: ExplainRequest, state: State) -> Explanation:
    def work() -> Explanation:
        found = explained()
        return found.model_copy(update={"reranker_model": public_name(found.reranker_model)})

    def explained() -> Explanation:
        if body.document_id is not None:
            plan = state.engine.plan(collection=body.collection, k=body.k, retrieval=body.retrieval, fusion=body.fusion)
            return explain_document(state.engine, body.query, body.document_id, plan)
        reranker = state.engine.reranker()
        if reranker is None:
            raise InputError("An explanation needs a reranker, and this workbench has none (RERANKER_MODEL=none).")
        return explain_pair(reranker, body.query, body.text or "")

    return await run_bounded(state, work)
