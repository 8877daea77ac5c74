"""Evaluate to the decision: judged queries in a seeded random order, stopping once the verdict is settled, with an
interval that stays valid however often it is looked at, down to after every query.

The rule: a betting confidence sequence for the mean paired change in nDCG@10 over the query set, which the run
samples without replacement (Waudby-Smith & Ramdas, "Confidence sequences for sampling without replacement",
NeurIPS 2020; "Estimating means of bounded random variables by betting", JRSS-B 2023: the hedged capital process
with predictable plug-in bets). Each change lies in [-1, 1] and is mapped to z = (change + 1) / 2 in [0, 1]. For each
candidate mean m of the whole set (a grid of GRID values over [0, 1]), with N queries, S the sum of the first t - 1
z's, the t-th draw's mean under m is m_t = (N m - S) / (N - t + 1), and two bettors' capital grows as

    K+_t(m) = prod (1 + l+_i (z_i - m_i)),  K-_t(m) = prod (1 - l-_i (z_i - m_i)),
    l+_i = min(l_i, c / m_i),  l-_i = min(l_i, c / (1 - m_i)),  l_i = sqrt(2 log(2 / alpha) / (v_{i-1} i log(1 + i)))

with v the running variance estimate of the z's before it and c = BET_CAP. Under the true m the hedged capital
(K+ + K-) / 2 is a nonnegative martingale, so by Ville's inequality its chance of ever reaching 1 / alpha, at any
query, is at most alpha: the sequence keeps every m whose capital has never reached it (and whose m_t was always
in [0, 1]), as an interval to the grid's step (rounded outward), within what the draws alone bound; it closes on
the set's exact mean as the last queries are taken. It is far tighter than the empirical-Bernstein sequence of
the same paper for changes that are mostly 0 with a few large ones, as rerankers' are. The run stops at the first
query (from `MIN_QUERIES` on) whose interval lies above 0 ("helps"), below 0 ("hurts") or inside the tolerance. With
`looks` N, the run looks only N times, at equal parts of the set, and each look reads a paired t interval at
1 - alpha / N (Bonferroni over the planned looks: valid at those looks only). The report names the rule.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel
from scipy import stats

from workbench.vocab import STOPPING_TOLERANCE

SEQUENTIAL_BLOCK = 5  # queries searched at once between looks (each query within is looked at)
MIN_QUERIES = 10  # no stop before this many queries: the run checks need a few queries to say anything
ALPHA = 0.05
BET_CAP = 0.75  # c: a bet stakes at most this share of what it could lose (Waudby-Smith & Ramdas's 1/2 to 3/4)
GRID = 2001  # candidate means of z over [0, 1]: the interval's ends to 0.001 of a change in nDCG@10

Settled = Literal["helps", "hurts", "within tolerance", "not as intended"]


class SequentialPlan(BaseModel):
    """How an evaluation stops early: the seed of the query order, the queries searched at once (`block`), how many
    looks (None: after every query; N: at N equal parts of the set), the tolerance and alpha."""

    seed: int = 0
    block: int = SEQUENTIAL_BLOCK
    tolerance: float = STOPPING_TOLERANCE
    alpha: float = ALPHA
    looks: int | None = None

    def positions(self, available: int) -> list[int]:
        """After how many queries the run looks: every query, or `looks` times at equal parts of the set (the last
        one at its end), never before MIN_QUERIES except at the end of a smaller set."""
        if self.looks is None:
            wanted = range(1, available + 1)
        else:
            wanted = range(1, self.looks + 1)
            wanted = [math.ceil(part * available / self.looks) for part in wanted]  # type: ignore[assignment]
        return sorted({p for p in wanted if p >= min(MIN_QUERIES, available)} | {available})


class BettingSequence:
    """The hedged-capital confidence sequence for the mean of `population` changes in [-1, 1] drawn without
    replacement (see the module), grown a query at a time: `extend` takes the next changes in the order drawn and
    `intervals` holds the interval after each, in the changes' own units, valid at every query at once with
    probability 1 - alpha."""

    def __init__(self, population: int, alpha: float) -> None:
        self.population = population
        self.alpha = alpha
        self.means = np.linspace(0.0, 1.0, GRID)
        self.log_plus = np.zeros(GRID)
        self.log_minus = np.zeros(GRID)
        self.kept = np.ones(GRID, dtype=bool)  # candidate means never rejected so far
        self.drawn: list[float] = []  # the z's so far
        self.total = 0.0  # their sum
        self.squares = 0.0  # sum of (z_i - mean after z_i)^2: the variance estimate's
        self.intervals: list[tuple[float, float]] = []

    def extend(self, deltas: Sequence[float]) -> None:
        """The next changes, in the order drawn; one interval more for each."""
        threshold = math.log(1 / self.alpha)
        for delta in deltas:
            t = len(self.drawn) + 1
            if t > self.population:
                raise ValueError(f"{t} changes drawn from a set of {self.population}")
            z = (min(max(float(delta), -1.0), 1.0) + 1.0) / 2.0
            variance = (0.25 + self.squares) / t  # from the draws before this one: the bet is predictable
            bet = math.sqrt(2 * math.log(2 / self.alpha) / (variance * t * math.log1p(t)))
            remaining = self.population - t + 1
            conditional = (self.population * self.means - self.total) / remaining  # m_t under each candidate m
            self.kept &= (conditional >= -1e-12) & (conditional <= 1 + 1e-12)
            inside = np.clip(conditional, 1e-12, 1 - 1e-12)
            with np.errstate(divide="ignore", invalid="ignore"):
                self.log_plus += np.log1p(np.minimum(bet, BET_CAP / inside) * (z - inside))
                self.log_minus += np.log1p(-np.minimum(bet, BET_CAP / (1 - inside)) * (z - inside))
            capital = np.logaddexp(self.log_plus, self.log_minus) - math.log(2)
            self.kept &= capital < threshold
            self.drawn.append(z)
            self.total += z
            self.squares += (z - (0.5 + self.total) / (t + 1)) ** 2
            self.intervals.append(self._interval(t))

    def _interval(self, t: int) -> tuple[float, float]:
        """The kept candidate means' span, a grid step wider each way, within what the draws alone bound (the rest
        of the set all 0 or all 1) and the interval before it; in the changes' units."""
        low = self.total / self.population
        high = (self.total + self.population - t) / self.population
        if self.kept.any():
            step = 1.0 / (GRID - 1)
            low = max(low, float(self.means[self.kept].min()) - step)
            high = min(high, float(self.means[self.kept].max()) + step)
        if self.intervals:
            before_low, before_high = ((bound + 1) / 2 for bound in self.intervals[-1])
            low, high = max(low, before_low), min(high, before_high)
        return (2 * low - 1, 2 * max(high, low) - 1)


