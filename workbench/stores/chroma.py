"""Chroma, embedded (`PersistentClient` on a folder) or a Chroma server (`HttpClient` by URL).

Embedded clients are opened exactly as `chromadb.PersistentClient(path)` opens them (Chroma allows one set of
settings per folder in a process), and reuse a client the process already has on the same folder, so seed
code that opened the folder itself can call the contracts in the same process. Server clients get the
workbench's timeout on every request; credentials in the URL (user:password@, ?token=) become headers and
are never shown.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import sqlite3
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import numpy as np

from workbench.errors import CollectionNotFoundError, InputError, StoreConnectionError, StoreError
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
from workbench.stores.layouts import WORKBENCH, Layout, check_declared, detect, mapped
from workbench.types import Chunk, CollectionInfo, Hit, Metadata
from workbench.vocab import DEFAULT_STORE_TIMEOUT

_clients: dict[str, Any] = {}
_clients_lock = threading.Lock()
_ID_BATCH = 500


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
    store: ClassVar[str] = "chroma"

    def __init__(
        self, collection: Any, location: str, timeout: float | None = None, options: dict[str, Any] | None = None
    ) -> None:
        self.options = options or {}
        self._layout: Layout | None = None
        self._collection = collection
        self.name = collection.name
        self.location = location
        self.timeout = timeout
        config = getattr(collection, "configuration_json", None) or {}
        metadata = collection.metadata or {}
        self.space = (config.get("hnsw") or {}).get("space") or metadata.get("hnsw:space", "l2")

    def count(self) -> int:
        return int(self._collection.count())

    def layout(self) -> Layout:
        """Who wrote this collection: the workbench (its metadata says so), the mapping in workbench.toml, else
        what its first record shows (Chroma keeps the text as the document, the metadata flat)."""
        if self._layout is None:
            layout = WORKBENCH if EMBEDDING_MODEL_KEY in (self._collection.metadata or {}) else mapped(self.options)
            if layout is not WORKBENCH:
                got = self._collection.get(limit=1, include=["metadatas"])
                first = dict((got.get("metadatas") or [{}])[0] or {})
                if layout is None:
                    layout = detect(first, has_document=True)
                elif got.get("ids"):
                    layout = check_declared(layout, self.options, first, has_document=True, name=self.name)
            self._layout = replace(layout, metadata_key=None)  # type: ignore[arg-type]
        return self._layout

    def _dimension(self) -> int | None:
        """An attached collection records no width: its first vector's."""
        got = self._collection.get(limit=1, include=["embeddings"])
        embeddings = got.get("embeddings")
        return len(embeddings[0]) if embeddings is not None and len(embeddings) else None

    def info(self) -> CollectionInfo:
        metadata = self._collection.metadata or {}
        layout = self.layout()
        return CollectionInfo(
            name=self.name,
            store=self.store,
            location=self.location,
            count=self.count(),
            embedding_model=metadata.get(EMBEDDING_MODEL_KEY) or self.options.get("embedding_model"),
            dimension=metadata.get(DIMENSION_KEY) or (self._dimension() if layout.read_only else None),
            written_by=layout.writer if layout.read_only else None,
            read_only=layout.read_only,
        )

    def _chunk(self, record_id: str, document: str | None, metadata: Any) -> Chunk:
        return self.layout().chunk(record_id, dict(metadata or {}), document)

    def _writable(self) -> None:
        layout = self.layout()
        if layout.read_only:
            raise StoreError(
                f"'{self.name}' was written by {layout.writer}: the workbench reads it and never writes it."
            )

    def search(
        self, k: int, filters: Metadata | None = None, *, vector: np.ndarray | None = None, text: str | None = None
    ) -> list[Hit]:
        result = self._collection.query(
            query_embeddings=[self.require_vector(vector)],
            n_results=k,
            where=chroma_where(filters),
            include=["documents", "metadatas", "distances"],
        )
        ids = result["ids"][0]
        documents = (result.get("documents") or [[]])[0] or [""] * len(ids)
        metadatas = (result.get("metadatas") or [[]])[0] or [{}] * len(ids)
        distances = result["distances"][0]
        return [
            Hit(**self._chunk(i, d, m).model_dump(), score=_similarity(float(dist), self.space))
            for i, d, m, dist in zip(ids, documents, metadatas, distances, strict=True)
        ]

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> None:
        if not chunks:
            return
        if vectors is None:
            raise InputError("Chroma collections store the workbench's vectors: pass vectors to upsert.")
        self._writable()
        self._collection.upsert(
            ids=[c.id for c in chunks],
            embeddings=np.asarray(vectors, dtype=np.float32).tolist(),
            documents=[c.text for c in chunks],
            metadatas=[clean_metadata(c.metadata) or {"_": 0} for c in chunks],
        )

    def stored_chunks(
        self, origins: Sequence[str], ids: Sequence[str] = (), key: str = CONTENT_HASH_KEY
    ) -> dict[str, str | None]:
        found: dict[str, str | None] = {}
        requests: list[dict[str, Any]] = [
            {"where": {ORIGIN_KEY: {"$in": list(b)}}} for b in batched(origins, _ID_BATCH)
        ]
        requests += [{"ids": list(b)} for b in batched(ids, _ID_BATCH)]
        for request in requests:
            got = self._collection.get(include=["metadatas"], **request)
            for i, m in zip(got["ids"], got["metadatas"] or [], strict=False):
                found[i] = (m or {}).get(key)
        return found

    def delete_chunks(self, ids: Sequence[str]) -> None:
        self._writable()
        for batch in batched(list(ids), _ID_BATCH):
            self._collection.delete(ids=list(batch))

    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        got = self._collection.get(offset=offset, limit=limit, include=["documents", "metadatas"])
        return [self._chunk(i, d, m) for i, d, m in zip(got["ids"], got["documents"], got["metadatas"], strict=True)]

    def vectors(self, batch_size: int = 1000) -> tuple[list[str], np.ndarray]:
        ids: list[str] = []
        rows: list[np.ndarray] = []
        offset = 0
        while True:
            got = self._collection.get(offset=offset, limit=batch_size, include=["embeddings"])
            if not got["ids"]:
                break
            ids += got["ids"]
            rows.append(np.asarray(got["embeddings"], dtype=np.float32))
            offset += len(got["ids"])
        return ids, (np.concatenate(rows) if rows else np.zeros((0, 0), dtype=np.float32))


