"""The contracts the engine honours for the code it replaced, kept by name and behaviour (each held by
`tests/test_seed_contracts.py`).

- `retrieve_top_docs` (seed 000): Chroma at a folder, any LangChain embeddings, returns text and never raises;
  `retrieve_text` is its core, also behind HTTP `/retrieve` and the MCP tool `retrieve_from_chroma`.
- `search_documents` (seed 002): the `/search` response, also behind the MCP tool `search`; publishes
  RetrievalCompleted events.
- `retrieve_chunks`: `RetrievedChunk` objects; [] when nothing matches; raises on backend errors (and
  CollectionNotFoundError, a StoreError's sibling, when the collection does not exist).
- `RetrievalService`: any vector store by injection, with a LangChain tool.
"""

from __future__ import annotations

import logging
import threading
import uuid
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench.clicks.impressions import Impression
from workbench.clicks.online import (
    InterleavingLog,
    OnlineTest,
    final_order,
    first_stage_order,
    plan_label,
)
from workbench.config import get_settings
from workbench.embeddings import LangChainEmbedder
from workbench.engine import Engine, get_engine
from workbench.errors import ConfigError, InputError, WorkbenchError, error_message, is_expected
from workbench.inputs import validate_depths, validate_top_k
from workbench.redact import public_name, redact_text, shown
from workbench.services.events import EventSink, RetrievalCompleted
from workbench.serving import serving_budget
from workbench.stores.base import Collection
from workbench.stores.registry import StoreConfig, StoreRegistry
from workbench.types import Candidate, RankedHit, RetrievedChunk, SearchPlan, SearchResult, StageTimings
from workbench.vocab import DEFAULT_RERANKER_CHOICE, DEFAULT_TOP_K, DISPLAY_CHARS, MAX_K, MAX_QUERY_CHARS, MAX_TOP_K

log = logging.getLogger("workbench.search")

NO_DOCUMENTS = "No relevant documents found."
ERROR_PREFIX = "Error retrieving from collection:"

_engines: dict[tuple[str, int], tuple[Any, Engine]] = {}
_engines_lock = threading.Lock()


def _engine_for_chroma_folder(persist_directory: str, embedding_function: Any) -> Engine:
    """One engine per (folder, embeddings object), so models and caches are reused across calls."""
    key = (str(Path(persist_directory).resolve()), id(embedding_function))
    with _engines_lock:
        if key not in _engines:
            settings = get_settings().model_copy(
                update={"store": "chroma", "persist_dir": Path(key[0]), "chroma_url": None}
            )
            embedder = LangChainEmbedder(embedding_function) if embedding_function is not None else None
            if len(_engines) >= 16:
                _engines.pop(next(iter(_engines)))
            # The embeddings object is kept beside the engine so its id cannot be reused while cached.
            _engines[key] = (embedding_function, Engine(settings, embedder=embedder))
        return _engines[key][1]


def retrieve_top_docs(
    collection_name: str,
    embedding_function: Any,
    persist_directory: str,
    query: str,
    k: int = 10,
    top_n: int = 3,
) -> str:
    """Retrieve top-k documents from a Chroma collection, re-rank with a cross-encoder, return top_n.

    Returns the texts of the top_n documents joined by newlines, "No relevant documents found." when nothing
    matches, and a string starting "Error retrieving from collection:" on any failure; it never raises.
    """
    try:
        if not Path(persist_directory).is_dir():
            raise FileNotFoundError(f"no Chroma folder at {persist_directory}")
        engine = _engine_for_chroma_folder(persist_directory, embedding_function)
    except Exception as exc:
        return f"{ERROR_PREFIX} {redact_text(str(exc))}"
    return retrieve_text(engine, collection_name, query, k, top_n)


