"""The real client libraries from PyPI against a real `workbench serve` behind a token: the `cohere` SDK (v1 and
v2 clients), langchain-cohere's CohereRerank, Haystack's CohereRanker, Infinity's `infinity_client`, a client
generated from /openapi.json by openapi-python-client, and the workbench's own service kind reranking through
another workbench. Each parses the answer itself; the test checks what it parsed against the local model."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr

from tests.live_servers import ApiServer, served_behind_token
from workbench.config import Settings
from workbench.engine import Engine
from workbench.rerankers import to_probability
from workbench.rerankers.factory import create_reranker
from workbench.rerankers.serving import prompt_tokens

pytestmark = pytest.mark.live_server

TOKEN = "tok-real-clients-1234"
QUERY = "can I carry over unused vacation days"
DOCS = [
    "Unused vacation days carry over to the next year, up to five days.",
    "The cafeteria opens at eight in the morning.",
    "Leave that is not taken expires at the end of March.",
    "Bikes can be parked in the basement.",
]


@pytest.fixture(scope="module")
def served(served_data: Settings) -> Iterator[ApiServer]:
    yield from served_behind_token(served_data, TOKEN)


@pytest.fixture(scope="module")
def expected(served_data: Settings) -> dict[str, list[float]]:
    """The local model's scores for DOCS: its logits and their sigmoid (the 0-1 reading /rerank answers)."""
    reranker = Engine(served_data).reranker()
    logits, _ = reranker.score(QUERY, DOCS, use_cache=False)
    return {"logit": logits, "probability": [to_probability(s, "logit") for s in logits]}


def _ranked(scores: list[float]) -> list[int]:
    return sorted(range(len(scores)), key=lambda i: -scores[i])


def test_the_cohere_sdk_v1_and_v2_clients(served: ApiServer, served_data: Settings, expected: dict) -> None:
    import cohere

    best = _ranked(expected["probability"])
    v1 = cohere.Client(api_key=TOKEN, base_url=served.url).rerank(
        model="tiny-reranker", query=QUERY, documents=DOCS, top_n=2, return_documents=True, max_chunks_per_doc=10
    )
    assert [r.index for r in v1.results] == best[:2]
    for result in v1.results:
        assert result.relevance_score == pytest.approx(expected["probability"][result.index], abs=1e-6)
        assert result.document is not None and result.document.text == DOCS[result.index]
    assert v1.meta is not None and v1.meta.billed_units.search_units == 1 and v1.meta.api_version.version == "1"

    v2 = cohere.ClientV2(api_key=TOKEN, base_url=served.url).rerank(
        model="tiny-reranker", query=QUERY, documents=DOCS, max_tokens_per_doc=4096
    )
    assert [r.index for r in v2.results] == best
    assert [r.relevance_score for r in v2.results] == pytest.approx([expected["probability"][i] for i in best])
    reranker = Engine(served_data).reranker()
    assert v2.meta.billed_units.search_units == 1
    assert v2.usage == {"prompt_tokens": prompt_tokens(reranker, QUERY, DOCS), "total_tokens": pytest.approx(
        prompt_tokens(reranker, QUERY, DOCS))}  # fmt: skip

    # Object documents ranked on rank_fields: the same scores as the text "field: value" lines they make.
    objects = [{"title": f"doc {i}", "body": d, "extra": {"kept": True}} for i, d in enumerate(DOCS)]
    by_fields = cohere.Client(api_key=TOKEN, base_url=served.url).rerank(
        model="tiny-reranker", query=QUERY, documents=objects, rank_fields=["title", "body"], return_documents=True
    )
    texts = [f"title: doc {i}\nbody: {d}" for i, d in enumerate(DOCS)]
    logits, _ = reranker.score(QUERY, texts, use_cache=False)
    for result in by_fields.results:
        assert result.relevance_score == pytest.approx(to_probability(logits[result.index], "logit"), abs=1e-6)
        sent = objects[result.index]  # given back as sent (the text it was ranked on only where it had none)
        returned = result.document.dict() if hasattr(result.document, "dict") else dict(result.document)
        assert returned.get("title") == sent["title"] and returned.get("body") == sent["body"], returned


