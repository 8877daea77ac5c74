"""Run against run: every figure equals an independent computation (pytrec_eval per query, RBO and tau by hand)."""

from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval

from workbench.evaluation.significance import bootstrap_interval, randomization_test
from workbench.experiments.diff import compare_run_pair

QUERIES = {"q1": "first", "q2": "second", "q3": "third", "q4": "fourth"}
QRELS = {
    "q1": {"a": 2, "b": 0, "c": 1},
    "q2": {"d": 1, "e": 3},
    "q3": {"g": 1},
    "q4": {"h": 2, "i": 1},
}
# Run A and run B rank the same documents differently (scores: higher first).
RUN_A = {
    "q1": {"a": 3.0, "b": 2.0, "c": 1.0},
    "q2": {"d": 3.0, "e": 2.0, "f": 1.0},
    "q3": {"g": 3.0, "x": 2.0},
    "q4": {"h": 2.0, "i": 1.0},
}
RUN_B = {
    "q1": {"b": 3.0, "a": 2.0, "c": 1.0},
    "q2": {"e": 3.0, "d": 2.0, "f": 1.0},
    "q3": {"x": 3.0, "g": 2.0},
    "q4": {"h": 2.0, "i": 1.0},
}


def _ndcg10(run: dict[str, dict[str, float]]) -> dict[str, float]:
    measured = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut.10"}).evaluate(run)
    return {q: measured[q]["ndcg_cut_10"] for q in QRELS}


def test_the_paired_deltas_and_their_test_equal_pytrec_eval_and_the_significance_functions() -> None:
    diff = compare_run_pair(RUN_A, RUN_B, QUERIES, top_n=3, k=10, qrels=QRELS, names=("A", "B"))
    a, b = _ndcg10(RUN_A), _ndcg10(RUN_B)
    by_query = {row.query_id: row for row in diff.per_query}
    for q in QUERIES:
        assert by_query[q].a == pytest.approx(a[q]) and by_query[q].b == pytest.approx(b[q])
        assert by_query[q].delta == pytest.approx(b[q] - a[q])
    a_values, b_values = [a[q] for q in QUERIES], [b[q] for q in QUERIES]
    assert diff.change is not None
    assert diff.change.delta == pytest.approx(np.mean(np.subtract(b_values, a_values)))
    assert (diff.change.ci_low, diff.change.ci_high) == pytest.approx(bootstrap_interval(a_values, b_values))
    assert diff.change.p_value == pytest.approx(randomization_test(a_values, b_values))
    assert (diff.wins, diff.ties, diff.losses) == (1, 1, 2)  # q2 up, q4 the same, q1 and q3 down
    assert diff.a["ndcg@10"] == pytest.approx(np.mean(a_values))
    assert diff.judged_at_10_a == pytest.approx((1 + 2 / 3 + 1 / 2 + 1) / 4)  # f and x are unjudged
    assert diff.judged_queries == 4 and diff.direction == "none"  # four queries: nothing is significant


def test_agreement_figures_equal_a_hand_computation() -> None:
    diff = compare_run_pair(RUN_A, RUN_B, QUERIES, top_n=2, k=10, names=("A", "B"))
    rows = {row.query_id: row for row in diff.per_query}
    # q1: [a, b] against [b, a]: overlap 0 at depth 1, 2 at depth 2 -> RBO = 1 * 0.81 + (0.1 / 0.9) * 0.81 = 0.9
    assert rows["q1"].rbo == pytest.approx(0.9)
    assert rows["q1"].kendall_tau == pytest.approx(-1.0) and rows["q1"].top1_changed
    assert rows["q4"].rbo == pytest.approx(1.0) and rows["q4"].kendall_tau == pytest.approx(1.0)
    assert not rows["q4"].top1_changed
    assert diff.agreement.top1_change_rate == pytest.approx(3 / 4)
    assert diff.agreement.overlap_at_n.mean == pytest.approx(1.0)  # the same two documents, reordered
    assert diff.agreement.kendall_tau.mean == pytest.approx((-1 - 1 - 1 + 1) / 4)
    assert diff.per_query[-1].query_id == "q4"  # where they agree most comes last
    assert diff.change is None and "No judgments" in diff.words()


def test_weights_count_a_frequent_query_more() -> None:
    weights = {"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 97.0}  # q4, unchanged, is asked most
    diff = compare_run_pair(RUN_A, RUN_B, QUERIES, top_n=2, k=10, weights=weights)
    assert diff.agreement.top1_change_rate == pytest.approx(0.75)
    assert diff.agreement.top1_change_rate_weighted == pytest.approx(3 / 100)


def test_only_the_queries_both_runs_answer_are_compared() -> None:
    partial = {q: RUN_B[q] for q in ("q1", "q2")}
    diff = compare_run_pair(RUN_A, partial, QUERIES, top_n=3, k=10, qrels=QRELS)
    assert diff.agreement.queries == 2 and diff.judged_queries == 2