def retrieve_text(
    engine: Engine,
    collection_name: str,
    query: str,
    k: int = 10,
    top_n: int = 3,
    *,
    remote: bool = False,
    deadline: float | None = None,
    rerank_budget_ms: float | None = None,
) -> str:
    """Seed 000's behaviour over any engine: the reranked top_n texts joined by newlines, NO_DOCUMENTS when
    nothing matches, "Error retrieving from collection: ..." on any failure. Never raises. For a `remote` caller
    (HTTP, MCP) the message hides the server's paths. Under a rerank budget (the one given, else
    WORKBENCH_RERANK_BUDGET_MS) a slow or failing reranker serves the first stage's order instead."""
    try:
        budget = serving_budget(rerank_budget_ms, engine.settings.rerank_budget_ms)
        plan = engine.plan(collection=collection_name, k=k, top_n=top_n)
        result = engine.search(query, plan, deadline=deadline, rerank_budget_ms=budget)
        if not result.candidates:
            return NO_DOCUMENTS
        return "\n".join(hit.text for hit in result.reranked)
    except Exception as exc:
        words = error_message(exc, remote=remote) if is_expected(exc) or remote else redact_text(str(exc))
        return f"{ERROR_PREFIX} {words}"


class SearchHit(BaseModel):
    """One result of seed 002's /search: its fields, then the workbench's (both scores, rank before)."""

    text: str
    document_id: str | None = None
    chunk_index: int | None = None
    title: str | None = None
    page: int | None = None
    url: str | None = None
    score: float
    vector_score: float | None = None
    rerank_score: float | None = None
    rank_before: int
    id: str | None = Field(None, description="with interleave: the result's id, what a click names")
    team: str | None = Field(None, description="with interleave: A (the first stage's order) or B (the reranked)")


class SearchResponse(BaseModel):
    """Seed 002's /search response ({query, results}) plus the stage timings and the trace id."""

    query: str
    results: list[SearchHit]
    collection: str
    retrieval: str
    first_stage: str = Field(
        "dense",
        description="what ranked the candidates, named by its source: 'dense', 'bm25', 'hybrid', or 'search service' "
        "(a collection that is a search service's API ranks them itself)",
    )
    fusion: str | None = None
    reranker: str | None = None
    score_scale: str | None = Field(
        None,
        description="what rerank_score (and score, when reranked) is: 'logit', 'probability', 'probability sum', or "
        "'order' (a listwise reranker's: minus the rank, -1 for the first; no score)",
    )
    timings: StageTimings
    trace_id: str
    min_score: float | None = None
    below_min_score: int = Field(0, description="results of the top_k dropped for scoring below min_score")
    impression_id: str | None = Field(None, description="with interleave: the id to send clicks on these results with")
    teams: dict[str, str] | None = Field(None, description="with interleave: what teams A and B are")
    rerank_skipped: bool = Field(
        False, description="with skip_gap: the first stage was sure, so its order was kept and no reranker was called"
    )
    reranked: bool = Field(
        False, description="whether a reranker ordered these results (false: the first stage's order, as it is)"
    )
    rerank_fallback: str | None = Field(
        None,
        description="under a rerank budget (rerank_budget_ms, X-Rerank-Budget-Ms or WORKBENCH_RERANK_BUDGET_MS): why "
        "the first stage's order was served instead of the reranked one: 'budget', 'circuit open' or 'error: ...'",
    )


def seed_plan(
    engine: Engine,
    top_k: int = DEFAULT_TOP_K,
    *,
    k: int | None = None,
    rerank: bool = True,
    collection: str | None = None,
    retrieval: str | None = None,
    filters: dict[str, Any] | None = None,
    min_score: float | None = None,
    fusion: str | None = None,
    skip_gap: float | None = None,
) -> SearchPlan:
    """The plan behind seed 002's search, wherever it is asked (HTTP /search, MCP's search tool, `retrieve_chunks`):
    `top_k` (1-20) results from `k` candidates, by default max(top_k, RERANKER_K_RETRIEVE) when the configured
    reranker reranks and top_k when nothing does. The one place `top_k` becomes a plan's top_n."""
    top_k = validate_top_k(top_k)
    reranker = DEFAULT_RERANKER_CHOICE if rerank else None
    if k is None:
        k = max(top_k, engine.settings.k_retrieve) if rerank and engine.reranks_by_default() else top_k
    if isinstance(k, int) and not isinstance(k, bool) and k < top_k:
        raise InputError(f"k ({k}) must be at least top_k ({top_k}).")
    return engine.plan(
        collection=collection, retrieval=retrieval, fusion=fusion, k=k, top_n=top_k, filters=filters,
        reranker=reranker, min_score=min_score, skip_gap=skip_gap,
    )  # fmt: skip


