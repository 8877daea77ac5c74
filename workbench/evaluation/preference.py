"""The preference verdict's figures (`workbench.preferences` assembles them from a session's choices): how often
people preferred B's list to A's, per rater and pooled, with the exact binomial 95 % interval (Clopper-Pearson) and
the two-sided sign test; agreement between raters (Fleiss' kappa on the three-way choice); how many queries a
decision needs at the preference seen; and, where the queries have grades, how often the preferred list is the one
with the higher nDCG@10.

Ties (people's "same" and identical lists, never asked) are counted and shown; the share and the test are over
the decisive queries, as the sign test takes them. Pooled, each query counts once: the side most of its raters
chose (no majority: a tie)."""

from __future__ import annotations

from collections import Counter
from typing import Literal

import numpy as np
from pydantic import BaseModel
from scipy import stats

from workbench.evaluation.metrics import evaluate
from workbench.vocab import GATE_EXIT_CODES, PRIMARY_METRIC, GateOutcome

Preferred = Literal["a", "b", "tie"]

POOLED = "all raters"
POWER = 0.8
ALPHA = 0.05
MOST_QUERIES = 100_000  # beyond this, "more queries" is said as "more than"


class PreferenceCounts(BaseModel):
    """One rater's (or the pool's) choices: B preferred, A preferred, ties; B's share of the decisive ones with
    its exact 95 % interval, the sign test's p, and how many queries in all a decision needs at this share."""

    rater: str
    queries: int
    b: int
    a: int
    ties: int
    share_b: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    queries_needed: int | None  # None: no preference seen (or none decisive), so no number of queries settles it

    @property
    def decisive(self) -> int:
        return self.a + self.b

    @property
    def outcome(self) -> GateOutcome:
        """ship when B's share is above one half with 95 % confidence, no-ship when below, else inconclusive."""
        if self.p_value is None or self.ci_low is None or self.ci_high is None or self.p_value >= ALPHA:
            return "inconclusive"
        if self.ci_low > 0.5:
            return "ship"
        return "no-ship" if self.ci_high < 0.5 else "inconclusive"

    def words(self) -> str:
        if not self.decisive:
            return f"{self.rater}: no decisive choice yet ({self.ties} ties of {self.queries} queries)."
        said = (
            f"{self.rater}: B preferred on {self.b} of {self.decisive} decisive queries ({self.share_b:.0%}, 95 % "
            f"interval {self.ci_low:.0%} to {self.ci_high:.0%}; sign test p = {self.p_value:.3g}); A on {self.a}; "
            f"{self.ties} ties."
        )
        if self.outcome == "inconclusive":
            more = (
                "no preference is seen, so no number of queries settles it"
                if self.queries_needed is None
                else f"about {self.queries_needed} queries in all decide it at this preference (80 % power)"
            )
            said += f" Not settled: {more}."
        return said


class Disagreement(BaseModel):
    """A query raters chose differently on: each rater's choice (a, b or tie)."""

    query_id: str
    query: str
    choices: dict[str, Preferred]


class GradedAgreement(BaseModel):
    """On queries with grades where the two lists' nDCG@10 differ and the pool chose a side: how often the side
    chosen is the one with the higher nDCG@10."""

    queries: int
    agree: int

    @property
    def share(self) -> float | None:
        return self.agree / self.queries if self.queries else None


class PreferenceVerdict(BaseModel):
    """The session's verdict: pooled and per rater, identical lists (ties never asked), Fleiss' kappa over the
    queries every rater chose on, the disagreements to settle, and agreement with the grades."""

    session_id: str
    queries: int
    identical: int
    undecided: int
    pooled: PreferenceCounts
    raters: list[PreferenceCounts]
    fleiss_kappa: float | None
    kappa_queries: int
    disagreements: list[Disagreement]
    graded: GradedAgreement | None = None

    @property
    def outcome(self) -> GateOutcome:
        return self.pooled.outcome

    @property
    def exit_code(self) -> int:
        return GATE_EXIT_CODES[self.outcome]

    def lines(self) -> list[str]:
        """The verdict in words, pooled first."""
        lines = [self.pooled.words()]
        if self.identical:
            lines.append(f"{self.identical} queries showed identical lists: counted as ties, never asked.")
        if self.undecided:
            lines.append(f"{self.undecided} queries have no choice yet (skipped or not reached).")
        if len(self.raters) > 1:
            lines += [r.words() for r in self.raters]
            if self.fleiss_kappa is not None:
                lines.append(
                    f"Agreement between raters: Fleiss' kappa {self.fleiss_kappa:.3f} over the {self.kappa_queries} "
                    f"queries every rater chose on; {len(self.disagreements)} disagreements to settle."
                )
        if self.graded is not None and self.graded.queries:
            lines.append(
                f"Where the grades tell the lists apart ({self.graded.queries} queries), the preferred list has the "
                f"higher {PRIMARY_METRIC} on {self.graded.agree} ({self.graded.share:.0%})."
            )
        return lines


