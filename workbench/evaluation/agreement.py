"""How much two rankings agree: overlap@n, Jaccard, Kendall's tau and rank-biased overlap."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel
from scipy.stats import kendalltau


class Agreement(BaseModel):
    """Agreement between two top-n lists of document ids."""

    n: int
    overlap: int
    overlap_at_n: float
    jaccard: float
    kendall_tau: float | None
    rbo: float


def rank_biased_overlap(a: Sequence[str], b: Sequence[str], p: float = 0.9) -> float:
    """Extrapolated RBO (Webber, Moffat and Zobel 2010) of two rankings without ties; 1.0 means identical."""
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    depth = max(len(a), len(b))
    seen_a: set[str] = set()
    seen_b: set[str] = set()
    overlap = 0
    weighted = 0.0
    for d in range(1, depth + 1):
        x = a[d - 1] if d <= len(a) else None
        y = b[d - 1] if d <= len(b) else None
        if x is not None and y is not None and x == y:
            overlap += 1
        else:
            if x is not None:
                overlap += x in seen_b
                seen_a.add(x)
            if y is not None:
                overlap += y in seen_a
                seen_b.add(y)
        weighted += (overlap / d) * p**d
    return float((overlap / depth) * p**depth + (1 - p) / p * weighted)


def agreement(a: Sequence[str], b: Sequence[str]) -> Agreement:
    """Overlap@n (n = the longer list), Jaccard, Kendall's tau on the shared ids (None when fewer than two
    are shared) and RBO with p=0.9."""
    n = max(len(a), len(b))
    shared = [x for x in a if x in set(b)]
    union = set(a) | set(b)
    tau = None
    if len(shared) >= 2:
        position_b = {x: i for i, x in enumerate(b)}
        statistic = kendalltau(list(range(len(shared))), [position_b[x] for x in shared]).statistic
        tau = float(statistic)
    return Agreement(
        n=n,
        overlap=len(shared),
        overlap_at_n=len(shared) / n if n else 1.0,
        jaccard=len(shared) / len(union) if union else 1.0,
        kendall_tau=tau,
        rbo=rank_biased_overlap(a, b),
    )
