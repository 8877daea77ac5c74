"""A change measured with few human grades and many cheap ones: prediction-powered inference (PPI++).

An evaluation's change in nDCG@10 (after - before, per query) is known on people's grades only for the queries
people graded (the labelled set L, n queries), and on a cheap source's grades (an LLM judge, a judging
cross-encoder, grades from clicks) for every query. The cheap change alone is biased by the source's errors; the
human change alone is unbiased but rests on few queries. PPI corrects the cheap change with the bias measured where
both exist (Angelopoulos, Bates, Fannjiang, Jordan, Zrnic, "Prediction-powered inference", Science 2023), and PPI++
weights the cheap source by how much it actually tells (Angelopoulos, Duchi, Zrnic, "PPI++", 2023):

    estimate = mean_L(y) + lambda * (mean_U(f) - mean_L(f))
    variance = var_L(y - lambda f) / n + lambda^2 var_U(f) / N

with y the human change, f the cheap change, U the N queries people did not grade, and the tuned weight
lambda = cov_L(y, f) / ((1 + n / N) var(f)), clipped to [0, 1]. With lambda = 0 it is the human-only estimate; with
cheap grades that track people's, lambda is near 1 and the interval narrows by how much of the human change's
spread the cheap change explains. A cheap source whose changes are not measurably correlated with people's
(|r| under 2 / sqrt(n)) gets lambda = 0: it never narrows an interval by chance. The interval is a t interval
(n - 1 degrees of freedom) on that variance.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping

import numpy as np
from pydantic import BaseModel
from scipy import stats

from workbench.evaluation.io import Run
from workbench.evaluation.metrics import evaluate
from workbench.vocab import PRIMARY_METRIC

ALPHA = 0.05
MIN_HUMAN_QUERIES = 3  # fewer people-graded queries give no variance to correct with
STRATA = 4  # the cheap change's quartiles: the strata people's next queries are drawn within
NEXT_SHOWN = 20  # the most queries named to grade next


class CorrectedChange(BaseModel):
    """The change on people's grades alone, and corrected with a cheap source's: each with its 95 % interval."""

    source: str  # the cheap grades' source, named ("LLM judge gpt-4o-mini", "clicks (PBM)", ...)
    human_queries: int  # n: queries people graded
    cheap_queries: int  # N: queries only the cheap source graded
    human_only: float
    human_only_ci: tuple[float, float]
    estimate: float
    ci: tuple[float, float]
    weight: float  # PPI++'s lambda: how much the cheap source counts (0: not at all)
    correlation: float | None  # of the human and cheap changes on the queries both graded
    cheap_only: float  # the cheap source's change over every query, uncorrected (what it alone would say)
    p_value: float  # of the corrected estimate against 0 (t, n - 1 degrees of freedom)
    # the queries people should grade next, in order (see `grade_next`): as many as would settle it, NEXT_SHOWN at most
    grade_next: list[str] = []
    grade_next_texts: dict[str, str] = {}  # their texts, where the evaluation had them (`with_texts`)

    def with_texts(self, queries: Mapping[str, str]) -> CorrectedChange:
        """The same, with the texts of the queries to grade next, so that the words name what a person grades."""
        texts = {q: queries[q] for q in self.grade_next if queries.get(q)}
        return self.model_copy(update={"grade_next_texts": texts}) if texts else self

    def _next_named(self, query_id: str) -> str:
        text = " ".join(self.grade_next_texts.get(query_id, "").split())
        if not text:
            return query_id
        return f'{query_id} ("{text[:60]}{"…" if len(text) > 60 else ""}")'

    @property
    def narrower(self) -> bool:
        """Whether the corrected interval is narrower than the human-only one (then it is the one to decide by)."""
        return (self.ci[1] - self.ci[0]) < (self.human_only_ci[1] - self.human_only_ci[0]) - 1e-12

    @property
    def width_ratio(self) -> float:
        """The corrected interval's width against the human-only one's."""
        human = self.human_only_ci[1] - self.human_only_ci[0]
        return (self.ci[1] - self.ci[0]) / human if human > 0 else 1.0

    @property
    def more_to_decide(self) -> int | None:
        """About how many more queries people would grade (the same spread assumed) for the corrected interval to
        exclude 0 at this estimate; 0 when it does; None when the estimate is 0."""
        low, high = self.ci
        if low > 0 or high < 0:
            return 0
        if self.estimate == 0:
            return None
        half = (high - low) / 2
        return max(1, math.ceil(self.human_queries * (half / abs(self.estimate)) ** 2) - self.human_queries)

    def words(self) -> str:
        """One sentence: both estimates, the weight, and which decides."""
        low, high = self.ci
        hlow, hhigh = self.human_only_ci
        which = (
            f"the corrected interval is {self.width_ratio:.0%} as wide, so it decides"
            if self.narrower
            else "the cheap grades do not narrow it, so people's alone decide"
        )
        more = self.more_to_decide
        need = (
            f" About {more:,} more queries graded by people would settle it, if the change stays this size."
            if more
            else ""
        )
        if more and self.grade_next:
            shown = ", ".join(map(self._next_named, self.grade_next[:5])) + (
                f" and {len(self.grade_next) - 5} more" if len(self.grade_next) > 5 else ""
            )
            need += f" Grade next (drawn at random within the quartiles of {self.source}'s change): {shown}."
        return (
            f"Corrected with {self.source} (PPI++, weight {self.weight:.2f}): {self.estimate:+.4f} (95 % CI "
            f"{low:+.4f} to {high:+.4f}) from {self.human_queries} queries people graded and {self.cheap_queries} "
            f"only {self.source} graded; people's alone: {self.human_only:+.4f} ({hlow:+.4f} to {hhigh:+.4f}); "
            f"{self.source} alone: {self.cheap_only:+.4f}; {which}.{need}"
        )


def per_query_changes(qrels: Mapping[str, Mapping[str, int]], before: Run, after: Run, k: int) -> dict[str, float]:
    """Each query's change in nDCG@10 (after - before) on these grades; 0 for a query they call nothing relevant
    in (both lists score 0 on it)."""
    per_before, per_after = evaluate(dict(qrels), before, k)[1], evaluate(dict(qrels), after, k)[1]
    return {q: per_after[q][PRIMARY_METRIC] - per_before[q][PRIMARY_METRIC] if q in per_before else 0.0 for q in qrels}


def grade_next(cheap: Mapping[str, float], graded: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Every query people have not graded, in the order to grade them: drawn at random within strata of the cheap
    change (its quartiles: the queries sorted by it, ties by id, cut into STRATA groups of equal size), each next
    one from the stratum furthest behind its share, so every prefix samples the strata in proportion to their sizes
    (a stratified random sample stays a random sample of the queries, which the correction assumes, with the
    cheap change's spread covered). Seeded by the queries themselves: the same evaluation names the same queries."""
    ungraded = sorted((q for q in cheap if q not in graded), key=lambda q: (cheap[q], q))
    if not ungraded:
        return []
    seed = int.from_bytes(hashlib.sha256("\0".join(sorted(cheap)).encode("utf-8", "surrogatepass")).digest()[:8])
    rng = np.random.default_rng(seed)
    count = min(STRATA, len(ungraded))
    strata = [list(part) for part in np.array_split(np.array(ungraded, dtype=object), count)]
    for stratum in strata:
        rng.shuffle(stratum)
    taken = [0] * count
    order: list[str] = []
    for step in range(1, len(ungraded) + 1):
        behind = max(range(count), key=lambda i: (len(strata[i]) * step / len(ungraded) - taken[i], -i))
        order.append(str(strata[behind][taken[behind]]))
        taken[behind] += 1
    return order


