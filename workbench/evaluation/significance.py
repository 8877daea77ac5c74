"""Is the difference between two systems real? Paired tests over per-query values."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats


def randomization_test(a: Sequence[float], b: Sequence[float], trials: int = 10000, seed: int = 0) -> float:
    """Two-sided paired randomization (permutation) test of mean(b - a): each trial flips the sign of each
    query's difference at random. Returns the p-value, with the observed arrangement counted (never 0)."""
    diffs = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if len(diffs) == 0 or not np.any(diffs):
        return 1.0
    observed = abs(diffs.mean())
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(trials, len(diffs)))
    extreme = np.count_nonzero(np.abs((signs * diffs).mean(axis=1)) >= observed - 1e-12)
    return float((extreme + 1) / (trials + 1))


def paired_t_test(a: Sequence[float], b: Sequence[float]) -> float:
    """Two-sided paired t-test p-value (1.0 when the two are identical)."""
    diffs = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if len(diffs) < 2 or not np.any(diffs):
        return 1.0
    return float(stats.ttest_rel(b, a).pvalue)


TIE_TOLERANCE = 1e-9  # two per-query figures this close are a tie


def wins_ties_losses(a: Sequence[float], b: Sequence[float], tolerance: float = TIE_TOLERANCE) -> tuple[int, int, int]:
    """Queries where b beats a, ties, and loses."""
    diffs = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    return int((diffs > tolerance).sum()), int((np.abs(diffs) <= tolerance).sum()), int((diffs < -tolerance).sum())


def bootstrap_interval(
    a: Sequence[float], b: Sequence[float], trials: int = 10000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """The paired bootstrap interval of mean(b - a): queries resampled with replacement `trials` times, the
    percentile interval at `level` (0.95: the 2.5th and 97.5th percentiles). (0, 0) for no queries."""
    diffs = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    if len(diffs) == 0:
        return 0.0, 0.0
    rng = np.random.default_rng(seed)
    means = diffs[rng.integers(0, len(diffs), size=(trials, len(diffs)))].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


class Difference(BaseModel):
    """How far system b is from system a on one metric, over the same queries: the mean difference, its paired
    bootstrap 95 % interval and the paired randomization p-value."""

    delta: float
    ci_low: float
    ci_high: float
    p_value: float


def difference(a: Sequence[float], b: Sequence[float]) -> Difference:
    """mean(b - a) with its interval and p-value."""
    low, high = bootstrap_interval(a, b)
    delta = float(np.mean(np.asarray(b, dtype=float) - np.asarray(a, dtype=float))) if len(a) else 0.0
    return Difference(delta=delta, ci_low=low, ci_high=high, p_value=randomization_test(a, b))


class Paired(BaseModel):
    """Two systems compared query by query: how many queries the second helps, ties and hurts, and the paired
    randomization and t-test p-values of the mean difference. The one paired-test type: a report, a group's
    figures and a run comparison are each a `Paired` with their own fields beside (their JSON stays flat, so
    experiments kept before it read as they did; `p_value_ttest` is None in records that did not keep it)."""

    wins: int
    ties: int
    losses: int
    p_value: float
    p_value_ttest: float | None = None


def paired_comparison(a: Sequence[float], b: Sequence[float]) -> Paired:
    """Per-query values of system a and system b (same queries, same order) compared: the one paired comparison
    every report, group and run comparison uses."""
    wins, ties, losses = wins_ties_losses(a, b)
    return Paired(
        wins=wins,
        ties=ties,
        losses=losses,
        p_value=randomization_test(a, b),
        p_value_ttest=paired_t_test(a, b),
    )


class Sensitivity(BaseModel):
    """How sure a paired comparison can be on this query set: the smallest change it detects with 80 % power at
    α = 0.05 (two-sided), and how many queries the observed change would need to be detected so."""

    queries: int
    sd_of_differences: float
    minimum_detectable_effect: float | None  # None with fewer than 2 queries
    queries_needed: int | None  # for the observed change; None when it is zero (no number of queries detects it)
    power: float = 0.8
    alpha: float = 0.05


def sensitivity(a: Sequence[float], b: Sequence[float], power: float = 0.8, alpha: float = 0.05) -> Sensitivity:
    """The paired t-test's minimum detectable effect, (t(1-α/2, n-1) + t(power, n-1)) · sd / √n, and the queries
    the observed mean change δ needs, ((z(1-α/2) + z(power)) · sd / δ)², rounded up (at least 2)."""
    diffs = np.asarray(b, dtype=float) - np.asarray(a, dtype=float)
    n = len(diffs)
    sd = float(np.std(diffs, ddof=1)) if n > 1 else 0.0
    mde = None
    if n > 1:
        mde = float((stats.t.ppf(1 - alpha / 2, n - 1) + stats.t.ppf(power, n - 1)) * sd / np.sqrt(n))
    delta = float(diffs.mean()) if n else 0.0
    needed = None
    if n > 1 and delta != 0.0:
        z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
        needed = max(2, int(np.ceil((z * sd / abs(delta)) ** 2)))
    return Sensitivity(
        queries=n, sd_of_differences=sd, minimum_detectable_effect=mde, queries_needed=needed, power=power, alpha=alpha
    )
