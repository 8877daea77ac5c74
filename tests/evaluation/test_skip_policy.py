"""Issue 54, item 4: reranking only when it pays. A skip policy (rerank only when the first stage's top two scores
are closer than a gap) is a plan like any other: a query it skips costs no model call and keeps the first stage's
order, and its evaluation's figures equal the two plans it mixes, evaluated apart, query by query."""

from __future__ import annotations

import statistics

import pytest

from workbench.engine import Engine
from workbench.evaluation.service import evaluate_dataset
from workbench.evaluation.significance import difference
from workbench.services.demo import demo_dataset
from workbench.vocab import NDCG_10

pytestmark = pytest.mark.slow


def _gap(engine: Engine, text: str) -> float:
    result = engine.search(text, engine.plan(collection="demo", k=20, reranker=None), max_query_chars=None)
    return result.candidates[0].vector_score - result.candidates[1].vector_score


def test_a_skipped_query_costs_no_model_call_and_keeps_the_first_stage_order(demo_engine: Engine) -> None:
    text = "can I carry over unused vacation days"
    reranker = demo_engine.reranker()
    calls = reranker.model_calls
    sure = demo_engine.search(text, demo_engine.plan(collection="demo", k=20, skip_gap=0.0, top_n=10))
    assert sure.rerank_skipped and reranker.model_calls == calls
    assert [r.id for r in sure.reranked] == [c.id for c in sure.candidates[:10]]
    assert all(c.rerank_score is None for c in sure.candidates)
    unsure = demo_engine.search(text, demo_engine.plan(collection="demo", k=20, skip_gap=1e9, top_n=10))
    assert not unsure.rerank_skipped and all(c.rerank_score is not None for c in unsure.candidates)
    assert "rerank if gap < 1e+09" in unsure.plan.key


def test_the_policys_figures_equal_the_two_plans_it_mixes(demo_engine: Engine) -> None:
    dataset = demo_dataset("test")
    gaps = {qid: _gap(demo_engine, text) for qid, text in dataset.queries.items()}
    gap = statistics.median(gaps.values())  # about half the queries reranked
    plan = demo_engine.plan(collection="demo", k=20, top_n=10)
    report = evaluate_dataset(demo_engine, dataset, plan.with_(skip_gap=gap))
    first = evaluate_dataset(demo_engine, dataset, plan.with_(reranker=None))
    always = evaluate_dataset(demo_engine, dataset, plan)
    skipped = {qid for qid, g in gaps.items() if g >= gap}
    by = {o.query_id: o for o in report.per_query}
    composed = {}
    for o in always.per_query:
        source = next(f for f in first.per_query if f.query_id == o.query_id) if o.query_id in skipped else o
        composed[o.query_id] = source.after[NDCG_10]
        assert by[o.query_id].after[NDCG_10] == pytest.approx(composed[o.query_id], abs=1e-12), o.query_id
    skip = report.skip
    assert skip is not None and skip.reranked == len(dataset.queries) - len(skipped) == report.reranked_queries
    assert skip.saved_share == pytest.approx(len(skipped) / len(dataset.queries))
    ids = [o.query_id for o in report.per_query]
    always_by = {o.query_id: o.after[NDCG_10] for o in always.per_query}
    expected = difference([always_by[q] for q in ids], [composed[q] for q in ids])
    assert skip.vs_always.delta == pytest.approx(expected.delta, abs=1e-12)
    assert (skip.vs_always.ci_low, skip.vs_always.ci_high) == pytest.approx((expected.ci_low, expected.ci_high))
    assert "Skip policy" in report.to_markdown() and f"{skip.saved_share:.0%} of reranker calls saved" in skip.words()
