"""Chroma, embedded (`PersistentClient` on a folder) or a Chroma server (`HttpClient` by URL)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from workbench.errors import CollectionNotFoundError, InputError, StoreConnectionError, StoreError
from workbench.stores.base import (
    CONTENT_HASH_KEY,
    DIMENSION_KEY,
    EMBEDDING_MODEL_KEY,
    Collection,
    StoreBackend,
    check_collection_name,
    clean_metadata,
)
from workbench.types import Chunk, CollectionInfo, Hit, Metadata

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()


def chroma_where(filters: Metadata | None) -> dict[str, Any] | None:
    """Metadata equalities as a Chroma `where` clause."""
    if not filters:
        return None
    clauses = [{key: {"$eq": value}} for key, value in filters.items()]
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


def _similarity(distance: float, space: str) -> float:
    # Chroma's l2 is the squared distance; on unit vectors cos = 1 - d²/2. cosine and ip give 1 - cos.
    return 1.0 - distance / 2.0 if space == "l2" else 1.0 - distance


class ChromaCollection(Collection):
    store = "chroma"

    def __init__(self, collection: Any, location: str) -> None:
        self._collection = collection
        self.name = collection.name
        self.location = location
        config = getattr(collection, "configuration_json", None) or {}
        metadata = collection.metadata or {}
        self.space = (config.get("hnsw") or {}).get("space") or metadata.get("hnsw:space", "l2")

    def count(self) -> int:
        return int(self._collection.count())

    def info(self) -> CollectionInfo:
        metadata = self._collection.metadata or {}
        return CollectionInfo(
            name=self.name,
            store=self.store,
            location=self.location,
            count=self.count(),
            embedding_model=metadata.get(EMBEDDING_MODEL_KEY),
            dimension=metadata.get(DIMENSION_KEY),
        )

    def search(self, vector: np.ndarray, k: int, filters: Metadata | None = None, text: str = "") -> list[Hit]:
        try:
            result = self._collection.query(
                query_embeddings=[np.asarray(vector, dtype=np.float32).tolist()],
                n_results=k,
                where=chroma_where(filters),
                include=["documents", "metadatas", "distances"],
            )
        except Exception as exc:
            raise StoreError(f"Chroma search in '{self.name}' at {self.location} failed: {exc}") from exc
        ids = result["ids"][0]
        documents = (result.get("documents") or [[]])[0] or [""] * len(ids)
        metadatas = (result.get("metadatas") or [[]])[0] or [{}] * len(ids)
        distances = result["distances"][0]
        return [
            Hit(id=i, text=d or "", metadata=dict(m or {}), score=_similarity(float(dist), self.space))
            for i, d, m, dist in zip(ids, documents, metadatas, distances, strict=True)
        ]

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if not chunks:
            return
        try:
            self._collection.upsert(
                ids=[c.id for c in chunks],
                embeddings=np.asarray(vectors, dtype=np.float32).tolist(),
                documents=[c.text for c in chunks],
                metadatas=[clean_metadata(c.metadata) or {"_": 0} for c in chunks],
            )
        except Exception as exc:
            raise StoreError(f"Writing to Chroma collection '{self.name}' failed: {exc}") from exc

    def content_hashes(self, ids: Sequence[str]) -> dict[str, str | None]:
        if not ids:
            return {}
        got = self._collection.get(ids=list(ids), include=["metadatas"])
        return {i: (m or {}).get(CONTENT_HASH_KEY) for i, m in zip(got["ids"], got["metadatas"] or [], strict=False)}

    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        got = self._collection.get(offset=offset, limit=limit, include=["documents", "metadatas"])
        return [
            Chunk(id=i, text=d or "", metadata=dict(m or {}))
            for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)
        ]


class ChromaBackend(StoreBackend):
    """Chroma at a folder (embedded) or at a server URL such as http://127.0.0.1:8000."""

    kind = "chroma"

    def __init__(self, path: str | Path | None = None, url: str | None = None) -> None:
        if (path is None) == (url is None):
            raise InputError("Chroma needs exactly one of a persist folder or a server URL.")
        self.location = url if url else str(Path(path).resolve())  # type: ignore[arg-type]
        self._client = self._client_for(path, url)

    @staticmethod
    def _client_for(path: str | Path | None, url: str | None) -> Any:
        import chromadb
        from chromadb.config import Settings as ChromaSettings

        key = url or str(Path(path).resolve())  # type: ignore[arg-type]
        with _clients_lock:
            if key in _clients:
                return _clients[key]
            chroma_settings = ChromaSettings(anonymized_telemetry=False)
            try:
                if url:
                    parsed = urlparse(url if "://" in url else f"http://{url}")
                    client = chromadb.HttpClient(
                        host=parsed.hostname or "127.0.0.1",
                        port=parsed.port or (443 if parsed.scheme == "https" else 8000),
                        ssl=parsed.scheme == "https",
                        settings=chroma_settings,
                    )
                    client.heartbeat()
                else:
                    Path(path).mkdir(parents=True, exist_ok=True)  # type: ignore[arg-type]
                    client = chromadb.PersistentClient(path=str(path), settings=chroma_settings)
            except Exception as exc:
                error = StoreConnectionError if url else StoreError
                raise error(f"Cannot open Chroma at {key}: {exc}") from exc
            _clients[key] = client
            return client

    def list_collections(self) -> list[CollectionInfo]:
        try:
            collections = self._client.list_collections()
        except Exception as exc:
            raise StoreError(f"Cannot list Chroma collections at {self.location}: {exc}") from exc
        return [ChromaCollection(c, self.location).info() for c in collections]

    def get(self, name: str) -> ChromaCollection:
        try:
            return ChromaCollection(self._client.get_collection(name, embedding_function=None), self.location)
        except Exception as exc:
            if "does not exist" in str(exc) or type(exc).__name__ in {
                "NotFoundError",
                "InvalidCollectionException",
            }:
                raise CollectionNotFoundError(
                    name, f"chroma at {self.location}", [c.name for c in self.list_collections()]
                ) from exc
            raise StoreError(f"Cannot open Chroma collection '{name}' at {self.location}: {exc}") from exc

    def create(self, name: str, *, embedding_model: str, dimension: int) -> ChromaCollection:
        check_collection_name(name)
        try:
            collection = self._client.get_or_create_collection(
                name,
                metadata={EMBEDDING_MODEL_KEY: embedding_model, DIMENSION_KEY: int(dimension)},
                configuration={"hnsw": {"space": "cosine", "ef_construction": 200, "ef_search": 200}},
                embedding_function=None,
            )
        except Exception as exc:
            raise StoreError(f"Cannot create Chroma collection '{name}' at {self.location}: {exc}") from exc
        return ChromaCollection(collection, self.location)

    def delete(self, name: str) -> None:
        self.get(name)
        self._client.delete_collection(name)