def confidence_sequence(deltas: Sequence[float], population: int, alpha: float) -> list[tuple[float, float]]:
    """The betting confidence sequence (`BettingSequence`) for the mean of `population` changes in [-1, 1], after
    each of the first len(deltas) drawn (in the order drawn). Valid at every query at once with probability
    1 - alpha."""
    sequence = BettingSequence(population, alpha)
    sequence.extend(deltas)
    return sequence.intervals


class SequentialStop(BaseModel):
    """What the stopping rule did: how many queries decided it, of how many, at which look, and why."""

    queries_used: int
    queries_available: int
    looks_planned: int
    looks_taken: int
    settled: Settled | None  # None: never settled; the run went to the set's end
    fault: str = ""  # with "not as intended": the run checks that fired (evaluation/sanity.py), in words
    interval: tuple[float, float]  # the last look's interval, at level 1 - alpha / looks_planned
    plan: SequentialPlan
    sparse: bool = False  # the judgments were sparse at the last look: the judged-only changes had to agree too

    @property
    def rule(self) -> str:
        """The procedure, named."""
        if self.plan.looks is not None:
            level = 1 - self.plan.alpha / self.looks_planned
            return (
                f"Bonferroni alpha spending over {self.looks_planned} looks at equal parts of the set, in a seeded "
                f"random order (seed {self.plan.seed}), each a paired t interval at {level:.2%}"
            )
        return (
            f"a confidence sequence for sampling without replacement (Waudby-Smith & Ramdas; hedged betting), "
            f"looking after every query in a seeded random order (seed {self.plan.seed}), valid at every look at "
            f"{1 - self.plan.alpha:.0%}"
        )

    def words(self) -> str:
        """One sentence: how many queries decided it and by which rule."""
        low, high = self.interval
        if self.settled is None:
            return (
                f"Ran all {self.queries_available} queries: no look settled the verdict (last interval {low:+.4f} to "
                f"{high:+.4f}; {self.rule})."
            )
        why = {
            "helps": "the change's interval lay above 0",
            "hurts": "the change's interval lay below 0",
            "within tolerance": f"the change's interval lay inside ±{self.plan.tolerance}",
            "not as intended": f"the reranker did not run as intended ({self.fault}), which more queries would not "
            "change",
        }[self.settled]
        both = " (and so did the judged-only change's: the judgments are sparse)" if self.sparse else ""
        return (
            f"Stopped after {self.queries_used} of {self.queries_available} queries at look {self.looks_taken}: {why}"
            f"{both} ({low:+.4f} to {high:+.4f}; {self.rule})."
        )


def seeded_order(items: Sequence[tuple[str, str]], seed: int) -> list[tuple[str, str]]:
    """The judged queries in the random order the seed fixes (the same seed, the same order)."""
    shuffled = list(items)
    random.Random(seed).shuffle(shuffled)
    return shuffled