def corrected_change(
    human: Mapping[str, float], cheap: Mapping[str, float], source: str, alpha: float = ALPHA
) -> CorrectedChange | None:
    """The PPI++ estimate of the mean change over every query in `cheap` (query id -> the change on the cheap
    grades), corrected with `human` (query id -> the change on people's grades, for the queries people graded,
    each also in `cheap`). None when people graded fewer than MIN_HUMAN_QUERIES of them, or every query."""
    labelled = [q for q in human if q in cheap]
    unlabelled = [q for q in cheap if q not in human]
    n, big_n = len(labelled), len(unlabelled)
    if n < MIN_HUMAN_QUERIES or big_n == 0:
        return None
    y = np.array([human[q] for q in labelled], dtype=float)
    f_l = np.array([cheap[q] for q in labelled], dtype=float)
    f_u = np.array([cheap[q] for q in unlabelled], dtype=float)
    quantile = float(stats.t.ppf(1 - alpha / 2, n - 1))
    human_sd = float(y.std(ddof=1))
    human_half = quantile * human_sd / math.sqrt(n)
    correlation, weight = _weight(y, f_l, f_u, n, big_n)
    estimate = float(y.mean() + weight * (f_u.mean() - f_l.mean()))
    spread_u = float(f_u.var(ddof=1)) if big_n > 1 else 0.0
    variance = float((y - weight * f_l).var(ddof=1)) / n + weight**2 * spread_u / big_n
    error = math.sqrt(max(variance, 0.0)) if weight > 0 else human_sd / math.sqrt(n)  # lambda 0: people's alone
    half = quantile * error if weight > 0 else human_half
    p_value = float(2 * stats.t.sf(abs(estimate) / error, n - 1)) if error > 0 else float(estimate == 0)
    found = CorrectedChange(
        source=source, human_queries=n, cheap_queries=big_n, human_only=float(y.mean()),
        human_only_ci=(float(y.mean()) - human_half, float(y.mean()) + human_half), estimate=estimate,
        ci=(estimate - half, estimate + half), weight=weight, correlation=correlation,
        cheap_only=float(np.concatenate([f_l, f_u]).mean()), p_value=p_value,
    )  # fmt: skip
    more = found.more_to_decide
    if more:
        found.grade_next = grade_next(cheap, set(labelled))[: min(more, NEXT_SHOWN)]
    return found


def _weight(y: np.ndarray, f_l: np.ndarray, f_u: np.ndarray, n: int, big_n: int) -> tuple[float | None, float]:
    """PPI++'s tuned lambda, clipped to [0, 1], and the correlation it rests on; 0 where the cheap changes do not
    vary or are not measurably correlated with people's (|r| < 2 / sqrt(n))."""
    f_all = np.concatenate([f_l, f_u])
    spread = float(f_all.var(ddof=1))
    if spread <= 0 or float(y.std(ddof=1)) == 0 or float(f_l.std(ddof=1)) == 0:
        return None, 0.0
    correlation = float(np.corrcoef(y, f_l)[0, 1])
    if not math.isfinite(correlation) or abs(correlation) < 2 / math.sqrt(n):
        return correlation if math.isfinite(correlation) else None, 0.0
    covariance = float(np.cov(y, f_l, ddof=1)[0, 1])
    weight = covariance / ((1 + n / big_n) * spread)
    return correlation, float(min(max(weight, 0.0), 1.0))
