"""The MCP server (`workbench mcp`, stdio; `workbench mcp --http PORT`, streamable HTTP on 127.0.0.1), with the
official MCP Python SDK. Its tools, over one engine:

- `retrieve_from_chroma(collection_name, query, k=10, top_n=3) -> str`: seed 000's tool (its behaviour and
  error strings), over the configured store.
- `search(query, collection=None, top_k=5, filters=None)`: structured results, as the HTTP `/search` returns them.
- `list_collections()`: what can be searched, with sizes and models.
- `judge(...)`: grade a document for a query, as a named rater.
- `list_experiments(collection=None, limit=20)` and `open_experiment(experiment_id)`: the kept evaluations.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import sys
from collections.abc import Iterator
from typing import Annotated, Any

from pydantic import ConfigDict, Field

from workbench import __version__
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import WorkbenchError, error_message
from workbench.experiments import open_experiment_store
from workbench.experiments.record import ExperimentSummary, ExperimentView
from workbench.inputs import json_depth, unpaired_surrogate_at
from workbench.judgments import Rating
from workbench.judgments import judge as judge_document
from workbench.redact import plain_text
from workbench.rerankers.backends import measure_backends_in_background
from workbench.services.events import EventSink, open_sink
from workbench.services.search import SearchResponse, retrieve_text, search_documents
from workbench.types import CollectionInfo
from workbench.vocab import (
    DEFAULT_TOP_K,
    GRADE_SCALE,
    MAX_DOC_ID_CHARS,
    MAX_JSON_DEPTH,
    MAX_K,
    MAX_QUERY_CHARS,
    MAX_RATER_CHARS,
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

INSTRUCTIONS = (
    "Rerank Workbench: search document collections. Vector search (or BM25, or both) finds candidates and a "
    "cross-encoder reranks them. Call list_collections first to see what can be searched; then search (structured "
    "results with title, page, url and scores) or retrieve_from_chroma (plain text of the best passages). judge grades "
    "a document's relevance to a query, so evaluations count it. list_experiments and open_experiment show the "
    "kept evaluations: whether a reranker helps, at which k and top n."
)


def build_server(
    settings: Settings | None = None, engine: Engine | None = None, events: EventSink | None = None
) -> Any:
    """The MCP server object with its tools (run it with `.run()` or `.run_streamable_http_async()`)."""
    from mcp.server.mcpserver import MCPServer

    settings = settings or (engine.settings if engine else Settings())
    engine = engine or Engine(settings)
    server = MCPServer(name="rerank-workbench", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    _search_tools(server, engine, events or open_sink(settings))
    _judging_tools(server, engine)
    _experiment_tools(server, settings)
    _refuse_unknown_arguments(server)
    return server


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
            "default 10). top_n: passages returned (1 to k, default 3)."
        ),
        annotations=_read_only(),
    )
    def retrieve_from_chroma(collection_name: CollectionName, query: Query, k: Candidates = 10, top_n: Kept = 3) -> str:
        return retrieve_text(engine, collection_name, query, k, top_n, remote=True)

    @server.tool(
        description=(
            "Search a collection and get structured results: for each passage its text (at most 800 characters), "
            "document_id, chunk_index, title, page, url, score (the reranker's when reranking), vector_score and "
            "rank_before (its rank before reranking). query: 1-512 characters. collection: a name from "
            "list_collections (default: the workbench's default collection). top_k: results (1-20, default 5). "
            'filters: metadata equalities such as {"page": 2} or {"title": "Leave and Time Off Policy"}. '
            "min_score: drop passages whose score is below it (the reranker's score, a logit for the local "
            "cross-encoder); below_min_score counts them. "
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
    ) -> SearchResponse:
        with _as_tool_error():
            return search_documents(
                engine, query, top_k, collection=collection, filters=filters, events=sink, min_score=min_score
            )

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


def run(settings: Settings, http_port: int | None = None, host: str = "127.0.0.1") -> None:
    """Serve MCP on stdio, or over streamable HTTP at http://host:port/mcp."""
    import anyio

    server = build_server(settings)
    _plain_logging()
    measure_backends_in_background()  # a server stays up: an unmeasured reranker answers on torch meanwhile
    if http_port is None:
        anyio.run(_serve_stdio, server)
        return
    anyio.run(lambda: server.run_streamable_http_async(host=host, port=http_port))


def _plain_logging() -> None:
    """One plain line per log record on stderr: the SDK installs a Rich handler that wraps a record over several
    lines at 80 columns, which a client's log (or a human reading it) sees as a flood."""
    root = logging.getLogger()
    for handler in list(root.handlers):
        root.removeHandler(handler)
    plain = logging.StreamHandler(sys.stderr)
    plain.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(plain)


