"""The store contract: backends hold collections, collections search and store chunks.

Every store reports cosine similarity (higher is better), filters on metadata equality, and records per
chunk its `origin` (the file or passage it came from) and a hash of its text, so ingest can skip what is
unchanged and delete what a re-ingested document no longer produces.

Errors: every contract method of every store runs behind one translator (`translate_store_error`), so a
client's own exceptions reach users as `StoreConnectionError` (the server is down, refused or timed out,
naming the URL and WORKBENCH_STORE_TIMEOUT) or `StoreError` (with the store's own message), never raw.
"""

from __future__ import annotations

import functools
import math
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import numpy as np

from workbench.errors import (
    InputError,
    StoreConnectionError,
    StoreError,
    WorkbenchError,
    exception_chain,
    is_connection_problem,
)
from workbench.inputs import normalise_value, validate_collection_name
from workbench.redact import redact_text
from workbench.types import Chunk, CollectionInfo, Hit, Metadata
from workbench.vocab import STORE_TIMEOUT_SETTING as TIMEOUT_SETTING

# Collection-level metadata keys the workbench writes when it creates a collection.
EMBEDDING_MODEL_KEY = "workbench_embedding_model"
DIMENSION_KEY = "workbench_dimension"
# Chunk-level metadata: a hash of the chunk's text, and the document (file or passage) it came from.
CONTENT_HASH_KEY = "content_hash"
ORIGIN_KEY = "origin"
# Which file a chunk came from: a hash of the file's full path (local ingests only), so that a different file
# with the same name is told apart from a new version of the same file.
SOURCE_KEY = "source_key"

check_collection_name = validate_collection_name


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    if not text:
        inner = next((str(e) for e in exception_chain(exc)[1:] if str(e).strip()), "")
        text = " ".join(inner.split())
    return redact_text(text[:400]) or type(exc).__name__


def translate_store_error(
    exc: BaseException, *, store: str, location: str, action: str, timeout: float | None
) -> StoreError:
    """A client exception as the workbench error a user can act on (the URL is already redacted)."""
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, sqlite3.Error):  # a file of ours on this machine: never "a server"
        if "locked" in str(exc).lower() or "busy" in str(exc).lower():
            wait = f"; waited {timeout:g} s" if timeout else ""
            return StoreError(f"{store} at {location} is locked by another process ({action}{wait}).")
        return StoreError(f"{store} at {location} cannot be used ({action}): {_reason(exc)}.")
    if is_connection_problem(exc):
        wait = f" after {timeout:g} s" if timeout and "time" in _reason(exc).lower() else ""
        return StoreConnectionError(
            f"Cannot reach {store} at {location} ({action}){wait}: {_reason(exc)}. The server is unreachable: check "
            f"that it is running and the URL is right; {TIMEOUT_SETTING} sets how long to wait"
            + (f" (now {timeout:g} s)." if timeout else ".")
        )
    return StoreError(f"{store} failed to {action} at {location}: {_reason(exc)}")


_F = TypeVar("_F", bound=Callable[..., Any])


def _translated(method: _F, action: str) -> _F:
    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except WorkbenchError:
            raise
        except Exception as exc:
            name = getattr(self, "name", None)
            what = f"{action} '{name}'" if name and isinstance(self, Collection) else action
            raise translate_store_error(
                exc,
                store=getattr(self, "store", None) or getattr(self, "kind", "store"),
                location=getattr(self, "location", "?"),
                action=what,
                timeout=getattr(self, "timeout", None),
            ) from exc

    wrapper.__wrapped_by_translator__ = True  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


