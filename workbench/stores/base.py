"""What every vector store offers the engine: backends that hold collections, collections that search."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.errors import InputError
from workbench.types import Chunk, CollectionInfo, Hit, Metadata

# Collection-level metadata keys the workbench writes when it creates a collection.
EMBEDDING_MODEL_KEY = "workbench_embedding_model"
DIMENSION_KEY = "workbench_dimension"
# Chunk-level metadata key holding a hash of the chunk's text, so re-ingest can skip unchanged chunks.
CONTENT_HASH_KEY = "content_hash"
_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]{1,510}[a-zA-Z0-9]$")


def check_collection_name(name: str) -> str:
    """Chroma's naming rule, checked up front so the user gets a plain message."""
    if not _NAME.match(name or ""):
        raise InputError(
            f"Collection name '{name}' is not allowed: use 3-512 characters from letters, digits, '.', '_' "
            "and '-', starting and ending with a letter or digit."
        )
    return name


def clean_metadata(metadata: Metadata) -> Metadata:
    """Metadata every store accepts: str, int, float and bool values; None dropped, the rest stringified."""
    clean: Metadata = {}
    for key, value in metadata.items():
        if value is None:
            continue
        if isinstance(value, bool | int | float | str):
            clean[str(key)] = value
        else:
            clean[str(key)] = str(value)
    return clean


class Collection(ABC):
    """One collection of chunks and their vectors. Scores are cosine similarity: higher is better."""

    name: str
    store: str
    location: str

    @abstractmethod
    def count(self) -> int:
        """How many chunks the collection holds."""

    @abstractmethod
    def info(self) -> CollectionInfo:
        """Name, store, count, embedding model and dimension."""

    @abstractmethod
    def search(self, vector: np.ndarray, k: int, filters: Metadata | None = None, text: str = "") -> list[Hit]:
        """The k nearest chunks to `vector`, best first, restricted to metadata equal to `filters`.

        `text` is the query itself, for stores that embed queries on their own (LangChain stores).
        """

    @abstractmethod
    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        """Insert or replace chunks by id."""

    @abstractmethod
    def content_hashes(self, ids: Sequence[str]) -> dict[str, str | None]:
        """For the ids already stored, their content hash (None when they have none)."""

    @abstractmethod
    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        """A page of stored chunks, in a stable order."""

    def embedding_model(self) -> str | None:
        return self.info().embedding_model


class StoreBackend(ABC):
    """A place that holds collections: an embedded folder or a server."""

    kind: str
    location: str

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

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release the client (local Qdrant holds a lock on its folder)."""


def as_str_id(value: Any) -> str:
    return value if isinstance(value, str) else str(value)
