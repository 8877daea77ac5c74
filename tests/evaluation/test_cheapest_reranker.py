"""Issue 37, item 4: which reranker to ship on cost. The cheapest row whose nDCG@10 is not measurably below the
best's (its paired interval against the best includes 0), within the latency budget at p95; in dollars where every
such row has a price, else by rerank time."""

from __future__ import annotations

from workbench.evaluation.rerankers import RerankerComparison, RerankerRow
from workbench.evaluation.significance import Difference
from workbench.rerankers import RerankerUsage


def _row(name: str, ndcg: float, vs_best: tuple[float, float] | None, p95: float, cost: float | None) -> RerankerRow:
    gain = Difference(delta=ndcg - 0.7, ci_low=ndcg - 0.75, ci_high=ndcg - 0.65, p_value=0.01)
    best = {} if vs_best is None else {"ndcg@10": Difference(delta=sum(vs_best) / 2, ci_low=vs_best[0],
                                                              ci_high=vs_best[1], p_value=0.5)}  # fmt: skip
    return RerankerRow(
        reranker=name, name=name, kind="cross-encoder", backend="torch:cpu", score_scale="logit",
        metrics={"ndcg@10": ndcg, "mrr@10": ndcg}, judged_at_10=1.0,
        vs_first_stage={"ndcg@10": gain, "mrr@10": gain}, vs_best=best, latency_ms_p50=p95 * 0.9,
        latency_ms_p95=p95, timed_queries=50, pairs_per_second=10.0, usage=RerankerUsage(), tokens_per_query=0.0,
        billed_units_per_query=0.0, cost_per_1000_queries=cost,
    )  # fmt: skip


def _comparison(*rows: RerankerRow) -> RerankerComparison:
    return RerankerComparison(
        dataset="d", collection="c", retrieval="dense", k=50, top_n=10, queries=50,
        first_stage={"ndcg@10": 0.7, "mrr@10": 0.7}, first_stage_judged_at_10=1.0, rows=list(rows),
        best=rows[0].reranker, seconds=1.0,
    )  # fmt: skip


def test_the_cheapest_as_good_as_the_best_by_time_where_a_row_has_no_price() -> None:
    compared = _comparison(
        _row("big", 0.80, None, p95=900, cost=None),
        _row("small", 0.79, (-0.03, 0.01), p95=200, cost=None),  # not measurably below the best
        _row("tiny", 0.70, (-0.15, -0.05), p95=50, cost=None),  # measurably below: out, however fast
    )
    chosen = compared.cheapest()
    assert chosen.chosen == "small" and chosen.as_good == ["big", "small"] and chosen.by.startswith("rerank ms")
    assert "small is the cheapest" in chosen.words and "(big:" in chosen.words
    assert compared.cheapest(budget_ms=100).chosen is None  # nothing as good fits 100 ms
    assert "No reranker as good as the best (big) fits within the budget of 100 ms p95" in compared.cheapest(100).words
    assert compared.cheapest(budget_ms=1000).chosen == "small"


def test_in_dollars_when_every_candidate_has_a_price() -> None:
    compared = _comparison(
        _row("hosted-a", 0.80, None, p95=300, cost=2.0),
        _row("hosted-b", 0.80, (-0.02, 0.02), p95=500, cost=1.0),
    )
    chosen = compared.cheapest()
    assert chosen.chosen == "hosted-b" and chosen.by == "US$ per 1,000 queries"
    only = _comparison(_row("alone-best", 0.8, None, p95=10, cost=None), _row("worse", 0.5, (-0.4, -0.2), 5, None))
    assert only.cheapest().chosen == "alone-best" and "is the best, and the cheapest" in only.cheapest().words
    assert "alone-best is the best" in only.to_markdown()
