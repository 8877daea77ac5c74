"""Rerank Workbench: vector search beside cross-encoder reranking, with timings and relevance metrics.

>>> from workbench import Engine
>>> result = Engine().search("how many vacation days do I get", k=50, top_n=10)
>>> result.reranked[0].movement_label
"""

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
from workbench.models import resolve_model
from workbench.rerankers import CrossEncoderReranker, ScoreCache
from workbench.services.search import RetrievalService, retrieve_chunks, retrieve_top_docs, search_documents
from workbench.stores import StoreConfig, StoreRegistry
from workbench.types import (
    Candidate,
    Chunk,
    CollectionInfo,
    IngestReport,
    RankedHit,
    RetrievedChunk,
    SearchResult,
    StageTimings,
)

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
    "get_engine",
    "get_settings",
    "resolve_model",
    "retrieve_chunks",
    "retrieve_top_docs",
    "search_documents",
]
