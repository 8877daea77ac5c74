"""The verdict says what the numbers say: helps or hurts only when p < 0.05 and the interval excludes zero, too few
judgments when judged@10 is under half, no measurable difference otherwise; and judged@10 and the judged-only
nDCG@10 equal computations made here by hand and with pytrec_eval."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import pytrec_eval

from workbench.evaluation.metrics import evaluate, judged_at
from workbench.evaluation.verdict import verdict


def _exact_p(before: list[float], after: list[float]) -> float:
    """The exact two-sided paired permutation p over all 2^n sign flips."""
    diffs = np.asarray(after) - np.asarray(before)
    observed = abs(diffs.mean())
    flips = [
        abs((np.asarray(signs) * diffs).mean()) >= observed - 1e-12
        for signs in itertools.product([-1, 1], repeat=len(diffs))
    ]
    return sum(flips) / len(flips)


def test_a_clear_gain_helps_and_its_figures_are_right() -> None:
    before = [0.2, 0.3, 0.1, 0.4, 0.2, 0.3, 0.25, 0.15, 0.35, 0.3, 0.2, 0.1]
    after = [b + 0.2 + 0.01 * i for i, b in enumerate(before)]
    v = verdict(before, after, judged_before=0.9, judged_after=0.8)
    assert v.direction == "helps" and v.colour == "green" and v.judged_at_k == 0.8
    assert v.delta == pytest.approx(np.mean(np.subtract(after, before)))
    assert v.ci_low <= v.delta <= v.ci_high and v.ci_low > 0
    assert v.p_value == pytest.approx(_exact_p(before, after), abs=0.01)
    assert v.words().startswith("Reranking helps: ndcg@10 +0.2550 (95 % CI")
    hurt = verdict(after, before, 0.9, 0.9)
    assert hurt.direction == "hurts" and hurt.words().startswith("Reranking hurts")


def test_too_few_judgments_cannot_tell_even_a_clear_change() -> None:
    before = [0.2] * 10
    after = [0.5] * 10
    v = verdict(before, after, judged_before=0.9, judged_after=0.3)
    assert v.direction == "unknown" and "Too few judgments to tell" in v.words() and "judging queue" in v.words()


@pytest.mark.parametrize("seed", range(30))
def test_the_direction_is_none_whenever_p_is_not_below_005(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 40))
    before = rng.uniform(0, 1, n)
    after = np.clip(before + rng.normal(rng.uniform(-0.1, 0.1), 0.3, n), 0, 1)
    v = verdict(list(before), list(after), 1.0, 1.0)
    if v.p_value >= 0.05 or v.ci_low <= 0 <= v.ci_high:
        assert v.direction == "none" and v.words().startswith("No measurable difference") and v.colour == "gray"
    else:
        assert v.direction == ("helps" if v.delta > 0 else "hurts")


def test_no_change_is_no_measurable_difference() -> None:
    v = verdict([0.5, 0.4, 0.3], [0.5, 0.4, 0.3], 0.2, 0.2)
    assert v.direction == "none" and v.p_value == 1.0 and "Too few of the top 10 are judged" in v.words()


def test_judged_at_10_and_judged_only_ndcg_equal_hand_and_pytrec_eval_figures() -> None:
    qrels = {"q1": {"a": 2, "b": 0, "c": 1}, "q2": {"d": 1, "e": 0}}
    run = {
        "q1": {f"u{i}": 1.0 - i / 100 for i in range(8)} | {"a": 0.5, "b": 0.95, "c": 0.001},
        "q2": {"d": 0.9, "x": 0.8, "e": 0.7},
    }
    means, per_query = evaluate(qrels, run, 20)
    # judged@10 by hand: the share of the top 10 retrieved (q2 retrieved only 3) that has a judgment
    for qid in qrels:
        top10 = sorted(run[qid], key=lambda d: -run[qid][d])[:10]
        assert per_query[qid]["judged@10"] == pytest.approx(sum(d in qrels[qid] for d in top10) / len(top10))
    # judged-only nDCG@10: pytrec_eval on the run with its unjudged documents removed
    judged_run = {q: {d: s for d, s in docs.items() if d in qrels[q]} for q, docs in run.items()}
    reference = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(judged_run)
    for qid in qrels:
        assert per_query[qid]["ndcg@10 judged-only"] == pytest.approx(reference[qid]["ndcg_cut_10"])
    assert means["judged@10"] == pytest.approx((2 / 10 + 2 / 3) / 2)  # q1: b and a in its top 10; q2: d and e


def test_a_query_whose_judged_documents_are_all_grade_0_counts_as_judged() -> None:
    """Three cards graded 0 ("nothing relevant here") is an answer: judged@10 30 %, not 0 % or left out."""
    from workbench.judgments.figures import query_figures
    from workbench.types import Candidate, SearchResult, StageTimings

    grades = {"d0": 0, "d1": 0, "d2": 0}
    run = {f"d{i}": 1.0 - i / 10 for i in range(10)}
    assert judged_at({"dog": grades}, {"dog": run})[1]["dog"] == pytest.approx(0.3)
    means, per_query = evaluate({"dog": grades, "q2": {"a": 1}}, {"dog": run, "q2": {"a": 1.0, "b": 0.5}}, 10)
    assert "dog" not in per_query  # no relevant document: nDCG is undefined for it, as trec_eval has it
    assert means["judged@10"] == pytest.approx((0.3 + 0.5) / 2)  # but it counts in judged@10
    candidates = [
        Candidate(
            id=f"d{i}::0",
            text="t",
            metadata={"document_id": f"d{i}"},
            vector_score=1 - i / 10,
            vector_rank=i + 1,
            rerank_score=float(i),
            rerank_rank=10 - i,
        )
        for i in range(10)
    ]
    result = SearchResult(
        query="dog", collection="c", store="s", k=10, top_n=10, retrieval="dense", embedding_model="e",
        reranker_model="r", candidates=candidates, timings=StageTimings(),
    )  # fmt: skip
    figures = query_figures(result, "dog", grades)
    assert figures.judged_before == pytest.approx(0.3) and figures.judged_after == pytest.approx(0.3)


def test_the_verdict_says_which_judged_at_10_it_quotes() -> None:
    v = verdict([0.5, 0.4, 0.3, 0.2], [0.6, 0.5, 0.4, 0.3], 0.275, 0.3)
    assert "judged@10 28% before, 30% after" in v.words()


def test_the_verdict_never_asks_for_grades_that_cannot_change_it() -> None:
    """Issue 52: a 5-query run said "Too few of the top 10 are judged to tell: grade them" and, on the next line,
    "Settled: no grade of the remaining 70 unjudged pairs can change the verdict". One decision now words both."""
    from workbench.evaluation.verdict import verdict

    sparse = verdict([0.2, 0.5, 0.3, 0.6, 0.4], [0.3, 0.4, 0.5, 0.5, 0.4], 0.3, 0.3)
    assert "grade them" in sparse.words()  # grading could still change it: the queue is offered
    settled = sparse.model_copy(update={"grading_settles": True})
    words = settled.words()
    assert "grade them" not in words and "No grade of the unjudged documents can change this" in words
    assert "with 5 queries, more queries, not more grades, would tell" in words