def search_documents(
    engine: Engine,
    query: str,
    plan: SearchPlan,
    *,
    trace_id: str | None = None,
    events: EventSink | None = None,
    deadline: float | None = None,
    interleave: bool = False,
    interleaving: InterleavingLog | None = None,
    against: SearchPlan | None = None,
    rerank_budget_ms: float | None = None,
) -> SearchResponse:
    """Seed 002's search of `plan` (made by `seed_plan`): its top n results, duplicates removed, text trimmed to 800
    characters, each with document_id, chunk_index, title, page, url and score; results scoring below the plan's
    `min_score` are dropped and counted. Publishes a RetrievalCompleted event to `events`.

    With `interleave`, the top n are a team-draft interleaving of the first stage's order (team A) and the
    reranked order (team B), or, with `against` (another plan of the same collection: another reranker, first
    stage, fusion or k), of this plan's order (A) and that plan's (B); each result labelled with its team and id,
    logged to `interleaving` under the response's impression_id (see workbench.clicks.online).

    Under a rerank budget (`rerank_budget_ms`, else WORKBENCH_RERANK_BUDGET_MS) the search is served fail-open: a
    reranker past its budget, failing, or skipped by its open circuit gives the first stage's order, with
    `reranked` false and `rerank_fallback` saying why (workbench.serving)."""
    if against is not None and not interleave:
        raise InputError("against names the plan to interleave with: give it with interleave.")
    if interleave and (
        plan.min_score is not None or interleaving is None or (against is None and plan.reranker is None)
    ):
        raise InputError(
            "interleave compares the first stage's order with the reranked one (or this plan with the one named by "
            "against): it needs rerank on (or against), no min_score, and a server that keeps an interleaving log "
            "(workbench serve)."
        )
    budget = serving_budget(rerank_budget_ms, engine.settings.rerank_budget_ms)
    result = engine.search(query, plan, deadline=deadline, rerank_budget_ms=budget)
    trace = trace_id or f"trace-{uuid.uuid4().hex[:16]}"
    hits = []
    served = None
    if interleave and interleaving is not None:
        served, test, found = _interleaved(engine, query, plan, result, against, interleaving, deadline)
        for doc, team in zip(served.shown, served.teams, strict=True):
            fields = _as_retrieved_chunk(found[doc]).model_dump(exclude={"source_url"})
            hits.append(SearchHit(**fields, rank_before=found[doc].vector_rank, id=doc, team=team))
    for row in result.reranked if served is None else ():
        fields = _as_retrieved_chunk(row).model_dump(exclude={"source_url"})
        hits.append(SearchHit(**fields, rank_before=row.rank_before))
    response = SearchResponse(
        query=result.query,
        results=hits,
        score_scale=result.score_scale,
        collection=result.collection,
        retrieval=result.retrieval,
        first_stage=result.first_stage.mode,
        fusion=result.fusion,
        reranker=public_name(result.reranker_model),
        timings=result.timings,
        trace_id=trace,
        min_score=result.min_score,
        below_min_score=result.below_min_score,
        impression_id=served.id if served else None,
        teams={"A": test.a, "B": test.b} if served else None,
        rerank_skipped=result.rerank_skipped,
        reranked=result.reranker_model is not None and not result.rerank_skipped,
        rerank_fallback=result.rerank_fallback,
    )
    if result.rerank_fallback is not None:
        log.warning("Search %s served the first stage's order (%s).", trace, result.rerank_fallback)
    if events is not None:
        events.publish(RetrievalCompleted.of(result.query, plan.top_n, len(hits), trace, result.rerank_fallback))
    return response


