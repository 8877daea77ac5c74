"""The MCP server through the official SDK's own client: `workbench mcp` over stdio in a subprocess, and
`workbench mcp --http PORT` over streamable HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import free_port
from tests.live_servers import api_env, cli_experiment
from workbench.config import Settings
from workbench.paths import demo_dir

pytestmark = pytest.mark.live_server

QRELS = demo_dir() / "qrels" / "test.tsv"


def _text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


async def _exercise(session: Any) -> dict[str, Any]:
    await session.initialize()
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    listed = await session.call_tool("list_collections", {})
    search = await session.call_tool("search", {"query": "how many vacation days", "top_k": 3})
    filtered = await session.call_tool("search", {"query": "holiday", "top_k": 2, "filters": {"page": 2}})
    text = await session.call_tool("retrieve_from_chroma", {"collection_name": "demo", "query": "pension", "top_n": 2})
    missing = await session.call_tool("retrieve_from_chroma", {"collection_name": "nope", "query": "pension"})
    bad = await session.call_tool("search", {"query": "", "top_k": 3})
    # the demo's own grade again (h1's first judged document), so the shared data's judgments stay as shipped
    qid, doc, grade = next(line.split("\t") for line in QRELS.read_text().splitlines()[1:] if line.startswith("h1\t"))
    judged = await session.call_tool(
        "judge", {"collection": "demo", "document_id": doc, "grade": int(grade), "query_id": qid, "rater": "agent"}
    )
    misjudged = await session.call_tool(
        "judge", {"collection": "demo", "document_id": doc, "grade": 9, "query": "pension", "rater": "agent"}
    )
    unknown = await session.call_tool("search", {"query": "holiday", "depth": 3})
    grade_true = await session.call_tool(
        "judge", {"collection": "demo", "document_id": doc, "grade": True, "query_id": qid, "rater": "agent"}
    )
    both = await session.call_tool(
        "judge", {"collection": "demo", "document_id": doc, "grade": 1, "query_id": qid, "query": "pension"}
    )
    keyed = {"collection": "demo", "document_id": doc, "grade": int(grade), "query_id": qid, "idempotency_key": "m-1"}
    keyed_first = await session.call_tool("judge", keyed)
    keyed_again = await session.call_tool("judge", keyed)
    experiments = await session.call_tool("list_experiments", {"collection": "demo", "limit": 5})
    newest = experiments.structured_content["result"][0]["id"]
    opened = await session.call_tool("open_experiment", {"experiment_id": newest})
    no_experiment = await session.call_tool("open_experiment", {"experiment_id": "nope"})
    return {
        "experiments": (experiments, opened, no_experiment),
        "keyed": (keyed_first, keyed_again),
        "unknown": unknown,
        "grade_true": grade_true,
        "both": both,
        "judged": judged,
        "misjudged": misjudged,
        "tools": tools,
        "listed": listed,
        "search": search,
        "filtered": filtered,
        "text": text,
        "missing": missing,
        "bad": bad,
    }


def _check(outcome: dict[str, Any]) -> None:
    tools = outcome["tools"]
    assert set(tools) == {
        "retrieve_from_chroma", "search", "list_collections", "judge", "list_experiments", "open_experiment"
    }  # fmt: skip
    for tool in tools.values():
        assert len(tool.description) > 80  # enough for an agent to use the tool unaided
    assert "collection_name" in tools["retrieve_from_chroma"].input_schema["properties"]
    listed = outcome["listed"].structured_content
    assert [c["name"] for c in listed["result"]] == ["demo"]
    results = outcome["search"].structured_content["results"]
    assert len(results) == 3 and {"text", "document_id", "title", "page", "url", "score"} <= results[0].keys()
    assert all(r["page"] == 2 for r in outcome["filtered"].structured_content["results"])
    assert len(_text(outcome["text"]).split("\n")) == 2
    assert _text(outcome["missing"]).startswith("Error retrieving from collection:") and "demo" in _text(
        outcome["missing"]
    )
    assert outcome["bad"].is_error and "empty" in _text(outcome["bad"])
    rating = outcome["judged"].structured_content
    assert rating["rater"] == "agent" and rating["source"] == "llm" and rating["query_id"] == "h1"
    assert rating["current_grade"] == rating["grade"]
    assert outcome["misjudged"].is_error and "less than or equal to 3" in _text(outcome["misjudged"])
    # every argument described and bounded, unknown ones refused, annotations say what a tool does
    for tool in tools.values():
        schema = tool.input_schema
        assert schema["additionalProperties"] is False
        assert all(p.get("description") for p in schema["properties"].values()), tool.name
    assert tools["search"].input_schema["properties"]["top_k"]["maximum"] == 20
    assert tools["judge"].input_schema["properties"]["grade"]["enum"] == [0, 1, 2, 3]
    assert tools["search"].annotations.read_only_hint and not tools["judge"].annotations.read_only_hint
    assert outcome["unknown"].is_error and "depth" in _text(outcome["unknown"])
    assert outcome["grade_true"].is_error and "grade" in _text(outcome["grade_true"])
    assert outcome["both"].is_error and "not both" in _text(outcome["both"])
    first, again = (result.structured_content for result in outcome["keyed"])
    assert again["replayed"] and again["ratings_of_pair"] == first["ratings_of_pair"]
    listed, opened, missing = outcome["experiments"]
    newest = listed.structured_content["result"][0]
    assert newest["name"] == "kept by the cli" and newest["queries"] == 5
    view = opened.structured_content
    assert view["id"] == newest["id"] and view["plan"]["collection"] == "demo" and view["metrics"]
    assert missing.is_error and "No experiment has the id" in _text(missing)
    assert tools["open_experiment"].annotations.read_only_hint


def test_mcp_over_stdio(served_data: Settings) -> None:
    cli_experiment(served_data, "--max-queries", "5", "--name", "kept by the cli")
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = api_env(served_data)
    params = StdioServerParameters(command=str(Path(sys.executable).parent / "workbench"), args=["mcp"], env=env)

    async def run() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            return await _exercise(session)

    _check(anyio.run(run))


def test_mcp_over_streamable_http(served_data: Settings) -> None:
    cli_experiment(served_data, "--max-queries", "5", "--name", "kept by the cli")
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    log = open(Path(served_data.data_dir) / "mcp-http.log", "w")  # noqa: SIM115 - closed below
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "workbench"), "mcp", "--http", str(port)],
        env=api_env(served_data),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        import socket

        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, (Path(served_data.data_dir) / "mcp-http.log").read_text()
            time.sleep(0.2)

        async def run() -> dict[str, Any]:
            async with (
                streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write, *_),
                ClientSession(read, write) as session,
            ):
                return await _exercise(session)

        _check(anyio.run(run))
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def test_the_manuals_client_config_names_a_working_command() -> None:
    readme = (Path(__file__).parents[1] / "docs" / "how-to" / "serve.md").read_text()
    start = readme.index('{\n  "mcpServers"')
    config = json.loads(readme[start : readme.index("\n}\n", start) + 2])
    server = config["mcpServers"]["rerank-workbench"]
    assert server["args"] == ["mcp"] and server["command"].endswith("workbench")
    assert os.path.basename(server["command"]) == "workbench"


def test_mcp_started_elsewhere_lists_the_checkouts_collections(
    tmp_path: Path, tiny_models: dict[str, Path], corpus_dir: Path
) -> None:
    """Desktop MCP clients start servers from their own folder: WORKBENCH_CONFIG alone must lead the server to the
    checkout's data folder, which the checkout's workbench.toml names relative to itself."""
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from workbench.engine import Engine

    repo = Path(__file__).resolve().parents[1]
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "workbench.toml").write_text((repo / "workbench.toml").read_text(encoding="utf-8"), encoding="utf-8")
    own = Settings(data_dir=checkout / "data", embedding_model=str(tiny_models["embedder"]), reranker_model="none")
    Engine(own).ingest(corpus_dir, "handbook")
    elsewhere = tmp_path / "client-folder"
    elsewhere.mkdir()
    base = {k: v for k, v in os.environ.items() if k not in {"WORKBENCH_DATA_DIR", "WORKBENCH_CONFIG"}}
    base["XDG_DATA_HOME"] = str(tmp_path / "user-data")  # the user data folder, empty

    async def listed(env: dict[str, str]) -> list[str]:
        params = StdioServerParameters(
            command=str(Path(sys.executable).parent / "workbench"), args=["mcp"], env=env, cwd=str(elsewhere)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("list_collections", {})
            return [c["name"] for c in result.structured_content["result"]]

    configured = anyio.run(listed, {**base, "WORKBENCH_CONFIG": str(checkout / "workbench.toml")})
    assert configured == ["handbook"]
    assert (checkout / "data" / "chroma").is_dir() and not (elsewhere / "data").exists()
    assert anyio.run(listed, base) == []  # without it: the user's data folder, never the client's folder


def test_every_malformed_stdio_request_gets_a_json_rpc_error(served_data: Settings) -> None:
    """A raw stdio client: a garbage line, list-valued params and very deep nesting each get their JSON-RPC error
    (before, none was answered and the client waited forever); the server then goes on answering."""
    import selectors

    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "workbench"), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=api_env(served_data),
    )

    def send(message: Any) -> None:
        assert process.stdin is not None
        process.stdin.write((message if isinstance(message, str) else json.dumps(message)).encode() + b"\n")
        process.stdin.flush()

    def reply() -> dict[str, Any]:
        assert process.stdout is not None
        with selectors.DefaultSelector() as waiting:  # epoll: select() refuses a descriptor numbered above 1023
            waiting.register(process.stdout, selectors.EVENT_READ)
            assert waiting.select(60), "no reply within 60 s"
        return json.loads(process.stdout.readline())

    try:
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello})
        from workbench import __version__

        assert reply()["result"]["serverInfo"] == {"name": "rerank-workbench", "version": __version__}
        send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        send("this is not json")
        garbage = reply()
        assert (
            garbage["id"] is None and garbage["error"]["code"] == -32700 and "not JSON" in garbage["error"]["message"]
        )
        send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": [1, 2]})
        answer = reply()
        assert answer["id"] == 2 and answer["error"]["code"] == -32602
        deep = json.loads('{"a":' * 300 + "1" + "}" * 300)
        send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search", "arguments": deep}})
        answer = reply()
        assert answer["id"] == 3 and answer["error"]["code"] == -32600 and "nests" in answer["error"]["message"]
        # nested 100,000 deep: too deep to parse whole, still answered under its id
        send(
            '{"jsonrpc": "2.0", "method": "tools/call", "params": {"a": '
            + "[" * 100_000
            + "]" * 100_000
            + '}, "id": 5}'
        )
        answer = reply()
        assert answer["id"] == 5 and answer["error"]["code"] == -32700 and "nests" in answer["error"]["message"]
        send({"jsonrpc": "2.0", "id": 4, "method": "tools/list"})
        assert reply()["id"] == 4
    finally:
        process.kill()
        process.wait(timeout=30)


def test_the_mcp_server_answers_initialize_before_the_engine_is_imported() -> None:
    """Issue 36, item 9: `workbench mcp` over stdio took 29 s to start under load, past MCP Inspector's 15 s: it
    imported the engine and the evaluation stack first. The command and the server now import neither; the tools
    are added beside the running session, and a request for them waits for them."""
    code = (
        "import sys, workbench.cli.mcp_command; "
        "print(sorted(m for m in ('workbench.engine', 'workbench.evaluation', 'workbench.mcp_tools', 'torch', "
        "'scipy') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", loaded
