"""The verdict: whether reranking helps, hurts or makes no measurable difference, worded from the change's paired
bootstrap 95 % interval and randomization p-value, from how much of the top 10 is judged, and from what the
unjudged documents could do. One function words it, for the app, the CLI, the reports and the JSON alike.

- "helps" / "hurts" only when p < 0.05 and the interval excludes zero;
- "none" otherwise: no measurable difference, with the interval;
- with judged@10 under half (a sparse benchmark), the verdict is given on what the judgments can support: the
  judged-only (condensed-list) figures when they decide, else the bounds (every unjudged document not relevant,
  or relevant at the top grade) when they do not overlap; "unknown" (too few judgments to tell) only when the
  standard figure would count and neither of those decides.

Beside every verdict: the smallest change this query set can detect (80 % power) and the queries the observed
change would need.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from workbench.evaluation.corrected import CorrectedChange, corrected_change, per_query_changes
from workbench.evaluation.io import GradeSources, Qrels, Run
from workbench.evaluation.judge_limits import JudgeLimits, judge_limits
from workbench.evaluation.metrics import evaluate, ndcg_bounds
from workbench.evaluation.sanity import RunCheck, not_as_intended
from workbench.evaluation.significance import Difference, difference, sensitivity
from workbench.vocab import ENOUGH_JUDGED, JUDGED_10, NDCG_10_JUDGED, PRIMARY_METRIC, VERDICT_ALPHA

Direction = Literal["helps", "hurts", "none", "unknown"]
Basis = Literal["all", "judged-only", "bounds"]
COLOURS: dict[str, str] = {"helps": "green", "hurts": "red", "none": "gray", "unknown": "orange"}


class Bounds(BaseModel):
    """Mean nDCG@10 with every unjudged document in the top 10 counted not relevant (low, the standard figure) and
    relevant at the top grade (high), before and after reranking."""

    before_low: float
    before_high: float
    after_low: float
    after_high: float


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
    judged_before: float | None = None  # judged@10 of the first stage's top 10
    judged_after: float | None = None  # judged@10 of the reranked top 10
    basis: Basis = "all"  # which figures decided: all documents, the judged ones only, or the bounds
    judged_only: Difference | None = None  # the judged-only (condensed-list) change, when it was tested
    bounds: Bounds | None = None
    minimum_detectable_effect: float | None = None  # at 80 % power, α = 0.05, for this query set
    queries_needed: int | None = None  # to detect the observed change with 80 % power
    # The run checks that fired (evaluation/sanity.py): while any did, the direction is "unknown" and the words say
    # the reranker did not run as intended, never that the model helps or hurts.
    not_as_intended: list[RunCheck] = Field(default_factory=list)
    # Whether grading the unjudged documents can still change the verdict (evaluation/settling.py): when it cannot,
    # the words never ask for grades (one function decides both the verdict's advice and the judging line).
    grading_settles: bool | None = None
    # Where some counted grades are an LLM judge's: its lineage beside the candidate's, its decision agreement with
    # people and its resolution floor (evaluation/judge_limits.py); when they bar the verdict, direction "unknown".
    judge: JudgeLimits | None = None
    # Where people graded some queries and an LLM judge the rest: the change corrected by PPI++ (evaluation/
    # corrected.py); when its interval is narrower than people's alone, its figures are the verdict's.
    corrected: CorrectedChange | None = None

    @property
    def colour(self) -> str:
        return COLOURS[self.direction]

    def _judged(self) -> str:
        if self.judged_before is not None and self.judged_after is not None:
            return f"judged@10 {self.judged_before:.0%} before, {self.judged_after:.0%} after"
        return f"judged@10 {self.judged_at_k:.0%}"

    def _change(self) -> str:
        return (
            f"{self.metric} {self.delta:+.4f} (95 % CI {self.ci_low:+.4f} to {self.ci_high:+.4f}, "
            f"p = {self.p_value:.4f}, {self.queries} queries; {self._judged()})"
        )

    def sureness(self) -> str:
        """How sure this query set can be: the minimum detectable effect and the queries the change needs."""
        if self.minimum_detectable_effect is None:
            return ""
        words = (
            f"With {self.queries} queries, a change smaller than ±{self.minimum_detectable_effect:.4f} cannot be "
            "told from noise (80 % power)"
        )
        if self.queries_needed is not None and self.queries_needed > self.queries:
            words += f"; detecting {self.delta:+.4f} would need about {self.queries_needed:,} queries"
        return words + "."

    def words(self) -> str:
        """The verdict in a few sentences, and the LLM judge behind its grades where there is one."""
        said = self._words()
        if self.corrected is not None:
            said = f"{said} {self.corrected.words()}"
            if self.corrected.narrower:  # the corrected interval decided, and people's grades make it valid
                return said + (f" {self.judge.words()}" if self.judge is not None else "")
        if self.judge is None:
            return said
        if not self.judge.holds:
            return f"{self.judge.reason} Measured all the same: {self._change()}. {self.judge.words()}"
        return f"{said} {self.judge.words()}"

    def _words(self) -> str:
        if self.not_as_intended:
            return f"{not_as_intended(self.not_as_intended)} Measured all the same: {self._change()}."
        few = self.judged_at_k < ENOUGH_JUDGED
        queue = (
            " Too few of the top 10 are judged to tell: grade them in the judging queue on Evaluate (unjudged "
            "documents count as not relevant)."
            if self.grading_settles is not True
            else f" No grade of the unjudged documents can change this: with {self.queries} queries, more queries, "
            "not more grades, would tell."
        )
        sureness = self.sureness()
        sure = f" {sureness}" if sureness else ""
        said = "helps" if self.direction == "helps" else "hurts"
        if self.basis == "judged-only" and self.judged_only is not None:
            d = self.judged_only
            return (
                f"Reranking {said} on the judged documents: {NDCG_10_JUDGED} {d.delta:+.4f} (95 % CI {d.ci_low:+.4f} "
                f"to {d.ci_high:+.4f}, p = {d.p_value:.4f}), unjudged documents left out of the lists. Counting "
                f"them as not relevant: {self._change()}.{sure}"
            )
        if self.basis == "bounds" and self.bounds is not None:
            b = self.bounds
            return (
                f"Reranking {said} whatever the unjudged documents are: {self.metric} after lies in "
                f"{b.after_low:.4f}–{b.after_high:.4f}, before in {b.before_low:.4f}–{b.before_high:.4f}. "
                f"{self._change()}.{sure}"
            )
        if self.direction in {"helps", "hurts"}:
            return f"Reranking {said}: {self._change()}.{sure}"
        if self.direction == "unknown":
            return f"Too few judgments to tell whether reranking helps: {self._change()}.{queue}{sure}"
        return f"No measurable difference: {self._change()}." + (queue if few else "") + sure


def _measurable(diff: Difference) -> bool:
    return diff.p_value < VERDICT_ALPHA and (diff.ci_low > 0 or diff.ci_high < 0)


def _sparse(
    diff: Difference, judged_only: tuple[Sequence[float], Sequence[float]] | None, bounds: Bounds | None
) -> tuple[Direction, Basis, Difference | None]:
    """A verdict on what sparse judgments can support: the judged-only figures, then the bounds."""
    condensed = difference(*judged_only) if judged_only is not None else None
    if condensed is not None and _measurable(condensed):
        return ("helps" if condensed.delta > 0 else "hurts"), "judged-only", condensed
    if bounds is not None and bounds.after_low > bounds.before_high:
        return "helps", "bounds", condensed
    if bounds is not None and bounds.after_high < bounds.before_low:
        return "hurts", "bounds", condensed
    return ("unknown" if _measurable(diff) else "none"), "all", condensed


def verdict(
    before: Sequence[float],
    after: Sequence[float],
    judged_before: float,
    judged_after: float,
    metric: str = PRIMARY_METRIC,
    *,
    judged_only: tuple[Sequence[float], Sequence[float]] | None = None,
    bounds: Bounds | None = None,
) -> Verdict:
    """The verdict on per-query values of `metric` before and after reranking (the same queries, in order); with
    sparse judgments, on the per-query judged-only values (`judged_only`: before, after) or the `bounds`."""
    diff = difference(before, after)
    judged = min(judged_before, judged_after)
    direction: Direction = "none"
    basis: Basis = "all"
    condensed = None
    if judged >= ENOUGH_JUDGED:
        if _measurable(diff):
            direction = "helps" if diff.delta > 0 else "hurts"
    else:
        direction, basis, condensed = _sparse(diff, judged_only, bounds)
    sure = sensitivity(before, after)
    return Verdict(
        metric=metric,
        direction=direction,
        delta=diff.delta,
        ci_low=diff.ci_low,
        ci_high=diff.ci_high,
        p_value=diff.p_value,
        judged_at_k=judged,
        queries=len(before),
        judged_before=judged_before,
        judged_after=judged_after,
        basis=basis,
        judged_only=condensed,
        bounds=bounds,
        minimum_detectable_effect=sure.minimum_detectable_effect,
        queries_needed=sure.queries_needed,
    )


class Measured(BaseModel):
    """The metrics of the runs before and after reranking under one set of judgments (averaged and per query) and
    the verdict they give."""

    before: dict[str, float]
    after: dict[str, float]
    per_before: dict[str, dict[str, float]]
    per_after: dict[str, dict[str, float]]
    verdict: Verdict


def measured_verdict(qrels: Qrels, before_run: Run, after_run: Run, k: int) -> Measured:
    """Every metric at k of both runs against `qrels` and the verdict on nDCG@10, as an evaluation report gives
    them (the judged-only figures and the bounds for sparse judgments): the one place a verdict is measured."""
    before, per_before = evaluate(qrels, before_run, k)
    after, per_after = evaluate(qrels, after_run, k)
    ids = list(per_before)
    before_low, before_high = ndcg_bounds(qrels, before_run)
    after_low, after_high = ndcg_bounds(qrels, after_run)
    said = verdict(
        [per_before[q][PRIMARY_METRIC] for q in ids],
        [per_after[q][PRIMARY_METRIC] for q in ids],
        before.get(JUDGED_10, 0.0),
        after.get(JUDGED_10, 0.0),
        judged_only=([per_before[q][NDCG_10_JUDGED] for q in ids], [per_after[q][NDCG_10_JUDGED] for q in ids]),
        bounds=Bounds(before_low=before_low, before_high=before_high, after_low=after_low, after_high=after_high),
    )
    return Measured(before=before, after=after, per_before=per_before, per_after=per_after, verdict=said)


def with_judge_limits(
    said: Verdict, sources: GradeSources, qrels: Qrels, before_run: Run, after_run: Run, k: int, candidate: str
) -> Verdict:
    """The verdict with the LLM judge's limits beside it where some of its counted grades are the judge's, and
    "unknown" where they bar it (evaluation/judge_limits.py)."""
    limits = judge_limits(
        sources, qrels, before_run, after_run, k, direction=said.direction, delta=said.delta, candidate=candidate,
        direction_without_judge=lambda other: measured_verdict(other, before_run, after_run, k).verdict.direction,
    )  # fmt: skip
    if limits is not None:
        said = said.model_copy(update={"judge": limits, **({} if limits.holds else {"direction": "unknown"})})
    return with_corrected(said, sources, qrels, before_run, after_run, k)


def with_corrected(
    said: Verdict, sources: GradeSources, qrels: Qrels, before_run: Run, after_run: Run, k: int
) -> Verdict:
    """The verdict with the change corrected by PPI++ beside it: people's grades on the queries they graded, the
    LLM judge's on every evaluated query. Where its interval is narrower than people's alone, its estimate,
    interval and p are the verdict's, and its direction too (unbiased by the judge's errors: people's grades
    correct them), unless a run check fired."""
    people = {q: sources.people[q] for q in qrels if sources.people.get(q)}
    human = {q: v for q, v in per_query_changes(people, before_run, after_run, k).items()
             if any(g > 0 for g in people[q].values())}  # fmt: skip
    cheap = per_query_changes({q: sources.judge.get(q, {}) for q in qrels}, before_run, after_run, k)
    models = ", ".join(sources.judge_models) or "an LLM judge"
    corrected = corrected_change(human, cheap, f"the LLM judge ({models})")
    if corrected is None:
        return said
    update: dict[str, object] = {"corrected": corrected}
    if corrected.narrower and not said.not_as_intended:
        low, high = corrected.ci
        measurable = corrected.p_value < VERDICT_ALPHA
        direction = ("helps" if low > 0 else "hurts" if high < 0 else "none") if measurable else "none"
        update |= {"direction": direction, "delta": corrected.estimate, "ci_low": low, "ci_high": high,
                   "p_value": corrected.p_value}  # fmt: skip
    return said.model_copy(update=update)