def _server_address(url: str) -> tuple[str, int, bool, dict[str, str]]:
    """Host, port, TLS and auth headers of a Chroma server URL (credentials become headers)."""
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise InputError(f"A Chroma server URL looks like http://host:8000; got '{redact_url(url)}'.")
    headers: dict[str, str] = {}
    if parts.username:
        pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    for key, value in parse_qsl(parts.query):
        if key.lower() in {"token", "api_key", "apikey", "x-chroma-token"}:
            headers["X-Chroma-Token"] = value
    tls = parts.scheme == "https"
    return parts.hostname, parts.port or (443 if tls else 8000), tls, headers


def _probe(host: str, port: int, tls: bool, headers: dict[str, str], timeout: float) -> None:
    """Ask the server for its heartbeat within the timeout, so a server that never answers fails fast."""
    import httpx

    scheme = "https" if tls else "http"
    with httpx.Client(timeout=timeout, headers=headers) as http:
        http.get(f"{scheme}://{host}:{port}/api/v2/heartbeat").raise_for_status()


def _set_request_timeout(client: Any, timeout: float) -> None:
    # chromadb's HTTP client is created with timeout=None (wait forever); give its session ours.
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if session is not None:
        session.timeout = httpx.Timeout(timeout)


def _written_by_others(folder: Path) -> bool:
    """Whether every collection in a Chroma folder was written by another tool (none carries the workbench's
    metadata), read from its SQLite file opened immutable: nothing is written, not even a lock or a journal."""
    database = folder / "chroma.sqlite3"
    if not database.is_file():
        return False
    try:
        connection = sqlite3.connect(f"file:{quote(str(database.resolve()))}?immutable=1", uri=True)
    except sqlite3.Error:
        return False
    try:
        collections = connection.execute("SELECT COUNT(*) FROM collections").fetchone()[0]
        ours = connection.execute(
            "SELECT COUNT(DISTINCT collection_id) FROM collection_metadata WHERE key = ?", (EMBEDDING_MODEL_KEY,)
        ).fetchone()[0]
    except sqlite3.Error:
        return False
    finally:
        connection.close()
    return collections > 0 and ours == 0


def _fingerprint(folder: Path) -> str:
    """Every file of a folder by name, size and modification time: changes when the writer writes again."""
    digest = hashlib.blake2b(digest_size=10)
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        stat = path.stat()
        digest.update(f"{path.relative_to(folder)}\0{stat.st_size}\0{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def read_only_copy(folder: Path, snapshots: Path) -> Path:
    """A copy of an attached Chroma folder to open instead of the folder itself.

    Chroma's own client writes to the folder it opens (an `acquire_write` row in its SQLite file, and the HNSW
    segment's files once the collection is above its batch size), so an attached collection is never opened where
    it lies: the copy is made once per version of the folder (its files' names, sizes and times) and kept in the
    data folder; copies of older versions are removed."""
    source = folder.resolve()
    home = snapshots / hashlib.blake2b(str(source).encode(), digest_size=8).hexdigest()
    target = home / _fingerprint(source)
    if (target / ".complete").is_file():
        return target
    home.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".copy-", dir=home))
    try:
        shutil.copytree(source, staging / "store")
        (staging / "store" / ".complete").write_text(str(source), encoding="utf-8")
        try:
            (staging / "store").rename(target)
        except OSError:  # another process made the same copy first
            if not (target / ".complete").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    for older in home.iterdir():
        if older != target and not older.name.startswith(".copy-"):
            shutil.rmtree(older, ignore_errors=True)
    return target


