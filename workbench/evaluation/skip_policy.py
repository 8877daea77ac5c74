"""Reranking only when it pays: a skip policy (SearchPlan.skip_gap: rerank only when the first stage's top two
scores are closer than the gap) evaluated like any plan. Beside the policy's own figures, the same queries always
reranked: the share of reranker calls the policy saves, and what it costs in nDCG@10 against always reranking,
with the paired interval and p-value (the same test as every verdict)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

from workbench.evaluation.significance import Difference, difference
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


SKIP_QUANTILES = (25, 50, 75)  # tune tries the gaps that skip about three quarters, half and a quarter of the queries
ACCEPTED_LOSS = 0.005  # a policy is advised when its interval against always reranking stays above minus this


def mixed_policy(
    gaps: Sequence[float], always: Sequence[float], first_stage: Sequence[float], gap: float
) -> tuple[list[float], int]:
    """Per query, a skip policy's figure composed from the two plans it mixes: the reranked figure where the first
    stage's top-two gap is below `gap`, else the first stage's own; and how many queries it reranks."""
    mixed = [after if g < gap else before for g, after, before in zip(gaps, always, first_stage, strict=True)]
    return mixed, sum(1 for g in gaps if g < gap)


def skip_search(gaps: Sequence[float], always: Sequence[float], first_stage: Sequence[float]) -> list[SkipFigures]:
    """The skip policies at the quartiles of the queries' top-two gaps (`SKIP_QUANTILES`), each against always
    reranking the same queries: what `eval --skip-gap GAP` would report for each, without scoring anything again."""
    finite = [g for g in gaps if math.isfinite(g)]  # a query of one candidate has no gap: never reranked
    if len(finite) < 2:
        return []
    figures = []
    # each gap to 3 significant figures: what the advice prints is the gap it measured, and what --skip-gap takes
    for gap in sorted({float(f"{np.percentile(finite, q):.3g}") for q in SKIP_QUANTILES}):
        mixed, reranked = mixed_policy(gaps, always, first_stage, gap)
        figure = SkipFigures(
            gap=gap, queries=len(gaps), reranked=reranked, ndcg_policy=float(np.mean(mixed)),
            ndcg_always=float(np.mean(always)), ndcg_first_stage=float(np.mean(first_stage)),
            vs_always=difference(list(always), mixed),
        )  # fmt: skip
        figures.append(figure)
    return figures


def skip_advice(figures: Sequence[SkipFigures]) -> str | None:
    """The policy that saves the most reranker calls while its nDCG@10 interval against always reranking stays
    above -ACCEPTED_LOSS, in a sentence; or that none does (None when no policy was measured)."""
    if not figures:
        return None
    kept = [f for f in figures if f.reranked < f.queries and f.vs_always.ci_low >= -ACCEPTED_LOSS]
    if not kept:
        return (
            f"No skip policy tried (gaps {', '.join(f'{f.gap:g}' for f in figures)}) saves reranker calls within "
            f"{ACCEPTED_LOSS} {PRIMARY_METRIC} of always reranking."
        )
    best = max(kept, key=lambda f: (f.saved_share, -f.gap))
    d = best.vs_always
    return (
        f"Rerank only when the first stage's top two scores are less than {best.gap:g} apart (--skip-gap): "
        f"{best.saved_share:.0%} of reranker calls saved, {PRIMARY_METRIC} {d.delta:+.4f} against always reranking "
        f"(95 % CI {d.ci_low:+.4f} to {d.ci_high:+.4f}, within {ACCEPTED_LOSS})."
    )
