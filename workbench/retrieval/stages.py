"""First stages: what finds the candidates a reranker sees. One protocol and one registry, like the reranker kinds.

    dense    the store's vector search (the query embedded first; a store that embeds queries itself gets the text)
    bm25     the collection's BM25 index
    hybrid   both, fused as the plan names (RRF with the settings' constant and weights unless it names one)

A new first stage (SPLADE, a store's native hybrid) is one class with `candidates` and one line in `FIRST_STAGES`;
the engine asks the registry for the plan's stage and never names one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from workbench.config import Settings
from workbench.fusion import Fusion, rrf
from workbench.retrieval.bm25 import BM25Index
from workbench.retrieval.fusion import fuse
from workbench.stores.base import Collection
from workbench.types import Hit, Metadata


class FirstStage(Protocol):
    """Finds candidates for a query. `needs_vector`: the engine embeds the query first (timed as its own stage)
    and passes the vector in."""

    needs_vector: bool

    def candidates(self, query: str, depth: int, filters: Metadata, vector: Any = None) -> list[Hit]:
        """The best `depth` hits for the query under the metadata filters, best first."""
        ...


@dataclass(frozen=True)
class StageParts:
    """What a first stage may be built from: the collection's store, its BM25 index (loaded on first ask), the
    settings, and the fusion the plan names (None: RRF with the settings' constant and weights)."""

    store: Collection
    bm25: Callable[[], BM25Index]
    settings: Settings
    fusion: Fusion | None = None


@dataclass(frozen=True)
class DenseStage:
    store: Collection

    @property
    def needs_vector(self) -> bool:
        return not self.store.embeds_queries

    def candidates(self, query: str, depth: int, filters: Metadata, vector: Any = None) -> list[Hit]:
        return self.store.search(depth, filters, vector=vector, text=query)


@dataclass(frozen=True)
class Bm25Stage:
    index: BM25Index
    needs_vector: bool = False

    def candidates(self, query: str, depth: int, filters: Metadata, vector: Any = None) -> list[Hit]:
        return self.index.search(query, depth, filters)


@dataclass(frozen=True)
class HybridStage:
    """Dense and BM25, each `depth` deep, fused."""

    dense: DenseStage
    keywords: Bm25Stage
    fusion: Fusion

    @property
    def needs_vector(self) -> bool:
        return self.dense.needs_vector

    def candidates(self, query: str, depth: int, filters: Metadata, vector: Any = None) -> list[Hit]:
        rankings = {
            "dense": self.dense.candidates(query, depth, filters, vector),
            "bm25": self.keywords.candidates(query, depth, filters),
        }
        return fuse(rankings, self.fusion)


def settings_fusion(settings: Settings) -> Fusion:
    """The fusion a plan that names none gets: RRF with WORKBENCH_RRF_K and WORKBENCH_HYBRID_*_WEIGHT."""
    return rrf(settings.rrf_k, settings.hybrid_dense_weight, settings.hybrid_bm25_weight)


def _hybrid(parts: StageParts) -> HybridStage:
    fusion = parts.fusion or settings_fusion(parts.settings)
    return HybridStage(DenseStage(parts.store), Bm25Stage(parts.bm25()), fusion)


# The registry: a retrieval mode's name -> how its stage is built. vocab.RETRIEVAL_MODES names the same modes
# (tests/test_layout.py checks they agree).
FIRST_STAGES: dict[str, Callable[[StageParts], FirstStage]] = {
    "dense": lambda parts: DenseStage(parts.store),
    "bm25": lambda parts: Bm25Stage(parts.bm25()),
    "hybrid": _hybrid,
}


def first_stage(mode: str, parts: StageParts) -> FirstStage:
    """The first stage a retrieval mode names (modes are validated where a plan is made)."""
    return FIRST_STAGES[mode](parts)