def _interleaved(
    engine: Engine,
    query: str,
    plan: SearchPlan,
    result: SearchResult,
    against: SearchPlan | None,
    interleaving: InterleavingLog,
    deadline: float | None,
) -> tuple[Impression, OnlineTest, dict[str, Candidate]]:
    """The served impression, its online test, and every candidate it may show by id (B's first, then A's)."""
    if against is None:
        if result.reranker_model is None:
            raise InputError("interleave needs a reranker: this server has none configured (RERANKER_MODEL).")
        a = (plan_label(plan, result, reranked=False), first_stage_order(result))
        b = (plan_label(plan, result), final_order(result))
        found = {c.id: c for c in result.candidates}
    else:
        other = against
        if other.collection != plan.collection:
            raise InputError("against changes how a collection is searched, not which: leave out its collection.")
        answer = engine.search(query, other, deadline=deadline)
        a = (plan_label(plan, result), final_order(result))
        b = (plan_label(other, answer), final_order(answer))
        if a[0] == b[0]:
            raise InputError(
                f"against names the same plan as the request ({a[0]}): change its reranker, k or first stage."
            )
        found = {**{c.id: c for c in answer.candidates}, **{c.id: c for c in result.candidates}}
    served, test = interleaving.serve(result.collection, result.query, a, b, plan.top_n)
    return served, test, found


def _as_retrieved_chunk(hit: RankedHit | Candidate) -> RetrievedChunk:
    meta = hit.metadata
    url = meta.get("url") or meta.get("source_url")
    page = meta.get("page")
    chunk_index = meta.get("chunk_index")
    return RetrievedChunk(
        text=hit.text[:DISPLAY_CHARS],
        source_url=meta.get("source_url") or url or meta.get("source"),
        score=hit.rerank_score if hit.rerank_score is not None else hit.vector_score,
        document_id=str(meta["document_id"]) if "document_id" in meta else None,
        chunk_index=int(chunk_index) if isinstance(chunk_index, int | float) else None,
        title=meta.get("title"),
        page=int(page) if isinstance(page, int | float) or (isinstance(page, str) and page.isdigit()) else None,
        url=url,
        vector_score=hit.vector_score,
        rerank_score=hit.rerank_score,
    )


def retrieve_chunks(
    query: str,
    filters: dict[str, Any] | None = None,
    top_k: int = 5,
    *,
    collection: str | None = None,
    engine: Engine | None = None,
) -> list[RetrievedChunk]:
    """Retrieve the most relevant chunks for a query, reranked, deduplicated, text trimmed to 800 characters.

    `filters` are metadata equalities (source_url, chapter, section or any key); `top_k` is 1-20.
    Uses the configured store (set WORKBENCH_STORE=qdrant and WORKBENCH_QDRANT_URL for a Qdrant server).
    Returns [] when nothing matches. Raises InputError on bad input and StoreError (StoreConnectionError,
    a ConnectionError, when the server is unreachable) on backend errors.
    """
    engine = engine or get_engine()
    plan = seed_plan(engine, top_k, collection=collection, filters=filters)
    result = engine.search(query, plan, rerank_budget_ms=engine.settings.rerank_budget_ms)
    return [_as_retrieved_chunk(hit) for hit in result.reranked]


