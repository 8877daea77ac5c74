"""Reranking only when it pays: a skip policy (SearchPlan.skip_gap: rerank only when the first stage's top two
scores are closer than the gap) evaluated like any plan. Beside the policy's own figures, the same queries always
reranked: the share of reranker calls the policy saves, and what it costs in nDCG@10 against always reranking,
with the paired interval and p-value (the same test as every verdict)."""

from __future__ import annotations

from pydantic import BaseModel

from workbench.evaluation.significance import Difference
from workbench.vocab import PRIMARY_METRIC


class SkipFigures(BaseModel):
    """A skip policy against always reranking, over the same judged queries."""

    gap: float
    queries: int
    reranked: int
    ndcg_policy: float
    ndcg_always: float
    ndcg_first_stage: float
    vs_always: Difference  # the policy's nDCG@10 minus always reranking's, per query
    rerank_ms_p50_policy: float | None = None
    rerank_ms_p50_always: float | None = None

    @property
    def saved_share(self) -> float:
        """The share of queries the policy answered without a reranker call."""
        return 1 - self.reranked / self.queries if self.queries else 0.0

    def words(self) -> str:
        d = self.vs_always
        change = f"{d.delta:+.4f} (95 % CI {d.ci_low:+.4f} to {d.ci_high:+.4f}, p = {d.p_value:.4f})"
        lost = "measurably worse than" if d.p_value < 0.05 and d.ci_high < 0 else "not measurably worse than"
        return (
            f"Skip policy (rerank only when the first stage's top two scores are less than {self.gap:g} apart): "
            f"reranked {self.reranked:,} of {self.queries:,} queries, {self.saved_share:.0%} of reranker calls saved; "
            f"{PRIMARY_METRIC} {self.ndcg_policy:.4f} against {self.ndcg_always:.4f} always reranking "
            f"(first stage {self.ndcg_first_stage:.4f}): {change}, {lost} always reranking."
        )
