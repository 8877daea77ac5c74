"""Every kind of reranker a user might choose, against servers that speak its wire format: the hosted APIs'
shapes (Cohere, Jina, Voyage), text-embeddings-inference's and the Cohere-style service's, served locally by
`rerank_apis` (no hosted API can be reached from here). Retries, splitting, usage, keys that never show, services
that are down, hung, or stop in the middle of an evaluation."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import silent_server
from tests.live_servers import api_env
from tests.rerank_apis import Behaviour, RerankApis, overlap
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ConfigError, ModelError
from workbench.rerankers import ScoreCache, create_reranker, reranker_kind
from workbench.rerankers.factory import split_backend

pytestmark = pytest.mark.live_server

KEY = "sk-test-Wb-secret-7f3a9c"
QUERY = "annual leave days per year"
DOCUMENTS = [
    "Employees get 25 days of annual leave per year.",
    "The cafeteria opens at eight.",
    "Leave requests go to your manager.",
    "Per diem rates for travel.",
    "Annual reviews happen in March.",
    "Days off carry over to next year.",
    "Parking is free.",
]


def test_the_id_form_chooses_the_kind() -> None:
    kinds = {
        "tei+http://127.0.0.1:8080": "tei",
        "http://127.0.0.1:7997": "service",
        "https://rerank.example.test/v1": "service",
        "cohere:rerank-v3.5": "cohere",
        "jina:jina-reranker-v2-base-multilingual": "jina",
        "voyage:rerank-2": "voyage",
        "cross-encoder/ms-marco-MiniLM-L-6-v2": "cross-encoder",
        "/models/minilm@onnx-int8": "cross-encoder",
    }
    assert {model_id: reranker_kind(model_id).name for model_id in kinds} == kinds
    assert split_backend("/models/minilm@onnx-int8") == ("/models/minilm", "onnx-int8")
    assert split_backend("org/name@v2") == ("org/name@v2", None)  # not a backend: part of the id


@pytest.fixture
def apis(monkeypatch: pytest.MonkeyPatch):
    for variable in ("COHERE_API_KEY", "JINA_API_KEY", "VOYAGE_API_KEY"):
        monkeypatch.setenv(variable, KEY)
    with RerankApis(Behaviour(key=KEY)) as server:
        yield server


def _settings(server: RerankApis, **extra: object) -> Settings:
    base = server.base
    return Settings(
        cohere_url=f"{base}/cohere", jina_url=f"{base}/jina", voyage_url=f"{base}/voyage", offline=True, **extra
    )


@pytest.mark.parametrize(
    ("model_id", "scale", "usage"),
    [
        ("cohere:rerank-v3.5", "probability", "billed_units"),
        ("jina:jina-reranker-v2-base-multilingual", "probability", "tokens"),
        ("voyage:rerank-2", "probability", "tokens"),
        ("tei+{base}/tei", "logit", None),
        ("{base}/service", "probability", None),
    ],
)
def test_each_kind_speaks_its_shape(apis: RerankApis, model_id: str, scale: str, usage: str | None) -> None:
    model_id = model_id.format(base=apis.base)
    reranker = create_reranker(model_id, _settings(apis, rerank_max_documents=3))
    scores, cached = reranker.score(QUERY, DOCUMENTS)
    expected = [overlap(QUERY, d) for d in DOCUMENTS]
    if scale == "logit":
        expected = [10 * e - 5 for e in expected]
    assert scores == pytest.approx(expected) and cached == 0
    assert reranker.score_scale == scale
    assert len(apis.behaviour.requests) == 3  # 7 documents at most 3 a request, scores back in input order
    assert reranker.usage.requests == 3 and reranker.usage.documents == 7
    if usage == "billed_units":
        assert reranker.usage.billed_units == 3
    elif usage == "tokens":
        assert reranker.usage.tokens > 0
    assert reranker.score(QUERY, DOCUMENTS)[1] == 7  # the second time, from the score cache
    if model_id.startswith(("cohere", "jina", "voyage")):
        body = apis.behaviour.requests[0]["body"]
        assert body["model"] == model_id.split(":", 1)[1] and body["query"] == QUERY


def test_busy_answers_are_retried_with_backoff_then_given_up(apis: RerankApis) -> None:
    apis.behaviour.busy = [429, 503]
    reranker = create_reranker("cohere:rerank-v3.5", _settings(apis))
    assert reranker.score(QUERY, DOCUMENTS[:2], use_cache=False)[0] == pytest.approx(
        [overlap(QUERY, d) for d in DOCUMENTS[:2]]
    )
    assert len(apis.behaviour.requests) == 3
    apis.behaviour.busy = [503] * 5
    stubborn = create_reranker("cohere:rerank-v3.5", _settings(apis, rerank_retries=2))
    with pytest.raises(ModelError, match=r"answered 503 after 3 tries"):
        stubborn.score(QUERY, DOCUMENTS[:2], use_cache=False)


def test_a_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("VOYAGE_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="VOYAGE_API_KEY"):
        create_reranker("voyage:rerank-2", Settings(offline=True))


def test_a_wrong_key_is_refused_by_name_and_never_shown(
    served_data: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI with a key the service refuses (and whose answer echoes it): the message names the variable,
    not the key."""
    secret = "sk-wrong-Key-0123456789abcdef"
    with RerankApis(Behaviour(key=KEY)) as server:
        env = api_env(served_data, WORKBENCH_COHERE_URL=f"{server.base}/cohere", COHERE_API_KEY=secret)
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "workbench"),
                "query",
                "annual leave",
                "--collection",
                "demo",
                "--reranker",
                "cohere:rerank-v3.5",
                "-k",
                "5",
                "-n",
                "3",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, done.stderr
    assert "COHERE_API_KEY" in done.stderr and "401" in done.stderr
    assert secret not in done.stdout + done.stderr and "Traceback" not in done.stderr


