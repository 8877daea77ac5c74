"""The MCP server (`workbench mcp`, stdio; `workbench mcp --http PORT`, streamable HTTP on 127.0.0.1), with the
official MCP Python SDK. Three tools over one engine:

- `retrieve_from_chroma(collection_name, query, k=10, top_n=3) -> str`: seed 000's tool (its behaviour and
  error strings), over the configured store.
- `search(query, collection=None, top_k=5, filters=None)`: structured results, as the HTTP `/search` returns them.
- `list_collections()`: what can be searched, with sizes and models.
"""

from __future__ import annotations

import logging
import sys
from typing import Any

from workbench.compat import SearchResponse, retrieve_text, search_documents
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import WorkbenchError, error_message
from workbench.events import EventSink, open_sink
from workbench.types import CollectionInfo
from workbench.vocab import DEFAULT_TOP_K

INSTRUCTIONS = (
    "Rerank Workbench: search document collections. Vector search (or BM25, or both) finds candidates and a "
    "cross-encoder reranks them. Call list_collections first to see what can be searched; then search (structured "
    "results with title, page, url and scores) or retrieve_from_chroma (plain text of the best passages)."
)


def build_server(
    settings: Settings | None = None, engine: Engine | None = None, events: EventSink | None = None
) -> Any:
    """The MCP server object with its three tools (run it with `.run()` or `.run_streamable_http_async()`)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    settings = settings or (engine.settings if engine else Settings())
    engine = engine or Engine(settings)
    sink = events or open_sink(settings)
    server = MCPServer(name="rerank-workbench", instructions=INSTRUCTIONS, log_level="WARNING")

    @server.tool(
        description=(
            "Retrieve the most relevant passages from a collection as plain text. Finds the k nearest passages by "
            "vector similarity, reranks them with a cross-encoder and returns the best top_n, one per line. "
            "Returns 'No relevant documents found.' when nothing matches, or a line starting 'Error retrieving from "
            "collection:' that says what went wrong (an unknown collection lists the existing ones). "
            "collection_name: a name from list_collections. query: 1-512 characters. k: candidates to rerank (1-200, "
            "default 10). top_n: passages returned (1 to k, default 3)."
        )
    )
    def retrieve_from_chroma(collection_name: str, query: str, k: int = 10, top_n: int = 3) -> str:
        return retrieve_text(engine, collection_name, query, k, top_n, remote=True)

    @server.tool(
        description=(
            "Search a collection and get structured results: for each passage its text (at most 800 characters), "
            "document_id, chunk_index, title, page, url, score (the reranker's when reranking), vector_score and "
            "rank_before (its rank before reranking). query: 1-512 characters. collection: a name from "
            "list_collections (default: the workbench's default collection). top_k: results (1-20, default 5). "
            'filters: metadata equalities such as {"page": 2} or {"title": "Leave and Time Off Policy"}. '
            "Errors come back as a message naming the problem."
        ),
        structured_output=True,
    )
    def search(
        query: str, collection: str | None = None, top_k: int = DEFAULT_TOP_K, filters: dict[str, Any] | None = None
    ) -> SearchResponse:
        try:
            return search_documents(engine, query, top_k, collection=collection, filters=filters, events=sink)
        except WorkbenchError as exc:
            raise ToolError(error_message(exc, remote=True)) from exc

    @server.tool(
        description=(
            "List the collections that can be searched: name, store, number of passages, embedding model and "
            "vector dimension."
        ),
        structured_output=True,
    )
    def list_collections() -> list[CollectionInfo]:
        try:
            return engine.collections()
        except WorkbenchError as exc:
            raise ToolError(error_message(exc, remote=True)) from exc

    return server


def run(settings: Settings, http_port: int | None = None, host: str = "127.0.0.1") -> None:
    """Serve MCP on stdio, or over streamable HTTP at http://host:port/mcp."""
    import anyio

    server = build_server(settings)
    _plain_logging()
    if http_port is None:
        server.run()
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
