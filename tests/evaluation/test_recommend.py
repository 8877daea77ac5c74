"""The recommended k and top n on synthetic depth curves whose answer is known."""

from __future__ import annotations

import pytest

from workbench.evaluation.recommend import DepthPoint, TopNPoint, recommend


def _point(k: int, ndcg: float, ci: tuple[float, float], p50: float, p95: float) -> DepthPoint:
    return DepthPoint(
        k=k, before={"ndcg@10": 0.5}, after={"ndcg@10": ndcg}, rerank_ms_p50=p50, rerank_ms_p95=p95, after_ci=ci
    )


CURVE = [
    _point(10, 0.861, (0.82, 0.90), 363, 420),
    _point(20, 0.850, (0.81, 0.89), 700, 800),
    _point(50, 0.848, (0.80, 0.89), 1966, 2300),
    _point(100, 0.70, (0.65, 0.75), 4000, 4600),
]


def test_the_smallest_k_as_good_as_the_best_is_recommended_and_a_falling_curve_is_said() -> None:
    found = recommend(CURVE)
    assert found is not None and found.k == 10 and found.best_k == 10
    assert found.falls_with_k == (10, 0.861, 100, 0.70)
    assert "Quality falls as k grows: 0.861 at k = 10, 0.700 at k = 100." in found.words
    assert "at 9% of the rerank time of k = 100" in found.words  # 363 / 4000


def test_a_fall_inside_the_intervals_is_not_called_a_trend() -> None:
    """Issue 36, item 10: "quality falls as k grows: 0.834 at k = 10, 0.822 at k = 50" beside a verdict that could
    not tell ±0.09 from noise. Overlapping intervals say nothing about a trend."""
    curve = [_point(10, 0.834, (0.78, 0.88), 300, 350), _point(50, 0.822, (0.77, 0.87), 1500, 1800)]
    found = recommend(curve)
    assert found is not None and found.falls_with_k is None and "falls" not in found.words


def test_a_deeper_best_still_recommends_the_smallest_k_within_its_interval() -> None:
    curve = [
        _point(10, 0.70, (0.60, 0.74), 300, 350),  # its interval misses the best's
        _point(20, 0.80, (0.76, 0.84), 600, 700),  # overlaps the best's: the answer
        _point(50, 0.83, (0.79, 0.87), 1500, 1800),
    ]
    found = recommend(curve)
    assert found is not None and (found.k, found.best_k) == (20, 50) and found.falls_with_k is None
    assert found.words.startswith(
        "k = 20: ndcg@10 0.800, not measurably worse than k = 50 (0.830) at 40% of the rerank time"
    )


def test_a_latency_budget_leaves_out_the_slow_depths() -> None:
    curve = [
        _point(10, 0.70, (0.60, 0.74), 300, 350),
        _point(20, 0.80, (0.76, 0.84), 600, 700),
        _point(50, 0.83, (0.79, 0.87), 1500, 1800),
    ]
    found = recommend(curve, latency_budget_ms=500)
    assert found is not None and found.k == 10 and found.over_budget == [20, 50]
    assert "k = 20, 50 left out: p95 over the 500 ms budget" in found.words


def test_the_smallest_top_n_that_keeps_as_much_as_the_largest() -> None:
    top_ns = [
        TopNPoint(n=1, recall=0.40, ci=(0.30, 0.50)),
        TopNPoint(n=5, recall=0.80, ci=(0.72, 0.88)),
        TopNPoint(n=10, recall=0.88, ci=(0.82, 0.94)),
        TopNPoint(n=20, recall=0.94, ci=(0.90, 0.98)),
    ]
    found = recommend(CURVE, top_ns)
    assert found is not None and (found.top_n, found.largest_top_n) == (10, 20)
    assert (
        "Keep the top 10: it holds 88% of what is relevant, not measurably less than the top 20 (94%)." in found.words
    )
    assert recommend([]) is None


def test_the_apps_depth_chart_draws_the_intervals_on_a_full_axis() -> None:
    """Issue 36, item 10: the app's depth chart had no intervals and a y axis from 0.815 to 0.835."""
    from workbench.evaluation.figures import quality_by_depth

    figure = quality_by_depth(
        [p.k for p in CURVE], [0.5] * 4, [p.after["ndcg@10"] for p in CURVE], [p.rerank_ms_p50 for p in CURVE],
        "ndcg@10", [p.after_ci for p in CURVE],
    )  # fmt: skip
    reranked = figure.data[1]
    assert list(reranked.error_y.array) == pytest.approx([0.90 - 0.861, 0.89 - 0.850, 0.89 - 0.848, 0.75 - 0.70])
    assert list(reranked.error_y.arrayminus) == pytest.approx([0.861 - 0.82, 0.850 - 0.81, 0.848 - 0.80, 0.05])
    assert tuple(figure.layout.yaxis.range) == (0, 1.05)


def test_advice_never_outruns_the_verdict() -> None:
    """Issue 52: under "No measurable difference", Evaluate said "Recommendation: Rerank k = 10 candidates: the best
    of the depths measured". Without a measured gain, no depth is advised as better, only named as the cheapest."""
    found = recommend(CURVE, reranking_measured=False)
    assert found is not None and found.k == 10
    assert found.words.startswith("No depth is measurably better than the first stage")
    assert "the cheapest within the best is k = 10" in found.words and "Rerank k" not in found.words
    assert recommend(CURVE).words.startswith("Rerank k = 10")  # type: ignore[union-attr]


def test_the_demo_without_a_measured_gain_advises_no_depth(demo_engine) -> None:  # type: ignore[no-untyped-def]
    from workbench.evaluation.service import evaluate_dataset
    from workbench.services.demo import demo_dataset

    report = evaluate_dataset(
        demo_engine, demo_dataset("test"), demo_engine.plan(collection="demo", k=20, top_n=10), depth=(10, 20)
    )
    assert report.verdict is not None and report.recommendation is not None
    if report.verdict.direction == "helps":
        assert not report.recommendation.words.startswith("No depth")
    else:  # the dense demo at k = 20: no measurable difference
        assert report.recommendation.words.startswith("No depth is measurably better")
        assert "Rerank k" not in report.to_markdown()
