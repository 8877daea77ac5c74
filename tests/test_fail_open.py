"""Fail open: a search served under a rerank budget answers the first stage's order, marked, when the reranker is
slow, failing or down, never an error and never a part-reranked list; a reranker failing again and again is skipped
for a while and probed again (the circuit). Through `workbench serve`'s /search and /retrieve (8 concurrent
clients), the official MCP SDK's client and `RetrievalService`, against a real reranker server that hangs on some
queries and fails on others."""

from __future__ import annotations

import json
import math
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest

from tests.conftest import free_port
from tests.live_servers import ApiServer, api_env
from tests.rerank_apis import Behaviour, RerankApis
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import InputError
from workbench.rerankers.served.verdicts import served_file, served_key
from workbench.serving import BUDGET, CIRCUIT_OPEN, SAME_SCORES, RerankGuard, same_scores
from workbench.vocab import DEMO_COLLECTION

pytestmark = pytest.mark.live_server

BUDGET_MS = 400
SLACK_MS = 50  # what the budget's wait may overrun by: waking the waiting thread and marking the answer
HANG, FAIL = "slowly", "broken"
# 24 searches: every third hangs (the server sleeps 4 s on it), every eighth fails (500), the rest answer in time
QUERIES = [
    f"{['vacation days', 'pension plan', 'parental leave', 'remote work'][i % 4]} {i}"
    + (f" {HANG}" if i % 3 == 0 else f" {FAIL}" if i % 8 == 1 else "")
    for i in range(24)
]


def _expected_fallback(query: str) -> str | None:
    return BUDGET if HANG in query.split() else "error" if FAIL in query.split() else None


