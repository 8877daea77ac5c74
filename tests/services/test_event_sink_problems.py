"""An event sink that cannot work must not stop a service, flood its log or be reported as connected: the
service starts anyway with one warning naming WORKBENCH_EVENTS, and /health says what is wrong."""

from __future__ import annotations

import sys
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port, silent_server, wait_until
from tests.live_servers import ApiServer, api_env
from workbench.config import Settings

pytestmark = pytest.mark.live_server


def test_serve_starts_with_an_unopenable_jsonl_sink_and_says_why(served_data: Settings) -> None:
    server = ApiServer(Path(served_data.data_dir), api_env(served_data, WORKBENCH_EVENTS="jsonl:/proc/nope/e.jsonl"))
    try:
        health = server.wait_ready()
        assert health["events"]["sink"] == "off" and "WORKBENCH_EVENTS" in health["events"]["problem"]
        assert httpx.post(f"{server.url}/search", json={"query": "pension"}, timeout=60).status_code == 200
    finally:
        log = server.stop()
    assert "Traceback" not in log and "WORKBENCH_EVENTS" in log


def test_mcp_names_the_setting_and_a_down_broker_is_one_line(served_data: Settings) -> None:
    """`workbench mcp` with an unusable sink still answers; with a broker that is down its stderr carries one line
    for the outage, not the client library's tracebacks."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def exercise(env: dict[str, str], err: Path) -> None:
        params = StdioServerParameters(command=str(Path(sys.executable).parent / "workbench"), args=["mcp"], env=env)
        with err.open("w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
                await session.initialize()
                for i in range(3):
                    result = await session.call_tool("search", {"query": f"holiday {i}", "top_k": 2})
                    assert not result.is_error
                await anyio.sleep(4)  # the sink retries meanwhile

    folder = Path(served_data.data_dir)
    bad = folder / "mcp-bad.err"
    anyio.run(exercise, api_env(served_data, WORKBENCH_EVENTS="jsonl:/proc/nope/e.jsonl"), bad)
    assert "WORKBENCH_EVENTS" in bad.read_text() and "Traceback" not in bad.read_text()
    down = folder / "mcp-down.err"
    anyio.run(exercise, api_env(served_data, WORKBENCH_EVENTS=f"amqp://guest:guest@127.0.0.1:{free_port()}/"), down)
    text = down.read_text()
    assert "Traceback" not in text and len([line for line in text.splitlines() if line.strip()]) <= 3, text
    assert "WORKBENCH_EVENTS" in text and "()" not in text


def test_health_does_not_say_connected_while_the_broker_hangs(served_data: Settings) -> None:
    with silent_server() as port:  # a broker that takes connections and never speaks
        url = f"amqp://guest:guest@127.0.0.1:{port}/"
        server = ApiServer(Path(served_data.data_dir), api_env(served_data, WORKBENCH_EVENTS=url))
        try:
            server.wait_ready()
            assert httpx.post(f"{server.url}/search", json={"query": "pension"}, timeout=60).status_code == 200
            # once the delivery has hung past the stall limit, health says not connected, the event kept
            events = wait_until(
                lambda: (
                    (e := httpx.get(f"{server.url}/health", timeout=30).json()["events"])["connected"] is False and e
                ),
                timeout=60,
            )
            assert events["buffered"] >= 1, events
        finally:
            server.stop()
