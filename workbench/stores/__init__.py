"""Vector stores behind one protocol: Chroma, Qdrant and any LangChain VectorStore, plus the registry."""

from workbench.stores.base import Collection, StoreBackend
from workbench.stores.chroma import ChromaBackend
from workbench.stores.langchain import LangChainCollection
from workbench.stores.qdrant import QdrantBackend
from workbench.stores.registry import StoreConfig, StoreRegistry, open_backend

__all__ = [
    "ChromaBackend",
    "Collection",
    "LangChainCollection",
    "QdrantBackend",
    "StoreBackend",
    "StoreConfig",
    "StoreRegistry",
    "open_backend",
]
