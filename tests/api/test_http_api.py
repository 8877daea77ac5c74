"""The HTTP API as a client sees it: `workbench serve` in a real uvicorn, talked to with httpx."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import anyio
import httpx
import pytest

from tests.conftest import free_port
from tests.live_servers import ApiServer, api_env
from workbench.config import Settings
from workbench.mcp import build_server
from workbench.services.events import read_jsonl_events

pytestmark = pytest.mark.live_server

TOKEN = "s3cret-token-value"


@pytest.fixture(scope="module")
def api(served_data: Settings) -> Iterator[ApiServer]:
    events = Path(served_data.data_dir) / "events.jsonl"
    server = ApiServer(Path(served_data.data_dir), api_env(served_data, WORKBENCH_EVENTS=f"jsonl:{events}"))
    server.wait_ready()
    yield server
    log = server.stop()
    assert "Traceback" not in log, log[-3000:]


@pytest.fixture(scope="module")
def client(api: ApiServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=api.url, timeout=60) as c:
        yield c


def test_health_says_ready_with_the_models_loaded(client: httpx.Client) -> None:
    health = client.get("/health").json()
    assert health["status"] == "ready" and "embedder" in health["models"] and "torch" in health["models"]["reranker"]


def test_search_has_seed_002s_shape_and_the_workbenchs_extras(client: httpx.Client, served_data: Settings) -> None:
    response = client.post(
        "/search",
        json={"query": "  how many vacation days do I get  ", "top_k": 3},
        headers={"X-Trace-Id": "trace-abc"},
    )
    assert response.status_code == 200
    body = response.json()
    assert body["query"] == "how many vacation days do I get" and body["trace_id"] == "trace-abc"
    assert len(body["results"]) == 3
    seed_fields = {"text", "document_id", "chunk_index", "title", "page", "url", "score"}
    for result in body["results"]:
        assert seed_fields <= result.keys() and {"vector_score", "rerank_score", "rank_before"} <= result.keys()
        assert len(result["text"]) <= 800 and result["url"].startswith("https://handbook.halcyon.example/")
    assert len({r["text"] for r in body["results"]}) == 3
    assert set(body["timings"]) == {"embed_ms", "search_ms", "rerank_ms", "total_ms"}
    filtered = client.post("/search", json={"query": "holiday", "filters": {"page": "2", "document": "leave-policy"}})
    assert filtered.status_code == 200 and filtered.json()["results"]
    assert all(r["page"] == 2 for r in filtered.json()["results"])  # "2" is the number 2 (one typing rule)
    events = read_jsonl_events(Path(served_data.data_dir) / "events.jsonl")
    mine = next(e for e in events if e["payload"]["trace_id"] == "trace-abc")
    assert mine["eventType"] == "RetrievalCompleted" and mine["source"] == "rerank-workbench"
    assert mine["payload"]["top_k"] == 3 and mine["payload"]["result_count"] == 3


def test_search_serves_a_skip_policy(client: httpx.Client) -> None:
    """Issue 54, item 4: /search serves a skip policy: with skip_gap 0 every first stage is sure (its order kept, no
    reranker call, said in the response); with a huge gap none is; a negative gap is a 422."""
    query = {"query": "can I carry over unused vacation days", "top_k": 5}
    sure = client.post("/search", json={**query, "skip_gap": 0}).json()
    assert sure["rerank_skipped"] is True
    assert [r["rank_before"] for r in sure["results"]] == [1, 2, 3, 4, 5]
    assert all(r["rerank_score"] is None for r in sure["results"])
    unsure = client.post("/search", json={**query, "skip_gap": 1e9}).json()
    assert unsure["rerank_skipped"] is False and all(r["rerank_score"] is not None for r in unsure["results"])
    assert client.post("/search", json={**query, "skip_gap": -1}).status_code == 422


def test_retrieve_keeps_retrieve_top_docs_behaviour(client: httpx.Client) -> None:
    ok = client.post(
        "/retrieve", json={"collection_name": "demo", "query": "pension contributions", "k": 8, "top_n": 2}
    )
    assert ok.status_code == 200 and len(ok.json()["result"].split("\n")) == 2
    missing = client.post("/retrieve", json={"collection_name": "nope", "query": "pension"})
    assert missing.status_code == 200 and missing.json()["result"].startswith("Error retrieving from collection:")
    empty = client.post("/retrieve", json={"collection_name": "demo", "query": ""})
    assert empty.status_code == 200 and "empty" in empty.json()["result"]


def test_collections(client: httpx.Client) -> None:
    assert [c["name"] for c in client.get("/collections").json()] == ["demo"]
    assert client.get("/collections/demo").json()["count"] == 150
    assert client.get("/collections/absent").status_code == 404
    assert client.get("/docs").status_code == 200 and client.get("/openapi.json").json()["paths"]


BAD_INPUTS = [
    ({}, 422, "query"),
    ({"query": ""}, 422, "query"),
    ({"query": "   \t\n"}, 422, "query"),
    ({"query": "x" * 513}, 422, "513 characters"),
    ({"query": "\x00\x07\x1b"}, 422, "empty"),
    ({"query": 42}, 422, "query"),
    ({"query": ["a", "b"]}, 422, "query"),
    ({"query": "ok", "top_k": 0}, 422, "top_k"),
    ({"query": "ok", "top_k": 21}, 422, "top_k"),
    ({"query": "ok", "top_k": -3}, 422, "top_k"),
    ({"query": "ok", "top_k": "five"}, 422, "top_k"),
    ({"query": "ok", "top_k": 2.5}, 422, "top_k"),
    ({"query": "ok", "k": 0}, 422, "k"),
    ({"query": "ok", "k": 201}, 422, "k"),
    ({"query": "ok", "top_k": 10, "k": 5}, 422, "at least top_k"),
    ({"query": "ok", "filters": {"page": [1, 2]}}, 422, "one value per name"),
    ({"query": "ok", "filters": {"$where": "1"}}, 422, "cannot start with '$'"),
    ({"query": "ok", "filters": {"page": {"$gt": 1}}}, 422, "one value per name"),
    ({"query": "ok", "filters": "page=2"}, 422, "filters"),
    ({"query": "ok", "filters": {"page": None}}, 422, "Filter 'page'"),
    ({"query": "ok", "filters": {f"k{i}": i for i in range(17)}}, 422, "At most 16 filters"),
    ({"query": "ok", "collection": "absent"}, 404, "'absent' not found"),
    ({"query": "ok", "collection": "../../etc"}, 404, "not found"),
    ({"query": "ok", "retrieval": "sparse"}, 422, "retrieval must be one of"),
    ({"query": "ok", "rerank": "maybe"}, 422, "rerank"),
    ({"query": "ok", "min_score": "high"}, 422, "min_score"),
]


@pytest.mark.parametrize(("body", "status", "message"), BAD_INPUTS)
def test_bad_inputs_are_clear_4xx_never_500(client: httpx.Client, body: dict, status: int, message: str) -> None:
    response = client.post("/search", json=body)
    assert response.status_code == status, response.text
    detail = response.json()["message"]
    assert message in detail and "Traceback" not in response.text


@pytest.mark.parametrize(
    ("send", "status"),
    [
        (lambda c: c.post("/search", content=b"{not json", headers={"content-type": "application/json"}), 422),
        (lambda c: c.post("/search", content=b'"just a string"', headers={"content-type": "application/json"}), 422),
        (lambda c: c.post("/search", content=b"x" * 2_000_000, headers={"content-type": "application/json"}), 413),
        (
            lambda c: c.post(
                "/search", content=(b"a" * 500_000 for _ in range(4)), headers={"content-type": "application/json"}
            ),
            413,
        ),
        (
            lambda c: c.post(
                "/search", content=b'{"query": "\xff\xfe bad bytes"}', headers={"content-type": "application/json"}
            ),
            400,
        ),
        (
            lambda c: c.post(
                "/search", content=b'{"query": "\\udcff lone surrogate"}', headers={"content-type": "application/json"}
            ),
            422,
        ),
        (lambda c: c.get("/search"), 405),
        (lambda c: c.post("/session/turn", json={"session_id": "a b c", "role": "user", "text": "hi"}), 422),
        (lambda c: c.post("/session/turn", json={"session_id": "ok", "role": "", "text": "hi"}), 422),
        (lambda c: c.post("/session/turn", json={"session_id": "ok", "role": "user", "text": "x" * 40_000}), 422),
        (lambda c: c.get("/session/ok", params={"limit": 0}), 422),
        (lambda c: c.post("/retrieve", json={"query": "no collection"}), 422),
    ],
)
def test_malformed_requests(client: httpx.Client, send, status: int) -> None:  # type: ignore[no-untyped-def]
    response = send(client)
    assert response.status_code == status, response.text
    assert "Traceback" not in response.text and response.json()["message"]


def test_min_score_drops_the_same_documents_over_http_the_cli_and_mcp(
    client: httpx.Client, served_data: Settings
) -> None:
    query = "how many vacation days do I get"
    full = client.post("/search", json={"query": query, "top_k": 6}).json()["results"]
    scores = [r["score"] for r in full]
    assert scores == sorted(scores, reverse=True)
    threshold = (scores[2] + scores[3]) / 2  # keeps exactly the first three
    kept = [(r["document_id"], r["chunk_index"]) for r in full[:3]]

    http = client.post("/search", json={"query": query, "top_k": 6, "min_score": threshold}).json()
    assert [(r["document_id"], r["chunk_index"]) for r in http["results"]] == kept
    assert http["below_min_score"] == 3 and http["min_score"] == threshold

    cli = subprocess.run(
        [
            str(Path(sys.executable).parent / "workbench"),
            "query",
            query,
            "-n",
            "6",
            "--json",
            "--min-score",
            repr(threshold),
        ],
        env=api_env(served_data),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(cli.stdout)
    assert [(r["metadata"]["document_id"], r["metadata"]["chunk_index"]) for r in result["reranked"]] == kept
    assert result["below_min_score"] == 3
    text = subprocess.run(
        [str(Path(sys.executable).parent / "workbench"), "query", query, "-n", "6", "--min-score", repr(threshold)],
        env=api_env(served_data),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "3 of the top 6 scored below --min-score" in text

    server = build_server(served_data)
    answer = anyio.run(lambda: server.call_tool("search", {"query": query, "top_k": 6, "min_score": threshold}))
    tool = answer.structured_content
    assert [(r["document_id"], r["chunk_index"]) for r in tool["results"]] == kept and tool["below_min_score"] == 3


def test_explain_takes_a_document_the_search_finds_or_a_passage(client: httpx.Client) -> None:
    query = "how many vacation days do I get"
    found = client.post("/search", json={"query": query, "top_k": 1}).json()["results"][0]
    chunk = f"{found['document_id']}::{found['chunk_index']}"
    explained = client.post("/explain", json={"query": query, "document_id": found["document_id"]})
    assert explained.status_code == 200, explained.text
    body = explained.json()
    assert body["document_id"] == chunk and body["model_calls"] == 1 and body["score_scale"] == "logit"
    assert body["score"] == pytest.approx(found["score"], abs=1e-3)
    assert [t["term"] for t in body["terms"]] == ["how", "many", "vacation", "days", "do", "I", "get"]
    passage = client.post("/explain", json={"query": query, "text": "Holidays are 25 days. Parking is free."}).json()
    assert [s["text"] for s in passage["sentences"]] == ["Holidays are 25 days.", "Parking is free."]
    for bad, status, message in [
        ({"query": query}, 422, "either document_id"),
        ({"query": query, "document_id": "x", "text": "y"}, 422, "not both"),
        ({"query": query, "document_id": "nowhere"}, 422, "'nowhere' is not among"),
        ({"query": "", "text": "y"}, 422, "empty"),
        ({"query": query, "text": "y" * 20_001}, 422, "text"),
    ]:
        response = client.post("/explain", json=bad)
        assert response.status_code == status and message in response.json()["message"], response.text


def test_many_clients_at_once(client: httpx.Client, api: ApiServer) -> None:
    queries = [
        q
        for q in json.loads(
            "["
            + ",".join(
                (Path(__file__).parents[2] / "workbench" / "demo_data" / "queries.jsonl").read_text().splitlines()
            )
            + "]"
        )
    ]

    def ask(i: int) -> int:
        with httpx.Client(base_url=api.url, timeout=120) as own:
            return own.post("/search", json={"query": queries[i % len(queries)]["text"], "top_k": 5}).status_code

    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(ask, range(40)))
    assert codes == [200] * 40


def _server(settings: Settings, **extra: str) -> ApiServer:
    server = ApiServer(Path(settings.data_dir), api_env(settings, **extra))
    return server


def test_token_auth_on_every_route_but_health(served_data: Settings) -> None:
    server = _server(served_data, WORKBENCH_API_TOKEN=TOKEN)
    try:
        server.wait_ready()
        with httpx.Client(base_url=server.url, timeout=60) as c:
            assert c.get("/health").status_code == 200
            for method, path in (
                ("post", "/search"),
                ("get", "/collections"),
                ("post", "/retrieve"),
                ("get", "/session/x"),
                ("get", "/docs"),
            ):
                assert getattr(c, method)(path).status_code == 401
            assert (
                c.post("/search", json={"query": "pension"}, headers={"Authorization": "Bearer wrong"}).status_code
                == 401
            )
            assert c.post("/search", json={"query": "pension"}, headers={"Authorization": TOKEN}).status_code == 401
            good = c.post("/search", json={"query": "pension"}, headers={"Authorization": f"Bearer {TOKEN}"})
            assert good.status_code == 200
    finally:
        log = server.stop()
    assert TOKEN not in log


def test_a_missing_model_and_a_store_that_is_down_are_503_with_the_setting(served_data: Settings) -> None:
    server = _server(served_data, RERANKER_MODEL="cross-encoder/not-here")
    try:
        health = server.wait_ready(status="degraded")
        assert "cross-encoder/not-here" in health["models"]["error"]
        with httpx.Client(base_url=server.url, timeout=60) as c:
            response = c.post("/search", json={"query": "pension"})
            assert response.status_code == 503 and "RERANKER_MODEL" in response.json()["message"]
    finally:
        server.stop()
    port = free_port()
    down = _server(served_data, WORKBENCH_CHROMA_URL=f"http://admin:pw123@127.0.0.1:{port}")
    try:
        down.wait_ready()
        with httpx.Client(base_url=down.url, timeout=60) as c:
            response = c.post("/search", json={"query": "pension"})
            detail = response.json()["message"]
            assert response.status_code == 503 and f"127.0.0.1:{port}" in detail and "pw123" not in detail
            assert "WORKBENCH_STORE_TIMEOUT" in detail
    finally:
        down.stop()


def test_a_search_past_the_query_timeout_is_504(served_data: Settings) -> None:
    server = _server(served_data, WORKBENCH_QUERY_TIMEOUT="0.0005")
    try:
        server.wait_ready()
        with httpx.Client(base_url=server.url, timeout=60) as c:
            response = c.post("/search", json={"query": "pension", "k": 100})
            assert response.status_code == 504 and "WORKBENCH_QUERY_TIMEOUT" in response.json()["message"]
            assert c.get("/health").json()["status"] == "ready"  # the server goes on
    finally:
        server.stop()


def test_serve_refuses_other_interfaces_without_a_token(capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main

    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "WORKBENCH_API_TOKEN" in capsys.readouterr().err


def test_serve_on_an_empty_data_folder_builds_the_demo_first(tmp_path: Path, served_data: Settings) -> None:
    data = tmp_path / "fresh"
    data.mkdir()
    server = ApiServer(data, api_env(served_data, WORKBENCH_DATA_DIR=str(data)))
    try:
        server.wait_ready()
        response = httpx.post(f"{server.url}/search", json={"query": "how many vacation days do I get"}, timeout=60)
        assert response.status_code == 200, response.text
        assert len(response.json()["results"]) == 5
    finally:
        log = server.stop()
    assert "Demo collection ready: 150 passages" in log and "Traceback" not in log