def persistent_client(path: Path) -> Any:
    """A PersistentClient on `path`, sharing the settings of any client this process already has there."""
    import chromadb
    from chromadb.api.shared_system_client import SharedSystemClient
    from chromadb.config import Settings as ChromaSettings

    resolved = path.resolve()
    for identifier, system in list(SharedSystemClient._identifier_to_system.items()):
        settings = system.settings
        if settings.is_persistent and identifier and Path(identifier).resolve() == resolved:
            return chromadb.PersistentClient(path=identifier, settings=settings.model_copy())
    return chromadb.PersistentClient(path=str(resolved), settings=ChromaSettings())


class ChromaBackend(StoreBackend):
    """Chroma at a folder (embedded) or at a server URL such as http://127.0.0.1:8000."""

    kind: ClassVar[str] = "chroma"

    def __init__(
        self,
        path: str | Path | None = None,
        url: str | None = None,
        *,
        timeout: float = DEFAULT_STORE_TIMEOUT,
        snapshot_dir: str | Path | None = None,
        **options: Any,
    ) -> None:
        """`options`: an attached collection's `embedding_model`, `layout` and keys (`stores/layouts.py`), from
        its `[collections.<name>]` table. `snapshot_dir`: where read-only copies of folders that other tools
        wrote are kept (such a folder is opened as a copy, never where it lies); None opens every folder in place."""
        if (path is None) == (url is None):
            raise InputError("Chroma needs exactly one of a persist folder or a server URL.")
        self.timeout = timeout
        self.options = options
        self.snapshot_dir = Path(snapshot_dir) if snapshot_dir else None
        self.copied = False
        self.location = redact_url(url) if url else str(Path(path).resolve())  # type: ignore[arg-type]
        self._client = self._client_for(path, url, timeout)

    def _client_for(self, path: str | Path | None, url: str | None, timeout: float) -> Any:
        key = url or str(Path(path).resolve())  # type: ignore[arg-type]
        with _clients_lock:
            if key in _clients:
                return _clients[key]
        # Opening a client may wait on the network: never while holding the shared lock.
        try:
            if url:
                import chromadb

                host, port, tls, headers = _server_address(url)
                _probe(host, port, tls, headers, timeout)
                client = chromadb.HttpClient(host=host, port=port, ssl=tls, headers=headers)
                _set_request_timeout(client, timeout)
            else:
                folder = Path(path)  # type: ignore[arg-type]
                if folder.exists() and not folder.is_dir():
                    raise InputError(f"The Chroma folder {folder} is a file, not a folder.")
                if self.snapshot_dir is not None and folder.is_dir() and _written_by_others(folder):
                    folder, self.copied = read_only_copy(folder, self.snapshot_dir), True
                    key = str(folder)
                    with _clients_lock:
                        if key in _clients:
                            return _clients[key]
                folder.mkdir(parents=True, exist_ok=True)
                client = persistent_client(folder)
        except InputError:
            raise
        except Exception as exc:
            error = translate_store_error(
                exc, store="chroma", location=self.location, action="connect", timeout=timeout if url else None
            )
            if url and not isinstance(error, StoreConnectionError):
                error = StoreConnectionError(str(error))
            raise error from exc
        with _clients_lock:
            return _clients.setdefault(key, client)

    def list_collections(self) -> list[CollectionInfo]:
        return [
            ChromaCollection(c, self.location, self.timeout, self.options).info()
            for c in self._client.list_collections()
        ]

    def exists(self, name: str) -> bool:
        return name in {c.name for c in self._client.list_collections()}

    def get(self, name: str) -> ChromaCollection:
        try:
            collection = self._client.get_collection(name, embedding_function=None)
        except Exception as exc:
            if "does not exist" in str(exc) or type(exc).__name__ in {"NotFoundError", "InvalidCollectionException"}:
                raise CollectionNotFoundError(
                    name, f"chroma at {self.location}", [c.name for c in self._client.list_collections()]
                ) from exc
            raise
        return ChromaCollection(collection, self.location, self.timeout, self.options)

    def create(self, name: str, *, embedding_model: str, dimension: int) -> ChromaCollection:
        check_collection_name(name)
        if self.copied and not self.exists(name):
            raise StoreError(
                f"The Chroma folder {self.location} holds collections another tool wrote, which the workbench reads "
                f"and never writes: create '{name}' in a folder of its own (another persist_dir)."
            )
        collection = self._client.get_or_create_collection(
            name,
            metadata={EMBEDDING_MODEL_KEY: embedding_model, DIMENSION_KEY: int(dimension)},
            configuration={"hnsw": {"space": "cosine", "ef_construction": 200, "ef_search": 200}},
            embedding_function=None,
        )
        return ChromaCollection(collection, self.location, self.timeout, self.options)

    def delete(self, name: str) -> None:
        self.get(name)
        if self.copied:
            raise StoreError(f"'{name}' was written by another tool: the workbench reads it and never deletes it.")
        self._client.delete_collection(name)
