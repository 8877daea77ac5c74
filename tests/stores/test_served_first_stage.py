"""Issue 39, item 2, against a real search service: a second `workbench serve`, on a data folder of its own and
behind a token, declared as another workbench's first stage (`store = "http"`) through its `/search` API. The
candidates are that server's answer, in its order, with its scores; an evaluation's "before" equals pytrec_eval on
the server's own run; the token comes from the environment and is never shown."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import pytrec_eval

from tests.live_servers import ApiServer, served_behind_token
from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import run_evaluation
from workbench.services.demo import demo_dataset

pytestmark = pytest.mark.live_server

TOKEN = "tok-served-first-stage-5678"
QUERIES = 10


@pytest.fixture(scope="module")
def production(served_data: Settings) -> Iterator[ApiServer]:
    yield from served_behind_token(served_data, TOKEN)


def test_another_workbench_serve_is_the_first_stage_and_an_evaluation_equals_pytrec_eval(
    production: ApiServer, served_data: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PRODUCTION_TOKEN", TOKEN)
    table = {
        "store": "http", "url": f"{production.url}/search", "body": {"query": "{query}", "top_k": "{k}", "k": 20},
        "headers": {"Authorization": "Bearer ${PRODUCTION_TOKEN}"}, "hits": "results", "id": "document_id",
        "text": "text", "title": "title", "score": "score",
    }  # fmt: skip
    settings = Settings(
        data_dir=tmp_path / "data", embedding_model=served_data.embedding_model,
        reranker_model=served_data.reranker_model, offline=True, collections={"production": table},
    )  # fmt: skip
    engine = Engine(settings)
    info = engine.collection_info("production")
    assert info.read_only and info.store == "http" and TOKEN not in info.model_dump_json()
    dataset = demo_dataset("test")
    auth = {"Authorization": f"Bearer {TOKEN}"}
    run: dict[str, dict[str, float]] = {}
    for qid, text in list(dataset.queries.items())[:QUERIES]:  # the server's own answers, asked here
        hits = httpx.post(f"{production.url}/search", json={"query": text, "top_k": 10, "k": 20}, headers=auth)
        run[qid] = {h["document_id"]: h["score"] for h in hits.json()["results"]}
    first_qid, first_text = next(iter(dataset.queries.items()))
    result = engine.search(first_text, engine.plan(collection="production", k=10, top_n=3))
    assert [c.id for c in result.candidates] == list(run[first_qid])  # its answer, in its order
    assert [c.vector_score for c in result.candidates] == list(run[first_qid].values())
    assert len(result.reranked) == 3 and all(r.text for r in result.reranked)
    report = run_evaluation(
        engine, dataset, engine.plan(collection="production", k=10, reranker=None), max_queries=QUERIES
    )
    qrels = {qid: dataset.qrels[qid] for qid in run}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    mean = sum(expected[q]["ndcg_cut_10"] for q in qrels) / len(qrels)
    assert report.before["ndcg@10"] == pytest.approx(mean, abs=1e-9)
    monkeypatch.setenv("PRODUCTION_TOKEN", "wrong")  # a refused token is one line naming the service, never the token
    refused = Engine(settings)
    with pytest.raises(Exception) as caught:
        refused.search(first_text, refused.plan(collection="production", k=10, reranker=None))
    assert "401" in str(caught.value) and "wrong" not in str(caught.value) and TOKEN not in str(caught.value)
