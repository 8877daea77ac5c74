"""Issue 39, item 2: any search service as a first stage. A real full-text service (FastAPI over bm25s, started by
the test) declared in the settings is searched through its own API: the workbench's candidates are the service's
own answer, in its order; an evaluation's "before" equals pytrec_eval on the service's run; GET and POST templates,
a header secret from the environment (never shown), and every bad answer (HTML, 500, slow, missing fields,
duplicate ids, a score that is not a number, no list) is one clear line."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytrec_eval

from tests.conftest import free_port, running
from workbench.cli.collections import format_result
from workbench.config import Settings
from workbench.engine import Engine
from workbench.errors import ConfigError, InputError, StoreError
from workbench.evaluation import run_evaluation
from workbench.services.demo import demo_dataset
from workbench.services.search import search_documents, seed_plan

pytestmark = pytest.mark.live_server

FIELDS = {"hits": "data.results", "id": "doc_id", "text": "body"}


@pytest.fixture(scope="module")
def service(tmp_path_factory: pytest.TempPathFactory):
    port = free_port()
    script = Path(__file__).with_name("search_service.py")
    log = tmp_path_factory.mktemp("search-service") / "log.txt"
    with running([sys.executable, str(script), str(port)], f"http://127.0.0.1:{port}/health", log):
        yield f"http://127.0.0.1:{port}"


def _engine(tmp_path: Path, tiny_models: dict[str, Path], **tables: dict[str, Any]) -> Engine:
    return Engine(
        Settings(
            data_dir=tmp_path / "data", reranker_model=str(tiny_models["reranker"]), store_timeout=2, offline=True,
            embedding_model=str(tiny_models["embedder"]), collections=tables,
        )
    )  # fmt: skip


def test_the_service_is_the_first_stage_and_an_evaluation_equals_pytrec_eval(
    service: str, tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    table = {"store": "http", "url": f"{service}/search", "body": {"q": "{query}", "size": "{k}"}, **FIELDS}
    engine = _engine(tmp_path, tiny_models, prod=table)
    info = engine.collection_info("prod")
    assert info.read_only and info.store == "http" and "search service" in (info.written_by or "")
    query = "how many vacation days do I get"
    own = httpx.post(f"{service}/search", json={"q": query, "size": 8}).json()["data"]["results"]
    result = engine.search(query, engine.plan(collection="prod", k=8, top_n=3))
    assert [c.id for c in result.candidates] == [h["doc_id"] for h in own]  # its answer, in its order
    assert [c.vector_score for c in result.candidates] == [h["score"] for h in own]
    assert len(result.reranked) == 3 and all(r.text for r in result.reranked)
    # labelled by its source, not as a vector search: on the result, the CLI's table, the API's answer
    assert result.first_stage.mode == "search service" and result.first_stage.heading == "Search service's order"
    table_text = format_result(result, width=160)
    assert "SEARCH SERVICE'S ORDER" in table_text and "VECTOR SEARCH" not in table_text
    assert search_documents(engine, query, seed_plan(engine, 3, collection="prod")).first_stage == "search service"
    dataset = demo_dataset("test")
    report = run_evaluation(engine, dataset, engine.plan(collection="prod", k=10, reranker=None), max_queries=15)
    run = {}
    for qid, text in list(dataset.queries.items())[:15]:
        hits = httpx.post(f"{service}/search", json={"q": text, "size": 10}).json()["data"]["results"]
        run[qid] = {h["doc_id"]: h["score"] for h in hits}
    qrels = {qid: dataset.qrels[qid] for qid in run}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate({q: r for q, r in run.items() if r})
    mean = sum(expected.get(q, {"ndcg_cut_10": 0.0})["ndcg_cut_10"] for q in qrels) / len(qrels)
    assert report.before["ndcg@10"] == pytest.approx(mean, abs=1e-9)
    with pytest.raises(InputError, match="attached read-only"):
        engine.ingest(Path(__file__), "prod")


def test_get_templates_and_a_secret_header_from_the_environment(
    service: str, tmp_path: Path, tiny_models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = _engine(
        tmp_path, tiny_models,
        by_get={"store": "http", "url": f"{service}/get", "method": "GET", "params": {"q": "{query}", "size": "{k}"},
                **FIELDS},
        guarded={"store": "http", "url": f"{service}/auth", "body": {"q": "{query}", "size": "{k}"},
                 "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}, **FIELDS},
    )  # fmt: skip
    assert engine.search("expense receipts", engine.plan(collection="by_get", k=5, reranker=None)).candidates
    assert {"by_get", "guarded"} <= {i.name for i in engine.collections()}  # listed without the secret being set
    with pytest.raises(Exception, match=r"\$\{SEARCH_TOKEN\}, which is not set"):
        engine.search("expense receipts", engine.plan(collection="guarded", k=5, reranker=None))
    monkeypatch.setenv("SEARCH_TOKEN", "wrong-token")
    fresh = _engine(tmp_path, tiny_models, guarded=engine.settings.collections["guarded"])
    with pytest.raises(StoreError) as refused:
        fresh.search("expense receipts", fresh.plan(collection="guarded", k=5, reranker=None))
    assert "refused the request (401)" in str(refused.value) and "wrong-token" not in str(refused.value)
    monkeypatch.setenv("SEARCH_TOKEN", "s3cret-token")
    allowed = _engine(tmp_path, tiny_models, guarded=engine.settings.collections["guarded"])
    assert allowed.search("expense receipts", allowed.plan(collection="guarded", k=5, reranker=None)).candidates


@pytest.mark.parametrize(
    ("route", "words"),
    [
        ("html", "did not answer with JSON"),
        ("error", "answered 500 after 3 tries"),
        ("slow", "did not answer within 2 s"),
        ("missing", "hit 1 without its text ('body')"),
        ("dupes", "the id a twice"),
        ("badscore", "the score of hit 1"),
        ("nolist", "no list of hits at 'data.results'"),
        ("escape-id", "hit 1 with an id that cannot be one"),  # issue 51: control characters in an id
        ("long-id", "hit 1 with an id that cannot be one"),  # issue 51: a 100,000-character id
    ],
)
def test_a_bad_answer_is_one_clear_line(
    service: str, tmp_path: Path, tiny_models: dict[str, Path], route: str, words: str
) -> None:
    table = {"store": "http", "url": f"{service}/{route}", "body": {"q": "{query}", "size": "{k}"}, "retries": 2,
             **FIELDS}  # fmt: skip
    engine = _engine(tmp_path, tiny_models, broken=table)
    with pytest.raises(StoreError) as caught:
        engine.search("anything", engine.plan(collection="broken", k=5, reranker=None))
    said = str(caught.value)
    assert words in said and "The search service 'broken'" in said and "Traceback" not in said, said


def test_an_experiment_records_the_source_and_a_changed_mapping_is_named(
    service: str, tmp_path: Path, tiny_models: dict[str, Path]
) -> None:
    from workbench.experiments.record import changed_inputs
    from workbench.experiments.service import Keeping, run_experiment

    table = {"store": "http", "url": f"{service}/search", "body": {"q": "{query}", "size": "{k}"}, **FIELDS}
    dataset = demo_dataset("test")
    first = run_experiment(
        _engine(tmp_path, tiny_models, prod=table), dataset, Engine(Settings()).plan(collection="prod", k=10),
        source="demo", max_queries=3, keeping=Keeping(save=False),
    )  # fmt: skip
    assert first.manifest.source and first.manifest.source.startswith("http ") and first.manifest.source_mapping
    assert first.judgments.source == "demo"  # the judgments' own source, not the first stage's
    assert "search service" in first.manifest.source and "SEARCH_TOKEN" not in first.model_dump_json()
    changed = {**table, "body": {"q": "{query} policy", "size": "{k}"}}  # the service asked another way
    second = run_experiment(
        _engine(tmp_path, tiny_models, prod=changed), dataset, Engine(Settings()).plan(collection="prod", k=10),
        source="demo", max_queries=3, keeping=Keeping(save=False),
    )  # fmt: skip
    assert "the first stage's source" in changed_inputs(first, second)


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"retries": 100_000}, "retries is a whole number from 0 to 5"),
        ({"retries": -1}, "retries is a whole number from 0 to 5"),
        ({"url_user": True, "headers": {"Authorization": "Bearer x"}}, "gives credentials twice"),
        ({"colour": "blue", "hitz": "data"}, "has keys a search service does not read: colour, hitz"),  # typos
    ],
)
def test_declarations_that_would_hang_or_be_dropped_are_refused(
    service: str, tmp_path: Path, tiny_models: dict[str, Path], table: dict, words: str
) -> None:
    """Issue 51: `retries = 100000` hung a query; a declared Authorization header was dropped when the URL held user
    info (httpx sends the URL's). Both are refused in one line before any request."""
    url = (
        f"{service}/search".replace("http://", "http://ann:pw@")
        if table.pop("url_user", False)
        else f"{service}/search"
    )
    settings = {"store": "http", "url": url, "body": {"q": "{query}", "size": "{k}"}, **FIELDS, **table}
    engine = _engine(tmp_path, tiny_models, declared=settings)
    with pytest.raises(ConfigError, match=words):
        engine.search("anything", engine.plan(collection="declared", k=5, reranker=None))
