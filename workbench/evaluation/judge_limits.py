"""A judge that knows its limits: what a verdict resting on an LLM judge's grades can and cannot say.

When some of the grades an evaluation counts are an LLM judge's (pairs no person graded), the verdict states:

- **the judge's lineage beside the candidate's** (`workbench/lineage.py`): LLM judges favour rankers of their own
  lineage, so a same-lineage "helps" that rests on the judge is refused unless the user overrides it;
- **its decision agreement**: on the queries people graded too, restricted to the pairs both graded, the change
  (after - before, nDCG@10 per query) measured on people's grades and on the judge's; over bootstrap resamples of
  those queries, the share where the two give the same decision (helps: the 95 % t-interval of the mean change above
  zero; hurts: below; else none);
- **its resolution floor**: the smallest change its disagreement with people lets it resolve: the per-query error
  e = change on the judge's grades - change on people's, and the floor is the far end of the 95 % t-interval of
  mean(e) (|mean| + t · sd / sqrt(n)), the largest bias on the mean change its disagreement is consistent with.

The verdict *rests on the judge* when taking the judge's grades away (those pairs then count as unjudged, as every
unjudged pair does) changes its direction. Only then can the judge's limits bar it: a same-lineage "helps", a
change inside the floor, or a floor that cannot be measured (fewer than two queries graded by both) makes it
"inconclusive under LLM judgments".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats

from workbench.evaluation.io import GradeSources, Qrels, Run
from workbench.evaluation.metrics import evaluate
from workbench.lineage import model_lineage
from workbench.redact import public_name
from workbench.vocab import PRIMARY_METRIC

AGREEMENT_RESAMPLES = 2000
AGREEMENT_SEED = 0
Decision = str  # "helps", "hurts" or "none"


class JudgeLimits(BaseModel):
    """What the judge behind a verdict can resolve, and whether the verdict holds under it."""

    judge_models: list[str]
    judge_lineage: str | None
    candidate: str
    candidate_lineage: str | None
    same_lineage: bool
    judge_grades_counted: int  # counted grades of the evaluated queries that are the judge's alone
    grades_counted: int
    direction_without_judge: str  # the verdict's direction with the judge's grades taken away
    rests_on_judge: bool
    shared_queries: int  # queries with pairs graded both by people and by the judge
    shared_pairs: int
    decision_people: Decision | None = None
    decision_judge: Decision | None = None
    decision_agreement: float | None = None  # share of bootstrap resamples where the two decisions agree
    resolution_floor: float | None = None
    holds: bool = True
    reason: str = ""  # why the verdict does not hold, when it does not
    allowed_same_lineage: bool = False

    def words(self) -> str:
        """The judge beside the verdict in one or two sentences."""
        judge = ", ".join(self.judge_models)
        said = (
            f"{self.judge_grades_counted:,} of the {self.grades_counted:,} grades counted are the LLM judge's "
            f"({judge}; lineage {self.judge_lineage or 'unknown'}; the candidate {self.candidate}: "
            f"{self.candidate_lineage or 'unknown'})"
        )
        if self.shared_queries < 2:
            said += (
                f"; its agreement with people cannot be measured ({self.shared_queries} queries graded by both: "
                "it needs 2 or more)"
            )
        else:
            said += (
                f"; on the {self.shared_queries} queries people graded too ({self.shared_pairs} pairs), its decision "
                f"agrees with people's in {self.decision_agreement:.0%} of resamples (people: {self.decision_people}, "
                f"the judge: {self.decision_judge}); its resolution floor is ±{self.resolution_floor:.4f} "
                f"{PRIMARY_METRIC}"
            )
        if self.rests_on_judge:
            said += f". Without its grades the verdict would be '{self.direction_without_judge}'"
        if self.allowed_same_lineage and self.same_lineage:
            said += ". A same-lineage judge was allowed by the user"
        return said + "."


def decide(changes: Sequence[float] | np.ndarray) -> Decision:
    """helps / hurts when the 95 % t-interval of the mean change lies above / below zero, else none."""
    values = np.asarray(changes, dtype=float)
    if len(values) < 2:
        return "none"
    low, high = _t_interval(values)
    return "helps" if low > 0 else "hurts" if high < 0 else "none"


def _t_interval(values: np.ndarray) -> tuple[float, float]:
    mean = float(values.mean())
    spread = float(values.std(ddof=1)) / np.sqrt(len(values)) * float(stats.t.ppf(0.975, len(values) - 1))
    return mean - spread, mean + spread


def resolution_floor(judge_changes: Sequence[float], people_changes: Sequence[float]) -> float | None:
    """The far end of the 95 % t-interval of the judge's mean error (its change minus people's), None for fewer
    than two queries."""
    errors = np.asarray(judge_changes, dtype=float) - np.asarray(people_changes, dtype=float)
    if len(errors) < 2:
        return None
    low, high = _t_interval(errors)
    return max(abs(low), abs(high))


def decision_agreement(
    judge_changes: Sequence[float], people_changes: Sequence[float], resamples: int = AGREEMENT_RESAMPLES,
    seed: int = AGREEMENT_SEED,
) -> float | None:  # fmt: skip
    """The share of bootstrap resamples of the queries (the same resample for both) where the decision on the
    judge's changes equals the decision on people's; None for fewer than two queries."""
    judge = np.asarray(judge_changes, dtype=float)
    people = np.asarray(people_changes, dtype=float)
    if len(judge) < 2:
        return None
    picks = np.random.default_rng(seed).integers(0, len(judge), size=(resamples, len(judge)))
    return float(np.mean(_decisions(judge[picks]) == _decisions(people[picks])))


def _decisions(samples: np.ndarray) -> np.ndarray:
    """decide() for each row of a resamples x queries array, as integers (1 helps, -1 hurts, 0 none)."""
    n = samples.shape[1]
    means = samples.mean(axis=1)
    spread = samples.std(axis=1, ddof=1) / np.sqrt(n) * float(stats.t.ppf(0.975, n - 1))
    return np.where(means - spread > 0, 1, np.where(means + spread < 0, -1, 0))


def _changes(qrels: Qrels, before: Run, after: Run, k: int, queries: Sequence[str]) -> list[float]:
    """nDCG@10 after minus before per query; 0 for a query with nothing relevant in `qrels` (no order can change
    its figure)."""
    _, per_before = evaluate(qrels, before, k)
    _, per_after = evaluate(qrels, after, k)
    return [per_after[q][PRIMARY_METRIC] - per_before[q][PRIMARY_METRIC] if q in per_before else 0.0 for q in queries]


def _shared(sources: GradeSources, queries: Sequence[str]) -> tuple[Qrels, Qrels, int]:
    """People's and the judge's grades restricted to the pairs both graded, over `queries`."""
    people: Qrels = {}
    judge: Qrels = {}
    pairs = 0
    for q in queries:
        both = sorted(set(sources.people.get(q, {})) & set(sources.judge.get(q, {})))
        if both:
            people[q] = {d: sources.people[q][d] for d in both}
            judge[q] = {d: sources.judge[q][d] for d in both}
            pairs += len(both)
    return people, judge, pairs


def judge_limits(
    sources: GradeSources,
    qrels: Qrels,
    before: Run,
    after: Run,
    k: int,
    *,
    direction: str,
    delta: float,
    candidate: str,
    direction_without_judge: Callable[[Qrels], str],
) -> JudgeLimits | None:
    """The judge's limits for a verdict (`direction`, `delta`) on `qrels`' queries with the runs `before` and
    `after`; None when no counted grade of these queries is the judge's. `direction_without_judge(qrels)` gives
    the verdict's direction on other grades (the same rule the verdict was decided by)."""
    queries = list(qrels)
    counted = {q: [d for d in sources.judge_counted.get(q, []) if d in qrels[q]] for q in queries}
    judge_counted = sum(len(docs) for docs in counted.values())
    if not judge_counted:
        return None
    without = {q: {d: g for d, g in grades.items() if d not in set(counted[q])} for q, grades in qrels.items()}
    direction_alone = direction_without_judge(without)
    people, judge, pairs = _shared(sources, queries)
    shared = [q for q in people if any(g > 0 for g in people[q].values()) or any(g > 0 for g in judge[q].values())]
    people_changes = _changes(people, before, after, k, shared)
    judge_changes = _changes(judge, before, after, k, shared)
    candidate_lineage = model_lineage(candidate)
    judge_lineages = {model_lineage(m) for m in sources.judge_models}
    judge_lineage = ", ".join(sorted(x or "unknown" for x in judge_lineages))
    same = candidate_lineage is not None and candidate_lineage in judge_lineages
    floor = resolution_floor(judge_changes, people_changes)
    limits = JudgeLimits(
        judge_models=sources.judge_models, judge_lineage=judge_lineage or None, candidate=public_name(candidate) or "",
        candidate_lineage=candidate_lineage, same_lineage=same, judge_grades_counted=judge_counted,
        grades_counted=sum(len(g) for g in qrels.values()), direction_without_judge=direction_alone,
        rests_on_judge=direction_alone != direction, shared_queries=len(shared), shared_pairs=pairs,
        decision_people=decide(people_changes) if len(shared) >= 2 else None,
        decision_judge=decide(judge_changes) if len(shared) >= 2 else None,
        decision_agreement=decision_agreement(judge_changes, people_changes), resolution_floor=floor,
        allowed_same_lineage=sources.allow_same_lineage,
    )  # fmt: skip
    reason = _why_it_does_not_hold(limits, direction, delta)
    return limits.model_copy(update={"holds": not reason, "reason": reason})


