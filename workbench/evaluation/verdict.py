"""The verdict: whether reranking helps, hurts or makes no measurable difference, worded from the change's paired
bootstrap 95 % interval and randomization p-value, and from how much of the top 10 is judged. One function words
it, for the app, the CLI, the reports and the JSON alike.

- "helps" / "hurts" only when p < 0.05 and the interval excludes zero;
- "none" otherwise: no measurable difference, with the interval;
- "unknown" when the change would count but judged@10 is under half: too few judgments to tell (the unjudged
  documents count as not relevant, which biases the figures towards the first stage).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from workbench.evaluation.significance import difference
from workbench.vocab import ENOUGH_JUDGED, PRIMARY_METRIC, VERDICT_ALPHA

Direction = Literal["helps", "hurts", "none", "unknown"]
COLOURS: dict[str, str] = {"helps": "green", "hurts": "red", "none": "gray", "unknown": "orange"}


class Verdict(BaseModel):
    """What the numbers say about reranking on one metric."""

    metric: str = PRIMARY_METRIC
    direction: Direction
    delta: float
    ci_low: float
    ci_high: float
    p_value: float
    judged_at_k: float  # the lesser of judged@10 before and after reranking
    queries: int

    @property
    def colour(self) -> str:
        return COLOURS[self.direction]

    def words(self) -> str:
        """The verdict in one or two sentences."""
        change = (
            f"{self.metric} {self.delta:+.4f} (95 % CI {self.ci_low:+.4f} to {self.ci_high:+.4f}, "
            f"p = {self.p_value:.4f}, {self.queries} queries; judged@10 {self.judged_at_k:.0%})"
        )
        few = self.judged_at_k < ENOUGH_JUDGED
        queue = (
            " Too few of the top 10 are judged to tell: grade them in the judging queue on Evaluate (unjudged "
            "documents count as not relevant)."
        )
        if self.direction == "helps":
            return f"Reranking helps: {change}."
        if self.direction == "hurts":
            return f"Reranking hurts: {change}."
        if self.direction == "unknown":
            return f"Too few judgments to tell whether reranking helps: {change}.{queue}"
        return f"No measurable difference: {change}." + (queue if few else "")


def verdict(
    before: Sequence[float],
    after: Sequence[float],
    judged_before: float,
    judged_after: float,
    metric: str = PRIMARY_METRIC,
) -> Verdict:
    """The verdict on per-query values of `metric` before and after reranking (the same queries, in order)."""
    diff = difference(before, after)
    judged = min(judged_before, judged_after)
    measurable = diff.p_value < VERDICT_ALPHA and (diff.ci_low > 0 or diff.ci_high < 0)
    direction: Direction = "none"
    if measurable:
        direction = "unknown" if judged < ENOUGH_JUDGED else ("helps" if diff.delta > 0 else "hurts")
    return Verdict(
        metric=metric,
        direction=direction,
        delta=diff.delta,
        ci_low=diff.ci_low,
        ci_high=diff.ci_high,
        p_value=diff.p_value,
        judged_at_k=judged,
        queries=len(before),
    )
