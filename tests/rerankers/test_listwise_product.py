"""A listwise reranker (an `order`, no scores) through the product: `workbench query` and `eval` on the demo, the
HTTP API's /search, Explore (AppTest). Its evaluation's "after" figure equals pytrec_eval on the order RankGPT's own
pipeline gives for the same candidates; an endpoint whose answers read as nothing keeps the first stage's order,
which the run checks name instead of a verdict."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
import pytrec_eval

from tests.rerank_apis import Behaviour, RerankApis, listwise_order
from tests.rerankers.test_listwise import _reference_order
from workbench.engine import Engine
from workbench.services.demo import demo_dataset


@pytest.fixture(scope="module")
def endpoint() -> Iterator[RerankApis]:
    with RerankApis(Behaviour(key="unused")) as server:
        yield server


def _id(server: RerankApis, case: str = "good") -> str:
    return f"listwise+{server.base}/listwise/{case}/v1#tiny-ranker"


def test_query_shows_ranks_and_says_what_an_order_is(
    demo_cli: Engine, endpoint: RerankApis, capsys: pytest.CaptureFixture[str]
) -> None:
    from workbench.cli import main

    text = "how many vacation days do I get per year"
    assert main(["query", text, "--collection", "demo", "-k", "15", "--reranker", _id(endpoint)]) == 0
    shown = capsys.readouterr().out
    assert "A listwise reranker answers an order, not scores" in shown
    assert "raw logits" not in shown and "window 20, stride 10" in shown
    first_stage = demo_cli.search(text, demo_cli.plan(collection="demo", k=15, reranker=None))
    expected = _reference_order(endpoint, "good", text, [c.text for c in first_stage.candidates], 20, 10)
    ours = demo_cli.search(text, demo_cli.plan(collection="demo", k=15, reranker=_id(endpoint)))
    assert [r.text for r in ours.reranked] == expected[: ours.top_n]
    assert main(["query", text, "--collection", "demo", "--min-score", "0.5", "--reranker", _id(endpoint)]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert len(said) == 1 and "--min-score needs rerank scores" in said[0] and "Traceback" not in said[0]


def test_eval_after_equals_pytrec_eval_on_the_reference_order(
    demo_cli: Engine, endpoint: RerankApis, capsys: pytest.CaptureFixture[str]
) -> None:
    from workbench.cli import main

    dataset = demo_dataset("test")
    items = list(dataset.queries.items())[:6]
    command = ["eval", "demo", "--reranker", _id(endpoint), "--max-queries", "6", "-k", "20", "--depth", "none"]
    command.append("--json")
    assert main(command) == 0
    figures = json.loads(capsys.readouterr().out)
    run = {}
    for qid, text in items:
        candidates = demo_cli.search(text, demo_cli.plan(collection="demo", k=20, reranker=None)).candidates
        order = _reference_order(endpoint, "good", text, [c.text for c in candidates], 20, 10)
        document = {c.text: str(c.metadata.get("document_id", c.id)) for c in candidates}
        run[qid] = {}
        for rank, passage in enumerate(order):
            run[qid].setdefault(document[passage], float(len(order) - rank))  # a document at its best passage
    judged = {q: dataset.qrels[q] for q, _ in items}
    per_query = pytrec_eval.RelevanceEvaluator(judged, {"ndcg_cut.10"}).evaluate(run)
    expected = sum(q["ndcg_cut_10"] for q in per_query.values()) / len(per_query)
    assert figures["after"]["ndcg@10"] == pytest.approx(expected, abs=1e-9)
    assert "RankGPT prompt, window 20, stride 10" in figures["reranker_backend"]


def test_answers_read_as_nothing_are_named_not_judged(demo_cli: Engine, endpoint: RerankApis, capsys) -> None:
    """An endpoint answering nothing usable: every window keeps the first stage's order. The evaluation says how
    many answers were repaired, and the run check calls the order the first stage's: no helps or hurts."""
    from workbench.cli import main

    command = ["eval", "demo", "--reranker", _id(endpoint, "empty"), "--max-queries", "8", "-k", "20"]
    command += ["--depth", "none"]
    main(command)
    shown = capsys.readouterr()
    assert "8 of 8 listwise answers needed a repair (160 passages left out)" in shown.out
    assert "Reranking helps" not in shown.out and "Reranking hurts" not in shown.out
    assert "first stage" in shown.out.split("**Verdict**", 1)[1].split("\n", 1)[0]


