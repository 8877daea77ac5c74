"""An evaluation against a reranker that is a service sends its searches at once (WORKBENCH_RERANK_CONCURRENCY),
and its figures are the same to the last digit as one search at a time."""

from __future__ import annotations

import pytest

from tests.rerank_apis import Behaviour, RerankApis
from workbench.engine import Engine
from workbench.evaluation import evaluate_dataset
from workbench.services.demo import DEMO_COLLECTION, demo_dataset

pytestmark = pytest.mark.live_server


@pytest.mark.parametrize("concurrency", [1, 4])
def test_a_service_reranker_is_asked_concurrently_with_the_same_figures(demo_engine: Engine, concurrency: int) -> None:
    dataset = demo_dataset()
    with RerankApis(Behaviour(key="unused", delay=0.3)) as server:
        settings = demo_engine.settings.model_copy(update={"rerank_concurrency": concurrency})
        engine = Engine(settings, registry=demo_engine.registry, embedder=demo_engine.embedder())
        plan = engine.plan(collection=DEMO_COLLECTION, k=20, top_n=10, reranker=f"{server.base}/service")
        report = evaluate_dataset(engine, dataset, plan, max_queries=12)
        # the same searches one at a time, on a fresh engine (no cached scores): the same figures
        alone = Engine(
            settings.model_copy(update={"rerank_concurrency": 1}), registry=demo_engine.registry,
            embedder=demo_engine.embedder(),
        )  # fmt: skip
        again = evaluate_dataset(alone, dataset, plan, max_queries=12)
        most = server.behaviour.most_in_flight
    figures = [[(o.query_id, o.before, o.after) for o in r.per_query] for r in (report, again)]  # not their times
    assert report.after == again.after and figures[0] == figures[1]
    assert report.after_run == again.after_run
    # one at a time never overlaps; at 4, requests overlap (up to 4: each waits 0.3 s at the server)
    assert most == 1 if concurrency == 1 else 1 < most <= concurrency


def test_replicas_of_one_service_are_asked_in_turn_with_the_same_figures(demo_engine: Engine) -> None:
    """`http://a,http://b` names two replicas: requests alternate between them, a replica that is down hands its
    try to the next, and the figures are those of one server."""
    from tests.conftest import free_port

    dataset = demo_dataset()
    settings = demo_engine.settings.model_copy(update={"rerank_concurrency": 4})

    def evaluated(reranker: str):  # type: ignore[no-untyped-def]
        engine = Engine(settings, registry=demo_engine.registry, embedder=demo_engine.embedder())
        plan = engine.plan(collection=DEMO_COLLECTION, k=20, top_n=10, reranker=reranker)
        return evaluate_dataset(engine, dataset, plan, max_queries=8)

    with RerankApis(Behaviour(key="unused")) as first, RerankApis(Behaviour(key="unused")) as second:
        both = evaluated(f"{first.base}/service,{second.base}/service")
        asked = [len(first.behaviour.requests), len(second.behaviour.requests)]
        alone = evaluated(f"{first.base}/service")
        down = evaluated(f"{first.base}/service,http://127.0.0.1:{free_port()}/service")
    assert sum(asked) >= 8 and abs(asked[0] - asked[1]) <= 1  # round-robin: one each in turn
    assert both.after_run == alone.after_run == down.after_run and both.after == alone.after
    assert both.reranker_model == f"{first.base}/service,{second.base}/service"


def test_a_tuning_run_asks_a_service_for_each_querys_union_at_once_with_the_same_figures(demo_engine: Engine) -> None:
    """A tuning run against a service sends each query's union of candidates as one request, queries at once
    (WORKBENCH_RERANK_CONCURRENCY), and its cells equal a run one request at a time."""
    from workbench.evaluation.tuning import tune

    dataset = demo_dataset()

    def tuned(concurrency: int, server: RerankApis):  # type: ignore[no-untyped-def]
        settings = demo_engine.settings.model_copy(update={"rerank_concurrency": concurrency})
        engine = Engine(settings, registry=demo_engine.registry, embedder=demo_engine.embedder())
        plan = engine.plan(collection=DEMO_COLLECTION, k=10, top_n=5, reranker=f"{server.base}/service")
        return tune(engine, dataset, plan, first_stages=["dense", "bm25"], ks=[5, 10], max_queries=8, timing_queries=1)

    with RerankApis(Behaviour(key="unused", delay=0.2)) as server:
        run = tuned(4, server)
        most = server.behaviour.most_in_flight
        asked = [r for r in server.behaviour.requests if r["path"].endswith("/rerank")]
    with RerankApis(Behaviour(key="unused")) as server:
        serial = tuned(1, server)
    assert 1 < most <= 4
    # the timing first (a search to load, then one query at k=5 and k=10), then one request per query's union: the
    # cells ask nothing
    assert len(asked) == 3 + 8 and sum(len(r["body"]["documents"]) for r in asked) == run.pairs_scored
    assert run.scores == serial.scores and run.pairs_scored == serial.pairs_scored
    assert [c.ndcg_after for c in run.cells] == [c.ndcg_after for c in serial.cells]


def test_each_replica_is_sent_its_own_token(demo_engine: Engine) -> None:
    """Issue 51: in a replica list only the first URL's token counted (`http://h,http://:TOKEN@h` → 401). Each
    replica is sent the token in its own URL, and one without a token is sent none (no setting names one)."""
    dataset = demo_dataset()
    settings = demo_engine.settings.model_copy(update={"rerank_concurrency": 2, "rerank_api_key": None})

    def evaluated(reranker: str):  # type: ignore[no-untyped-def]
        engine = Engine(settings, registry=demo_engine.registry, embedder=demo_engine.embedder())
        plan = engine.plan(collection=DEMO_COLLECTION, k=10, top_n=5, reranker=reranker)
        return evaluate_dataset(engine, dataset, plan, max_queries=6)

    with RerankApis(Behaviour(key="unused")) as first, RerankApis(Behaviour(key="unused")) as second:
        a, b = first.base.removeprefix("http://"), second.base.removeprefix("http://")
        evaluated(f"http://:tok-a@{a}/service,http://:tok-b@{b}/service")
        sent = {server: {r["authorization"] for r in server.behaviour.requests} for server in (first, second)}
        assert sent == {first: {"Bearer tok-a"}, second: {"Bearer tok-b"}}
        first.behaviour.requests.clear()
        second.behaviour.requests.clear()
        report = evaluated(f"http://{a}/service,http://:tok-b@{b}/service")
        assert {r["authorization"] for r in first.behaviour.requests} == {None}
        assert {r["authorization"] for r in second.behaviour.requests} == {"Bearer tok-b"}
    assert "tok-a" not in report.reranker_model and "tok-b" not in report.reranker_model  # never shown
