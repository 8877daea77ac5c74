"""The demo corpus with the real models: the default embedder and the shared cross-encoder."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.engine import Engine
from workbench.services.demo import DEMO_COLLECTION, ensure_demo_collection, sample_queries

pytestmark = pytest.mark.slow


def test_demo_builds_150_passages_with_metadata(demo_engine: Engine) -> None:
    info = demo_engine.collection_info(DEMO_COLLECTION)
    assert info.count >= 150 and info.dimension == 384
    assert info.embedding_model == "sentence-transformers/all-MiniLM-L6-v2"
    chunks = demo_engine.browse(DEMO_COLLECTION, 0, 200)
    titles = {c.metadata["title"] for c in chunks}
    assert len(titles) >= 5
    for chunk in chunks:
        assert {"title", "section", "page", "url"} <= chunk.metadata.keys()
        assert chunk.metadata["url"].startswith("https://handbook.halcyon.example/")


def test_demo_is_built_once(demo_engine: Engine) -> None:
    before = demo_engine.collection_info(DEMO_COLLECTION).count
    assert ensure_demo_collection(demo_engine).count == before


def test_sample_queries_come_in_two_groups_all_judged(demo_engine: Engine) -> None:
    from workbench.evaluation import read_qrels
    from workbench.services.demo import GROUPS, demo_dir

    queries = sample_queries()
    assert len(sample_queries("vector-works")) == 20 and len(sample_queries("rerank-helps")) == 30
    assert {q.group for q in queries} == set(GROUPS)
    kinds = {q.kind for q in sample_queries("rerank-helps")}
    assert {"negation", "number", "condition", "two constraints", "keyword", "phrased differently"} == kinds
    judged = read_qrels(demo_dir() / "qrels" / "test.tsv")
    assert {q.id for q in queries} == set(judged)
    ids = {c.metadata["document_id"] for c in demo_engine.browse(DEMO_COLLECTION, 0, 200)}
    assert all(doc in ids for grades in judged.values() for doc in grades)


def test_sample_queries_are_reordered_by_the_reranker(demo_engine: Engine) -> None:
    queries = [q.text for q in sample_queries()]
    changed = 0
    for query in queries:
        result = demo_engine.search(query, demo_engine.plan(collection=DEMO_COLLECTION, k=20, top_n=10))
        if [r.id for r in result.reranked] != [c.id for c in result.candidates[:10]]:
            changed += 1
    assert changed == len(queries), f"only {changed} of {len(queries)} sample queries change order"


def test_the_right_passage_is_in_vector_top_10_for_a_plain_question(demo_engine: Engine) -> None:
    result = demo_engine.search(
        "how many days of paid holiday do full-time employees get",
        demo_engine.plan(collection=DEMO_COLLECTION, k=10, top_n=3, reranker=None),
    )
    assert any(c.metadata["section"] == "Annual holiday entitlement" for c in result.candidates[:3])


def test_every_shipped_configuration_is_fully_judged(demo_engine: Engine) -> None:
    """The demo's judgments were pooled over dense, BM25 and hybrid candidates before and after reranking: with the
    QA reranker, judged@10 is 1 before and after for each, and the verdict says 'none' whenever p >= 0.05."""
    from workbench.evaluation import evaluate_dataset
    from workbench.services.demo import demo_dataset

    dataset = demo_dataset()
    for mode in ("dense", "bm25", "hybrid"):
        report = evaluate_dataset(
            demo_engine, dataset, demo_engine.plan(collection=DEMO_COLLECTION, k=50, top_n=10, retrieval=mode)
        )
        assert report.before["judged@10"] == 1.0 and report.after["judged@10"] == 1.0, mode
        assert report.unjudged_before == report.unjudged_after == 0
        verdict = report.verdict
        assert verdict is not None and verdict.judged_at_k == 1.0
        if verdict.p_value >= 0.05:
            assert verdict.direction == "none"
        else:
            assert verdict.direction in {"helps", "hurts"}


def test_the_demos_judgments_say_whose_grades_they_hold(tmp_path: Path) -> None:
    """Issue 36, item 10: three grades given on Grade went into "the demo handbook's judgments", and the same plan
    then scored otherwise under the same label. The label now says whose grades the figures rest on."""
    from workbench.config import Settings
    from workbench.judgments import attach_judgments, judgment_rows, rate
    from workbench.paths import demo_dir
    from workbench.services.demo import DEMO_RATER, demo_dataset

    settings = Settings(data_dir=tmp_path)
    attach_judgments(
        settings, "demo", demo_dir() / "qrels" / "test.tsv", demo_dir() / "queries.jsonl", replace=False,
        rater=DEMO_RATER,
    )  # fmt: skip
    shipped = demo_dataset("test", settings)
    assert shipped.name == "the demo handbook"
    qid = next(iter(shipped.queries))
    doc = next(iter(shipped.qrels[qid]))
    for grade in (0, 1):
        rate(settings, "demo", doc, grade, query_id=qid, rater="ann")
    rate(settings, "demo", doc, 3, query_id=qid, rater="bea")
    handbook = sum(1 for row in judgment_rows(settings, "demo") if row.rater == DEMO_RATER)
    graded = demo_dataset("test", settings)
    assert graded.name == f"the demo handbook's {handbook:,} grades + 2 by ann, 1 by bea"
    # the judgments as shipped stay one option away, whatever was graded since (nothing is deleted)
    from workbench.services.demo import others_graded_demo
    from workbench.services.sources import judged_dataset

    as_shipped = judged_dataset(settings, demo=True, shipped=True)
    assert as_shipped.name == "the demo handbook (as shipped)" and as_shipped.qrels == demo_dataset("test").qrels
    assert others_graded_demo(settings) and len(judgment_rows(settings, "demo")) == handbook + 3