@pytest.mark.live_server
def test_search_over_http_answers_the_order(endpoint: RerankApis, served_data) -> None:
    """/search on a server whose reranker is listwise: the results in the model's order, each rerank_score minus
    its rank, the scale named 'order'."""
    from fastapi.testclient import TestClient

    from workbench.api import create_app

    settings = served_data.model_copy(update={"reranker_model": _id(endpoint)})
    with TestClient(create_app(settings, warm=False), base_url="http://127.0.0.1") as client:
        answer = client.post("/search", json={"query": "vacation days", "collection": "demo", "k": 8, "top_k": 5})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["score_scale"] == "order" and body["reranker"] == _id(endpoint)
    assert [r["rerank_score"] for r in body["results"]] == [-1.0, -2.0, -3.0, -4.0, -5.0]


@pytest.mark.live_server
def test_rerank_answers_the_documented_mapping_to_the_cohere_sdk(endpoint: RerankApis, served_data) -> None:
    """`workbench serve` whose reranker is listwise, asked by the cohere SDK: the documents in the model's order,
    each relevance_score (n - rank + 1) / n (1 for the first); raw scores are minus the rank."""
    import cohere

    from tests.live_servers import ApiServer, api_env

    documents = ["vacation days per year", "the office opens at nine", "days of vacation you get", "parking"]
    settings = served_data.model_copy(update={"reranker_model": _id(endpoint)})
    server = ApiServer(settings.data_dir, api_env(settings, RERANKER_MODEL=_id(endpoint)))
    try:
        server.wait_ready()
        answer = cohere.ClientV2(api_key="unused", base_url=server.url).rerank(
            model="tiny-ranker", query="how many vacation days per year", documents=documents
        )
        raw = httpx.post(
            f"{server.url}/rerank",
            json={"query": "how many vacation days per year", "documents": documents, "raw_scores": True},
        ).json()
    finally:
        log = server.stop()
    expected = [i - 1 for i in listwise_order("how many vacation days per year", documents)]
    assert [r.index for r in answer.results] == expected
    assert [r.relevance_score for r in answer.results] == [1.0, 0.75, 0.5, 0.25]
    assert [r["relevance_score"] for r in raw["results"]] == [-1.0, -2.0, -3.0, -4.0]
    assert "Traceback" not in log


@pytest.mark.live_server
def test_the_mcp_search_tool_answers_the_order(endpoint: RerankApis, served_data) -> None:
    """`workbench mcp` whose reranker is listwise, asked by the mcp SDK's client: the search tool's results come in
    the model's order, each rerank_score minus its rank."""
    import sys
    from pathlib import Path

    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    from tests.live_servers import api_env

    env = api_env(served_data, RERANKER_MODEL=_id(endpoint), WORKBENCH_OFFLINE="1")
    params = StdioServerParameters(command=str(Path(sys.executable).parent / "workbench"), args=["mcp"], env=env)

    async def run() -> dict:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            found = await session.call_tool("search", {"query": "how many vacation days", "top_k": 4})
            return found.structured_content

    answer = anyio.run(run)
    assert [r["rerank_score"] for r in answer["results"]] == [-1.0, -2.0, -3.0, -4.0]
    assert answer["score_scale"] == "order"


def test_the_gate_weighs_a_listwise_candidate(demo_cli: Engine, endpoint: RerankApis, capsys) -> None:
    """The ship gate with a listwise candidate against the first stage: a decision with its exit code, the
    candidate's procedure named, and answers read as nothing named instead of a verdict (exit 3)."""
    from workbench.cli import main

    base = ["gate", "demo", "--max-queries", "8", "-k", "20", "--baseline-reranker", "none", "--json"]
    code = main([*base, "--reranker", _id(endpoint)])
    decision = json.loads(capsys.readouterr().out)
    assert code == decision["exit_code"] in (0, 1, 3)
    assert "listwise" in json.dumps(decision)
    code = main([*base, "--reranker", _id(endpoint, "empty")])
    decision = json.loads(capsys.readouterr().out)
    assert code == decision["exit_code"] == 3 and "did not run as intended" in json.dumps(decision)


def test_a_single_query_whose_answer_needed_a_repair_says_so(demo_cli: Engine, endpoint: RerankApis, capsys) -> None:
    """Issue 68, item 9: `workbench query` on an answer read as nothing showed the first-stage order without a word
    (eval warned); the result now carries the note, the CLI prints it, a good answer has none."""
    from workbench.cli import main

    question = ["query", "can I carry over unused vacation days?", "--collection", "demo", "-k", "10"]
    assert main([*question, "--reranker", _id(endpoint, "empty")]) == 0
    out = capsys.readouterr().out
    assert "Note: 1 of 1 listwise answers needed a repair (10 passages left out)" in out
    assert main([*question, "--reranker", _id(endpoint, "empty"), "--json"]) == 0  # kept: said again from the cache
    assert json.loads(capsys.readouterr().out)["notes"] != []
    assert main([*question, "--reranker", _id(endpoint, "good"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == []
