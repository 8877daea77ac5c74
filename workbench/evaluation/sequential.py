"""Evaluate to the decision: judged queries in a seeded random order, a block at a time, stopping once the verdict
is settled, with an interval that stays valid however often it is looked at.

The rule (Bonferroni alpha spending over the planned looks): with N queries in blocks of B there are at most
L = ceil(N / B) looks; at each look the paired change in nDCG@10 gets a Student-t interval at level 1 - alpha / L,
so the chance that any look wrongly excludes the true change is at most alpha. The run stops at the first look (from
`MIN_QUERIES` on) whose interval lies above 0 ("helps"), below 0 ("hurts"), or inside ±tolerance ("no change larger
than the tolerance"); otherwise it runs to the set's end. Conservative, simple to check by hand, and named in every
report that used it.
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

SEQUENTIAL_BLOCK = 10  # queries per look
MIN_QUERIES = 20  # no stop before this many queries: a t interval on fewer is not worth trusting
ALPHA = 0.05

Settled = Literal["helps", "hurts", "within tolerance", "not as intended"]


class SequentialPlan(BaseModel):
    """How an evaluation stops early: the seed of the query order, the block (or, with `looks`, the block that gives
    that many looks over the set), the tolerance and alpha. Fewer looks spend alpha in larger parts: each look's
    interval is narrower, so a plain effect settles at the first quarter of a large set with 4 looks where a look
    every 10 queries needs about a third (docs/evaluation.md)."""

    seed: int = 0
    block: int = SEQUENTIAL_BLOCK
    tolerance: float = STOPPING_TOLERANCE
    alpha: float = ALPHA
    looks: int | None = None

    def over(self, available: int) -> SequentialPlan:
        """The plan for a set of `available` queries: with `looks`, its block is the set cut into that many parts
        (never under MIN_QUERIES)."""
        if self.looks is None:
            return self
        return self.model_copy(update={"block": max(MIN_QUERIES, math.ceil(available / self.looks)), "looks": None})


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
        level = 1 - self.plan.alpha / self.looks_planned
        return (
            f"Bonferroni alpha spending: a look every {self.plan.block} queries in a seeded random order (seed "
            f"{self.plan.seed}), up to {self.looks_planned} looks, each a paired t interval at {level:.2%}"
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


def looks_planned(available: int, block: int) -> int:
    """How many looks a run over `available` queries may take (at least 1)."""
    return max(1, math.ceil(available / block))


def look(deltas: Sequence[float], planned: int, plan: SequentialPlan) -> tuple[Settled | None, tuple[float, float]]:
    """One look at the paired changes so far: what it settles (or None) and its interval at 1 - alpha / planned."""
    values = np.asarray(deltas, dtype=float)
    n = len(values)
    if n < 2:
        return None, (-math.inf, math.inf)
    mean, spread = float(values.mean()), float(values.std(ddof=1))
    half = float(stats.t.ppf(1 - plan.alpha / planned / 2, n - 1)) * spread / math.sqrt(n)
    interval = (mean - half, mean + half)
    if n < MIN_QUERIES:
        return None, interval
    if interval[0] > 0:
        return "helps", interval
    if interval[1] < 0:
        return "hurts", interval
    if -plan.tolerance <= interval[0] and interval[1] <= plan.tolerance:
        return "within tolerance", interval
    return None, interval


def run_until_settled(
    deltas_of_first: Callable[[int], Sequence[float]],
    available: int,
    plan: SequentialPlan,
    fault: Callable[[], str] | None = None,
    judged_only_of_first: Callable[[int], Sequence[float] | None] | None = None,
) -> SequentialStop:
    """The stopping rule over `available` queries: `deltas_of_first(n)` gives the paired changes of the first n
    queries in the seeded order (a run searches them then; a simulation slices its draws). `fault()`, asked at each
    look from MIN_QUERIES on, names what says the reranker did not run as intended on the queries so far (the run
    checks), or ""; then the run stops there, and no look calls it helping or hurting. `judged_only_of_first(n)`
    gives the judged-only changes when the first n queries' judgments are sparse (None when they are not): the
    verdict then rests on them too, so a look settles only where both series settle alike. Where it stops, as
    `SequentialStop`."""
    plan = plan.over(available)
    planned = looks_planned(available, plan.block)
    settled: Settled | None = None
    interval, used, taken, why, sparse = (-math.inf, math.inf), available, 0, "", False
    for end in range(plan.block, available + plan.block, plan.block):
        used, taken = min(end, available), taken + 1
        settled, interval = look(deltas_of_first(used), planned, plan)
        condensed = judged_only_of_first(used) if judged_only_of_first is not None else None
        sparse = condensed is not None
        if settled is not None and condensed is not None and look(condensed, planned, plan)[0] != settled:
            settled = None  # the judged-only changes do not agree yet: the verdict could not say it
        why = fault() if fault is not None and used >= MIN_QUERIES else ""
        if why:
            settled = "not as intended"
        if settled is not None:
            break
    return SequentialStop(
        queries_used=used, queries_available=available, looks_planned=planned, looks_taken=taken,
        settled=settled, interval=interval, plan=plan, fault=why, sparse=sparse,
    )  # fmt: skip