def counts(rater: str, preferred: list[Preferred]) -> PreferenceCounts:
    """The figures of a list of preferences (one a query)."""
    tally = Counter(preferred)
    a, b, ties = tally["a"], tally["b"], tally["tie"]
    decisive = a + b
    if not decisive:
        return PreferenceCounts(rater=rater, queries=len(preferred), b=0, a=0, ties=ties, share_b=None, ci_low=None,
                                ci_high=None, p_value=None, queries_needed=None)  # fmt: skip
    test = stats.binomtest(b, decisive, 0.5)
    interval = test.proportion_ci(0.95, method="exact")
    share = b / decisive
    needed = decisive_needed(share)
    in_all = None if needed is None else int(np.ceil(needed * len(preferred) / decisive))
    return PreferenceCounts(
        rater=rater, queries=len(preferred), b=b, a=a, ties=ties, share_b=share, ci_low=float(interval.low),
        ci_high=float(interval.high), p_value=float(test.pvalue), queries_needed=in_all,
    )  # fmt: skip


def decisive_needed(share: float, power: float = POWER, alpha: float = ALPHA) -> int | None:
    """The fewest decisive queries at which the exact two-sided sign test (level `alpha`) rejects "no preference"
    with probability `power` when B is preferred with probability `share` (None at one half, or beyond
    MOST_QUERIES)."""
    if abs(share - 0.5) < 1e-12:
        return None
    for first, last in ((1, 1_000), (1_001, 10_000), (10_001, MOST_QUERIES)):  # most answers lie in the first block
        n = np.arange(first, last + 1)
        low = stats.binom.ppf(alpha / 2, n, 0.5)  # the smallest k with P(X <= k) >= alpha/2
        low = np.where(stats.binom.cdf(low, n, 0.5) > alpha / 2, low - 1, low)  # the largest with P(X <= k) <= alpha/2
        power_at = np.where(low >= 0, stats.binom.cdf(low, n, share) + stats.binom.sf(n - low - 1, n, share), 0.0)
        enough = np.flatnonzero(power_at >= power)
        if enough.size:
            return int(n[enough[0]])
    return None


def fleiss_kappa(table: list[list[int]]) -> float | None:
    """Fleiss' kappa of an items x categories table of counts (every item rated by the same number of raters);
    None when it is undefined (fewer than two items or raters, or every rating in one category)."""
    counts_ = np.asarray(table, dtype=float)
    if counts_.shape[0] < 2:
        return None
    raters = counts_.sum(axis=1)
    if raters.min() < 2 or raters.min() != raters.max():
        return None
    m = raters[0]
    p_item = ((counts_ * (counts_ - 1)).sum(axis=1)) / (m * (m - 1))
    p_category = counts_.sum(axis=0) / counts_.sum()
    expected = float((p_category**2).sum())
    if expected >= 1.0:
        return None
    return (float(p_item.mean()) - expected) / (1.0 - expected)


def ranking_of(ids: list[str]) -> dict[str, float]:
    """A shown list (document ids in order) as one query's run: higher scores first, a document's first place counts."""
    ranking: dict[str, float] = {}
    for rank, doc in enumerate(ids):
        ranking.setdefault(doc, float(len(ids) - rank))
    return ranking


def list_ndcg10(query_id: str, grades: dict[str, int], ids: list[str]) -> float:
    """nDCG@10 of one shown list (ids in order) under the query's grades (evaluation.metrics, as every figure)."""
    if not ids:
        return 0.0
    run = {query_id: ranking_of(ids)}
    return evaluate({query_id: grades}, run, len(ids))[1].get(query_id, {}).get(PRIMARY_METRIC, 0.0)
