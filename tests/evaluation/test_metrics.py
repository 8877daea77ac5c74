"""Metric values checked by hand on a small case (gain = grade, discount log2(rank + 1), as trec_eval)."""

from __future__ import annotations

import math

import pytest

from workbench.evaluation import evaluate, unjudged_at

QRELS = {
    "q1": {"d1": 2, "d2": 0, "d3": 1},
    "q2": {"e1": 1, "e2": 1},
    "q3": {"f1": 1},
}
RUN = {
    "q1": {"d3": 0.9, "d1": 0.5, "dx": 0.1},  # ranks: d3 (grade 1), d1 (grade 2), dx (unjudged)
    "q2": {"ex": 3.0, "ey": 2.0, "e2": 1.0},  # the first relevant document at rank 3; e1 never retrieved
    # q3: nothing retrieved -> every metric is 0
}


def test_hand_checked_values() -> None:
    means, per_query = evaluate(QRELS, RUN, k=3)
    q1_dcg = 1 / math.log2(2) + 2 / math.log2(3)
    q1_ideal = 2 / math.log2(2) + 1 / math.log2(3)
    assert per_query["q1"]["ndcg@10"] == pytest.approx(q1_dcg / q1_ideal)  # 0.8597
    assert per_query["q1"]["mrr@10"] == 1.0
    assert per_query["q1"]["recall@3"] == 1.0
    assert per_query["q1"]["map@100"] == pytest.approx((1 / 1 + 2 / 2) / 2)
    assert per_query["q1"]["p@10"] == pytest.approx(2 / 10)

    q2_dcg = 1 / math.log2(4)
    q2_ideal = 1 / math.log2(2) + 1 / math.log2(3)
    assert per_query["q2"]["ndcg@10"] == pytest.approx(q2_dcg / q2_ideal)
    assert per_query["q2"]["mrr@10"] == pytest.approx(1 / 3)
    assert per_query["q2"]["recall@3"] == pytest.approx(1 / 2)
    assert per_query["q2"]["map@100"] == pytest.approx((1 / 3) / 2)

    assert per_query["q3"] == dict.fromkeys(per_query["q3"], 0.0)
    assert means["ndcg@10"] == pytest.approx((q1_dcg / q1_ideal + q2_dcg / q2_ideal + 0) / 3)
    assert means["mrr@10"] == pytest.approx((1 + 1 / 3 + 0) / 3)


def test_rank_cutoffs_matter() -> None:
    run = {"q1": {f"x{i}": 100 - i for i in range(12)} | {"d1": 1.0}}  # d1 at rank 13
    _, per_query = evaluate({"q1": QRELS["q1"]}, run, k=20)
    assert per_query["q1"]["ndcg@10"] == 0.0 and per_query["q1"]["mrr@10"] == 0.0
    assert per_query["q1"]["recall@20"] == pytest.approx(1 / 2)


def test_queries_without_relevant_documents_are_not_averaged() -> None:
    means, per_query = evaluate({"q1": QRELS["q1"], "q0": {"z": 0}}, RUN, k=3)
    assert set(per_query) == {"q1"}
    assert means["ndcg@10"] == per_query["q1"]["ndcg@10"]


def test_unjudged_documents_in_the_top_n() -> None:
    assert unjudged_at(QRELS, RUN, 2) == (2, 4)  # q1: d3, d1 judged; q2: ex, ey unjudged
    assert unjudged_at(QRELS, RUN, 3) == (3, 6)  # adds dx (unjudged) and e2 (judged)
