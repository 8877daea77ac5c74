"""Qdrant: local mode on a folder, in memory, or a Qdrant server by URL.

Points carry `{"chunk_id", "text", "metadata"}`; their Qdrant id is a UUID derived from the chunk id, so the
same chunk always lands on the same point. Filters address `metadata.<key>`. An `api_key` query parameter
in the URL becomes the client's API key and is never shown. A collection another tool wrote (LangChain, LlamaIndex,
or keys named in workbench.toml: `stores/layouts.py`) is attached read-only: read through its writer's layout, with
the embedder its `[collections.<name>]` table declares (`embedding_model`) and its named vector (`vector_name`).
"""

from __future__ import annotations

import atexit
import contextlib
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np

from workbench.errors import CollectionNotFoundError, InputError, StoreError
from workbench.extras import require_extra
from workbench.redact import redact_url
from workbench.stores.base import (
    CONTENT_HASH_KEY,
    DIMENSION_KEY,
    EMBEDDING_MODEL_KEY,
    ORIGIN_KEY,
    Collection,
    StoreBackend,
    batched,
    check_collection_name,
    clean_metadata,
    translate_store_error,
)
from workbench.stores.layouts import LANGCHAIN, WORKBENCH, Layout, check_declared, detect, mapped, unknown_layout
from workbench.types import Chunk, CollectionInfo, Hit, Metadata
from workbench.vocab import DEFAULT_STORE_TIMEOUT

_POINT_NAMESPACE = uuid.UUID("5d3a1c1e-8a7e-4f57-9a59-2b1b4f0c7a11")
_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()
MEMORY = ":memory:"
_ID_BATCH = 500


def point_id(chunk_id: str) -> str:
    """The Qdrant point id of a chunk id: a UUID5, stable across runs."""
    return str(uuid.uuid5(_POINT_NAMESPACE, chunk_id))


def qdrant_filter(filters: Metadata | None, extra: list[Any] | None = None, layout: Layout = WORKBENCH) -> Any:
    """Metadata equalities (and any extra conditions) as a Qdrant filter, addressed where the layout keeps them."""
    from qdrant_client import models

    must: list[Any] = [
        models.FieldCondition(key=layout.filter_key(key), match=models.MatchValue(value=value))
        for key, value in (filters or {}).items()
    ]
    must += extra or []
    return models.Filter(must=must) if must else None


