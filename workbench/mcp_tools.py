"""The MCP server's tools over one engine (`add_tools`): what `workbench.mcp` serves. Kept apart from the server
so that `workbench mcp` answers a client's `initialize` before the engine, the stores and the evaluation stack are
imported: this module is imported, and the tools added, once the session is up."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import WorkbenchError, error_message
from workbench.experiments import open_experiment_store
from workbench.experiments.record import ExperimentSummary, ExperimentView
from workbench.judgments import Rating
from workbench.judgments import judge as judge_document
from workbench.services.backend_audit import enable_auto_audit
from workbench.services.events import EventSink, open_sink
from workbench.services.search import SearchResponse, retrieve_text, search_documents, seed_plan
from workbench.types import CollectionInfo
from workbench.vocab import (
    DEFAULT_TOP_K,
    GRADE_SCALE,
    MAX_DOC_ID_CHARS,
    MAX_K,
    MAX_QUERY_CHARS,
    MAX_RATER_CHARS,
    MAX_RERANK_BUDGET_MS,
    MAX_TOP_K,
)

# Each argument as a client's schema shows it: what it is, its bounds, its values.
Query = Annotated[str, Field(description=f"what to search for: 1-{MAX_QUERY_CHARS} characters after trimming")]
CollectionName = Annotated[str, Field(description="a collection's name, as list_collections gives it")]
MaybeCollection = Annotated[
    str | None, Field(description="a collection's name from list_collections (default: the workbench's default)")
]
Candidates = Annotated[int, Field(ge=1, le=MAX_K, description=f"candidates found and reranked (1-{MAX_K})")]
Kept = Annotated[int, Field(ge=1, le=MAX_K, description="passages returned, the best first (1 to k)")]
TopK = Annotated[int, Field(ge=1, le=MAX_TOP_K, description=f"results returned (1-{MAX_TOP_K})")]
Filters = Annotated[
    dict[str, str | int | float | bool] | None,
    Field(description='metadata equalities, e.g. {"page": 2} or {"title": "Leave and Time Off Policy"}'),
]
MinScore = Annotated[
    float | None,
    Field(allow_inf_nan=False, description="drop passages scoring below this (the reranker's score; a logit locally)"),
]
RerankBudget = Annotated[
    float | None,
    Field(
        ge=1,
        le=MAX_RERANK_BUDGET_MS,
        allow_inf_nan=False,
        description="milliseconds the reranker may take; past it, or if it fails, the first stage's order comes back "
        "(reranked false, rerank_fallback says why) instead of an error (default: the server's "
        "WORKBENCH_RERANK_BUDGET_MS, else none)",
    ),
]
DocumentId = Annotated[
    str, Field(min_length=1, max_length=MAX_DOC_ID_CHARS, description="the document_id a search returned")
]
Grade = Annotated[
    int,
    Field(
        strict=True,
        ge=min(GRADE_SCALE),
        le=max(GRADE_SCALE),
        description="; ".join(f"{grade} {label}" for grade, label in GRADE_SCALE.items()),
        json_schema_extra={"enum": list(GRADE_SCALE)},
    ),
]
MaybeQuery = Annotated[
    str | None, Field(description="the query's text (give this or query_id, not both); a judged query is reused")
]
QueryId = Annotated[str | None, Field(max_length=256, description="a judged query's id (give this or query, not both)")]
IdempotencyKey = Annotated[
    str | None,
    Field(
        max_length=128,
        description="a key of your own (a UUID): a retried call with the same key stores nothing new (replayed)",
    ),
]
Limit = Annotated[int, Field(ge=1, le=200, description="at most this many (1-200)")]
ExperimentId = Annotated[
    str, Field(min_length=1, max_length=64, description="an experiment's id, from list_experiments")
]
Rater = Annotated[str, Field(min_length=1, max_length=MAX_RATER_CHARS, description="who grades: name yourself")]


def add_tools(
    server: Any,
    settings: Settings,
    engine: Engine | None = None,
    events: EventSink | None = None,
    *,
    stays_up: bool = False,
) -> None:
    """The workbench's tools on an MCP server, over one engine (made from the settings when none is given).
    `stays_up`: the server runs until stopped, so its models load in the background at once, and a reranker never
    measured here answers on torch while its backends are measured in the background."""
    if stays_up:
        enable_auto_audit(settings)
    engine = engine or Engine(settings)
    if stays_up:  # measured in the background from now; the models load (then are frozen) while the client starts
        engine.warm_in_background()
    _search_tools(server, engine, events or open_sink(settings))
    _judging_tools(server, engine)
    _experiment_tools(server, settings)
    _refuse_unknown_arguments(server)


def _read_only() -> Any:
    from mcp.types import ToolAnnotations

    return ToolAnnotations(readOnlyHint=True, destructiveHint=False, idempotentHint=True, openWorldHint=False)


@contextlib.contextmanager
def _as_tool_error() -> Iterator[None]:
    """The workbench's own errors as the tool's error message (the client sees words, never a traceback)."""
    from mcp.server.mcpserver.exceptions import ToolError

    try:
        yield
    except WorkbenchError as exc:
        raise ToolError(error_message(exc, remote=True)) from exc


def _search_tools(server: Any, engine: Engine, sink: EventSink) -> None:
    """retrieve_from_chroma, search and list_collections."""

    @server.tool(
        description=(
            "Retrieve the most relevant passages from a collection as plain text. Finds the k nearest passages by "
            "vector similarity, reranks them with a cross-encoder and returns the best top_n, one per line. "
            "Returns 'No relevant documents found.' when nothing matches, or a line starting 'Error retrieving from "
            "collection:' that says what went wrong (an unknown collection lists the existing ones). "
            "collection_name: a name from list_collections. query: 1-512 characters. k: candidates to rerank (1-200, "
            "default 10). top_n: passages returned (1 to k, default 3). rerank_budget_ms: how long the reranker may "
            "take; past it, or if it fails, the passages come in the vector order instead of an error."
        ),
        annotations=_read_only(),
    )
    def retrieve_from_chroma(
        collection_name: CollectionName,
        query: Query,
        k: Candidates = 10,
        top_n: Kept = 3,
        rerank_budget_ms: RerankBudget = None,
    ) -> str:
        return retrieve_text(engine, collection_name, query, k, top_n, remote=True, rerank_budget_ms=rerank_budget_ms)

    @server.tool(
        description=(
            "Search a collection and get structured results: for each passage its text (at most 800 characters), "
            "document_id, chunk_index, title, page, url, score (the reranker's when reranking), vector_score and "
            "rank_before (its rank before reranking). query: 1-512 characters. collection: a name from "
            "list_collections (default: the workbench's default collection). top_k: results (1-20, default 5). "
            'filters: metadata equalities such as {"page": 2} or {"title": "Leave and Time Off Policy"}. '
            "min_score: drop passages whose score is below it (the reranker's score, a logit for the local "
            "cross-encoder); below_min_score counts them. rerank_budget_ms: how long the reranker may take; past it, "
            "or if it fails, the first stage's order comes back with reranked false and rerank_fallback saying why. "
            "Errors come back as a message naming the problem."
        ),
        structured_output=True,
        annotations=_read_only(),
    )
    def search(
        query: Query,
        collection: MaybeCollection = None,
        top_k: TopK = DEFAULT_TOP_K,
        filters: Filters = None,
        min_score: MinScore = None,
        rerank_budget_ms: RerankBudget = None,
    ) -> SearchResponse:
        with _as_tool_error():
            plan = seed_plan(engine, top_k, collection=collection, filters=filters, min_score=min_score)
            return search_documents(engine, query, plan, events=sink, rerank_budget_ms=rerank_budget_ms)

    @server.tool(
        description=(
            "List the collections that can be searched: name, store, number of passages, embedding model and "
            "vector dimension."
        ),
        structured_output=True,
        annotations=_read_only(),
    )
    def list_collections() -> list[CollectionInfo]:
        with _as_tool_error():
            return [info.public() for info in engine.collections()]


def _judging_tools(server: Any, engine: Engine) -> None:
    """judge: a grade from an agent, kept as an LLM's."""
    from mcp.types import ToolAnnotations

    @server.tool(
        description=(
            "Grade how relevant a document is to a query, as a named rater; the grade is kept with its history "
            "and counts in the workbench's evaluations. collection: a name from list_collections. document_id: "
            "the document_id a search returned. grade: 0 not relevant, 1 partly relevant, 2 relevant, 3 perfectly "
            "relevant. query: the query's text (a judged query with the same text is reused), or query_id: a "
            "judged query's id. rater: who grades (name yourself, e.g. your model). Grades given here are recorded "
            "as an LLM's (a person's grade of the same pair outranks them). Returns the grade stored and the pair's "
            "current grade."
        ),
        structured_output=True,
        annotations=ToolAnnotations(
            readOnlyHint=False, destructiveHint=False, idempotentHint=False, openWorldHint=False
        ),
    )
    def judge(
        collection: CollectionName,
        document_id: DocumentId,
        grade: Grade,
        query: MaybeQuery = None,
        query_id: QueryId = None,
        rater: Rater = "agent",
        idempotency_key: IdempotencyKey = None,
    ) -> Rating:
        with _as_tool_error():
            return judge_document(
                engine, collection, document_id, grade, query=query, query_id=query_id, rater=rater, source="llm",
                idempotency_key=idempotency_key,
            )  # fmt: skip