def test_a_service_that_never_answers_is_a_clear_error_within_the_timeout() -> None:
    with silent_server() as port:
        url = f"http://127.0.0.1:{port}"
        started = time.monotonic()
        with pytest.raises(ModelError) as caught:
            create_reranker(url, Settings(rerank_timeout=2, offline=True), cache=ScoreCache())
        elapsed = time.monotonic() - started
    assert elapsed < 5, elapsed
    assert url in str(caught.value) and "WORKBENCH_RERANK_TIMEOUT" in str(caught.value)


def test_a_service_that_is_down_names_its_url_and_the_setting() -> None:
    with socket.socket() as spare:
        spare.bind(("127.0.0.1", 0))
        url = f"http://user:pw999@127.0.0.1:{spare.getsockname()[1]}"
    with pytest.raises(ModelError) as caught:
        create_reranker(url, Settings(offline=True))
    message = str(caught.value)
    assert "cannot be reached" in message and "RERANKER_MODEL" in message and "pw999" not in message


def test_a_service_stopped_mid_evaluation_ends_the_run_without_figures(served_data: Settings) -> None:
    """Five rerank requests in, the service stops listening: `workbench eval` ends with the error and exit 2, and
    prints no figures (nothing partial is presented as complete)."""
    with RerankApis(Behaviour(key=KEY, stop_after=5)) as server:
        env = api_env(served_data)
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "workbench"),
                "eval",
                "demo",
                "--collection",
                "demo",
                "-k",
                "10",
                "--reranker",
                f"{server.base}/service",
                "--json",
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    assert done.returncode == 2, done.stdout[-500:] + done.stderr[-2000:]
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("error: The reranker at") and server.base in error and "cannot be reached" in error
    assert "ndcg" not in done.stdout


def test_the_engine_records_the_scale_and_the_services_figures(apis: RerankApis, served_data: Settings) -> None:
    engine = Engine(served_data.model_copy(update={"reranker_model": f"{apis.base}/service"}))
    result = engine.search("how many vacation days do I get", engine.plan(collection="demo", k=10, top_n=5))
    assert result.score_scale == "probability" and result.reranker_backend.startswith("service ")
    texts = {c.id: c.text for c in result.candidates}
    for row in result.reranked:
        assert row.rerank_score == pytest.approx(overlap(result.query, texts[row.id]))
    assert json.loads(result.to_json())["score_scale"] == "probability"