class QdrantCollection(Collection):
    store: ClassVar[str] = "qdrant"

    def __init__(
        self, client: Any, name: str, location: str, timeout: float | None = None, options: dict[str, Any] | None = None
    ) -> None:
        self._client = client
        self.name = name
        self.location = location
        self.timeout = timeout
        self.options = options or {}
        self._layout: Layout | None = None

    def count(self) -> int:
        return int(self._client.count(self.name, exact=True).count)

    def _details(self) -> tuple[dict[str, Any], int | None]:
        """The collection's metadata and its (named) vector's width."""
        details = self._client.get_collection(self.name)
        vectors = details.config.params.vectors
        if isinstance(vectors, dict):  # named vectors: the declared one, else the only one
            name = self.options.get("vector_name")
            name = name if name is not None else next(iter(vectors)) if len(vectors) == 1 else None
            vectors = vectors.get(name) if name is not None else None
        return getattr(details.config, "metadata", None) or {}, getattr(vectors, "size", None)

    def layout(self) -> Layout:
        """Who wrote this collection and where its fields sit: the workbench's own (its metadata says so), the
        mapping in workbench.toml, else what its first record shows."""
        if self._layout is None:
            metadata, _ = self._details()
            layout = WORKBENCH if EMBEDDING_MODEL_KEY in metadata else mapped(self.options)
            if layout is not WORKBENCH:
                records, _ = self._client.scroll(self.name, limit=1, with_payload=True)
                if not records:
                    return layout or LANGCHAIN  # another tool's, empty: nothing to read yet, nothing written
                payload = records[0].payload or {}
                if layout is not None:
                    layout = check_declared(layout, self.options, payload, has_document=False, name=self.name)
                else:
                    layout = detect(payload)
                if layout is None:
                    raise unknown_layout(self.name, list(payload.keys()))
            self._layout = layout
        return self._layout

    def info(self) -> CollectionInfo:
        metadata, dimension = self._details()
        try:
            writer = self.layout().writer if self.layout().read_only else None
        except StoreError:  # listed all the same; searching it says which keys to map
            writer = "another tool (name its keys in workbench.toml)"
        return CollectionInfo(
            name=self.name,
            store=self.store,
            location=self.location,
            count=self.count(),
            embedding_model=metadata.get(EMBEDDING_MODEL_KEY) or self.options.get("embedding_model"),
            dimension=metadata.get(DIMENSION_KEY, dimension),
            written_by=writer,
            read_only=writer is not None,
        )

    def _writable(self) -> None:
        layout = self.layout()
        if layout.read_only:
            raise StoreError(
                f"'{self.name}' was written by {layout.writer}: the workbench reads it and never writes it."
            )

    def search(
        self,
        k: int,
        filters: Metadata | None = None,
        *,
        vector: np.ndarray | None = None,
        text: str | None = None,
        exact: bool = False,
    ) -> list[Hit]:
        from qdrant_client import models

        layout = self.layout()
        response = self._client.query_points(
            self.name,
            query=self.require_vector(vector),
            using=self.options.get("vector_name"),
            limit=k,
            query_filter=qdrant_filter(filters, layout=layout),
            with_payload=True,
            search_params=models.SearchParams(exact=True) if exact else None,
        )
        return [self._hit(p) for p in response.points]

    def _hit(self, point: Any) -> Hit:
        chunk = self.layout().chunk(point.id, point.payload or {})
        return Hit(**chunk.model_dump(), score=float(getattr(point, "score", 0.0) or 0.0))

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> None:
        if not chunks:
            return
        if vectors is None:
            raise InputError("Qdrant collections store the workbench's vectors: pass vectors to upsert.")
        self._writable()
        from qdrant_client import models

        points = [
            models.PointStruct(
                id=point_id(c.id),
                vector=np.asarray(v, dtype=np.float32).tolist(),
                payload={"chunk_id": c.id, "text": c.text, "metadata": clean_metadata(c.metadata)},
            )
            for c, v in zip(chunks, vectors, strict=True)
        ]
        self._client.upsert(self.name, points=points, wait=True)

    def _payloads(self, records: list[Any], found: dict[str, str | None], key: str = CONTENT_HASH_KEY) -> None:
        for record in records:
            payload = record.payload or {}
            found[str(payload.get("chunk_id"))] = (payload.get("metadata") or {}).get(key)

    def stored_chunks(
        self, origins: Sequence[str], ids: Sequence[str] = (), key: str = CONTENT_HASH_KEY
    ) -> dict[str, str | None]:
        from qdrant_client import models

        found: dict[str, str | None] = {}
        for batch in batched(list(origins), _ID_BATCH):
            condition = models.FieldCondition(key=f"metadata.{ORIGIN_KEY}", match=models.MatchAny(any=list(batch)))
            offset = None
            while True:
                records, offset = self._client.scroll(
                    self.name,
                    scroll_filter=qdrant_filter(None, [condition]),
                    limit=1000,
                    offset=offset,
                    with_payload=True,
                )
                self._payloads(records, found, key)
                if offset is None:
                    break
        for batch in batched(list(ids), _ID_BATCH):
            points = self._client.retrieve(self.name, ids=[point_id(i) for i in batch], with_payload=True)
            self._payloads(points, found, key)
        return found

    def delete_chunks(self, ids: Sequence[str]) -> None:
        self._writable()
        from qdrant_client import models

        for batch in batched(list(ids), _ID_BATCH):
            self._client.delete(
                self.name, points_selector=models.PointIdsList(points=[point_id(i) for i in batch]), wait=True
            )

    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        records, _ = self._client.scroll(self.name, limit=offset + limit, with_payload=True)
        return [Chunk(id=h.id, text=h.text, metadata=h.metadata) for h in map(self._hit, records[offset:])]

    def vectors(self, batch_size: int = 1000) -> tuple[list[str], np.ndarray]:
        ids: list[str] = []
        rows: list[list[float]] = []
        offset = None
        while True:
            records, offset = self._client.scroll(
                self.name, limit=batch_size, offset=offset, with_payload=["chunk_id"], with_vectors=True
            )
            for record in records:
                ids.append(str((record.payload or {}).get("chunk_id", record.id)))
                vector = record.vector
                rows.append(
                    vector[self.options.get("vector_name") or next(iter(vector))]
                    if isinstance(vector, dict)
                    else vector
                )
            if offset is None:
                break
        return ids, np.asarray(rows, dtype=np.float32)


