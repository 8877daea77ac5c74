"""The store registry: a collection name maps to its store settings; stores load lazily, are cached, and
the registry is safe to call from many threads."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from workbench.config import Settings
from workbench.errors import ConfigError
from workbench.stores.base import Collection, StoreBackend
from workbench.stores.chroma import ChromaBackend
from workbench.stores.langchain import LangChainCollection
from workbench.stores.qdrant import QdrantBackend
from workbench.types import CollectionInfo


@dataclass(frozen=True)
class StoreConfig:
    """Where one named collection lives."""

    kind: Literal["chroma", "qdrant", "langchain"]
    collection: str
    persist_dir: str | None = None
    url: str | None = None
    vector_store: Any = None

    @classmethod
    def from_settings(cls, settings: Settings, collection: str | None = None) -> StoreConfig:
        url = settings.chroma_url if settings.store == "chroma" else settings.qdrant_url
        return cls(
            kind=settings.store,
            collection=collection or settings.collection,
            persist_dir=None if url else str(settings.resolved_persist_dir),
            url=url,
        )


def open_backend(kind: str, persist_dir: str | Path | None = None, url: str | None = None) -> StoreBackend:
    """A Chroma or Qdrant backend at a folder or URL (clients are shared per location)."""
    if kind == "chroma":
        return ChromaBackend(path=None if url else persist_dir, url=url)
    if kind == "qdrant":
        return QdrantBackend(path=None if url else persist_dir, url=url)
    raise ConfigError(f"Unknown store '{kind}': use chroma or qdrant (or register a LangChain store).")


class StoreRegistry:
    """Maps collection names to store settings. Unregistered names live in the default store."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._configs: dict[str, StoreConfig] = {}
        self._collections: dict[str, Collection] = {}
        self._lock = threading.RLock()

    def register(self, name: str, config: StoreConfig) -> None:
        """Point `name` at a collection in a particular store."""
        with self._lock:
            self._configs[name] = config
            self._collections.pop(name, None)

    def register_langchain(self, name: str, vector_store: Any) -> None:
        """Point `name` at a LangChain VectorStore object."""
        self.register(name, StoreConfig(kind="langchain", collection=name, vector_store=vector_store))

    def register_collection(self, name: str, collection: Collection) -> None:
        """Serve `name` from a collection object already opened."""
        with self._lock:
            self._configs[name] = StoreConfig(kind="langchain", collection=name, vector_store=None)
            self._collections[name] = collection

    def config(self, name: str) -> StoreConfig:
        with self._lock:
            return self._configs.get(name) or StoreConfig.from_settings(self.settings, name)

    def backend(self, name: str | None = None) -> StoreBackend:
        """The backend holding `name` (the default store when None or unregistered)."""
        config = self.config(name or self.settings.collection)
        if config.kind == "langchain":
            raise ConfigError(f"'{name}' is a LangChain store: it has no backend to create or delete collections.")
        return open_backend(config.kind, config.persist_dir, config.url)

    def get(self, name: str) -> Collection:
        """The collection registered as `name`, opened on first use and cached."""
        with self._lock:
            if name in self._collections:
                return self._collections[name]
            config = self.config(name)
            if config.kind == "langchain":
                collection: Collection = LangChainCollection(config.vector_store, name=name)
            else:
                collection = open_backend(config.kind, config.persist_dir, config.url).get(config.collection)
            self._collections[name] = collection
            return collection

    def create(self, name: str, *, embedding_model: str, dimension: int) -> Collection:
        """Create (or open) `name` in its store, recording the embedding model and dimension."""
        with self._lock:
            config = self.config(name)
            if config.kind == "langchain":
                return self.get(name)
            collection = self.backend(name).create(
                config.collection, embedding_model=embedding_model, dimension=dimension
            )
            self._collections[name] = collection
            return collection

    def delete(self, name: str) -> None:
        """Delete the collection and forget the cached handle."""
        with self._lock:
            config = self.config(name)
            self.backend(name).delete(config.collection)
            self._collections.pop(name, None)

    def list(self) -> list[CollectionInfo]:
        """Collections in the default store, plus every registered one."""
        infos = {c.name: c for c in self.backend().list_collections()}
        with self._lock:
            registered = dict(self._configs)
        for name, config in registered.items():
            if config.kind == "langchain" or name not in infos:
                try:
                    infos[name] = self.get(name).info().model_copy(update={"name": name})
                except Exception:  # a registered store that is unreachable is listed by the others
                    continue
        return sorted(infos.values(), key=lambda c: c.name)
