"""Qdrant: local mode on a folder, in memory, or a Qdrant server by URL.

Points carry `{"chunk_id", "text", "metadata"}`; their Qdrant id is a UUID derived from the chunk id, so the
same chunk always lands on the same point. Filters address `metadata.<key>`.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

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

_POINT_NAMESPACE = uuid.UUID("5d3a1c1e-8a7e-4f57-9a59-2b1b4f0c7a11")
_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()
MEMORY = ":memory:"


def point_id(chunk_id: str) -> str:
    """The Qdrant point id of a chunk id: a UUID5, stable across runs."""
    return str(uuid.uuid5(_POINT_NAMESPACE, chunk_id))


def qdrant_filter(filters: Metadata | None) -> Any:
    """Metadata equalities as a Qdrant filter."""
    if not filters:
        return None
    from qdrant_client import models

    return models.Filter(
        must=[
            models.FieldCondition(key=f"metadata.{key}", match=models.MatchValue(value=value))
            for key, value in filters.items()
        ]
    )


class QdrantCollection(Collection):
    store = "qdrant"

    def __init__(self, client: Any, name: str, location: str) -> None:
        self._client = client
        self.name = name
        self.location = location

    def count(self) -> int:
        return int(self._client.count(self.name, exact=True).count)

    def info(self) -> CollectionInfo:
        details = self._client.get_collection(self.name)
        metadata = getattr(details.config, "metadata", None) or {}
        vectors = details.config.params.vectors
        dimension = getattr(vectors, "size", None)
        return CollectionInfo(
            name=self.name,
            store=self.store,
            location=self.location,
            count=self.count(),
            embedding_model=metadata.get(EMBEDDING_MODEL_KEY),
            dimension=metadata.get(DIMENSION_KEY, dimension),
        )

    def search(self, vector: np.ndarray, k: int, filters: Metadata | None = None, text: str = "") -> list[Hit]:
        try:
            response = self._client.query_points(
                self.name,
                query=np.asarray(vector, dtype=np.float32).tolist(),
                limit=k,
                query_filter=qdrant_filter(filters),
                with_payload=True,
            )
        except Exception as exc:
            raise StoreError(f"Qdrant search in '{self.name}' at {self.location} failed: {exc}") from exc
        return [self._hit(p) for p in response.points]

    @staticmethod
    def _hit(point: Any) -> Hit:
        payload = point.payload or {}
        return Hit(
            id=str(payload.get("chunk_id", point.id)),
            text=str(payload.get("text", "")),
            metadata=dict(payload.get("metadata") or {}),
            score=float(point.score),
        )

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if not chunks:
            return
        from qdrant_client import models

        points = [
            models.PointStruct(
                id=point_id(c.id),
                vector=np.asarray(v, dtype=np.float32).tolist(),
                payload={"chunk_id": c.id, "text": c.text, "metadata": clean_metadata(c.metadata)},
            )
            for c, v in zip(chunks, vectors, strict=True)
        ]
        try:
            self._client.upsert(self.name, points=points, wait=True)
        except Exception as exc:
            raise StoreError(f"Writing to Qdrant collection '{self.name}' failed: {exc}") from exc

    def content_hashes(self, ids: Sequence[str]) -> dict[str, str | None]:
        if not ids:
            return {}
        points = self._client.retrieve(self.name, ids=[point_id(i) for i in ids], with_payload=True)
        found: dict[str, str | None] = {}
        for p in points:
            payload = p.payload or {}
            found[str(payload.get("chunk_id"))] = (payload.get("metadata") or {}).get(CONTENT_HASH_KEY)
        return found

    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        points, _ = self._client.scroll(self.name, limit=offset + limit, with_payload=True)
        return [
            Chunk(id=h.id, text=h.text, metadata=h.metadata)
            for h in (self._hit(_Scored(p)) for p in points[offset : offset + limit])
        ]


class _Scored:
    """A scrolled record seen as a scored point (score 0), so one function reads payloads."""

    def __init__(self, record: Any) -> None:
        self.id, self.payload, self.score = record.id, record.payload, 0.0


class QdrantBackend(StoreBackend):
    """Qdrant in local mode on a folder, in memory (':memory:'), or a server at a URL."""

    kind = "qdrant"

    def __init__(self, path: str | Path | None = None, url: str | None = None) -> None:
        if (path is None) == (url is None):
            raise InputError("Qdrant needs exactly one of a local folder (or ':memory:') or a server URL.")
        if url:
            self.location = url
        elif str(path) == MEMORY:
            self.location = MEMORY
        else:
            self.location = str(Path(path).resolve())  # type: ignore[arg-type]
        self._client = self._client_for(self.location, is_url=bool(url))

    @staticmethod
    def _client_for(location: str, *, is_url: bool) -> Any:
        from qdrant_client import QdrantClient

        with _clients_lock:
            if location in _clients and location != MEMORY:
                return _clients[location]
            try:
                if is_url:
                    client = QdrantClient(url=location, timeout=30, check_compatibility=False)
                    client.get_collections()
                elif location == MEMORY:
                    client = QdrantClient(location=MEMORY)
                else:
                    Path(location).mkdir(parents=True, exist_ok=True)
                    client = QdrantClient(path=location)
            except Exception as exc:
                hint = " (local Qdrant allows one process per folder: close the other one)" if not is_url else ""
                error = StoreConnectionError if is_url else StoreError
                raise error(f"Cannot open Qdrant at {location}{hint}: {exc}") from exc
            if location != MEMORY:
                _clients[location] = client
            return client

    def list_collections(self) -> list[CollectionInfo]:
        try:
            names = [c.name for c in self._client.get_collections().collections]
        except Exception as exc:
            raise StoreError(f"Cannot list Qdrant collections at {self.location}: {exc}") from exc
        return [QdrantCollection(self._client, n, self.location).info() for n in names]

    def get(self, name: str) -> QdrantCollection:
        try:
            exists = self._client.collection_exists(name)
        except Exception as exc:
            raise StoreConnectionError(f"Cannot reach Qdrant at {self.location}: {exc}") from exc
        if not exists:
            raise CollectionNotFoundError(name, f"qdrant at {self.location}", [c.name for c in self.list_collections()])
        return QdrantCollection(self._client, name, self.location)

    def create(self, name: str, *, embedding_model: str, dimension: int) -> QdrantCollection:
        from qdrant_client import models

        check_collection_name(name)
        try:
            if not self._client.collection_exists(name):
                self._client.create_collection(
                    name,
                    vectors_config=models.VectorParams(size=int(dimension), distance=models.Distance.COSINE),
                    metadata={EMBEDDING_MODEL_KEY: embedding_model, DIMENSION_KEY: int(dimension)},
                )
        except Exception as exc:
            raise StoreError(f"Cannot create Qdrant collection '{name}' at {self.location}: {exc}") from exc
        return QdrantCollection(self._client, name, self.location)

    def delete(self, name: str) -> None:
        self.get(name)
        self._client.delete_collection(name)

    def close(self) -> None:
        with _clients_lock:
            _clients.pop(self.location, None)
        self._client.close()