def _server(url: str) -> tuple[str, str | None]:
    """The URL without an api_key parameter, and that key."""
    parts = urlsplit(url)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise InputError(f"A Qdrant server URL looks like http://host:6333; got '{redact_url(url)}'.")
    pairs = parse_qsl(parts.query)
    key = next((v for k, v in pairs if k.lower() in {"api_key", "apikey", "api-key"}), None)
    rest = urlencode([(k, v) for k, v in pairs if k.lower() not in {"api_key", "apikey", "api-key"}])
    return urlunsplit((parts.scheme, parts.netloc, parts.path, rest, parts.fragment)), key


class QdrantBackend(StoreBackend):
    """Qdrant in local mode on a folder, in memory (':memory:'), or a server at a URL."""

    kind: ClassVar[str] = "qdrant"

    def __init__(
        self,
        path: str | Path | None = None,
        url: str | None = None,
        *,
        timeout: float = DEFAULT_STORE_TIMEOUT,
        **options: Any,
    ) -> None:
        """`options`: an attached collection's `embedding_model`, `vector_name`, `layout` and keys
        (`stores/layouts.py`), from its `[collections.<name>]` table."""
        if (path is None) == (url is None):
            raise InputError("Qdrant needs exactly one of a local folder (or ':memory:') or a server URL.")
        require_extra("qdrant", "The Qdrant store")
        self.timeout = timeout
        self.options = options
        if url:
            self.location = redact_url(url)
            key = url
        elif str(path) == MEMORY:
            self.location = key = MEMORY
        else:
            self.location = key = str(Path(path).resolve())  # type: ignore[arg-type]
        self._key = key
        self._client = self._client_for(key, is_url=bool(url))

    def _client_for(self, key: str, *, is_url: bool) -> Any:
        from qdrant_client import QdrantClient

        with _clients_lock:
            if key in _clients and key != MEMORY:
                return _clients[key]
            if not is_url:
                # Local mode opens a file lock, no network: safe (and needed) under the lock.
                try:
                    if key == MEMORY:
                        return QdrantClient(location=MEMORY)
                    folder = Path(key)
                    folder.mkdir(parents=True, exist_ok=True)
                    client = QdrantClient(path=key)
                except Exception as exc:
                    raise StoreError(
                        f"Cannot open Qdrant at {self.location} (local Qdrant allows one process per folder: "
                        f"close the other one): {exc}"
                    ) from exc
                _clients[key] = client
                return client
        try:
            address, api_key = _server(key)
            client = QdrantClient(
                url=address,
                api_key=api_key,
                timeout=max(round(self.timeout or DEFAULT_STORE_TIMEOUT), 1),
                check_compatibility=False,
            )
            client.get_collections()
        except InputError:
            raise
        except Exception as exc:
            raise translate_store_error(
                exc, store="qdrant", location=self.location, action="connect", timeout=self.timeout
            ) from exc
        with _clients_lock:
            return _clients.setdefault(key, client)

    def list_collections(self) -> list[CollectionInfo]:
        names = [c.name for c in self._client.get_collections().collections]
        return [QdrantCollection(self._client, n, self.location, self.timeout, self.options).info() for n in names]

    def exists(self, name: str) -> bool:
        return bool(self._client.collection_exists(name))

    def get(self, name: str) -> QdrantCollection:
        if not self._client.collection_exists(name):
            names = [c.name for c in self._client.get_collections().collections]
            raise CollectionNotFoundError(name, f"qdrant at {self.location}", names)
        return QdrantCollection(self._client, name, self.location, self.timeout, self.options)

    def create(self, name: str, *, embedding_model: str, dimension: int) -> QdrantCollection:
        from qdrant_client import models

        check_collection_name(name)
        if not self._client.collection_exists(name):
            self._client.create_collection(
                name,
                vectors_config=models.VectorParams(size=int(dimension), distance=models.Distance.COSINE),
                metadata={EMBEDDING_MODEL_KEY: embedding_model, DIMENSION_KEY: int(dimension)},
            )
            if self.location.startswith(("http://", "https://")):  # local mode has no payload indexes
                self._client.create_payload_index(name, f"metadata.{ORIGIN_KEY}", models.PayloadSchemaType.KEYWORD)
        return QdrantCollection(self._client, name, self.location, self.timeout, self.options)

    def delete(self, name: str) -> None:
        self.get(name)
        self._client.delete_collection(name)

    def close(self) -> None:
        with _clients_lock:
            if _clients.get(self._key) is self._client:
                _clients.pop(self._key, None)
        self._client.close()


@atexit.register
def _close_clients() -> None:
    # Closing local clients before the interpreter tears modules down avoids Qdrant's noisy __del__.
    with _clients_lock:
        clients = list(_clients.values())
        _clients.clear()
    for client in clients:
        with contextlib.suppress(Exception):
            client.close()
