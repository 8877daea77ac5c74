"""The answer to "at this k and top n?": the depth curve's points (quality with its interval, the first stage's
recall ceiling, rerank time) and the recommendation drawn from them: the smallest k whose nDCG@10 interval
overlaps the best point's and whose p95 fits the latency budget, and the smallest top n whose recall interval
overlaps the largest top n's; said in one sentence, and where quality falls as k grows (the deepest k's interval
below the best's, not touching it), said too."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, computed_field

from workbench.vocab import PRIMARY_METRIC


class DepthPoint(BaseModel):
    """Quality and cost at one depth k: metrics of the top n after reranking k candidates, the 95 % bootstrap
    interval of nDCG@10 after, the first stage's Recall@k (the ceiling reranking cannot pass), and rerank time."""

    k: int
    before: dict[str, float]
    after: dict[str, float]
    rerank_ms_p50: float | None = None
    rerank_ms_p95: float | None = None
    after_ci: tuple[float, float] | None = None  # 95 % bootstrap interval of the mean nDCG@10 after reranking
    recall_ceiling: float | None = None  # the first stage's Recall@k: no reranking of these k can find more

    @computed_field  # type: ignore[prop-decorator]
    @property
    def cpu_seconds_per_1000(self) -> float | None:
        """Rerank time of 1,000 queries at the median, in seconds (what a local model costs)."""
        return self.rerank_ms_p50  # ms per query × 1,000 queries / 1,000 ms per second


class TopNPoint(BaseModel):
    """How much of what is relevant the reranked top n keeps: Recall@n after reranking, with its interval."""

    n: int
    recall: float
    ci: tuple[float, float]


class Recommendation(BaseModel):
    """The smallest k and top n that lose nothing measurable, and why."""

    k: int
    quality: float
    best_k: int
    best_quality: float
    rerank_ms_p50: float | None = None
    best_rerank_ms_p50: float | None = None
    rerank_ms_p95: float | None = None
    latency_budget_ms: float | None = None
    over_budget: list[int] = []  # the k values left out for a p95 over the budget
    falls_with_k: tuple[int, float, int, float] | None = None  # (k, quality, deeper k, lower quality)
    deepest_k: int | None = None
    deepest_rerank_ms_p50: float | None = None
    top_n: int | None = None
    top_n_recall: float | None = None
    largest_top_n: int | None = None
    largest_top_n_recall: float | None = None
    # Whether the verdict found reranking measurably better than the first stage: when it did not, no depth is
    # advised as better, only named as the cheapest within the best (the advice never outruns the verdict).
    reranking_measured: bool = True

    @computed_field  # type: ignore[prop-decorator]
    @property
    def words(self) -> str:
        """The recommendation in one or two sentences."""
        metric = PRIMARY_METRIC
        if not self.reranking_measured:
            said = (
                f"No depth is measurably better than the first stage (see the verdict); if you rerank for another "
                f"reason, the cheapest within the best is k = {self.k}: {metric} {self.quality:.3f}"
            )
        elif self.k == self.best_k:
            said = f"Rerank k = {self.k} candidates: {metric} {self.quality:.3f}, the best of the depths measured"
            if self.deepest_k and self.deepest_k != self.k and self.rerank_ms_p50 and self.deepest_rerank_ms_p50:
                share = self.rerank_ms_p50 / self.deepest_rerank_ms_p50
                said += f", at {share:.0%} of the rerank time of k = {self.deepest_k}"
        else:
            said = (
                f"k = {self.k}: {metric} {self.quality:.3f}, not measurably worse than k = {self.best_k} "
                f"({self.best_quality:.3f})"
            )
            if self.rerank_ms_p50 and self.best_rerank_ms_p50:
                share = self.rerank_ms_p50 / self.best_rerank_ms_p50
                said += (
                    f" at {share:.0%} of the rerank time ({self.rerank_ms_p50:,.0f} against "
                    f"{self.best_rerank_ms_p50:,.0f} ms p50)"
                )
        if self.latency_budget_ms is not None and self.over_budget:
            over = ", ".join(str(k) for k in self.over_budget)
            said += f"; k = {over} left out: p95 over the {self.latency_budget_ms:,.0f} ms budget"
        said += "."
        if self.falls_with_k is not None:
            k, q, deeper, lower = self.falls_with_k
            said += f" Quality falls as k grows: {q:.3f} at k = {k}, {lower:.3f} at k = {deeper}."
        if self.top_n is not None and self.largest_top_n is not None and self.top_n_recall is not None:
            said += (
                f" Keep the top {self.top_n}: it holds {self.top_n_recall:.0%} of what is relevant, not measurably "
                f"less than the top {self.largest_top_n} ({self.largest_top_n_recall or 0:.0%})."
            )
        return said