class RetrievalService:
    """Generic retrieval over any vector store, injected: a LangChain `VectorStore` or a workbench Collection.

    It knows nothing of domains. With `reranker` (a model id, or "default" for RERANKER_MODEL) it reranks
    `candidates` vector hits and keeps k; without, it returns the vector order. Under `rerank_budget_ms` (else
    WORKBENCH_RERANK_BUDGET_MS) a slow or failing reranker serves the vector order instead, never an error;
    `last_fallback` says why.
    """

    def __init__(
        self,
        vector_store: Any,
        *,
        reranker: str | None = None,
        candidates: int | None = None,
        rerank_budget_ms: float | None = None,
    ) -> None:
        if vector_store is None or not (
            isinstance(vector_store, Collection) or hasattr(vector_store, "similarity_search_with_score")
        ):
            raise ConfigError(
                f"RetrievalService needs a LangChain VectorStore or a workbench Collection; got "
                f"{type(vector_store).__name__}."
            )
        self.vector_store = vector_store
        registry = StoreRegistry(get_settings())
        if isinstance(vector_store, Collection):
            registry.register_collection("service", vector_store)
        else:
            registry.register("service", StoreConfig(kind="langchain", collection="service", vector_store=vector_store))
        self._engine = Engine(get_settings(), registry=registry)
        self._reranker = reranker
        self._candidates = candidates
        self._budget = serving_budget(rerank_budget_ms, self._engine.settings.rerank_budget_ms)
        self.last_fallback: str | None = None  # why the last retrieval served the first stage's order, if it did

    def _hits(self, query: str, k: int) -> list[RankedHit]:
        validate_depths(k, k)
        depth = max(k, self._candidates or self._engine.settings.k_retrieve) if self._reranker is not None else k
        plan = self._engine.plan(collection="service", k=min(depth, MAX_K), top_n=k, reranker=self._reranker)
        result = self._engine.search(query, plan, rerank_budget_ms=self._budget)
        self.last_fallback = result.rerank_fallback
        return result.reranked

    def retrieve_with_scores(self, query: str, k: int = 4) -> list[dict[str, Any]]:
        """[{rank, content, metadata, score}], best first; score is the rerank score when reranking."""
        return [
            {
                "rank": hit.rank_after,
                "content": hit.text,
                "metadata": hit.metadata,
                "score": hit.rerank_score if hit.rerank_score is not None else hit.vector_score,
            }
            for hit in self._hits(query, k)
        ]

    def retrieve(self, query: str, k: int = 4) -> tuple[str, list[dict[str, Any]]]:
        """(content string, artifact list of {rank, content, metadata})."""
        rows = self.retrieve_with_scores(query, k)
        artifact = [{"rank": r["rank"], "content": r["content"], "metadata": r["metadata"]} for r in rows]
        return self._format([r["content"] for r in rows]), artifact

    def retrieve_as_string(self, query: str, k: int = 4, separator: str = "\n\n---\n\n") -> str:
        """The documents' contents joined by `separator`."""
        return self._format([r["content"] for r in self.retrieve_with_scores(query, k)], separator)

    @staticmethod
    def _format(contents: list[str], separator: str = "\n\n---\n\n") -> str:
        return separator.join(contents) if contents else NO_DOCUMENTS

    def create_tool(self, tool_name: str | None = None, description: str | None = None) -> Any:
        """A LangChain tool over `retrieve`, with response_format="content_and_artifact". Its arguments carry
        descriptions and bounds; a bad value (an empty query, k out of range) comes back to the model as an error
        message it can act on, never as an exception out of the agent."""
        from langchain_core.tools import StructuredTool, ToolException  # only for agents: kept off `import workbench`

        def retrieve_documents(query: str, k: int = 4) -> tuple[str, list[dict[str, Any]]]:
            try:
                return self.retrieve(query, k)
            except WorkbenchError as exc:
                raise ToolException(error_message(exc, remote=True)) from exc

        return StructuredTool.from_function(
            func=retrieve_documents,
            name=tool_name or "retrieve_documents",
            description=description
            or "Search the document collection for passages relevant to the query. Returns the passages.",
            args_schema=RetrieveToolArguments,
            response_format="content_and_artifact",
            handle_tool_error=True,
            handle_validation_error=_argument_problem,
        )


class RetrieveToolArguments(BaseModel):
    """The LangChain tool's arguments, as the model sees them."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(..., description=f"what to search for: 1-{MAX_QUERY_CHARS} characters of text")
    k: int = Field(4, ge=1, le=MAX_TOP_K, description=f"how many passages to return, the best first (1-{MAX_TOP_K})")


def _argument_problem(error: Exception) -> str:
    """A tool call whose arguments do not validate, as the message the model reads."""
    errors = error.errors() if isinstance(error, ValidationError) else []
    parts = [f"{'.'.join(map(str, e.get('loc', ())))}: {e.get('msg', '')}" for e in errors[:5]]
    return "The tool call's arguments were refused: " + ("; ".join(parts) or shown(error)) + "."