def _order(answer: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [(r["document_id"], r["chunk_index"], r["text"]) for r in answer["results"]]


@pytest.fixture(scope="module")
def reranker_server() -> Any:
    with RerankApis(Behaviour(key="k", hang_on=HANG, fail_on=FAIL)) as server:
        yield server


@pytest.mark.live_server
def test_search_and_retrieve_under_a_budget_serve_the_first_stage_when_the_reranker_hangs_or_fails(
    served_data: Settings, reranker_server: RerankApis, tmp_path: Path
) -> None:
    events = tmp_path / "events.jsonl"
    env = api_env(
        served_data.model_copy(update={"reranker_model": f"{reranker_server.base}/service"}),
        WORKBENCH_EVENTS=f"jsonl:{events}",
        WORKBENCH_RERANK_CIRCUIT_FAILURES="1000",  # the circuit has its own test: here each search stands alone
        WORKBENCH_RERANK_TIMEOUT="10",
    )
    server = ApiServer(Path(served_data.data_dir), env)
    try:
        server.wait_ready()

        def ask(numbered: tuple[int, str]) -> tuple[str, dict[str, Any], float]:
            number, query = numbered
            body = {"query": query, "top_k": 5, "k": 10, "rerank_budget_ms": BUDGET_MS}
            started = time.perf_counter()
            answer = httpx.post(f"{server.url}/search", json=body, headers={"X-Trace-Id": f"t-{number}"}, timeout=30)
            assert answer.status_code == 200, answer.text
            return query, answer.json(), (time.perf_counter() - started) * 1000

        with ThreadPoolExecutor(8) as clients:
            answered = list(clients.map(ask, enumerate(QUERIES)))
        for query, answer, _ in answered:
            expected = _expected_fallback(query)
            assert answer["reranked"] is (expected is None), (query, answer["rerank_fallback"])
            assert (answer["rerank_fallback"] or "").split(":")[0] == (expected or ""), query
            assert answer["timings"]["rerank_ms"] <= BUDGET_MS + SLACK_MS, (query, answer["timings"])
            if expected is not None:
                assert answer["reranker"] is None and all(r["rerank_score"] is None for r in answer["results"])
                alone = httpx.post(
                    f"{server.url}/search", json={"query": query, "top_k": 5, "k": 10, "rerank": False}, timeout=30
                ).json()
                assert _order(answer) == _order(alone), query  # the first stage's order, nothing mixed in
            else:
                assert answer["reranker"] and all(r["rerank_score"] is not None for r in answer["results"])
        hung = [wall for query, _, wall in answered if HANG in query.split()]
        assert max(hung) < 4000  # none waited for the hung reranker's answer (4 s)
        failed = next(a for q, a, _ in answered if FAIL in q.split())
        assert failed["rerank_fallback"].startswith("error: ") and "Traceback" not in failed["rerank_fallback"]
        # every search logged once, fallback or not
        payloads = [json.loads(line)["payload"] for line in events.read_text().splitlines()]
        traces = [p["trace_id"] for p in payloads]
        assert sorted(t for t in traces if t.startswith("t-")) == sorted(f"t-{n}" for n in range(len(QUERIES)))
        for p in (p for p in payloads if p["trace_id"].startswith("t-")):  # with the reason where the first stage's
            # order was served; the seed's shape otherwise
            expected = _expected_fallback(p["query"])
            assert p.get("rerank_fallback", "").split(":")[0] == (expected or ""), p

        # the header and /retrieve (seed 000's text) serve under a budget too
        hung_query = next(q for q in QUERIES if HANG in q.split())
        by_header = httpx.post(
            f"{server.url}/search", json={"query": hung_query, "top_k": 5, "k": 10},
            headers={"X-Rerank-Budget-Ms": str(BUDGET_MS)}, timeout=30,
        ).json()  # fmt: skip
        assert by_header["rerank_fallback"] == BUDGET
        retrieved = httpx.post(
            f"{server.url}/retrieve",
            json={"collection_name": DEMO_COLLECTION, "query": hung_query, "k": 10, "top_n": 3, "rerank_budget_ms": 99},
            timeout=30,
        ).json()["result"]
        starts = [retrieved.find(r["text"][:60]) for r in by_header["results"][:3]]  # /search trims its texts
        assert starts[0] == 0 and starts == sorted(starts) and -1 not in starts, (retrieved, starts)

        # /rerank (a reranker service proxied) serves the documents in the order sent, said as such, read by the
        # official cohere SDK; an answer in time is reranked as before
        import cohere

        documents = ["Pension plan contributions are matched.", "Vacation days accrue monthly.", "Remote work."]
        client = cohere.ClientV2(api_key="unused", base_url=server.url)
        started = time.perf_counter()
        fell = client.rerank(
            model="default", query=f"pension {HANG}", documents=documents, top_n=2,
            request_options={"additional_headers": {"X-Rerank-Budget-Ms": str(BUDGET_MS)}},
        )  # fmt: skip
        assert (time.perf_counter() - started) * 1000 < 4000  # never the hung reranker's 4 s
        assert [(r.index, r.relevance_score) for r in fell.results] == [(0, 1.0), (1, pytest.approx(2 / 3))]
        raw = httpx.post(
            f"{server.url}/rerank",
            timeout=30,
            json={"query": f"pension {HANG}", "texts": documents, "raw_scores": True, "rerank_budget_ms": BUDGET_MS},
        )
        assert raw.json() == [{"index": i, "score": -(i + 1.0)} for i in range(3)]  # TEI's list: the header says it
        assert raw.headers["X-Rerank-Fallback"] == BUDGET
        said = httpx.post(
            f"{server.url}/v2/rerank",
            timeout=30,
            json={"query": f"pension {FAIL}", "documents": documents, "rerank_budget_ms": BUDGET_MS},
        ).json()
        assert said["reranked"] is False and said["rerank_fallback"].startswith("error: "), said
        kept = client.rerank(
            model="default", query="pension plan", documents=documents,
            request_options={"additional_headers": {"X-Rerank-Budget-Ms": str(BUDGET_MS)}},
        )  # fmt: skip
        assert kept.results[0].index == 0 and getattr(kept, "reranked", True) is True
        refused = httpx.post(f"{server.url}/rerank", json={"query": "q", "documents": ["d"], "rerank_budget_ms": 0})
        assert refused.status_code == 422 and "rerank budget" in refused.text.lower(), refused.text
        refused = httpx.post(f"{server.url}/v1/rerank", json={"query": "q", "documents": ["d"]},
                             headers={"X-Rerank-Budget-Ms": "soon"})  # fmt: skip
        assert refused.status_code == 422 and refused.json()["message"].startswith("A rerank budget is"), refused.text

        # bad budgets: one line each, on the body and the header
        for bad in (0, -5, "NaN", "inf", 1e12, "soon", True):
            refused = httpx.post(f"{server.url}/search", json={"query": "pension", "rerank_budget_ms": bad}, timeout=30)
            assert refused.status_code in (400, 422), (bad, refused.text)
            assert "rerank budget" in refused.text.lower() or "rerank_budget_ms" in refused.text, refused.text
        header = httpx.post(
            f"{server.url}/search", json={"query": "pension"}, headers={"X-Rerank-Budget-Ms": "-1"}, timeout=30
        )
        assert header.status_code == 422 and header.json()["message"].startswith("A rerank budget is"), header.text
    finally:
        log = server.stop()
    assert "Traceback" not in log, log[-3000:]
    assert "served the first stage's order (budget)" in log  # said, with the reason


def test_mcp_and_retrieval_service_serve_the_first_stage_when_the_reranker_is_down_or_hangs(
    served_data: Settings, reranker_server: RerankApis, monkeypatch: pytest.MonkeyPatch
) -> None:
    from langchain_core.vectorstores import InMemoryVectorStore
    from mcp import Client

    from workbench.embeddings import EmbedderAsLangChain
    from workbench.mcp import build_server
    from workbench.services.search import RetrievalService

    down = f"http://127.0.0.1:{free_port()}/service"
    engine = Engine(served_data.model_copy(update={"reranker_model": down, "rerank_circuit_failures": 1000}))
    server = build_server(engine=engine)

    async def calls() -> tuple[Any, Any, Any]:
        async with Client(server) as client:
            # a budget longer than the client's retries of a refused connection (about 3 s): the failure is said
            served = await client.call_tool("search", {"query": "pension plan", "top_k": 3, "rerank_budget_ms": 20000})
            text = await client.call_tool(
                "retrieve_from_chroma",
                {"collection_name": DEMO_COLLECTION, "query": "pension plan", "top_n": 2, "rerank_budget_ms": 20000},
            )
            refused = await client.call_tool("search", {"query": "pension plan", "rerank_budget_ms": -1})
            return served, text, refused

    served, text, refused = anyio.run(calls)
    answer = served.structured_content
    assert answer is not None, served.content
    assert answer["reranked"] is False and answer["rerank_fallback"].startswith("error: "), answer
    alone = engine.search("pension plan", engine.plan(collection=DEMO_COLLECTION, k=50, top_n=3, reranker=None))
    assert [r["text"] for r in answer["results"]] == [c.text for c in alone.reranked]
    assert "".join(b.text for b in text.content) == "\n".join(c.text for c in alone.reranked[:2])
    assert refused.is_error and "rerank_budget_ms" in "".join(b.text for b in refused.content)

    # RetrievalService over a LangChain store, its reranker hanging on the query: the vector order, said
    import workbench.services.search as search_service

    monkeypatch.setattr(search_service, "get_settings", lambda: served_data)  # the process's settings
    texts = [f"Passage {i} about the pension plan and {'leave' if i % 2 else 'holidays'}." for i in range(12)]
    store = InMemoryVectorStore.from_texts(texts, EmbedderAsLangChain(engine.embedder()))
    service = RetrievalService(
        store, reranker=f"{reranker_server.base}/service", candidates=10, rerank_budget_ms=BUDGET_MS
    )
    started = time.perf_counter()
    hung = service.retrieve_with_scores(f"pension {HANG}", k=4)
    assert (time.perf_counter() - started) * 1000 < 4000 and service.last_fallback == BUDGET
    vector = [doc.page_content for doc, _ in store.similarity_search_with_score(f"pension {HANG}", k=4)]
    assert [row["content"] for row in hung] == vector
    fine = service.retrieve_with_scores("pension leave", k=4)
    assert service.last_fallback is None and all(not math.isnan(r["score"]) for r in fine)
    with pytest.raises(InputError, match="rerank budget"):
        RetrievalService(store, reranker="default", rerank_budget_ms=float("nan"))


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_circuit_opens_after_the_failures_skips_half_opens_and_closes_on_success() -> None:
    clock = _Clock()
    guard = RerankGuard(failures=3, cooldown_s=30, clock=clock)
    calls: list[str] = []

    def failing(deadline: float) -> str:
        calls.append("fail")
        raise ConnectionError("refused")

    def working(deadline: float) -> str:
        calls.append("ok")
        return "scores"

    for _ in range(2):
        assert guard.run("r", failing, 500).fallback.startswith("error: ")
        assert guard.circuit("r").state == "closed"
    assert guard.run("r", working, 500).value == "scores"  # a success in between: the count starts again
    assert guard.circuit("r").failures_in_a_row == 0
    for _ in range(3):
        guard.run("r", failing, 500)
    assert guard.circuit("r").state == "open" and len(calls) == 6
    clock.now += 29.9
    assert guard.run("r", working, 500).fallback == CIRCUIT_OPEN and len(calls) == 6  # skipped: not called
    assert guard.run("other", working, 500).value == "scores"  # each reranker has its own circuit
    clock.now += 0.2
    assert guard.run("r", failing, 500).fallback.startswith("error: ")  # the probe fails: open again
    assert guard.circuit("r").state == "open" and guard.circuit("r").opened_at == clock.now
    clock.now += 30
    assert guard.run("r", working, 500).value == "scores"  # the probe answers: closed
    assert guard.circuit("r").state == "closed" and guard.run("r", working, 500).value == "scores"

    # a rerank past its budget is a failure too, and what it returns later is never used
    slow_guard = RerankGuard(failures=1, cooldown_s=30, clock=clock)
    started = time.perf_counter()
    late = slow_guard.run("s", lambda deadline: time.sleep(1.0) or "late", 100)
    assert late.value is None and late.fallback == BUDGET and time.perf_counter() - started < 0.5
    assert slow_guard.circuit("s").state == "open"

    # a run check that fires on what came back (every candidate scored the same) serves the first stage, and counts
    checked_guard = RerankGuard(failures=2, cooldown_s=30, clock=clock)
    for _ in range(2):
        flat = checked_guard.run(
            "c", lambda deadline: [0.5, 0.5, 0.5], 500, check=lambda s: SAME_SCORES if same_scores(s) else None
        )
        assert flat.value is None and flat.fallback == "run check: every candidate got the same score"
    assert checked_guard.circuit("c").state == "open"
    assert same_scores([1.0, 1.0 + 1e-9]) and not same_scores([1.0, 1.001]) and not same_scores([1.0])


def test_the_engine_serves_the_first_stage_order_and_never_caches_a_fallback(
    served_data: Settings, reranker_server: RerankApis
) -> None:
    engine = Engine(served_data.model_copy(update={"reranker_model": f"{reranker_server.base}/service"}))
    plan = engine.plan(collection=DEMO_COLLECTION, k=10, top_n=5)
    fell_back = engine.search(f"pension {HANG}", plan, rerank_budget_ms=BUDGET_MS)
    assert fell_back.rerank_fallback == BUDGET and fell_back.reranker_model is None
    alone = engine.search(f"pension {HANG}", engine.plan(collection=DEMO_COLLECTION, k=10, top_n=5, reranker=None))
    assert [c.id for c in fell_back.reranked] == [c.id for c in alone.reranked]
    assert fell_back.timings.rerank_ms <= BUDGET_MS + SLACK_MS
    # the next search tries the reranker again (no fallback kept as the answer); without a budget it waits
    waited = engine.search(f"pension {HANG}", plan)
    assert waited.rerank_fallback is None and waited.reranker_model is not None
    assert not waited.cache.result_cached
    for bad in (0, -1, math.nan, math.inf, 10**9, "soon"):
        with pytest.raises(InputError, match="rerank budget"):
            engine.search("pension", plan, rerank_budget_ms=bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        Settings(rerank_budget_ms=0)

    # a served copy the last parity audit found unfaithful is not asked: the first stage's order, the check said
    audits = served_file(engine.settings.exports_dir)
    audits.parent.mkdir(parents=True, exist_ok=True)
    audits.write_text(json.dumps({served_key(f"{reranker_server.base}/service"): {
        "served": "the copy", "model": "cross-encoder/x", "faithful": False, "reasons": ["top 3 changed on 40 %"],
        "measured_at": "2026-11-30T08:00:00Z"}}))  # fmt: skip
    try:
        asked = len(reranker_server.behaviour.requests)
        unfaithful = engine.search("pension plan", plan, rerank_budget_ms=BUDGET_MS)
        assert unfaithful.rerank_fallback.startswith("run check: the served copy the copy disagrees with its local")
        assert "top 3 changed on 40 %" in unfaithful.rerank_fallback and unfaithful.reranker_model is None
        assert len(reranker_server.behaviour.requests) == asked  # never asked
        from workbench.app.widgets import fallback_note  # Explore's and Compare's banner

        assert fallback_note(unfaithful).startswith(  # type: ignore[union-attr]
            "Served without reranking: a run check says the reranker is not running as intended (the served copy"
        )
    finally:
        audits.unlink()


def test_explore_shows_a_search_served_unreranked_as_such(
    served_data: Settings, reranker_server: RerankApis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The app under WORKBENCH_RERANK_BUDGET_MS shows what an app would be served: a banner with the reason, and
    the lists in the first stage's order (never as reranked)."""
    from streamlit.testing.v1 import AppTest

    from workbench.app import ENTRY_SCRIPT
    from workbench.app.state import engine_resource

    monkeypatch.setenv("WORKBENCH_DATA_DIR", str(served_data.data_dir))
    monkeypatch.setenv("WORKBENCH_EMBEDDING_MODEL", served_data.embedding_model)
    monkeypatch.setenv("RERANKER_MODEL", f"{reranker_server.base}/service")
    monkeypatch.setenv("WORKBENCH_RERANK_BUDGET_MS", str(BUDGET_MS))
    monkeypatch.setenv("WORKBENCH_CONFIG", "")
    engine_resource.clear()
    try:
        at = AppTest.from_file(str(ENTRY_SCRIPT), default_timeout=180)
        at.run()
        at.text_input(key="w.query").input(f"vacation days {HANG}").run()
        assert not at.exception, at.exception
        banners = [w.value for w in at.warning if "Served without reranking" in w.value]
        assert banners == ["Served without reranking: the reranker took longer than the rerank budget "
                           "(WORKBENCH_RERANK_BUDGET_MS). Both lists are the first stage's order, as an app would "
                           "get it now."]  # fmt: skip
        at.text_input(key="w.query").input("vacation days").run()
        assert not [w for w in at.warning if "Served without reranking" in w.value]
    finally:
        engine_resource.clear()
