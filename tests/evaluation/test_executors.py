"""Issue 56, spreading the scoring: an evaluation's pairs scored by a Ray cluster's workers (a local cluster this
test starts with `ray start`), or by a pool of real reranker servers one of which stops mid-run, give the figures
of scoring here, to the last digit; a replica that hangs is left out after its first miss; a bad executor setting
is one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.live_servers import ApiServer, api_env, free_port
from tests.rerank_apis import Behaviour, RerankApis
from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import evaluate_dataset
from workbench.evaluation.service import Listeners
from workbench.services.demo import DEMO_COLLECTION, demo_dataset

pytestmark = pytest.mark.live_server

RAY = Path(sys.executable).parent / "ray"
WORKBENCH = Path(sys.executable).parent / "workbench"
ARGS = ("-k", "20", "-n", "10", "--max-queries", "12", "--no-save", "--depth", "none")


def _eval_json(settings: Settings, runs: Path, **env: str) -> dict[str, Any]:
    """`workbench eval demo --json --save-runs RUNS` as a user runs it, scores never read from an earlier run's
    store."""
    done = subprocess.run(
        [str(WORKBENCH), "eval", "demo", "--json", "--save-runs", str(runs), *ARGS],
        env=api_env(settings, WORKBENCH_SCORE_STORE="false", **env), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    return json.loads(done.stdout)


def _figures(summary: dict[str, Any]) -> dict[str, Any]:
    """What an evaluation concludes, without what depends on the clock or on where it ran."""
    dropped = {"seconds", "latency_p50", "latency_p95", "scored_on", "score_cache_hits", "reranker_usage"}
    return {key: value for key, value in summary.items() if key not in dropped}


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """A one-machine Ray cluster started as a user starts one (`ray start --head`), stopped at the end."""
    if not RAY.exists():
        pytest.fail("Ray is not installed: scripts/setup.sh installs the 'ray' extra")
    port = free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    started = subprocess.run(
        [str(RAY), "start", "--head", f"--port={port}", "--num-cpus=2", "--include-dashboard=false",
         "--disable-usage-stats"],
        env=env, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert started.returncode == 0, started.stderr[-3000:]
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run([str(RAY), "stop", "--force"], env=env, capture_output=True, timeout=120)


def test_ray_workers_give_the_figures_of_scoring_here(served_data: Settings, ray_cluster: str, tmp_path: Path) -> None:
    here = _eval_json(served_data, tmp_path / "here")
    spread = _eval_json(
        served_data, tmp_path / "ray", WORKBENCH_SCORE_EXECUTOR=f"ray:{ray_cluster}", WORKBENCH_SCORE_WORKERS="2"
    )
    assert here["scored_on"] is None
    port = ray_cluster.rsplit(":", 1)[1]
    assert spread["scored_on"].startswith("Ray at ") and spread["scored_on"].endswith(f":{port}, 2 workers")
    assert _figures(spread) == _figures(here)  # every figure and the verdict, to the last digit
    assert here["after"] and here["verdict"]
    # the reranked run's scores, as TREC run files: every score to the last digit
    runs = sorted(path.name for path in (tmp_path / "here").glob("*.trec"))
    assert runs and runs == sorted(path.name for path in (tmp_path / "ray").glob("*.trec"))
    for name in runs:
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "here" / name).read_bytes()


def test_a_bad_executor_is_one_line(served_data: Settings) -> None:
    port = free_port()  # nothing listens there
    for value, words in [
        ("spark", "is not an executor: use local, ray"),
        (f"ray:127.0.0.1:{port}", f"Nothing answers at Ray's address 127.0.0.1:{port}"),
        ("ray:nowhere", "which is not HOST:PORT"),
    ]:
        started = time.monotonic()
        done = subprocess.run(
            [str(WORKBENCH), "eval", "demo", *ARGS],
            env=api_env(served_data, WORKBENCH_SCORE_EXECUTOR=value), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        lines = [line for line in done.stderr.splitlines() if line.strip() and "queries" not in line]
        assert done.returncode != 0 and words in done.stderr, done.stderr[-2000:]
        assert "Traceback" not in done.stderr and len(lines) == 1, done.stderr[-2000:]
        assert time.monotonic() - started < 120  # refused at once, not after Ray's minutes of retrying


def test_a_pool_of_two_real_servers_one_stopped_mid_run_gives_the_figures_of_one(served_data: Settings) -> None:
    """Two `workbench serve` processes as one reranker (`http://a,http://b`); the second is stopped after the
    second query of twenty. Its request goes to the first, it is left out from then on, and every figure equals those
    of the first server alone and of the reranker run here. (Stopped early: the queries run two at a time and the
    progress that stops it is told from the calling thread, which a busy machine can leave behind; stopped after the
    fourth of ten, once, every query had been answered before the stop.)"""
    dataset = demo_dataset()
    servers = []
    for name in ("a", "b"):
        data = Path(served_data.data_dir).parent / f"pool-{name}"
        shutil.copytree(served_data.data_dir, data)
        servers.append(ApiServer(data, api_env(served_data.model_copy(update={"data_dir": data}))))
    for server in servers:
        server.wait_ready()
    first, second = servers
    try:
        settings = served_data.model_copy(update={"rerank_concurrency": 1, "score_store": False})

        def evaluated(reranker: str | None, stop_second_at: int | None = None) -> Any:
            engine = Engine(settings)
            plan = engine.plan(collection=DEMO_COLLECTION, k=20, top_n=10, reranker=reranker)

            def progress(done: int, _: int) -> None:
                if done == stop_second_at:
                    second.stop()

            return engine, evaluate_dataset(
                engine, dataset, plan, max_queries=20, listeners=Listeners(progress=progress), depth=()
            )

        engine, pooled = evaluated(f"{first.url},{second.url}", stop_second_at=2)
        assert second.process.poll() is not None  # it really was stopped mid-run
        _, alone = evaluated(first.url)
        _, local = evaluated(str(served_data.reranker_model))
    finally:
        for server in servers:
            if server.process.poll() is None:
                server.stop()
    caller = engine.reranker_of(engine.plan(reranker=f"{first.url},{second.url}")).service  # type: ignore[union-attr]
    assert caller.taken_out == 1  # left out once, never asked again in the run
    assert pooled.after == alone.after == local.after and pooled.before == local.before
    assert [q.after for q in pooled.per_query] == [q.after for q in local.per_query]
    assert pooled.verdict == alone.verdict


def test_a_replica_that_hangs_is_left_out_after_its_first_miss(served_data: Settings) -> None:
    """A replica that does not answer within WORKBENCH_RERANK_TIMEOUT costs the requests in flight when it hung one
    timeout each, not one timeout per request of the run."""
    dataset = demo_dataset()
    with RerankApis(Behaviour(key="unused")) as quick, RerankApis(Behaviour(key="unused", delay=5.0)) as hung:
        settings = served_data.model_copy(update={"rerank_timeout": 1.0, "rerank_concurrency": 1})
        engine = Engine(settings)
        plan = engine.plan(collection=DEMO_COLLECTION, k=20, top_n=10,
                           reranker=f"{quick.base}/service,{hung.base}/service")  # fmt: skip
        started = time.monotonic()
        report = evaluate_dataset(engine, dataset, plan, max_queries=8, depth=())
        took = time.monotonic() - started
        engine_alone = Engine(settings)
        alone = evaluate_dataset(
            engine_alone, dataset, plan.with_(reranker=f"{quick.base}/service"), max_queries=8, depth=()
        )
        asked_hung = len([r for r in hung.behaviour.requests if r["path"].endswith("/rerank")])
    # each replica is sent one search at a time (2 in flight): the hung one misses at most those 2, then is left out
    # (asked in turn for all 8 queries, it would have been sent 4)
    assert 1 <= asked_hung <= 2 and took < 5
    assert report.after == alone.after and report.after_run == alone.after_run


def test_request_spans_keep_the_document_and_token_limits() -> None:
    from workbench.rerankers.served.remote import request_spans

    texts = ["x" * 36, "y" * 76, "z" * 400, "w" * 4, "v" * 4]  # 10, 20, 101, 2 and 2 tokens, each plus the query's 2
    assert request_spans("qqqq", texts, 1000) == [(0, 5)]
    assert request_spans("qqqq", texts, 2) == [(0, 2), (2, 4), (4, 5)]
    # a budget of 40 tokens: 12 + 22 fit; the 103-token text goes alone; the last two together
    assert request_spans("qqqq", texts, 1000, 40) == [(0, 2), (2, 3), (3, 5)]
    assert request_spans("qqqq", [], 10, 40) == []


def test_token_sized_requests_spread_one_query_over_the_replicas(served_data: Settings) -> None:
    dataset = demo_dataset()
    with RerankApis(Behaviour(key="unused")) as first, RerankApis(Behaviour(key="unused")) as second:
        pool = f"{first.base}/service,{second.base}/service"
        split = Engine(served_data.model_copy(update={"rerank_batch_tokens": 600, "rerank_concurrency": 1}))
        plan = split.plan(collection=DEMO_COLLECTION, k=20, top_n=10, reranker=pool)
        report = evaluate_dataset(split, dataset, plan, max_queries=6, depth=())
        sent = [r for server in (first, second) for r in server.behaviour.requests if r["path"].endswith("/rerank")]
        whole = Engine(served_data.model_copy(update={"rerank_concurrency": 1}))
        alone = evaluate_dataset(whole, dataset, plan.with_(reranker=f"{first.base}/service"), max_queries=6, depth=())
    sizes = [sum(len(r["body"]["query"]) // 4 + len(d) // 4 + 2 for d in r["body"]["documents"]) for r in sent]
    assert len(sent) > 6 and all(
        size <= 600 or len(r["body"]["documents"]) == 1 for size, r in zip(sizes, sent, strict=True)
    )
    asked = [sum(r["path"].endswith("/rerank") for r in server.behaviour.requests) for server in (first, second)]
    assert min(asked) > 0  # the queries' requests went to both replicas
    assert report.after_run == alone.after_run and report.after == alone.after


def test_a_workers_copy_is_the_reranker_here_by_its_store_key_or_while_it_has_none_its_backend() -> None:
    from workbench.rerankers.executors import same_reranker

    here = ("cross-encoder:abc:torch:cpu:256", "torch:cpu")
    assert same_reranker(here, ("cross-encoder:abc:torch:cpu:256", "torch:cpu"))
    assert not same_reranker(here, ("cross-encoder:abc:torch:cpu:128", "torch:cpu"))  # another max length
    assert not same_reranker(here, ("cross-encoder:def:torch:cpu:256", "torch:cpu"))  # other weights
    measuring = (None, "torch:cpu")  # `auto` still measuring its backends here: no store key yet
    assert same_reranker(measuring, ("cross-encoder:abc:torch:cpu:256", "torch:cpu"))
    assert not same_reranker(measuring, ("cross-encoder:abc:onnx:cpu:256", "onnx:cpu"))