def _experiment_tools(server: Any, settings: Settings) -> None:
    """list_experiments and open_experiment: the kept evaluations."""

    @server.tool(
        description=(
            "List the kept experiments (evaluations of a configuration on judged queries), newest first: id, name, "
            "configuration (collection · first stage k → top n · reranker), query set, nDCG@10 before and after "
            "reranking, and the verdict (helps, hurts, none, unknown). collection: only this collection's. "
            "limit: at most this many (1-200, default 20)."
        ),
        structured_output=True,
        annotations=_read_only(),
    )
    def list_experiments(collection: MaybeCollection = None, limit: Limit = 20) -> list[ExperimentSummary]:
        with _as_tool_error():
            return [e.summary() for e in open_experiment_store(settings).list(collection=collection, limit=limit)]

    @server.tool(
        description=(
            "Open one kept experiment by id (from list_experiments): its configuration, every metric before and "
            "after reranking with the change's 95 % interval and p-value, the verdict in words, the queries most "
            "hurt and helped, the judgments and query set it used, and what it ran on."
        ),
        structured_output=True,
        annotations=_read_only(),
    )
    def open_experiment(experiment_id: ExperimentId) -> ExperimentView:
        with _as_tool_error():
            return open_experiment_store(settings).get(experiment_id).view()


def _refuse_unknown_arguments(server: Any) -> None:
    """Every tool's arguments checked strictly: an argument the tool does not take is refused by name (the SDK
    would drop it silently), and each schema says so (`additionalProperties: false`)."""
    for tool in server._tool_manager.list_tools():
        loose = tool.fn_metadata.arg_model
        strict = type(loose.__name__, (loose,), {"model_config": ConfigDict(**loose.model_config, extra="forbid")})
        tool.fn_metadata.arg_model = strict
        tool.parameters = strict.model_json_schema(by_alias=True)
