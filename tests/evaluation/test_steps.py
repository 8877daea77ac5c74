"""Issue 73: an evaluation in named steps. `evaluate_dataset` is `run_queries` and then one function per later step,
each a function of the report: the steps taken one by one give the report the whole call gives, and each step's
figures are held to an independent computation (pytrec_eval on the report's own runs)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest
import pytrec_eval

from workbench.config import Settings
from workbench.engine import Engine
from workbench.evaluation import service
from workbench.evaluation.io import Dataset
from workbench.evaluation.report import EvaluationReport
from workbench.evaluation.service import (
    EvaluationOptions,
    Listeners,
    add_depth_curve,
    add_judging_state,
    add_outside_run,
    add_signs,
    add_skip_figures,
    evaluate_dataset,
    run_queries,
)
from workbench.experiments import service as experiments
from workbench.services import evaluations
from workbench.services.demo import demo_dataset
from workbench.services.evaluations import EvaluationRequest, ready_evaluation
from workbench.types import SearchPlan

QUERIES = 12
# The face an evaluation is run through, from the evaluation's floor to the services the front ends call
# (scripts/house_figures.py reports its longest parameter list).
FACE = (
    evaluate_dataset, run_queries, add_judging_state, add_signs, add_depth_curve, add_skip_figures, add_outside_run,
    service.prepare_collection, experiments.run_experiment, experiments.keep_report, experiments.run_again,
    evaluations.run_evaluation_request, evaluations.ready_evaluation, demo_dataset,
)  # fmt: skip


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, tiny_models: dict[str, Path]) -> tuple[Engine, Dataset, SearchPlan]:
    """The demo on the tiny models (random weights: what they score is no matter, only that every step agrees)."""
    settings = Settings(
        persist_dir=tmp_path_factory.mktemp("steps") / "store", embedding_model=str(tiny_models["embedder"]),
        reranker_model=str(tiny_models["reranker"]), offline=True,
    )  # fmt: skip
    engine = Engine(settings)
    ready = ready_evaluation(engine, EvaluationRequest(demo=True))
    return engine, ready.dataset, engine.plan(collection=ready.collection, k=20, top_n=10)


def _ndcg10(qrels: dict, run: dict) -> dict[str, float]:
    scores = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
    return {q: s["ndcg_cut_10"] for q, s in scores.items()}


def test_the_steps_one_by_one_make_the_report_the_whole_call_makes(demo: tuple) -> None:
    engine, dataset, plan = demo
    heard: list[str] = []
    listeners = Listeners(phase=heard.append)
    whole = evaluate_dataset(engine, dataset, plan, max_queries=QUERIES, depth=(10, 20), listeners=listeners)
    report = run_queries(engine, dataset, plan, max_queries=QUERIES)
    assert report.diagnosis is None and not report.depth  # the queries only
    add_judging_state(report)
    add_signs(engine, dataset, plan, report)
    add_depth_curve(engine, dataset, plan, report, (10, 20))
    add_skip_figures(engine, dataset, plan, report, QUERIES)
    add_outside_run(dataset, plan, report, EvaluationOptions())
    assert report.after == whole.after and report.before == whole.before
    assert report.verdict == whole.verdict
    assert report.diagnosis == whole.diagnosis and report.recommendation == whole.recommendation
    assert [(p.k, p.after) for p in report.depth] == [(p.k, p.after) for p in whole.depth]
    assert report.skip is None and report.outside is None  # no skip policy, no outside run: those steps do nothing
    assert any("depth curve" in words for words in heard) and any("signs" in words for words in heard)


def test_each_step_holds_to_pytrec_eval_on_the_reports_own_runs(demo: tuple) -> None:
    engine, dataset, plan = demo
    report: EvaluationReport = run_queries(engine, dataset, plan, max_queries=QUERIES)
    qrels = {q: dataset.qrels[q] for q in report.after_run}
    after = _ndcg10(qrels, report.after_run)
    assert report.after["ndcg@10"] == pytest.approx(sum(after.values()) / len(after), abs=1e-9)
    # the depth curve at the plan's own k reranks the same candidates: its nDCG@10 is the report's
    add_depth_curve(engine, dataset, plan, report, (plan.k,))
    assert [p.k for p in report.depth] == [plan.k]
    assert report.depth[0].after["ndcg@10"] == pytest.approx(report.after["ndcg@10"], abs=1e-9)
    # the signs: one per query weighed, each with the change the report holds
    add_signs(engine, dataset, plan, report)
    assert {d.query_id for d in report.diagnosis.per_query} <= {o.query_id for o in report.per_query}
    # an outside run that is the first stage's own lists: its nDCG@10 is pytrec_eval's on them
    add_outside_run(dataset, plan, report, EvaluationOptions(outside_run=report.before_run, outside_name="bm25 file"))
    before = _ndcg10(qrels, report.before_run)
    assert report.outside is not None and report.outside.name_a == "bm25 file"
    assert report.outside.a["ndcg@10"] == pytest.approx(sum(before.values()) / len(before), abs=1e-9)
    assert report.outside.b["ndcg@10"] == pytest.approx(report.after["ndcg@10"], abs=1e-9)


def test_no_function_of_the_evaluations_face_takes_more_than_eight_parameters() -> None:
    long = {f.__qualname__: len(inspect.signature(f).parameters) for f in FACE}
    assert max(long.values()) <= 8, {name: n for name, n in long.items() if n > 8}


def test_the_gate_over_a_query_set_weighs_that_sets_queries_on_both_sides(demo: tuple) -> None:
    """The gate narrows the judged queries to a kept query set's for the candidate and for another configuration
    as its baseline, and both kept experiments name the set (the query set travels in how a run is kept)."""
    from workbench.experiments import QuerySet, open_experiment_store
    from workbench.experiments.gate import run_gate

    engine, dataset, plan = demo
    chosen = sorted(dataset.qrels)[:7]
    query_set = QuerySet(name="seven", queries=[{"id": q, "text": dataset.queries[q]} for q in chosen])
    decision = run_gate(engine, dataset, plan, source=dataset.name, baseline=plan.with_(reranker=None),
                        query_set=query_set)  # fmt: skip
    store = open_experiment_store(engine.settings)
    for kept in (store.get(decision.candidate_experiment), store.get(decision.baseline_experiment)):
        assert kept.query_set.name == "seven" and sorted(kept.queries) == chosen
    assert decision.comparison.judged_queries == len(chosen)
