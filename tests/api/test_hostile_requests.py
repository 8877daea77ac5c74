"""Hostile and odd requests the services must refuse cleanly: a deeply nested `meta` (it used to break a session
for good), a foreign Host header (DNS rebinding against a tokenless API), invisible-only queries, a retried turn."""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from tests.live_servers import ApiServer, api_env
from workbench.config import Settings
from workbench.errors import InputError
from workbench.inputs import validate_query

pytestmark = pytest.mark.live_server

INVISIBLE = ["\u200b\u200b", "\u202e\u202d", "\ufeff", " \u200b\ufeff\u2060 ", "\u00ad", "\u200e\u200f"]


@pytest.fixture(scope="module")
def api(served_data: Settings):
    server = ApiServer(Path(served_data.data_dir), api_env(served_data))
    try:
        server.wait_ready()
        yield server
    finally:
        log = server.stop()
        assert "Traceback" not in log, log[-3000:]
        assert "INFO workbench.api: ready: embedder" in log  # serve says when it is ready


def _nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth):
        value = {"x": value}
    return value


def test_a_deeply_nested_meta_is_refused_and_the_session_stays_usable(api: ApiServer) -> None:
    with httpx.Client(base_url=api.url, timeout=60) as c:
        assert c.post("/session/turn", json={"session_id": "deep", "role": "user", "text": "hi"}).status_code == 200
        body = json.dumps({"session_id": "deep", "role": "user", "text": "x", "meta": _nested(256)})
        refused = c.post("/session/turn", content=body, headers={"content-type": "application/json"})
        assert refused.status_code == 422 and "meta" in refused.json()["message"], refused.text
        assert "nested" in refused.json()["message"]
        assert c.post("/session/turn", json={"session_id": "deep", "role": "user", "text": "ok"}).status_code == 200
        view = c.get("/session/deep")
        assert view.status_code == 200 and [t["text"] for t in view.json()["turns"]] == ["hi", "ok"]
        shallow = {"session_id": "deep", "role": "user", "text": "fine", "meta": _nested(8)}
        assert c.post("/session/turn", json=shallow).status_code == 200


def test_a_foreign_host_header_is_refused(api: ApiServer) -> None:
    """A web page that rebinds its own name to 127.0.0.1 sends its name as Host: the API must not answer it."""
    port = api.url.rsplit(":", 1)[1]
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.nip.io", ""):
        refused = httpx.get(f"{api.url}/collections", headers={"Host": host}, timeout=30)
        assert refused.status_code == 421, (host, refused.status_code)
        assert "Host" in refused.json()["message"]
    for host in (f"127.0.0.1:{port}", f"localhost:{port}", "localhost", "127.0.0.1"):
        assert httpx.get(f"{api.url}/collections", headers={"Host": host}, timeout=30).status_code == 200, host


@pytest.mark.parametrize("query", INVISIBLE)
def test_invisible_only_queries_are_empty(query: str) -> None:
    with pytest.raises(InputError, match="empty"):
        validate_query(query)


def test_invisible_only_queries_are_refused_over_http(api: ApiServer) -> None:
    for query in INVISIBLE:
        response = httpx.post(f"{api.url}/search", json={"query": query}, timeout=30)
        assert response.status_code == 422 and "empty" in response.json()["message"], (repr(query), response.text)
    assert validate_query("\u200bvacation\u200b days") == "vacation days"


def test_a_retried_turn_with_the_same_turn_id_is_stored_once(api: ApiServer) -> None:
    with httpx.Client(base_url=api.url, timeout=60) as c:
        turn = {"session_id": "retry", "role": "user", "text": "hello", "turn_id": "t-1"}
        first = c.post("/session/turn", json=turn).json()
        again = c.post("/session/turn", json=turn).json()
        assert first["total_turns"] == again["total_turns"] == 1
        other = c.post("/session/turn", json={**turn, "turn_id": "t-2"}).json()
        assert other["total_turns"] == 2
        unkeyed = c.post("/session/turn", json={k: v for k, v in turn.items() if k != "turn_id"})
        assert unkeyed.json()["total_turns"] == 3  # without a key every turn is new, as before
        bad = c.post("/session/turn", json={**turn, "turn_id": "x" * 200})
        assert bad.status_code == 422 and "turn_id" in bad.json()["message"]


