"""Team-draft interleaving (Radlinski, Kurup and Joachims, "How does clickthrough data reflect retrieval
quality?", CIKM 2008): two rankings merged into one list, each result credited to the ranking (team) that put it
there; a click credits its team, and an impression whose clicks favour B more than A is a win for B.

- `team_draft`: the merge. While both rankings have a result not yet shown, the team with fewer picks (a coin
  toss when even) adds its highest result not yet in the list.
- `analyse`: wins, ties and losses over impressions with a click; B's share of the decisive ones with its exact
  (Clopper-Pearson) 95 % interval and two-sided binomial p-value; a verdict worded like the offline one.
- `impressions_for_power`: impressions an online test needs to detect a preference with 80 % power (a two-sided
  sign test at α = 0.05, the normal approximation), given the chances of a win and a loss per impression.
- `simulate_interleaving`: those chances, from judgments and a position-based click model: each query's two
  rankings interleaved many times, clicks drawn from the model.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Literal

import numpy as np
from pydantic import BaseModel
from scipy.stats import binomtest, norm

from workbench.clicks.impressions import Impression
from workbench.clicks.models import examination
from workbench.evaluation.report import EvaluationReport
from workbench.vocab import CLICK_ATTRACTIVENESS, VERDICT_ALPHA

Outcome = Literal["A", "B", "tie", "none"]
POWER = 0.8
SIMULATED_IMPRESSIONS = 40_000  # an evaluation's sizing: B's win share within about ±0.5 points (95 %)


def team_draft(
    a: Sequence[str], b: Sequence[str], rng: np.random.Generator, length: int | None = None, query: str = ""
) -> Impression:
    """Team-draft interleaving of rankings `a` and `b` (Radlinski et al. 2008, algorithm 2), cut at `length`: the
    impression of `query` it makes, each shown result with its team."""
    docs: list[str] = []
    teams: list[str] = []
    shown: set[str] = set()
    picks = {"A": 0, "B": 0}
    limit = length if length is not None else len(set(a) | set(b))
    while len(docs) < limit:
        rest_a = [d for d in a if d not in shown]
        rest_b = [d for d in b if d not in shown]
        if not rest_a or not rest_b:
            break
        a_picks = picks["A"] < picks["B"] or (picks["A"] == picks["B"] and rng.random() < 0.5)
        team, pick = ("A", rest_a[0]) if a_picks else ("B", rest_b[0])
        docs.append(pick)
        teams.append(team)
        shown.add(pick)
        picks[team] += 1
    return Impression(query=query, shown=tuple(docs), teams=tuple(teams))


def credit(impression: Impression) -> Outcome:
    """Which team an interleaved impression's clicks favour: the team with more clicked results, `tie` when they
    have as many, `none` without a click."""
    teams = impression.team_of()
    a = sum(1 for doc in impression.clicked if teams.get(doc) == "A")
    b = sum(1 for doc in impression.clicked if teams.get(doc) == "B")
    if a == b == 0:
        return "none"
    return "A" if a > b else "B" if b > a else "tie"


def impressions_for_power(
    p_win: float, p_loss: float, power: float = POWER, alpha: float = VERDICT_ALPHA
) -> int | None:
    """Impressions a two-sided sign test needs to detect B's preference with `power`: decisive impressions
    n = ((z_{1-α/2} · 0.5 + z_power · √(p(1 − p))) / (p − 0.5))², p = p_win / (p_win + p_loss), divided by the
    chance that an impression is decisive. None when there is no preference to detect."""
    decisive = p_win + p_loss
    if decisive <= 0:
        return None
    p = p_win / decisive
    if abs(p - 0.5) < 1e-12:
        return None
    z_alpha, z_power = norm.ppf(1 - alpha / 2), norm.ppf(power)
    n = ((z_alpha * 0.5 + z_power * math.sqrt(p * (1 - p))) / (p - 0.5)) ** 2
    return math.ceil(n / decisive)


class InterleavingAnalysis(BaseModel):
    """Interleaved impressions of A (the first list) against B: wins for B, ties, losses, those without a click;
    B's share of the decisive ones with its 95 % interval and p-value, the verdict, and the impressions still
    needed when it is not measurable yet."""

    a: str
    b: str
    impressions: int
    wins: int
    ties: int
    losses: int
    no_clicks: int
    preference: float | None
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    direction: Literal["helps", "hurts", "none"]
    impressions_needed: int | None = None

    def words(self) -> str:
        """The verdict, worded like the offline one."""
        counts = (
            f"{self.wins:,} wins, {self.ties:,} ties, {self.losses:,} losses over {self.impressions:,} impressions "
            f"({self.no_clicks:,} without a click)"
        )
        if self.preference is None:
            return f"Not measurable yet: no impression decided between {self.a} and {self.b}; {counts}."
        share = (
            f"{self.b} is preferred in {self.preference:.1%} of decisive impressions (95 % CI {self.ci_low:.1%} to "
            f"{self.ci_high:.1%}, p = {self.p_value:.4f}); {counts}"
        )
        if self.direction == "helps":
            return f"{self.b} helps against {self.a}: {share}."
        if self.direction == "hurts":
            return f"{self.b} hurts against {self.a}: {share}."
        more = ""
        if self.impressions_needed is not None and self.impressions_needed > self.impressions:
            more = f" At this preference, about {self.impressions_needed - self.impressions:,} more impressions."
        return f"Not measurable yet: {share}.{more}"


def analyse(outcomes: Sequence[Outcome], a: str = "A", b: str = "B") -> InterleavingAnalysis:
    """Wins (B), ties and losses of interleaved impressions, B's preference with its exact binomial interval, and
    the verdict: helps or hurts when the two-sided p < α and the interval excludes one half."""
    wins = sum(1 for o in outcomes if o == "B")
    losses = sum(1 for o in outcomes if o == "A")
    ties = sum(1 for o in outcomes if o == "tie")
    none = sum(1 for o in outcomes if o == "none")
    decisive = wins + losses
    if not decisive:
        return InterleavingAnalysis(
            a=a, b=b, impressions=len(outcomes), wins=0, ties=ties, losses=0, no_clicks=none, preference=None,
            ci_low=None, ci_high=None, p_value=None, direction="none",
        )  # fmt: skip
    test = binomtest(wins, decisive, 0.5)
    interval = test.proportion_ci(confidence_level=1 - VERDICT_ALPHA, method="exact")
    measurable = test.pvalue < VERDICT_ALPHA and not interval.low <= 0.5 <= interval.high
    direction = ("helps" if wins > losses else "hurts") if measurable else "none"
    total = len(outcomes)
    needed = None if measurable else impressions_for_power(wins / total, losses / total)
    return InterleavingAnalysis(
        a=a, b=b, impressions=total, wins=wins, ties=ties, losses=losses, no_clicks=none,
        preference=wins / decisive, ci_low=float(interval.low), ci_high=float(interval.high),
        p_value=float(test.pvalue), direction=direction, impressions_needed=needed,
    )  # fmt: skip


IMPRACTICAL_IMPRESSIONS = 100_000_000  # past this, an online test is named impractical rather than sized


class OnlineTestSize(BaseModel):
    """What a simulated team-draft test of the first-stage list (A) against the reranked one (B) says: the chances
    of a win, a loss and a tie per impression, and the impressions needed for 80 % power."""

    queries: int
    simulated_impressions: int
    p_win: float
    p_loss: float
    p_tie: float
    impressions_needed: int | None
    click_model: str
    same_lists: int = 0  # queries whose two top n lists are the same list: interleaving them compares nothing

    def words(self) -> str:
        if self.queries and self.same_lists == self.queries:
            return (
                f"No online test can see a difference: the reranked top n is the first stage's, in the same order, "
                f"on all {self.queries} queries (interleaving would show the same list twice)."
            )
        if self.impressions_needed is not None and self.impressions_needed > IMPRACTICAL_IMPRESSIONS:
            return (
                f"No practical online test can see this difference: it would need more than "
                f"{IMPRACTICAL_IMPRESSIONS:,} interleaved impressions for 80 % power (in "
                f"{self.simulated_impressions:,} simulated ones the reranked list won {self.p_win:.2%} and lost "
                f"{self.p_loss:.2%}; {self.same_lists} of {self.queries} queries show the same top n either way)."
            )
        if self.impressions_needed is None:
            return (
                f"An online test would see no preference: in {self.simulated_impressions:,} simulated interleaved "
                f"impressions ({self.click_model}) the reranked list won as often as it lost."
            )
        lead = "reranked" if self.p_win > self.p_loss else "first-stage"
        return (
            f"An interleaved online test needs about {self.impressions_needed:,} impressions for 80 % power: in "
            f"{self.simulated_impressions:,} simulated impressions ({self.click_model}) the {lead} list wins "
            f"{max(self.p_win, self.p_loss):.1%} and loses {min(self.p_win, self.p_loss):.1%} of them "
            f"({self.p_tie:.1%} ties)."
        )


def simulate_interleaving(
    rankings: Mapping[str, tuple[Sequence[str], Sequence[str]]],
    grades: Mapping[str, Mapping[str, int]],
    examined: Sequence[float],
    attractiveness: Mapping[int, float],
    impressions_per_query: int = 200,
    length: int = 10,
    seed: int = 0,
) -> OnlineTestSize:
    """Each query's two rankings (A, B) interleaved `impressions_per_query` times, clicks drawn from a
    position-based model (examination by position × attractiveness by grade, unjudged as grade 0); the chances of
    win, loss and tie per impression, and the impressions an online test needs."""
    rng = np.random.default_rng(seed)
    counts = {"A": 0, "B": 0, "tie": 0, "none": 0}
    for query, (a, b) in rankings.items():
        judged = grades.get(query, {})
        for _ in range(impressions_per_query):
            merged = team_draft(a, b, rng, length)
            chances = np.array(
                [examined[p] * attractiveness.get(judged.get(d, 0), 0.0) for p, d in enumerate(merged.shown)]
            )
            clicked = frozenset(
                d for d, hit in zip(merged.shown, rng.random(len(chances)) < chances, strict=True) if hit
            )
            counts[credit(replace(merged, clicked=clicked))] += 1
    total = max(sum(counts.values()), 1)
    p_win, p_loss = counts["B"] / total, counts["A"] / total
    return OnlineTestSize(
        queries=len(rankings), simulated_impressions=total, p_win=p_win, p_loss=p_loss, p_tie=counts["tie"] / total,
        impressions_needed=impressions_for_power(p_win, p_loss),
        click_model="position-based clicks: examination " + ", ".join(f"{x:.2f}" for x in examined[:3]) + " …, "
        "attractiveness by grade " + ", ".join(f"{g} {a:.2f}" for g, a in sorted(attractiveness.items())),
    )  # fmt: skip


def online_test_size(
    report: EvaluationReport, impressions: int = SIMULATED_IMPRESSIONS, seed: int = 0
) -> OnlineTestSize:
    """The online test an evaluation's offline verdict implies: each judged query's first-stage top n (A) and
    reranked top n (B) interleaved by team draft, clicks drawn from the default position-based model
    (examination 1/position, attractiveness by grade, CLICK_ATTRACTIVENESS), `impressions` in all."""
    rankings = {}
    for outcome in report.per_query:
        before, after = report.top_lists(outcome.query_id)
        rankings[outcome.query_id] = ([d for d, _ in before], [d for d, _ in after])
    grades = {q: {d: max(0, min(g, 3)) for d, g in docs.items()} for q, docs in report.qrels.items()}
    per_query = max(20, impressions // max(len(rankings), 1))
    size = simulate_interleaving(
        rankings, grades, examination(report.top_n), CLICK_ATTRACTIVENESS, per_query, report.top_n, seed
    )
    return size.model_copy(update={"same_lists": sum(list(a) == list(b) for a, b in rankings.values())})
