"""Where the workbench meets a remote reranker: answers that cannot be right are refused by name, a trickling
answer is cut at one deadline, odd URLs get one clear line, and a password in RERANKER_MODEL never leaves the
process (bodies, headers, the serve log), while the service still receives it as a bearer token."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.live_servers import ApiServer, api_env
from tests.rerank_apis import BAD_ANSWERS, Behaviour, RerankApis, overlap
from workbench.config import Settings
from workbench.errors import ConfigError, ModelError, error_message
from workbench.rerankers.factory import create_reranker

pytestmark = pytest.mark.live_server

QUERY = "vacation days carry over"
DOCS = ["vacation days carry over", "the cafeteria", "days off"]
PASSWORD = "hunter2-secret-pw"


@pytest.fixture
def apis() -> Iterator[RerankApis]:
    with RerankApis(Behaviour(key="unused-key")) as server:
        yield server


@pytest.mark.parametrize("case", sorted(BAD_ANSWERS))
def test_an_answer_that_cannot_be_right_is_a_model_error_naming_the_service(apis: RerankApis, case: str) -> None:
    reranker = create_reranker(f"{apis.base}/bad/{case}", Settings(offline=True, rerank_retries=0))
    with pytest.raises(ModelError) as refused:
        reranker.score(QUERY, DOCS, use_cache=False)
    message = error_message(refused.value)
    assert f"{apis.base}/bad/{case}/rerank" in message and "Traceback" not in message
    expected = {
        "nan": "NaN", "infinity": "Infinity", "true": "not a number", "string": "not a number", "null": "not a number",
        "big": "no probability", "negative": "no probability", "index-repeated": "twice", "index-negative": "index -1",
        "index-extra": "index 99", "index-true": "index true",
    }[case]  # fmt: skip
    assert expected in message, message


@pytest.mark.parametrize(
    ("case", "said"),
    [("traceback", "a traceback of its own (not shown here"), ("deep", "JSON nested too deeply to read")],
)
def test_a_service_answering_its_traceback_or_endless_nesting_is_one_line(
    apis: RerankApis, case: str, said: str
) -> None:
    """Issue 51's recount: a service's own traceback in its 500 is not shown (its paths and code stay its own), and
    JSON nested past the parser's limit is named, not "maximum recursion depth exceeded"."""
    reranker = create_reranker(f"{apis.base}/bad/{case}", Settings(offline=True, rerank_retries=0))
    with pytest.raises(ModelError) as refused:
        reranker.score(QUERY, DOCS, use_cache=False)
    message = error_message(refused.value)
    assert said in message and "/srv/app" not in message and "recursion" not in message, message
    assert len(message.splitlines()) == 1


def test_a_trickling_service_is_cut_off_at_the_rerank_timeout(apis: RerankApis) -> None:
    settings = Settings(offline=True, rerank_timeout=2, rerank_retries=0)
    reranker = create_reranker(f"{apis.base}/bad/trickle", settings)
    started = time.monotonic()
    with pytest.raises(ModelError, match="did not answer within 2 s"):
        reranker.score(QUERY, DOCS, use_cache=False)
    # the answer would take a minute; one deadline per try stops it near 2 s (a read's 0.5 s over, at most)
    assert time.monotonic() - started < 20


def test_a_redirect_names_where_it_points_without_its_secret(apis: RerankApis) -> None:
    reranker = create_reranker(f"{apis.base}/bad/redirect", Settings(offline=True))
    with pytest.raises(ModelError) as refused:
        reranker.score(QUERY, DOCS, use_cache=False)
    message = error_message(refused.value)
    assert "307" in message and "http://127.0.0.1:1/elsewhere" in message and "hidden123" not in message


@pytest.mark.parametrize(
    ("model_id", "words"),
    [
        ("http://", "names no host"),
        ("http://127.0.0.1:99999", "port 99999"),
        ("tei+http://", "names no host"),
        ("cohere:", "names no model"),
        ("jina:  ", "names no model"),
    ],
)
def test_odd_reranker_urls_get_one_clear_line(model_id: str, words: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COHERE_API_KEY", "k" * 12)
    monkeypatch.setenv("JINA_API_KEY", "k" * 12)
    with pytest.raises(ConfigError, match=words):
        create_reranker(model_id, Settings(offline=True))


def test_a_query_string_in_a_service_url_stays_after_the_route(apis: RerankApis) -> None:
    reranker = create_reranker(f"{apis.base}/service?api_key={PASSWORD}", Settings(offline=True))
    scores, _ = reranker.score(QUERY, DOCS, use_cache=False)
    assert scores == pytest.approx([overlap(QUERY, d) for d in DOCS])
    assert apis.behaviour.requests[-1]["path"] == "/service/rerank"
    assert PASSWORD not in reranker.model_id and "api_key=***" in reranker.model_id


@pytest.fixture
def secret_served(apis: RerankApis, served_data: Settings, tmp_path: Path) -> Iterator[ApiServer]:
    host = apis.base.removeprefix("http://")
    env = api_env(served_data, RERANKER_MODEL=f"http://reader:{PASSWORD}@{host}/service")
    server = ApiServer(Path(served_data.data_dir), env)
    server.wait_ready()
    yield server
    server.stop()


def test_a_password_in_reranker_model_never_leaves_the_process(secret_served: ApiServer, apis: RerankApis) -> None:
    seen: list[str] = []
    with httpx.Client(base_url=secret_served.url, timeout=60) as client:
        for method, path, body in [
            ("GET", "/health", None),
            ("GET", "/models", None),
            ("GET", "/collections", None),
            ("POST", "/rerank", {"query": QUERY, "documents": DOCS}),
            ("POST", "/v2/rerank", {"query": QUERY, "documents": DOCS, "model": "nope"}),
            ("POST", "/search", {"query": QUERY, "top_k": 3}),
            ("POST", "/explain", {"query": QUERY, "text": "Vacation days carry over. The cafeteria opens."}),
            ("GET", "/openapi.json", None),
        ]:
            response = client.request(method, path, json=body)
            assert response.status_code < 500 or path == "/explain", (path, response.text)
            seen.append(f"{path} {response.status_code} {dict(response.headers)} {response.text}")
        answer = client.post("/rerank", json={"query": QUERY, "documents": DOCS}).json()
    assert [r["relevance_score"] for r in sorted(answer["results"], key=lambda r: r["index"])] == pytest.approx(
        [overlap(QUERY, d) for d in DOCS]
    )
    assert answer["model"] == f"{apis.base}/service"  # the id without its user info
    log = secret_served.stop()
    everything = "\n".join(seen) + log
    assert PASSWORD not in everything, [s for s in seen if PASSWORD in s] or log[-2000:]
    assert "reader" not in everything
    # ...and the service got it, as the bearer token
    assert {r.get("authorization") for r in apis.behaviour.requests if r["path"] == "/service/rerank"} == {
        f"Bearer {PASSWORD}"
    }


@pytest.mark.parametrize("model_id", ["ftp://host/models/x", "tei+ftp://host/x", "gopher://host"])
def test_a_url_of_no_reranker_kind_is_refused_not_read_as_a_folder(model_id: str) -> None:
    with pytest.raises(ConfigError, match="names no kind of reranker") as refused:
        create_reranker(model_id, Settings(offline=True))
    assert "Looked in" not in str(refused.value)