async def _serve_stdio(server: Any) -> None:
    """MCP over stdio where every request gets an answer: a line that is not JSON, nests over 32 levels, is not
    one JSON-RPC object, or has `params` that are not an object gets its JSON-RPC error through the SDK's own
    writer (the SDK would drop the line and leave the client waiting); the others go to the SDK as they came."""
    import anyio
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage
    from mcp.types import ErrorData, JSONRPCError

    # The protocol keeps its own copies of fd 0 and 1; fd 1 then points at stderr and fd 0 at the null device, so
    # a stray print (a library's) never lands on the wire and a child process reads EOF (what the SDK's own
    # stdio_server does, and skips when given streams, as here).
    wire_out, wire_in = os.dup(1), os.dup(0)
    sys.stdout.flush()
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    stdout = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_out, "wb"), encoding="utf-8"))
    stdin = anyio.wrap_file(io.TextIOWrapper(os.fdopen(wire_in, "rb"), encoding="utf-8", errors="replace"))
    ready = anyio.Event()
    writer: list[Any] = []

    class CheckedLines:
        def __aiter__(self) -> Any:
            return self._lines()

        async def _lines(self) -> Any:
            await ready.wait()
            async for line in stdin:
                if not line.strip():
                    continue
                error = rpc_error_for(line)
                if error is None:
                    yield line
                    continue
                reply = JSONRPCError(jsonrpc="2.0", id=error["id"], error=ErrorData(**error["error"]))
                await writer[0].send(SessionMessage(reply))

    lowlevel = server._lowlevel_server  # the SDK's own server behind MCPServer
    async with stdio_server(stdin=CheckedLines(), stdout=stdout) as (read_stream, write_stream):  # type: ignore[arg-type]
        writer.append(write_stream)
        ready.set()
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


def shallow_id(line: str) -> str | int | None:
    """The `id` of a JSON-RPC object read from its top level only, for a line too deep to parse whole (its answer
    must still carry its id): the characters are scanned with strings skipped and depth counted, and only a
    top-level key's value is decoded."""
    decoder = json.JSONDecoder()
    depth, i, expecting_key = 0, 0, False
    while i < len(line):
        ch = line[i]
        if ch == '"':
            try:
                text, end = decoder.raw_decode(line, i)
            except ValueError:
                return None
            if depth == 1 and expecting_key and text == "id":
                rest = line[end:].lstrip()
                if rest.startswith(":"):
                    value_at = end + (len(line[end:]) - len(rest)) + 1
                    value_at += len(line[value_at:]) - len(line[value_at:].lstrip())
                    try:
                        value, _ = decoder.raw_decode(line, value_at)
                    except (ValueError, RecursionError):
                        return None
                    return value if isinstance(value, str | int) and not isinstance(value, bool) else None
            expecting_key = False
            i = end
            continue
        if ch in "{[":
            depth += 1
            expecting_key = ch == "{" and depth == 1
        elif ch in "}]":
            depth -= 1
        elif ch == "," and depth == 1:
            expecting_key = True
        i += 1
    return None


def rpc_error_for(line: str) -> dict[str, Any] | None:
    """The JSON-RPC error a request line deserves before it reaches the SDK, or None when it may go on."""

    def error(code: int, message: str, request_id: Any = None) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}

    try:
        message = json.loads(line)
    except RecursionError:
        return error(-32700, f"Parse error: the message nests over {MAX_JSON_DEPTH} levels.", shallow_id(line))
    except ValueError as exc:
        return error(-32700, f"Parse error: not JSON ({plain_text(str(exc))[:100]}).")
    if not isinstance(message, dict):
        return error(-32600, "Invalid Request: send one JSON-RPC object per line (batches are not supported).")
    request_id = message.get("id") if isinstance(message.get("id"), str | int) else None
    if json_depth(message) > MAX_JSON_DEPTH:
        return error(-32600, f"Invalid Request: the message nests over {MAX_JSON_DEPTH} levels.", request_id)
    surrogate = unpaired_surrogate_at(message)
    if surrogate is not None:
        where = plain_text(surrogate)[:60] or "the message"
        return error(-32602, f"Invalid params: a lone surrogate in {where}; send valid Unicode text.", request_id)
    if "method" in message and "params" in message and not isinstance(message["params"], dict):
        return error(-32602, "Invalid params: params must be a JSON object.", request_id)
    return None
