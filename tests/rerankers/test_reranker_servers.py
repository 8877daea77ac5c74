"""Real reranker servers: Infinity (installed by `scripts/setup.sh --test` into .venv-infinity, serving the shared
QA cross-encoder offline) and `workbench serve` as a reranker service for a second workbench. Each must give the
local model's top 10 with the same scores once both are on one scale; the side-by-side comparison of all of them
prints figures that an independent computation repeats."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from sentence_transformers import CrossEncoder

from tests.conftest import free_port, running
from tests.live_servers import INFINITY, ApiServer, api_env
from workbench.config import Settings
from workbench.engine import Engine
from workbench.rerankers import to_probability
from workbench.services.demo import sample_queries

pytestmark = [pytest.mark.slow, pytest.mark.live_server]


@pytest.fixture(scope="module")
def infinity(real_reranker_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """Infinity serving the shared QA cross-encoder on a free port; yields its URL."""
    if not INFINITY.exists():
        pytest.fail(f"Infinity is missing at {INFINITY}: run `bash scripts/setup.sh --test`.")
    port = free_port()
    folder = tmp_path_factory.mktemp("infinity")
    command = [
        str(INFINITY), "v2", "--model-id", str(real_reranker_dir), "--host", "127.0.0.1", "--port", str(port),
        "--engine", "torch", "--device", "cpu",
    ]  # fmt: skip
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin", "HOME": str(folder), "INFINITY_ANONYMOUS_USAGE_STATS": "0"}
    url = f"http://127.0.0.1:{port}"
    with running(command, f"{url}/health", folder / "infinity.log", env=env, timeout=180):
        yield url


def _same_as_local(local: Engine, remote: Engine, queries: list[str], k: int) -> int:
    """Every query's top 10 through both engines: equal ids, equal scores on the 0-1 scale (within 1e-3).
    Returns how many pairs were compared."""
    compared = 0
    for query in queries:
        mine = local.search(query, local.plan(collection="demo", k=k, top_n=10))
        theirs = remote.search(query, remote.plan(collection="demo", k=k, top_n=10))
        assert [r.id for r in theirs.reranked] == [r.id for r in mine.reranked], query
        assert theirs.score_scale == "probability" and mine.score_scale == "logit"
        mapped = {c.id: to_probability(c.rerank_score, "logit") for c in mine.candidates}
        for c in theirs.candidates:
            assert c.rerank_score == pytest.approx(mapped[c.id], abs=1e-3), (query, c.id)
            compared += 1
    return compared


def test_infinity_gives_the_local_models_top_10_on_the_demos_50_queries(
    infinity: str, served_data: Settings, real_reranker_dir: Path
) -> None:
    local = Engine(served_data.model_copy(update={"reranker_model": str(real_reranker_dir)}))
    remote = Engine(served_data.model_copy(update={"reranker_model": infinity}))
    queries = [q.text for q in sample_queries()]
    assert len(queries) == 50
    assert _same_as_local(local, remote, queries, k=30) == 50 * 30
    assert remote.reranker().usage.tokens > 0  # Infinity reports the tokens it read


def test_a_second_workbench_reranks_through_workbench_serve(served_data: Settings, real_reranker_dir: Path) -> None:
    server = ApiServer(Path(served_data.data_dir), api_env(served_data, RERANKER_MODEL=str(real_reranker_dir)))
    try:
        server.wait_ready()
        models = httpx.get(f"{server.url}/models", timeout=30).json()
        # the folder's name, never where it is on the server
        assert models["data"][0]["id"] == real_reranker_dir.name and "rerank" in models["data"][0]["capabilities"]
        answer = httpx.post(
            f"{server.url}/rerank",
            json={
                "query": "how many vacation days",
                "documents": ["Parking is free.", {"text": "25 days of leave."}],
                "top_n": 1,
                "return_documents": True,
            },
            timeout=60,
        ).json()
        assert len(answer["results"]) == 1 and answer["results"][0]["index"] == 1
        assert 0 <= answer["results"][0]["relevance_score"] <= 1 and answer["results"][0]["document"]["text"]
        for bad in (
            {"query": "x", "documents": []},
            {"query": " ", "documents": ["a"]},
            {"query": "x", "documents": ["a"], "model": "someone-else"},
        ):
            assert httpx.post(f"{server.url}/rerank", json=bad, timeout=30).status_code == 422, bad
        local = Engine(served_data.model_copy(update={"reranker_model": str(real_reranker_dir)}))
        remote = Engine(served_data.model_copy(update={"reranker_model": server.url}))
        queries = [q.text for q in sample_queries()][:12]
        assert _same_as_local(local, remote, queries, k=20) == 12 * 20
    finally:
        log = server.stop()
    assert "Traceback" not in log


def test_rerank_needs_the_token_like_every_route(served_data: Settings) -> None:
    server = ApiServer(Path(served_data.data_dir), api_env(served_data, WORKBENCH_API_TOKEN="tok-123456"))
    try:
        server.wait_ready()
        assert (
            httpx.post(f"{server.url}/rerank", json={"query": "x", "documents": ["a"]}, timeout=30).status_code == 401
        )
        assert httpx.get(f"{server.url}/models", timeout=30).status_code == 401
        ok = httpx.post(
            f"{server.url}/rerank",
            json={"query": "x", "documents": ["a"]},
            headers={"Authorization": "Bearer tok-123456"},
            timeout=60,
        )
        assert ok.status_code == 200
    finally:
        server.stop()


def test_eval_compares_local_and_served_rerankers_with_figures_an_independent_computation_repeats(
    infinity: str, served_data: Settings, real_reranker_dir: Path, shared_dir: Path
) -> None:
    import pytrec_eval

    from workbench.evaluation import Dataset, randomization_test
    from workbench.paths import demo_dir

    scifact = shared_dir / "models" / "minilm-l6-scifact-reranker"
    ids = [str(real_reranker_dir), str(scifact), infinity]
    argv = [
        str(Path(sys.executable).parent / "workbench"),
        "eval",
        "demo",
        "--collection",
        "demo",
        "-k",
        "20",
        "--max-queries",
        "12",
        "--json",
    ]
    for rid in ids:
        argv += ["--reranker", rid]
    done = subprocess.run(argv, env=api_env(served_data), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    comparison = json.loads(done.stdout)
    rows = {row["reranker"]: row for row in comparison["rows"]}
    assert list(rows) == ids and comparison["queries"] == 12
    for row in rows.values():
        assert row["latency_ms_p50"] > 0 and row["latency_ms_p95"] >= row["latency_ms_p50"]
        assert row["judged_at_10"] > 0 and row["cost_per_1000_queries"] is None  # nothing hosted, nothing billed
        first = row["vs_first_stage"]["ndcg@10"]
        assert first["ci_low"] <= first["delta"] <= first["ci_high"]
    # The same figures computed independently: candidates from the engine, scores from sentence-transformers'
    # own CrossEncoder, each document's best chunk, nDCG@10 from pytrec_eval.
    dataset = Dataset.from_beir(demo_dir())
    items = list(dataset.queries.items())[:12]
    engine = Engine(served_data.model_copy(update={"reranker_model": "none"}))
    model = CrossEncoder(str(real_reranker_dir), max_length=256)
    before, after = {}, {}
    for qid, text in items:
        candidates = engine.search(text, engine.plan(collection="demo", k=20, top_n=10)).candidates
        logits = model.predict([(text, c.text) for c in candidates], activation_fn=__import__("torch").nn.Identity())
        before[qid], after[qid] = {}, {}
        for c, logit in zip(candidates, logits, strict=True):
            doc = str(c.metadata["document_id"])
            before[qid][doc] = max(before[qid].get(doc, -1e9), c.vector_score)
            after[qid][doc] = max(after[qid].get(doc, -1e9), float(logit))
    qrels = {qid: dataset.qrels[qid] for qid, _ in items}
    judged = [q for q in qrels if any(g > 0 for g in qrels[q].values())]
    measure = pytrec_eval.RelevanceEvaluator({q: qrels[q] for q in judged}, {"ndcg_cut.10"})
    ndcg_before = measure.evaluate({q: before[q] for q in judged})
    ndcg_after = measure.evaluate({q: after[q] for q in judged})
    a = [ndcg_before[q]["ndcg_cut_10"] for q in judged]
    b = [ndcg_after[q]["ndcg_cut_10"] for q in judged]
    assert comparison["first_stage"]["ndcg@10"] == pytest.approx(sum(a) / len(a), abs=1e-9)
    qa = rows[str(real_reranker_dir)]
    assert qa["metrics"]["ndcg@10"] == pytest.approx(sum(b) / len(b), abs=1e-6)
    assert qa["vs_first_stage"]["ndcg@10"]["p_value"] == pytest.approx(randomization_test(a, b))
    assert rows[infinity]["metrics"]["ndcg@10"] == pytest.approx(qa["metrics"]["ndcg@10"], abs=1e-6)
    # the Pareto front by hand: no reranker both better and faster at p95 (the latency the front and its chart use)
    points = {r: (row["metrics"]["ndcg@10"], row["latency_ms_p95"]) for r, row in rows.items()}
    for r, (quality, latency) in points.items():
        dominated = any(q >= quality and t <= latency and (q, t) != (quality, latency) for q, t in points.values())
        assert rows[r]["pareto"] == (not dominated)