def test_cohere_errors_are_typed_and_name_the_problem(served: ApiServer) -> None:
    import cohere
    from cohere.errors import UnauthorizedError, UnprocessableEntityError

    client = cohere.ClientV2(api_key=TOKEN, base_url=served.url)
    with pytest.raises(UnprocessableEntityError) as wrong_model:
        client.rerank(model="rerank-v3.5", query=QUERY, documents=DOCS)
    assert "tiny-reranker" in wrong_model.value.body["message"]
    assert wrong_model.value.body["detail"][0]["msg"] == wrong_model.value.body["message"]
    with pytest.raises(UnprocessableEntityError) as empty:
        client.rerank(model="tiny-reranker", query="   ", documents=DOCS)
    assert "empty" in empty.value.body["message"]
    with pytest.raises(UnauthorizedError):
        cohere.ClientV2(api_key="wrong-token-123", base_url=served.url).rerank(
            model="tiny-reranker", query=QUERY, documents=DOCS
        )


def test_langchain_cohere_and_haystack_rerank_through_the_workbench(served: ApiServer, expected: dict) -> None:
    from haystack import Document
    from haystack.utils import Secret
    from haystack_integrations.components.rankers.cohere import CohereRanker
    from langchain_cohere import CohereRerank

    best = _ranked(expected["probability"])
    chain = CohereRerank(cohere_api_key=TOKEN, base_url=served.url, model="tiny-reranker", top_n=3)
    ranked = chain.rerank(documents=DOCS, query=QUERY)
    assert [r["index"] for r in ranked] == best[:3]
    assert [r["relevance_score"] for r in ranked] == pytest.approx([expected["probability"][i] for i in best[:3]])

    ranker = CohereRanker(model="tiny-reranker", api_key=Secret.from_token(TOKEN), api_base_url=served.url, top_k=2)
    documents = ranker.run(query=QUERY, documents=[Document(content=d) for d in DOCS])["documents"]
    assert [d.content for d in documents] == [DOCS[i] for i in best[:2]]
    assert [d.score for d in documents] == pytest.approx([expected["probability"][i] for i in best[:2]])


# Infinity's client pins python-dateutil<3 (chromadb needs >=3), so it runs in the Infinity server's environment
INFINITY_PYTHON = Path(__file__).resolve().parents[2] / ".venv-infinity" / "bin" / "python"
INFINITY_CLIENT_SCRIPT = """
import json, sys
from infinity_client import AuthenticatedClient
from infinity_client.api.default import models, rerank
from infinity_client.models import RerankInput

url, token, query, documents = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
client = AuthenticatedClient(base_url=url, token=token)
answer = rerank.sync(client=client, body=RerankInput(query=query, documents=documents, raw_scores=True, top_n=2))
listed = models.sync(client=client)
print(json.dumps({
    "results": [[r.index, r.relevance_score] for r in answer.results],
    "model": answer.model,
    "total_tokens": answer.usage.total_tokens,
    "models": [[m.id, m.stats.additional_properties, m.capabilities] for m in listed.data],
}))
"""


