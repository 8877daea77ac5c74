"""Reciprocal rank fusion (Cormack, Clarke and Büttcher 2009): score(d) = Σ w_s / (k + rank_s(d))."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from workbench.types import Hit
from workbench.vocab import RRF_K


def reciprocal_rank_fusion(
    rankings: Mapping[str, Sequence[Hit]], *, k: int = RRF_K, weights: Mapping[str, float] | None = None
) -> list[Hit]:
    """Fuse ranked lists by RRF. Each fused Hit keeps the first list's text and metadata, scores the fused
    value, and records every list's own score and rank in `sources` ({source: {"score", "rank"}}).
    Ties keep the order of first appearance (the first list's ranking wins)."""
    fused: dict[str, float] = {}
    first: dict[str, Hit] = {}
    sources: dict[str, dict[str, dict[str, float]]] = {}
    for name, hits in rankings.items():
        weight = 1.0 if weights is None else float(weights.get(name, 1.0))
        for rank, hit in enumerate(hits, start=1):
            fused[hit.id] = fused.get(hit.id, 0.0) + weight / (k + rank)
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