@pytest.mark.parametrize(
    ("content", "content_type", "status", "words"),
    [
        (b'{"query": "\xff\xfe"}', "application/json", 400, "not UTF-8"),
        (b"[" * 5000 + b"]" * 5000, "application/json", 422, "nested"),
        (json.dumps({"query": "x", "filters": _nested(40)}).encode(), "application/json", 422, "nested 4"),
        (b'{"query": "pension"}', "text/plain", 415, "Content-Type: application/json"),
        (b'{"query": "x",,}', "application/json", 422, "not valid JSON"),
    ],
)
def test_bodies_that_are_not_json_say_what_is_wrong(
    api: ApiServer, content: bytes, content_type: str, status: int, words: str
) -> None:
    response = httpx.post(f"{api.url}/search", content=content, headers={"content-type": content_type}, timeout=30)
    assert response.status_code == status and words in response.json()["message"], response.text


def test_unknown_fields_are_refused_by_name(api: ApiServer) -> None:
    response = httpx.post(f"{api.url}/search", json={"query": "pension", "topk": 3}, timeout=30)
    assert response.status_code == 422 and "topk" in response.json()["message"], response.text
    turn = {"session_id": "s", "role": "user", "text": "x", "metaa": {}}
    assert httpx.post(f"{api.url}/session/turn", json=turn, timeout=30).status_code == 422


def test_errors_never_show_the_servers_paths(api: ApiServer, served_data: Settings) -> None:
    response = httpx.post(f"{api.url}/search", json={"query": "pension", "collection": "nope"}, timeout=30)
    detail = response.json()["message"]
    assert response.status_code == 404 and "'nope'" in detail
    assert str(served_data.data_dir) not in detail and "/tmp" not in detail and "<server folder>" in detail
    text = httpx.post(f"{api.url}/retrieve", json={"collection_name": "nope", "query": "pension"}, timeout=30)
    assert str(served_data.data_dir) not in text.json()["result"]


def test_a_collection_named_by_a_number_is_refused_in_words() -> None:
    from workbench.engine import Engine
    from workbench.services.search import retrieve_text

    text = retrieve_text(Engine(Settings(offline=True, reranker_model="none")), 123, "pension")  # type: ignore[arg-type]
    assert text.startswith("Error retrieving from collection:") and "named by text" in text


def test_a_search_past_the_timeout_stops_using_the_model(served_data: Settings, real_reranker_dir: Path) -> None:
    """Four searches of 150 candidates answered 504 after half a second stop at the reranker's next batch: the
    pairs scored settle far below the 4 x 150 that finishing them would score, and a small search right after is
    answered (the abandoned ones do not starve it)."""
    env = api_env(served_data, RERANKER_MODEL=str(real_reranker_dir), WORKBENCH_QUERY_TIMEOUT="0.5")
    server = ApiServer(Path(served_data.data_dir), env)
    try:
        server.wait_ready()
        with httpx.Client(base_url=server.url, timeout=60) as c:
            for i in range(4):
                big = c.post("/search", json={"query": f"pension and leave rules {i}", "k": 150, "top_k": 5})
                assert big.status_code == 504, big.text
            scored, previous = -1, -2
            for _ in range(40):  # until the count stops growing
                time.sleep(0.5)
                previous, scored = scored, c.get("/health").json()["reranker"]["documents"]
                if scored == previous:
                    break
            assert scored == previous and scored < 0.6 * 4 * 150, scored
            small = c.post("/search", json={"query": "holiday carry over", "k": 5, "top_k": 3})
            assert small.status_code == 200, small.text
    finally:
        log = server.stop()
    assert "Traceback" not in log


@pytest.mark.parametrize(
    ("path", "body", "where"),
    [
        ("/rerank", '{"query": "vacation", "documents": ["fine", "bad \\ud800 text"]}', "documents[1]"),
        ("/v2/rerank", '{"query": "vacation", "documents": [{"text": "\\udfff"}]}', "documents[0].text"),
        ("/session/turn", '{"session_id": "s-sur", "role": "user", "text": "bad \\ud800"}', "text"),
        ("/search", '{"query": "pension", "filters": {"t\\ud800": 1}}', "filters.t"),
    ],
)
def test_a_lone_surrogate_is_a_422_naming_where_it_is(api: ApiServer, path: str, body: str, where: str) -> None:
    """Valid JSON, invalid text: no model or store can encode it, so it is refused before any route runs (it was a
    500 on /rerank and a 503 blaming the store on a session turn)."""
    response = httpx.post(f"{api.url}{path}", content=body, headers={"content-type": "application/json"}, timeout=30)
    message = response.json()["message"]
    assert response.status_code == 422 and "lone surrogate" in message and where in message, response.text
    assert response.json()["detail"][0]["msg"] == message
    later = httpx.post(
        f"{api.url}/session/turn", json={"session_id": "s-sur", "role": "user", "text": "ok"}, timeout=30
    )
    assert later.status_code == 200, later.text
