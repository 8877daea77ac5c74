"""The workbench as a reranker service: `POST /rerank`, `/v1/rerank` and `/v2/rerank` in the shape the Cohere
(v1 and v2), Jina and Infinity clients speak, Voyage's (`top_k`, an answer in `data`) and text-embeddings-
inference's (`texts`, a list answered), and `GET /models`. Pairs go through the engine's reranker: its score
cache, and micro-batching with concurrent searches and rerank requests (`workbench.rerankers.serving`)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header, Response
from pydantic import BaseModel, ConfigDict, Field, StrictBool, field_validator, model_validator

from workbench.api.dependencies import Authorised, RerankBudget, State, deadline, header_budget, run_bounded
from workbench.inputs import validate_query
from workbench.redact import public_name
from workbench.rerankers.serving import (
    MAX_RERANK_DOCUMENTS,
    AnswerShape,
    ServedUnder,
    document_texts,
    in_shape,
    model_list,
    ranked_answer,
    rerank_answer,
    served_reranker,
)
from workbench.serving import serving_budget

router = APIRouter(tags=["rerank"], dependencies=Authorised)
HONOURED = (
    "query, documents, model, top_n, return_documents, rank_fields, max_tokens_per_doc, raw_scores; Voyage's top_k "
    "(the answer then also in `data`); Mixedbread's input and return_input (the answer in `data`, with `score`); "
    "text-embeddings-inference's texts and return_text (the answer then a list)"
)
IGNORED = "max_chunks_per_doc (Cohere v1), truncation (Voyage, TEI), priority (Cohere v2) and any other field"


class RerankRequest(BaseModel):
    __doc__ = (
        "A rerank request as Cohere v1/v2, Jina and Infinity clients send it. Honoured: "
        f"{HONOURED}. Accepted and ignored: {IGNORED}."
    )
    model_config = ConfigDict(extra="ignore")

    query: str = Field(..., description="1-512 characters after trimming")
    documents: list[str | dict[str, Any]] | None = Field(
        None,
        min_length=1,
        max_length=MAX_RERANK_DOCUMENTS,
        description="strings, or objects ranked on their `text` (or on `rank_fields`); extra keys are kept aside",
    )
    texts: list[str] | None = Field(
        None, min_length=1, max_length=MAX_RERANK_DOCUMENTS,
        description="text-embeddings-inference's name for the documents: the answer is then TEI's list",
    )  # fmt: skip
    input: list[str | dict[str, Any]] | None = Field(
        None, min_length=1, max_length=MAX_RERANK_DOCUMENTS,
        description="Mixedbread's name for the documents: the answer then in `data` with `score`",
    )  # fmt: skip
    return_input: StrictBool = Field(False, description="Mixedbread's: each result in `data` carries its `input`")
    model: str | None = Field(None, description="a served name (GET /models); default: the served model")
    top_n: int | None = Field(None, ge=1, description="keep the best n (default: all)")
    top_k: int | None = Field(None, ge=1, description="Voyage's name for top_n: the answer then also in `data`")
    truncation: bool | None = Field(None, description="Voyage's; accepted (documents are cut at the model's window)")
    return_text: StrictBool = Field(False, description="text-embeddings-inference's: each result carries its text")
    return_documents: StrictBool = Field(False, description="each result carries its document's text")
    rank_fields: list[str] | None = Field(
        None, max_length=32, description="for object documents: the fields ranked on, in order"
    )
    max_tokens_per_doc: int | None = Field(
        None, ge=1, le=100_000, description="each document cut to its first n tokens before scoring"
    )
    raw_scores: StrictBool = Field(False, description="relevance_score as the model's raw logit, not 0-1")
    rerank_budget_ms: RerankBudget = Field(
        None,
        description="milliseconds the reranker may take (else the X-Rerank-Budget-Ms header, else "
        "WORKBENCH_RERANK_BUDGET_MS); past it, when the reranker fails or a run check says it is not running as "
        "intended, the documents come back in the order sent, reranked false, rerank_fallback saying why",
    )

    @field_validator("query")
    @classmethod
    def _query(cls, value: str) -> str:
        return validate_query(value)

    @model_validator(mode="after")
    def _one_list(self) -> RerankRequest:
        given = [name for name in ("documents", "texts", "input") if getattr(self, name) is not None]
        if len(given) != 1:
            named = "; got none" if not given else f"; got {' and '.join(given)}, send one"
            raise ValueError(
                "send the documents in one list: `documents` (Cohere, Jina, Voyage), `texts` (TEI) or `input` "
                f"(Mixedbread){named}"
            )
        if self.top_n is not None and self.top_k is not None:
            raise ValueError("top_n and top_k are the same limit: send one")
        return self

    @property
    def shape(self) -> AnswerShape:
        """Which client's answer shape the request asks for."""
        if self.texts is not None:
            return "tei"
        if self.input is not None:
            return "mixedbread"
        return "voyage" if self.top_k is not None or self.truncation is not None else "cohere"


class RerankDocumentText(BaseModel):
    """The document as it was sent: its text, and an object document's other fields."""

    model_config = ConfigDict(extra="allow")

    text: str


class RerankResult(BaseModel):
    index: int
    relevance_score: float
    document: RerankDocumentText | None = None


class VoyageResult(BaseModel):
    """One entry of Voyage's `data`: the document, when asked for, as a plain string."""

    index: int
    relevance_score: float
    document: str | None = None
    score: float | None = Field(None, description="Mixedbread's name for relevance_score")
    input: str | None = Field(None, description="Mixedbread's document text, with return_input")


