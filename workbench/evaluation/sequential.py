"""Evaluate to the decision: judged queries in a seeded random order, stopping once the verdict is settled, with an
interval that stays valid however often it is looked at, down to after every query.

The rule: a confidence sequence for the mean paired change in nDCG@10 over the query set, which the run samples
without replacement (Waudby-Smith & Ramdas, "Confidence sequences for sampling without replacement", NeurIPS 2020),
in its empirical-Bernstein form with predictable plug-in bets (Waudby-Smith & Ramdas, "Estimating means of bounded
random variables by betting", 2023). Each change lies in [-1, 1] and is mapped to z = (change + 1) / 2 in [0, 1]. With
N queries, S the sum of the first t - 1 z's and N / (N - t + 1) the without-replacement weight w_t,

    lower_t = (sum lambda_i (z_i + S_i / (N - i + 1)) - log(2 / alpha) - sum v_i psi(lambda_i)) / sum lambda_i w_i

where v_i = 4 (z_i - mean_{i-1})^2, psi(l) = (-log(1 - l) - l) / 4 and lambda_i is chosen from the queries before it;
the upper bound is the same on 1 - z. Its chance of ever excluding the true mean change, at any query, is at most
alpha (a nonnegative supermartingale and Ville's inequality), and it closes on the exact mean as the last queries of
the set are taken. The run stops at the first query (from `MIN_QUERIES` on) whose interval lies above 0 ("helps"),
below 0 ("hurts") or inside the tolerance. With `looks` N, the run looks only N times, at equal parts of the set, and
each look reads a paired t interval at 1 - alpha / N (Bonferroni over the planned looks: valid at those looks, and
narrower there than a sequence valid at every query). The report names the rule.
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
MAX_BET = 0.75  # the largest bet lambda: the bound stays finite and the sequence tight (Waudby-Smith & Ramdas)

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


def confidence_sequence(deltas: Sequence[float], population: int, alpha: float) -> list[tuple[float, float]]:
    """The without-replacement empirical-Bernstein confidence sequence for the mean of `population` changes in
    [-1, 1], after each of the first len(deltas) drawn (in the order drawn): the running intersection of each
    query's interval, in the changes' own units. Valid at every query at once with probability 1 - alpha."""
    z = (np.clip(np.asarray(deltas, dtype=float), -1.0, 1.0) + 1.0) / 2.0
    n = len(z)
    if n == 0:
        return []
    if n > population:
        raise ValueError(f"{n} changes drawn from a set of {population}")
    t = np.arange(1, n + 1, dtype=float)
    before = np.concatenate([[0.0], np.cumsum(z)[:-1]])  # S_{t-1}
    mean_before = (0.5 + before) / t  # the predictable mean estimate, (1/2 + S_{t-1}) / t
    # the predictable variance estimate, (1/4 + sum_{i<t} (z_i - mean_i)^2) / t, with mean_i the estimate after z_i
    mean_after = (0.5 + np.cumsum(z)) / (t + 1)
    squares = np.concatenate([[0.0], np.cumsum((z - mean_after) ** 2)[:-1]])
    variance = (0.25 + squares) / t
    bet = np.minimum(np.sqrt(2 * math.log(2 / alpha) / (variance * t * np.log1p(t))), MAX_BET)
    remaining = population - t + 1  # N - t + 1
    weight = population / remaining
    spread = 4 * (z - mean_before) ** 2 * (-np.log1p(-bet) - bet) / 4
    width = math.log(2 / alpha) + np.cumsum(spread)
    scale = np.cumsum(bet * weight)
    lower = (np.cumsum(bet * (z + before / remaining)) - width) / scale
    upper = 1 - (np.cumsum(bet * ((1 - z) + ((t - 1) - before) / remaining)) - width) / scale
    # what the draws alone bound, whatever the rest are (0 or 1 each): exact once the whole set is taken
    drawn = np.cumsum(z)
    lower = np.maximum(lower, drawn / population)
    upper = np.minimum(upper, (drawn + (population - t)) / population)
    lower, upper = np.maximum.accumulate(np.clip(lower, 0, 1)), np.minimum.accumulate(np.clip(upper, 0, 1))
    return [(2 * lo - 1, 2 * hi - 1) for lo, hi in zip(lower, upper, strict=True)]


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
            f"a confidence sequence for sampling without replacement (Waudby-Smith & Ramdas; empirical Bernstein), "
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


def _intervals(deltas: Sequence[float], available: int, plan: SequentialPlan) -> Callable[[int], tuple[float, float]]:
    """The interval a look after `position` queries reads: the confidence sequence's (valid at every query, computed
    once for the queries searched), or with `looks`, the Bonferroni t interval of the planned looks."""
    if plan.looks is not None:
        planned = len(plan.positions(available))
        return lambda position: planned_interval(deltas[:position], planned, plan.alpha)
    sequence = confidence_sequence(deltas, available, plan.alpha)
    return lambda position: sequence[position - 1]


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
    while searched < available and settled is None:
        step = max(plan.block, 1)
        if plan.looks is not None:  # searched up to the next look at once: nothing is looked at in between
            step = max(step, next(p for p in looks if p > searched) - searched)
        looked_to, searched = searched, min(searched + step, available)
        deltas = list(deltas_of_first(searched))
        condensed = judged_only_of_first(searched) if judged_only_of_first is not None else None
        sparse = condensed is not None
        interval_at = _intervals(deltas, available, plan)
        judged_only_at = _intervals(list(condensed), available, plan) if condensed is not None else None
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