class _Translating(ABC):  # noqa: B024 - the contract classes below declare the abstract methods
    """Wraps each contract method a subclass defines in the error translator."""

    _contract: ClassVar[dict[str, str]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for method, action in cls._contract.items():
            own = cls.__dict__.get(method)
            if callable(own) and not getattr(own, "__wrapped_by_translator__", False):
                setattr(cls, method, _translated(own, action))


def clean_metadata(metadata: Metadata) -> Metadata:
    """Metadata every store accepts, typed by the one typing rule (`inputs.normalise_value`): str, int, float
    and bool values; None, NaN and infinities dropped; lists and objects stringified; `$` stripped from names."""
    clean: Metadata = {}
    for key, value in metadata.items():
        value = normalise_value(value, str(key))
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            continue
        name = str(key).lstrip("$") or "field"
        clean[name] = value if isinstance(value, bool | int | float | str) else str(value)
    return clean


class Collection(_Translating):
    """One collection of chunks and their vectors. Scores are cosine similarity: higher is better.

    `embeds_queries` / `embeds_documents` say whether the store embeds text itself (LangChain stores):
    then `search` takes `text` and `upsert` takes no vectors; otherwise `vector` and vectors are required.
    """

    store: ClassVar[str] = "store"
    embeds_queries: ClassVar[bool] = False
    embeds_documents: ClassVar[bool] = False
    _contract: ClassVar[dict[str, str]] = {
        "count": "count the chunks of",
        "info": "read",
        "search": "search",
        "upsert": "write to",
        "stored_chunks": "read the chunks of",
        "delete_chunks": "delete chunks from",
        "browse": "browse",
        "vectors": "read the vectors of",
    }

    name: str
    location: str
    timeout: float | None = None

    @abstractmethod
    def count(self) -> int:
        """How many chunks the collection holds."""

    @abstractmethod
    def info(self) -> CollectionInfo:
        """Name, real store type, count, embedding model and dimension."""

    @abstractmethod
    def search(
        self, k: int, filters: Metadata | None = None, *, vector: np.ndarray | None = None, text: str | None = None
    ) -> list[Hit]:
        """The k nearest chunks, best first, restricted to metadata equal to `filters`.

        Stores that embed queries themselves take `text`; the others take `vector`.
        """

    @abstractmethod
    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None) -> None:
        """Insert or replace chunks by id (`vectors` is None for stores that embed documents themselves)."""

    @abstractmethod
    def stored_chunks(
        self, origins: Sequence[str], ids: Sequence[str] = (), key: str = CONTENT_HASH_KEY
    ) -> dict[str, str | None]:
        """Every stored chunk whose origin is one of `origins`, or whose id is one of `ids`: id -> its metadata
        value under `key` (the content hash unless told otherwise)."""

    @abstractmethod
    def delete_chunks(self, ids: Sequence[str]) -> None:
        """Delete chunks by id (ids not stored are ignored)."""

    @abstractmethod
    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        """A page of stored chunks, in a stable order."""

    def vectors(self, batch_size: int = 1000) -> tuple[list[str], np.ndarray]:
        """Every chunk id and its stored vector (for exact search against the store's index)."""
        raise StoreError(f"{self.store} collection '{self.name}' cannot list its vectors.")

    def all_chunks(self, page_size: int = 1000) -> list[Chunk]:
        """Every stored chunk, read a page at a time in the stable order of `browse`."""
        chunks: list[Chunk] = []
        while True:
            page = self.browse(len(chunks), page_size)
            chunks += page
            if len(page) < page_size:
                return chunks

    def content_hashes(self, ids: Sequence[str]) -> dict[str, str | None]:
        """For the ids already stored, their content hash (None when they have none)."""
        return self.stored_chunks((), ids)

    def embedding_model(self) -> str | None:
        return self.info().embedding_model

    def require_vector(self, vector: np.ndarray | None) -> list[float]:
        """The query vector as a list of floats; InputError when a store that needs one was given none."""
        if vector is None:
            raise InputError(f"{self.store} collection '{self.name}' searches by vector: pass vector=.")
        return np.asarray(vector, dtype=np.float32).tolist()


class StoreBackend(_Translating):
    """A place that holds collections: an embedded folder or a server."""

    kind: ClassVar[str] = "store"
    _contract: ClassVar[dict[str, str]] = {
        "list_collections": "list collections",
        "get": "open a collection",
        "create": "create a collection",
        "delete": "delete a collection",
        "exists": "look up a collection",
    }
    location: str
    timeout: float | None = None

    @property
    def store(self) -> str:
        return self.kind

    @classmethod
    def open(
        cls,
        persist_dir: str | Path | None = None,
        url: str | None = None,
        *,
        timeout: float | None = None,
        options: dict[str, Any] | None = None,
    ) -> StoreBackend:
        """The backend at a server URL, else in a local folder (what the registry calls for every kind)."""
        wait = {"timeout": timeout} if timeout else {}
        return cls(path=None if url else persist_dir, url=url, **wait, **(options or {}))  # type: ignore[call-arg]

    @abstractmethod
    def list_collections(self) -> list[CollectionInfo]:
        """Every collection with its count and embedding model."""

    @abstractmethod
    def get(self, name: str) -> Collection:
        """An existing collection; raises CollectionNotFoundError."""

    @abstractmethod
    def create(self, name: str, *, embedding_model: str, dimension: int) -> Collection:
        """The named collection, created with cosine distance when it does not exist yet."""

    @abstractmethod
    def delete(self, name: str) -> None:
        """Delete a collection; raises CollectionNotFoundError when there is none."""

    def exists(self, name: str) -> bool:
        return name in {c.name for c in self.list_collections()}

    def close(self) -> None:
        """Release the client (local Qdrant holds a lock on its folder)."""


def as_str_id(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def batched(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    """`items` in slices of at most `size` (stores cap how many ids one request may carry)."""
    return [items[i : i + size] for i in range(0, len(items), size)]