def _why_it_does_not_hold(limits: JudgeLimits, direction: str, delta: float) -> str:
    if not limits.rests_on_judge or direction not in {"helps", "hurts"}:
        return ""
    judge = ", ".join(limits.judge_models)
    if direction == "helps" and limits.same_lineage and not limits.allowed_same_lineage:
        return (
            f"Inconclusive under LLM judgments: the verdict rests on the grades of {judge}, of the candidate's own "
            f"lineage ({limits.candidate_lineage}), and LLM judges favour rankers of their own lineage. Grade the "
            "pairs it graded with people or another lineage's judge, or allow it explicitly "
            "(--allow-same-lineage-judge)."
        )
    if limits.resolution_floor is None:
        return (
            f"Inconclusive under LLM judgments: the verdict rests on the grades of {judge}, whose resolution cannot "
            f"be measured ({limits.shared_queries} queries graded by both it and a person; it needs 2 or more). "
            "Let it grade pairs people graded (workbench judgments llm --check N)."
        )
    if abs(delta) < limits.resolution_floor:
        return (
            f"Inconclusive under LLM judgments: the change {PRIMARY_METRIC} {delta:+.4f} rests on the grades of "
            f"{judge} and lies within its resolution floor ±{limits.resolution_floor:.4f} (its disagreement with "
            f"people on {limits.shared_queries} queries graded by both)."
        )
    return ""
