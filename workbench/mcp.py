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

import importlib
import io
import json
import logging
import os
import sys
import threading
from typing import Any

from workbench import __version__
from workbench.config import Settings
from workbench.errors import error_message
from workbench.inputs import json_depth, unpaired_surrogate_at
from workbench.redact import plain_text
from workbench.vocab import MAX_JSON_DEPTH

log = logging.getLogger("workbench.mcp")

INSTRUCTIONS = (
    "Rerank Workbench: search document collections. Vector search (or BM25, or both) finds candidates and a "
    "cross-encoder reranks them. Call list_collections first to see what can be searched; then search (structured "
    "results with title, page, url and scores) or retrieve_from_chroma (plain text of the best passages). judge grades "
    "a document's relevance to a query, so evaluations count it. list_experiments and open_experiment show the "
    "kept evaluations: whether a reranker helps, at which k and top n."
)


def build_server(
    settings: Settings | None = None, engine: Any = None, events: Any = None, *, tools: bool = True
) -> Any:
    """The MCP server object (run it with `.run()` or `.run_streamable_http_async()`), with its tools, or (tools
    False) without them yet: `add_tools` of `workbench.mcp_tools` adds them."""
    from mcp.server.mcpserver import MCPServer

    settings = settings or (engine.settings if engine else Settings())
    server = MCPServer(name="rerank-workbench", version=__version__, instructions=INSTRUCTIONS, log_level="WARNING")
    if tools:
        _tools_module().add_tools(server, settings, engine, events)
    return server


def _tools_module() -> Any:
    # Imported when the tools are added, not with this module: it brings the engine, the stores and the evaluation
    # stack (seconds on a loaded machine), which a client's `initialize` must not wait for.
    return importlib.import_module("workbench.mcp_tools")


def run(settings: Settings, http_port: int | None = None, host: str = "127.0.0.1") -> None:
    """Serve MCP on stdio, or over streamable HTTP at http://host:port/mcp."""
    import anyio

    _plain_logging()
    if http_port is not None:
        server = build_server(settings, tools=False)
        _tools_module().add_tools(server, settings, stays_up=True)
        anyio.run(lambda: server.run_streamable_http_async(host=host, port=http_port))
        return
    # On stdio the session starts at once, so a client's `initialize` is answered before the engine is imported;
    # the tools are added beside it, and a request for them waits until they are there.
    server = build_server(settings, tools=False)
    ready, failed = threading.Event(), []

    def add_tools() -> None:
        try:
            _tools_module().add_tools(server, settings, stays_up=True)
        except Exception as exc:  # said to the client on its first tool request, and in the log
            log.error("the tools could not be made ready: %s", exc)
            failed.append(exc)
        finally:
            ready.set()

    _tools_wait_for(server, ready, failed)
    threading.Thread(target=add_tools, name="workbench-mcp-tools", daemon=True).start()
    anyio.run(_serve_stdio, server)


def _tools_wait_for(server: Any, ready: threading.Event, failed: list[Exception]) -> None:
    """Requests for the tools (listing and calling them) wait until `ready`; a failure to make them ready is
    the request's error, in the workbench's words."""
    import anyio
    from mcp.shared.exceptions import MCPError
    from mcp.types import INTERNAL_ERROR

    lowlevel = server._lowlevel_server  # the SDK's own server behind MCPServer
    for method in ("tools/list", "tools/call"):
        entry = lowlevel._request_handlers[method]

        async def waiting(ctx: Any, params: Any, handler: Any = entry.handler) -> Any:
            if not ready.is_set():
                await anyio.to_thread.run_sync(ready.wait)
            if failed:
                raise MCPError(INTERNAL_ERROR, error_message(failed[0], remote=True))
            return await handler(ctx, params)

        lowlevel.add_request_handler(method, entry.params_type, waiting)


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