def planned_interval(deltas: Sequence[float], looks: int, alpha: float) -> tuple[float, float]:
    """With N planned looks (`--looks N`): the paired t interval of the mean change at level 1 - alpha / N
    (Bonferroni over the N looks, valid at those looks only, as a run with `--looks` looks only then)."""
    values = np.asarray(deltas, dtype=float)
    if len(values) < 2:
        return (-1.0, 1.0)
    half = float(stats.t.ppf(1 - alpha / looks / 2, len(values) - 1)) * float(values.std(ddof=1))
    half /= math.sqrt(len(values))
    return (float(values.mean()) - half, float(values.mean()) + half)


class _Looks:
    """The intervals a run's looks read from the changes searched so far: the confidence sequence's (valid at every
    query; grown with each block's new changes, rebuilt if the earlier ones changed), or with `looks`, the
    Bonferroni t interval of the planned looks."""

    def __init__(self, available: int, plan: SequentialPlan) -> None:
        self.available = available
        self.plan = plan
        self.sequence = BettingSequence(available, plan.alpha)
        self.deltas: list[float] = []

    def at(self, deltas: Sequence[float]) -> Callable[[int], tuple[float, float]]:
        """What a look after `position` of these changes reads."""
        if self.plan.looks is not None:
            planned = len(self.plan.positions(self.available))
            return lambda position: planned_interval(deltas[:position], planned, self.plan.alpha)
        values = [float(d) for d in deltas]
        if values[: len(self.deltas)] != self.deltas:  # the earlier changes moved: the sequence starts again
            self.sequence, self.deltas = BettingSequence(self.available, self.plan.alpha), []
        self.sequence.extend(values[len(self.deltas) :])
        self.deltas = values
        intervals = self.sequence.intervals
        return lambda position: intervals[position - 1]


def settles(interval: tuple[float, float], used: int, plan: SequentialPlan) -> Settled | None:
    """What an interval of the sequence settles after `used` queries: helps, hurts, within the tolerance, or None."""
    low, high = interval
    if used < MIN_QUERIES:
        return None
    if -plan.tolerance <= low and high <= plan.tolerance:  # too small to matter, even where it excludes 0 (the
        return "within tolerance"  # whole set taken, its exact mean of +0.0001 is no "helps")
    if low > 0:
        return "helps"
    if high < 0:
        return "hurts"
    return None


def run_until_settled(
    deltas_of_first: Callable[[int], Sequence[float]],
    available: int,
    plan: SequentialPlan,
    fault: Callable[[], str] | None = None,
    judged_only_of_first: Callable[[int], Sequence[float] | None] | None = None,
) -> SequentialStop:
    """The stopping rule over `available` queries: `deltas_of_first(n)` gives the paired changes of the first n
    queries in the seeded order (a run searches them then, `plan.block` at a time; a simulation slices its draws).
    Each query searched is looked at (or only `plan.looks` times). `fault()`, asked once a block from MIN_QUERIES
    on, names what says the reranker did not run as intended on the queries so far (the run checks), or ""; then
    the run stops there, and no look calls it helping or hurting. `judged_only_of_first(n)` gives the judged-only
    changes when the first n queries' judgments are sparse (None when they are not): the verdict then rests on them
    too, so a look settles only where both sequences settle alike. Where it stops, as `SequentialStop`."""
    looks = plan.positions(available)
    settled: Settled | None = None
    interval, used, taken, why, sparse = (-1.0, 1.0), available, 0, "", False
    searched = 0
    every, judged_only = _Looks(available, plan), _Looks(available, plan)
    while searched < available and settled is None:
        step = max(plan.block, 1)
        if plan.looks is not None:  # searched up to the next look at once: nothing is looked at in between
            step = max(step, next(p for p in looks if p > searched) - searched)
        looked_to, searched = searched, min(searched + step, available)
        deltas = list(deltas_of_first(searched))
        condensed = judged_only_of_first(searched) if judged_only_of_first is not None else None
        sparse = condensed is not None
        interval_at = every.at(deltas)
        judged_only_at = judged_only.at(list(condensed)) if condensed is not None else None
        for position in (p for p in looks if looked_to < p <= searched):
            used, taken = position, taken + 1
            interval = interval_at(position)
            settled = settles(interval, position, plan)
            other = judged_only_at(position) if judged_only_at is not None else None
            disagree = other is not None and settles(other, position, plan) != settled
            if settled is not None and disagree:
                settled = None  # the judged-only changes do not agree yet: the verdict could not say it
            if settled is not None:
                break
        why = fault() if fault is not None and searched >= MIN_QUERIES else ""
        if why:  # never called helping or hurting while a run check fires
            settled, used = "not as intended", used if settled is not None else searched
    return SequentialStop(
        queries_used=used, queries_available=available, looks_planned=len(looks), looks_taken=taken,
        settled=settled, interval=interval, plan=plan, fault=why, sparse=sparse,
    )  # fmt: skip