def test_infinity_client_reads_raw_scores_usage_and_model_stats(served: ApiServer, expected: dict) -> None:
    if not INFINITY_PYTHON.exists():
        pytest.fail(f"Infinity's client is missing at {INFINITY_PYTHON}: run `bash scripts/setup.sh --test`.")
    done = subprocess.run(
        [str(INFINITY_PYTHON), "-c", INFINITY_CLIENT_SCRIPT, served.url, TOKEN, QUERY, json.dumps(DOCS)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    parsed = json.loads(done.stdout)
    assert [i for i, _ in parsed["results"]] == _ranked(expected["logit"])[:2]
    assert [score for _, score in parsed["results"]] == pytest.approx(
        [expected["logit"][i] for i, _ in parsed["results"]], abs=1e-5
    )
    assert parsed["total_tokens"] > 0 and parsed["model"] == "tiny-reranker"
    [(name, stats, capabilities)] = parsed["models"]
    assert name == "tiny-reranker" and stats["requests"] >= 1 and capabilities == ["rerank"]


def test_a_generated_openapi_client_surfaces_422_messages(served: ApiServer, tmp_path: Path) -> None:
    spec = httpx.get(f"{served.url}/openapi.json", headers={"Authorization": f"Bearer {TOKEN}"}).text
    (tmp_path / "openapi.json").write_text(spec)
    generator = Path(sys.executable).parent / "openapi-python-client"
    made = subprocess.run(
        [str(generator), "generate", "--path", "openapi.json", "--output-path", "generated", "--meta", "none"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    sys.path.insert(0, str(tmp_path))
    try:
        generated = importlib.import_module("generated")
        client = generated.AuthenticatedClient(base_url=served.url, token=TOKEN)
        search_api = importlib.import_module("generated.api.search.search_search_post")
        models = importlib.import_module("generated.models")
        refused = search_api.sync(client=client, body=models.SearchRequest(query="   "))
        assert isinstance(refused, models.HTTPValidationError)
        assert "empty" in refused.detail[0].msg and refused.detail[0].loc[-1] == "query"
        found = search_api.sync(client=client, body=models.SearchRequest(query="vacation days", top_k=2))
        assert isinstance(found, models.SearchResponse) and len(found.results) == 2
        interleaved = search_api.sync(
            client=client, body=models.SearchRequest(query="vacation days", top_k=4, interleave=True)
        )
        assert isinstance(interleaved, models.SearchResponse) and interleaved.impression_id.startswith("imp-")
        assert {hit.team for hit in interleaved.results} <= {"A", "B"} and len(interleaved.results) == 4
        clicks_api = importlib.import_module("generated.api.search.clicks_clicks_post")
        receipt = clicks_api.sync(
            client=client,
            body=models.ClickRequest(impression_id=interleaved.impression_id, id=interleaved.results[1].id),
        )
        assert isinstance(receipt, models.ClickReceipt) and receipt.team == interleaved.results[1].team
        rerank_api = importlib.import_module("generated.api.rerank.rerank_v2_v2_rerank_post")
        answer = rerank_api.sync(client=client, body=models.RerankRequest(query=QUERY, documents=DOCS))
        assert isinstance(answer, models.RerankResponse) and answer.meta.billed_units.search_units == 1
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m == "generated" or m.startswith("generated.")]:
            del sys.modules[name]


def test_interleaved_search_and_clicks_over_http(served: ApiServer, served_data: Settings) -> None:
    """/search with interleave: a team-draft list of the first stage's order (A) and the reranked one (B), logged;
    /clicks credits a result's team; a click nobody could have made is refused in one line."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=served.url, headers=headers, timeout=60) as client:
        answer = client.post("/search", json={"query": "vacation days", "top_k": 5, "k": 20, "interleave": True})
        assert answer.status_code == 200, answer.text
        body = answer.json()
        plain = client.post("/search", json={"query": "vacation days", "top_k": 5, "k": 20}).json()
        assert plain["impression_id"] is None and all(hit["team"] is None for hit in plain["results"])
        teams = [hit["team"] for hit in body["results"]]
        assert set(teams) <= {"A", "B"} and abs(teams.count("A") - teams.count("B")) <= 1
        assert body["teams"]["A"].endswith("(first stage)") and "tiny-reranker" in body["teams"]["B"]
        # Each team's results keep their own ranking's order: A's by rank before, B's as /search reranks them.
        a_ranks = [hit["rank_before"] for hit in body["results"] if hit["team"] == "A"]
        assert a_ranks == sorted(a_ranks)
        clicked = body["results"][0]
        receipt = client.post("/clicks", json={"impression_id": body["impression_id"], "id": clicked["id"]})
        assert receipt.status_code == 200 and receipt.json()["team"] == clicked["team"]
        unknown = client.post("/clicks", json={"impression_id": "imp-nothing", "id": clicked["id"]})
        assert unknown.status_code == 404 and "No impression 'imp-nothing' was served" in unknown.json()["detail"]
        unshown = client.post("/clicks", json={"impression_id": body["impression_id"], "id": "never-shown"})
        assert unshown.status_code == 422 and "did not show 'never-shown'" in unshown.json()["detail"][0]["msg"]
        # two plans: this request's (A, dense reranked) against another first stage (B, BM25 reranked)
        two = client.post(
            "/search", json={"query": "vacation days", "top_k": 4, "k": 20, "interleave": True,
                             "against": {"retrieval": "bm25"}},
        ).json()  # fmt: skip
        assert two["teams"]["A"].startswith("dense k=20 → ") and two["teams"]["B"].startswith("bm25 k=20 → ")
        assert len(two["results"]) == 4 and {hit["team"] for hit in two["results"]} <= {"A", "B"}
        same = client.post(
            "/search", json={"query": "vacation days", "interleave": True, "against": {"k": 50}},
        )  # fmt: skip
        assert same.status_code == 422 and "against names the same plan" in same.json()["detail"][0]["msg"]
        alone = client.post("/search", json={"query": "vacation days", "against": {"retrieval": "bm25"}})
        assert alone.status_code == 422 and "give it with interleave" in alone.json()["detail"][0]["msg"]
        refused = client.post("/search", json={"query": "vacation days", "rerank": False, "interleave": True})
        assert (
            refused.status_code == 422 and "interleave compares the first stage" in refused.json()["detail"][0]["msg"]
        )
    log = Path(served_data.data_dir) / "interleaving" / "log.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    mine = [r for r in records if r.get("impression_id") == body["impression_id"]]
    assert [r["type"] for r in mine] == ["impression", "click"] and mine[0]["teams"] == teams
    assert mine[1]["id"] == clicked["id"]


def test_a_workbench_reranks_through_another_served_with_a_token(
    served: ApiServer, served_data: Settings, expected: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    host = served.url.removeprefix("http://")
    in_url = create_reranker(f"http://:{TOKEN}@{host}", served_data)
    assert TOKEN not in in_url.model_id and TOKEN not in in_url.backend
    scores, _ = in_url.score(QUERY, DOCS, use_cache=False)
    assert scores == pytest.approx(expected["probability"], abs=1e-6)

    keyed = create_reranker(served.url, served_data.model_copy(update={"rerank_api_key": SecretStr(TOKEN)}))
    assert keyed.score(QUERY, DOCS, use_cache=False)[0] == pytest.approx(expected["probability"], abs=1e-6)

    from workbench.errors import ModelError

    without = create_reranker(served.url, served_data)
    with pytest.raises(ModelError, match="WORKBENCH_RERANK_API_KEY"):
        without.score(QUERY, DOCS, use_cache=False)


@pytest.mark.parametrize("kind", ["cohere", "jina"])
def test_the_hosted_kinds_pointed_at_a_workbench_rerank_through_it(
    served: ApiServer, served_data: Settings, expected: dict, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """`cohere:MODEL` and `jina:MODEL` with WORKBENCH_COHERE_URL / WORKBENCH_JINA_URL at a served workbench (their
    keys its token): the local model's scores, and the usage the answers report."""
    monkeypatch.setenv(f"{kind.upper()}_API_KEY", TOKEN)
    settings = served_data.model_copy(update={f"{kind}_url": served.url})
    reranker = create_reranker(f"{kind}:tiny-reranker", settings)
    scores, _ = reranker.score(QUERY, DOCS, use_cache=False)
    assert scores == pytest.approx(expected["probability"], abs=1e-6)
    usage = reranker.usage
    assert usage.requests == 1 and usage.billed_units == 1 and usage.tokens > 0


def test_voyage_and_text_embeddings_inference_clients_rerank_here(
    served: ApiServer, expected: dict[str, list[float]]
) -> None:
    """Issue 36, item 9: the `voyageai` SDK and the `rerankers` library's voyage and TEI providers broke on /rerank
    (`data[]` and `top_k` expected; TEI sends `texts` and reads a list). Each now gets the model's scores."""
    import voyageai
    from rerankers.models.api_rankers import APIRanker

    best = _ranked(expected["probability"])
    voyage = voyageai.Client(api_key=TOKEN, base_url=served.url, max_retries=0)
    answer = voyage.rerank(QUERY, DOCS, model="tiny-reranker", top_k=2)
    assert [r.index for r in answer.results] == best[:2] and answer.total_tokens > 0
    for result in answer.results:
        assert result.relevance_score == pytest.approx(expected["probability"][result.index], abs=1e-6)
        assert result.document == DOCS[result.index]
    for provider in ("voyage", "text-embeddings-inference", "mixedbread.ai"):  # mixedbread.ai: issue 51
        ranker = APIRanker("tiny-reranker", TOKEN, provider, verbose=0, url=f"{served.url}/rerank")
        ranked = ranker.rank(QUERY, DOCS)
        assert [DOCS.index(r.document.text) for r in ranked.results] == best, provider
        assert [r.score for r in ranked.results] == pytest.approx([expected["probability"][i] for i in best])
    tei = httpx.post(
        f"{served.url}/rerank", headers={"Authorization": f"Bearer {TOKEN}"},
        json={"query": QUERY, "texts": DOCS, "raw_scores": True, "return_text": True, "truncate": True},
    ).json()  # fmt: skip
    assert isinstance(tei, list) and [r["index"] for r in tei] == best
    assert [r["score"] for r in tei] == pytest.approx([expected["logit"][i] for i in best], abs=1e-5)
    assert all(r["text"] == DOCS[r["index"]] for r in tei)