class TeiResult(BaseModel):
    """One entry of text-embeddings-inference's answer."""

    index: int
    score: float
    text: str | None = None


class ApiVersion(BaseModel):
    version: str


class BilledUnits(BaseModel):
    search_units: float


class RerankMeta(BaseModel):
    api_version: ApiVersion
    billed_units: BilledUnits


class RerankUsage(BaseModel):
    prompt_tokens: int
    total_tokens: int


class RerankResponse(BaseModel):
    """Best first. `relevance_score` is 0-1 (a cross-encoder's logit through the sigmoid) unless raw_scores. Served
    fail-open under a rerank budget: `reranked` false, `rerank_fallback` why, the documents in the order sent."""

    id: str
    object: str = "rerank"
    created: int
    model: str
    results: list[RerankResult]
    data: list[VoyageResult] | None = Field(None, description="the results again, as Voyage's clients read them")
    meta: RerankMeta
    usage: RerankUsage
    reranked: bool = Field(True, description="false when served fail-open: the documents in the order sent")
    rerank_fallback: str | None = Field(
        None, description="why it was not reranked: 'budget', 'circuit open', 'error: ...' or 'run check: ...'"
    )


class ModelEntry(BaseModel):
    id: str
    object: str = "model"
    created: int
    backend: str
    capabilities: list[str]
    stats: dict[str, int]


class ModelList(BaseModel):
    object: str = "list"
    data: list[ModelEntry]


@router.get("/models", response_model=ModelList)
async def models(state: State) -> dict[str, Any]:
    """The model this workbench reranks with, in the OpenAI list shape (with Infinity's `stats`)."""
    served = state.settings.served_model_names()
    return await run_bounded(state, lambda: model_list(served_reranker(state.engine.reranker()), served))


async def _rerank(body: RerankRequest, state: State, api_version: str, header: str, response: Response) -> Any:
    until = deadline(state)
    given = body.rerank_budget_ms if body.rerank_budget_ms is not None else header_budget(header)
    budget = serving_budget(given, state.settings.rerank_budget_ms)
    documents = next(given for given in (body.documents, body.texts, body.input) if given is not None)

    def work() -> Any:
        under = None
        if budget is None:
            reranker = served_reranker(state.engine.reranker())
        else:
            made, fallback = state.engine.reranker_to_serve()
            if fallback is not None:  # skipped before it was asked: the order sent, said as such
                return unreranked(fallback)
            reranker = served_reranker(made)
            under = ServedUnder(state.engine.guard, state.engine.circuit_of(), budget)
        answer = rerank_answer(
            reranker,
            body.query,
            documents,
            model=body.model,
            served=state.settings.served_model_names(),
            top_n=body.top_n or body.top_k,
            return_documents=body.return_documents or body.return_text or body.return_input,
            rank_fields=body.rank_fields,
            max_tokens_per_doc=body.max_tokens_per_doc,
            raw_scores=body.raw_scores,
            api_version=api_version,
            deadline=until,
            under=under,
        )
        return in_shape(answer, body.shape), answer.get("rerank_fallback")

    def unreranked(reason: str) -> tuple[Any, str]:
        """The documents in the order sent, when the reranker was skipped (its circuit open, a served copy that
        cannot be reached or a parity audit found unfaithful)."""
        names = [*state.settings.served_model_names(), public_name(state.engine.circuit_of())]
        answer = ranked_answer(
            next(name for name in names if name), documents, document_texts(documents, body.rank_fields), None,
            "", top_n=body.top_n or body.top_k, return_documents=body.return_documents or body.return_text
            or body.return_input, raw_scores=body.raw_scores, api_version=api_version, tokens=0,
        )  # fmt: skip
        return in_shape({**answer, "rerank_fallback": reason}, body.shape), reason

    answer, fallback = await run_bounded(state, work, smaller="send fewer documents (or shorter ones)")
    if fallback is not None:  # a text-embeddings-inference list has no room for it: the header says it
        response.headers["X-Rerank-Fallback"] = fallback.split(":", 1)[0]
    return answer


@router.post("/rerank", response_model=RerankResponse | list[TeiResult], response_model_exclude_none=True)
async def rerank(
    body: RerankRequest, state: State, response: Response, x_rerank_budget_ms: Annotated[str, Header()] = ""
) -> Any:
    """Rerank documents (Infinity, Jina, Cohere-compatible, Voyage and text-embeddings-inference clients)."""
    return await _rerank(body, state, "2", x_rerank_budget_ms, response)


@router.post("/v1/rerank", response_model=RerankResponse, response_model_exclude_none=True)
async def rerank_v1(
    body: RerankRequest, state: State, response: Response, x_rerank_budget_ms: Annotated[str, Header()] = ""
) -> dict[str, Any]:
    """Cohere's v1 route (the `cohere` SDK's `Client.rerank`, langchain-cohere)."""
    return await _rerank(body, state, "1", x_rerank_budget_ms, response)


@router.post("/v2/rerank", response_model=RerankResponse, response_model_exclude_none=True)
async def rerank_v2(
    body: RerankRequest, state: State, response: Response, x_rerank_budget_ms: Annotated[str, Header()] = ""
) -> dict[str, Any]:
    """Cohere's v2 route (the `cohere` SDK's `ClientV2.rerank`, Haystack's CohereRanker)."""
    return await _rerank(body, state, "2", x_rerank_budget_ms, response)