def _overlaps(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool:
    return a is not None and b is not None and a[1] >= b[0] and b[1] >= a[0]


def recommend(
    points: Sequence[DepthPoint],
    top_ns: Sequence[TopNPoint] = (),
    latency_budget_ms: float | None = None,
    *,
    reranking_measured: bool = True,
) -> Recommendation | None:
    """The smallest k whose nDCG@10 interval overlaps the best point's (p95 within the budget, when one is set),
    and the smallest top n whose recall interval overlaps the largest top n's. None without points.
    `reranking_measured`: whether the verdict found reranking measurably better than the first stage (else the
    words advise no depth as better)."""
    if not points:
        return None
    ordered = sorted(points, key=lambda p: p.k)
    allowed = [
        p
        for p in ordered
        if latency_budget_ms is None or p.rerank_ms_p95 is None or p.rerank_ms_p95 <= latency_budget_ms
    ]
    over = [p.k for p in ordered if p not in allowed]
    pool = allowed or ordered
    best = max(pool, key=lambda p: (p.after[PRIMARY_METRIC], -p.k))
    chosen = next((p for p in pool if p is best or _overlaps(p.after_ci, best.after_ci)), best)
    deepest = ordered[-1]
    falls = None
    lower = deepest.after[PRIMARY_METRIC] < best.after[PRIMARY_METRIC]
    # said only when the two intervals do not overlap: a fall inside the noise is no trend
    if deepest.k > best.k and lower and deepest.after_ci and not _overlaps(deepest.after_ci, best.after_ci):
        falls = (best.k, best.after[PRIMARY_METRIC], deepest.k, deepest.after[PRIMARY_METRIC])
    recommendation = Recommendation(
        k=chosen.k, quality=chosen.after[PRIMARY_METRIC], best_k=best.k, best_quality=best.after[PRIMARY_METRIC],
        rerank_ms_p50=chosen.rerank_ms_p50, best_rerank_ms_p50=best.rerank_ms_p50, rerank_ms_p95=chosen.rerank_ms_p95,
        latency_budget_ms=latency_budget_ms, over_budget=over, falls_with_k=falls, deepest_k=deepest.k,
        deepest_rerank_ms_p50=deepest.rerank_ms_p50, reranking_measured=reranking_measured,
    )  # fmt: skip
    return with_top_n(recommendation, top_ns)


def smallest_sufficient_top_n(top_ns: Sequence[TopNPoint]) -> tuple[TopNPoint, TopNPoint] | None:
    """The one rule for top n, shared by eval, tune and the gate's kept candidates: the smallest top n whose
    recall interval overlaps the largest top n's, with that largest point. None without points. The points must
    come from the reranked lists at the k that is advised (`depth.top_n_points(report, k=...)`), so every command
    advising that k advises the same top n."""
    if not top_ns:
        return None
    largest = max(top_ns, key=lambda t: t.n)
    smallest = next(t for t in sorted(top_ns, key=lambda t: t.n) if t is largest or _overlaps(t.ci, largest.ci))
    return smallest, largest


def with_top_n(recommendation: Recommendation, top_ns: Sequence[TopNPoint]) -> Recommendation:
    """`recommendation` with its top n chosen from `top_ns` (measured at its k) by `smallest_sufficient_top_n`."""
    chosen = smallest_sufficient_top_n(top_ns)
    if chosen is not None:
        smallest, largest = chosen
        recommendation.top_n, recommendation.top_n_recall = smallest.n, smallest.recall
        recommendation.largest_top_n, recommendation.largest_top_n_recall = largest.n, largest.recall
    return recommendation
