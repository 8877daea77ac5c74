"""Fusing ranked lists into one, as a `Fusion` names it.

- **RRF** (Cormack, Clarke and Büttcher 2009): score(d) = Σ w_s / (k + rank_s(d)).
- **Linear**: score(d) = Σ w_s · norm_s(d), each list's scores normalised over that list first: min-max
  ((x − min) / (max − min)), z-score ((x − mean) / standard deviation) or L2 (x / ‖x‖); a document a list did not
  return counts 0 there. A list whose scores are all equal divides by 1e-9, not by zero.

These are ranx's definitions (`ranx.fuse` with `norm="min-max"` or `"zmuv"` and `method="wsum"`, and
`method="rrf"`), and the tests hold them to ranx's output. They are computed here on one query's few lists rather
than through ranx because a search fuses per query, in milliseconds, where ranx builds typed run dictionaries and
compiles on first use; ranx has neither weighted RRF nor L2 normalisation.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from workbench.fusion import Fusion
from workbench.types import Hit

FLOOR = 1e-9  # the smallest divisor (ranx's)


def normalised(scores: Sequence[float], method: str) -> list[float]:
    """One list's scores after a linear fusion's normalisation ('minmax', 'zscore' or 'l2')."""
    values = np.asarray(scores, dtype=np.float64)
    if not len(values):
        return []
    if method == "minmax":
        low = values.min()
        return list((values - low) / max(values.max() - low, FLOOR))
    if method == "zscore":
        return list((values - values.mean()) / max(values.std(), FLOOR))
    if method == "l2":
        return list(values / max(float(np.linalg.norm(values)), FLOOR))
    raise ValueError(f"not a normalisation: {method}")


def fuse(rankings: Mapping[str, Sequence[Hit]], fusion: Fusion) -> list[Hit]:
    """The lists fused as `fusion` says (each list best first; its name, 'dense' or 'bm25', picks its weight).
    Each fused Hit keeps the first list's text and metadata, scores the fused value, and records every list's
    own score and rank in `sources` ({source: {"score", "rank"}}). Ties keep the order of first appearance."""
    fused: dict[str, float] = {}
    first: dict[str, Hit] = {}
    sources: dict[str, dict[str, dict[str, float]]] = {}
    for name, hits in rankings.items():
        weight = fusion.weights.get(name, 1.0)
        if fusion.linear:
            contributions = [weight * value for value in normalised([h.score for h in hits], fusion.method)]
        else:
            contributions = [weight / (fusion.rrf_k + rank) for rank in range(1, len(hits) + 1)]
        for rank, (hit, contribution) in enumerate(zip(hits, contributions, strict=True), start=1):
            fused[hit.id] = fused.get(hit.id, 0.0) + float(contribution)
            first.setdefault(hit.id, hit)
            sources.setdefault(hit.id, {})[name] = {"score": hit.score, "rank": rank}
    order = {hit_id: position for position, hit_id in enumerate(first)}
    ranked = sorted(fused, key=lambda hit_id: (-fused[hit_id], order[hit_id]))
    return [
        Hit(
            id=hit_id,
            text=first[hit_id].text,
            metadata=first[hit_id].metadata,
            score=fused[hit_id],
            sources=sources[hit_id],
        )
        for hit_id in ranked
    ]
