from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from workbench.evaluation import paired_t_test, randomization_test, wins_ties_losses


def test_identical_systems() -> None:
    a = [0.1, 0.5, 0.9]
    assert randomization_test(a, a) == 1.0 and paired_t_test(a, a) == 1.0
    assert wins_ties_losses(a, a) == (0, 3, 0)


def test_a_consistent_gain_is_significant() -> None:
    rng = np.random.default_rng(1)
    a = rng.uniform(0.2, 0.6, size=40)
    b = a + rng.uniform(0.05, 0.15, size=40)
    assert randomization_test(a, b) < 0.001
    assert paired_t_test(a, b) == pytest.approx(stats.ttest_rel(b, a).pvalue)
    assert wins_ties_losses(a, b) == (40, 0, 0)


def test_noise_is_not_significant() -> None:
    rng = np.random.default_rng(2)
    a = rng.uniform(0, 1, size=50)
    b = a + rng.normal(0, 0.05, size=50) * np.where(np.arange(50) % 2, 1, -1)
    assert randomization_test(a, b) > 0.05


def test_randomization_matches_exact_enumeration_on_a_tiny_case() -> None:
    # Differences (1, 2, 3): of the 8 sign patterns, 2 reach |mean| >= 2 (all +, all -) -> exact p = 0.25.
    p = randomization_test([0, 0, 0], [1, 2, 3], trials=200000, seed=3)
    assert p == pytest.approx(0.25, abs=0.005)


def test_an_interval_and_a_p_value_that_disagree_are_explained() -> None:
    """Issue 36, item 10: judged@10 change -0.008 with CI -0.016 to -0.002 beside p = 0.125, unexplained. Four
    queries of fifty changed, each down: the sign-flip test's smallest p is 2/2^4 = 0.125."""
    from workbench.evaluation.report import EvaluationReport, QueryOutcome

    outcomes = [
        QueryOutcome(
            query_id=f"q{i}",
            query="q",
            before={"ndcg@10": 0.5, "judged@10": 1.0},
            after={"ndcg@10": 0.5, "judged@10": 0.9 if i < 4 else 1.0},
        )
        for i in range(50)
    ]
    report = EvaluationReport(
        dataset="d", collection="c", embedding_model="e", reranker_model="r", k=10, top_n=10, queries=50,
        before={"ndcg@10": 0.5, "judged@10": 1.0}, after={"ndcg@10": 0.5, "judged@10": 0.992}, p_value=0.5,
        p_value_ttest=0.5, wins=0, ties=46,
        losses=4, unjudged_before=0, unjudged_after=4, judged_looked_at=500, seconds=1.0, score_cache_hits=0,
        per_query=outcomes,
    )  # fmt: skip
    row = next(r for r in report.metric_rows() if r["metric"] == "judged@10")
    assert row["ci high"] < 0 and row["p"] == pytest.approx(0.125, abs=0.01)
    [note] = report.interval_notes()
    assert "Only 4 of 50 queries changed" in note and "0.1250" in note
    assert note in report.to_markdown()
