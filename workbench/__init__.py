"""Rerank Workbench: vector search beside cross-encoder reranking, with timings and relevance metrics.

>>> import workbench
>>> result = workbench.search("how many vacation days do I get", k=50, top_n=10)
>>> result.reranked[0].movement_label

`workbench.search` is the keyword convenience (as `httpx.get` is): it makes a `SearchPlan` with `Engine.plan` and
calls `Engine.search(query, plan)`, the one form below the package's face.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from workbench.config import Settings, get_settings
    from workbench.embeddings import EmbedderAsLangChain, LangChainEmbedder, SentenceTransformerEmbedder
    from workbench.engine import Engine, get_engine
    from workbench.errors import (
        CollectionNotFoundError,
        ConfigError,
        IngestError,
        InputError,
        ModelError,
        ModelNotFoundError,
        QueryTimeoutError,
        StoreConnectionError,
        StoreError,
        WorkbenchError,
    )
    from workbench.evaluation.calibration import calibrate
    from workbench.evaluation.html_report import save_report
    from workbench.evaluation.service import evaluate_dataset
    from workbench.models import resolve_model
    from workbench.rerankers import CrossEncoderReranker, ScoreCache
    from workbench.services.demo import demo_dataset
    from workbench.services.explain import explain_document
    from workbench.services.search import RetrievalService, retrieve_chunks, retrieve_top_docs, search_documents
    from workbench.stores import StoreConfig, StoreRegistry
    from workbench.types import (
        Candidate,
        Chunk,
        CollectionInfo,
        IngestReport,
        RankedHit,
        RetrievedChunk,
        SearchPlan,
        SearchResult,
        StageTimings,
    )

_EXPORTS: dict[str, str] = {
    "Candidate": "workbench.types",
    "Chunk": "workbench.types",
    "CollectionInfo": "workbench.types",
    "CollectionNotFoundError": "workbench.errors",
    "ConfigError": "workbench.errors",
    "CrossEncoderReranker": "workbench.rerankers",
    "EmbedderAsLangChain": "workbench.embeddings",
    "Engine": "workbench.engine",
    "IngestError": "workbench.errors",
    "IngestReport": "workbench.types",
    "InputError": "workbench.errors",
    "LangChainEmbedder": "workbench.embeddings",
    "ModelError": "workbench.errors",
    "ModelNotFoundError": "workbench.errors",
    "QueryTimeoutError": "workbench.errors",
    "RankedHit": "workbench.types",
    "RetrievalService": "workbench.services.search",
    "RetrievedChunk": "workbench.types",
    "ScoreCache": "workbench.rerankers",
    "SearchPlan": "workbench.types",
    "SearchResult": "workbench.types",
    "SentenceTransformerEmbedder": "workbench.embeddings",
    "Settings": "workbench.config",
    "StageTimings": "workbench.types",
    "StoreConfig": "workbench.stores",
    "StoreConnectionError": "workbench.errors",
    "StoreError": "workbench.errors",
    "StoreRegistry": "workbench.stores",
    "WorkbenchError": "workbench.errors",
    "calibrate": "workbench.evaluation.calibration",
    "demo_dataset": "workbench.services.demo",
    "evaluate_dataset": "workbench.evaluation.service",
    "explain_document": "workbench.services.explain",
    "save_report": "workbench.evaluation.html_report",
    "get_engine": "workbench.engine",
    "get_settings": "workbench.config",
    "resolve_model": "workbench.models",
    "retrieve_chunks": "workbench.services.search",
    "retrieve_top_docs": "workbench.services.search",
    "search_documents": "workbench.services.search",
}

__version__ = "0.1.0"

__all__ = [
    "Candidate",
    "Chunk",
    "CollectionInfo",
    "CollectionNotFoundError",
    "ConfigError",
    "CrossEncoderReranker",
    "EmbedderAsLangChain",
    "Engine",
    "IngestError",
    "IngestReport",
    "InputError",
    "LangChainEmbedder",
    "ModelError",
    "ModelNotFoundError",
    "QueryTimeoutError",
    "RankedHit",
    "RetrievalService",
    "RetrievedChunk",
    "ScoreCache",
    "SearchPlan",
    "SearchResult",
    "SentenceTransformerEmbedder",
    "Settings",
    "StageTimings",
    "StoreConfig",
    "StoreConnectionError",
    "StoreError",
    "StoreRegistry",
    "WorkbenchError",
    "__version__",
    "calibrate",
    "demo_dataset",
    "evaluate_dataset",
    "explain_document",
    "get_engine",
    "get_settings",
    "resolve_model",
    "retrieve_chunks",
    "retrieve_top_docs",
    "save_report",
    "search",
    "search_documents",
]


def search(
    query: str,
    k: int | None = None,
    top_n: int | None = None,
    filters: Any = None,
    *,
    collection: str | None = None,
    reranker: str | None = "default",
    retrieval: str | None = None,
    min_score: float | None = None,
    engine: "Engine | None" = None,
) -> "SearchResult":
    """Search with keywords: the process's engine (`get_engine()`, or `engine`), a plan from the keywords
    (`Engine.plan`: the settings' defaults for any left out; `reranker` "default" is the configured one, None
    none), then `Engine.search(query, plan)`."""
    from workbench.engine import get_engine

    chosen = engine or get_engine()
    plan = chosen.plan(
        collection=collection, k=k, top_n=top_n, filters=filters, reranker=reranker, retrieval=retrieval,
        min_score=min_score,
    )  # fmt: skip
    return chosen.search(query, plan)


def __getattr__(name: str) -> Any:
    """Import a public name on first use, so that `workbench --help` does not load the whole stack (PEP 562)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'workbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
