"""The workbench as a reranker service: `POST /rerank` in the Cohere shape (what Infinity, vLLM and Jina-compatible
servers speak, so any of their clients, and another workbench, can use it) and `GET /models`. Pairs go through the
engine's reranker: its score cache, and micro-batching with concurrent searches and rerank requests."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, field_validator

from workbench.api.dependencies import Authorised, State, deadline, run_bounded
from workbench.engine import Engine
from workbench.errors import InputError, ModelError
from workbench.inputs import validate_query
from workbench.models import short_model_name
from workbench.rerankers import Reranker, to_probability

router = APIRouter(tags=["rerank"], dependencies=Authorised)
MAX_RERANK_DOCUMENTS = 1000
MAX_DOCUMENT_CHARS = 100_000


class RerankDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str


class RerankRequest(BaseModel):
    """Cohere's request: documents as strings or `{text}` objects; `top_n` keeps the best n (default all)."""

    model_config = ConfigDict(extra="forbid")

    query: str
    documents: list[str | RerankDocument] = Field(..., min_length=1, max_length=MAX_RERANK_DOCUMENTS)
    model: str | None = Field(None, description="the served model (GET /models); default: it")
    top_n: int | None = Field(None, ge=1)
    return_documents: bool = False

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        return validate_query(value)

    def texts(self) -> list[str]:
        texts = [d.text if isinstance(d, RerankDocument) else d for d in self.documents]
        long = next((i for i, t in enumerate(texts) if len(t) > MAX_DOCUMENT_CHARS), None)
        if long is not None:
            raise InputError(f"documents[{long}] is longer than {MAX_DOCUMENT_CHARS} characters.")
        return texts


def _served(engine: Engine) -> Reranker:
    reranker = engine.reranker()
    if reranker is None:
        raise ModelError("This workbench reranks with no model (RERANKER_MODEL=none): it cannot serve /rerank.")
    return reranker


def _model_entry(reranker: Reranker) -> dict[str, Any]:
    return {
        "id": reranker.model_id,
        "object": "model",
        "owned_by": "rerank-workbench",
        "capabilities": ["rerank"],
        "backend": reranker.backend,
    }


@router.get("/models")
async def models(state: State) -> dict[str, Any]:
    """The model this workbench reranks with, in the OpenAI list shape rerank clients read."""
    reranker = await run_bounded(state, lambda: _served(state.engine))
    return {"object": "list", "data": [_model_entry(reranker)]}


@router.post("/rerank")
async def rerank(body: RerankRequest, state: State) -> dict[str, Any]:
    """Scores on the 0-1 scale (a cross-encoder's logit through the sigmoid), best first, `top_n` of them."""
    texts = body.texts()
    until = deadline(state)

    def work() -> dict[str, Any]:
        reranker = _served(state.engine)
        names = {reranker.model_id, short_model_name(reranker.model_id)}
        if body.model and body.model not in names:
            raise InputError(f"model '{body.model}' is not served here: this workbench serves {reranker.model_id}.")
        scores, _ = reranker.score(body.query, texts, deadline=until)
        order = sorted(range(len(texts)), key=lambda i: (-scores[i], i))[: body.top_n or len(texts)]
        results = [
            {
                "index": i,
                "relevance_score": to_probability(scores[i], reranker.score_scale),
                **({"document": {"text": texts[i]}} if body.return_documents else {}),
            }
            for i in order
        ]
        return {
            "id": f"rerank-{uuid.uuid4().hex[:16]}",
            "model": reranker.model_id,
            "results": results,
        }

    return await run_bounded(state, work)
