"""Any LangChain `VectorStore` as a workbench collection.

A LangChain store embeds with its own embedding function, so the engine hands it the query text and skips
its own embed stage; scores come from `similarity_search_with_relevance_scores` (higher is better).
Finding a document's stale chunks needs a way to list what is stored: `InMemoryVectorStore` has one; for
other stores only chunks with the same ids are found (and replaced).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from workbench.errors import InputError, StoreError
from workbench.stores.base import CONTENT_HASH_KEY, ORIGIN_KEY, Collection, clean_metadata
from workbench.types import Chunk, CollectionInfo, Hit, Metadata

MILVUS_PRIMARY_KEY = "pk"  # where LangChain's Milvus store gives a record's id


class LangChainCollection(Collection):
    """Wraps a LangChain VectorStore (Chroma, Qdrant, PGVector, InMemoryVectorStore, ...)."""

    store: ClassVar[str] = "langchain"
    embeds_queries: ClassVar[bool] = True
    embeds_documents: ClassVar[bool] = True

    def __init__(self, vector_store: Any, name: str | None = None, embedding_model: str | None = None) -> None:
        self.vector_store = vector_store
        self.name = name or type(vector_store).__name__
        self.location = type(vector_store).__name__
        embeddings = getattr(vector_store, "embeddings", None)
        self._embedding_model = embedding_model or (
            f"langchain:{type(embeddings).__name__}" if embeddings is not None else None
        )

    def _memory(self) -> dict[str, Any] | None:
        inner = getattr(self.vector_store, "store", None)
        return inner if isinstance(inner, dict) else None

    def count(self) -> int:
        memory = self._memory()
        if memory is not None:
            return len(memory)
        collection = getattr(self.vector_store, "_collection", None)
        if collection is not None and hasattr(collection, "count"):
            return int(collection.count())
        return -1

    def info(self) -> CollectionInfo:
        return CollectionInfo(
            name=self.name,
            store=self.store,
            location=self.location,
            count=self.count(),
            embedding_model=self._embedding_model,
        )

    def _filter(self, filters: Metadata | None) -> Any:
        if not filters:
            return None
        if self._memory() is not None:
            return lambda doc: all(doc.metadata.get(k) == v for k, v in filters.items())
        return dict(filters)

    def search(
        self, k: int, filters: Metadata | None = None, *, vector: np.ndarray | None = None, text: str | None = None
    ) -> list[Hit]:
        if text is None:
            raise InputError(f"LangChain store '{self.name}' embeds its own queries: pass text=.")
        kwargs = {"filter": self._filter(filters)} if filters else {}
        try:
            with warnings.catch_warnings():  # "Relevance scores must be between 0 and 1": the scores are the library's
                warnings.simplefilter("ignore", UserWarning)  # own, kept as it gives them (its warning names code)
                pairs = self.vector_store.similarity_search_with_relevance_scores(text, k=k, **kwargs)
        except NotImplementedError:
            # Stores without a relevance function (InMemoryVectorStore) return cosine similarity here.
            pairs = self.vector_store.similarity_search_with_score(text, k=k, **kwargs)
        hits = []
        for rank, (doc, score) in enumerate(pairs):
            metadata = dict(doc.metadata)
            # the store's own id: LangChain's, else the metadata's id or Milvus's primary key ("pk")
            doc_id = getattr(doc, "id", None) or metadata.get("id") or metadata.pop(MILVUS_PRIMARY_KEY, None)
            hits.append(Hit(id=str(doc_id or f"{self.name}:{rank}"), text=doc.page_content, metadata=metadata,
                            score=float(score)))  # fmt: skip
        return hits

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray | None = None) -> None:
        if not chunks:
            return
        self.vector_store.add_texts(
            [c.text for c in chunks],
            metadatas=[clean_metadata(c.metadata) for c in chunks],
            ids=[c.id for c in chunks],
        )

    def stored_chunks(
        self, origins: Sequence[str], ids: Sequence[str] = (), key: str = CONTENT_HASH_KEY
    ) -> dict[str, str | None]:
        memory = self._memory()
        if memory is not None:
            wanted_origins, wanted_ids = set(origins), set(ids)
            return {
                str(i): (v.get("metadata") or {}).get(key)
                for i, v in memory.items()
                if i in wanted_ids or (v.get("metadata") or {}).get(ORIGIN_KEY) in wanted_origins
            }
        if not ids:
            return {}
        try:
            docs = self.vector_store.get_by_ids(list(ids))
        except NotImplementedError:
            return {}
        return {str(d.id): d.metadata.get(key) for d in docs}

    def delete_chunks(self, ids: Sequence[str]) -> None:
        if ids:
            self.vector_store.delete(ids=list(ids))

    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        memory = self._memory()
        if memory is None:
            raise StoreError(f"{self.location} offers no way to list its documents; search it instead.")
        items = list(memory.items())[offset : offset + limit]
        return [Chunk(id=str(i), text=v.get("text", ""), metadata=dict(v.get("metadata") or {})) for i, v in items]

    def vectors(self, batch_size: int = 1000) -> tuple[list[str], np.ndarray]:
        memory = self._memory()
        if memory is None:
            return super().vectors(batch_size)
        ids = [str(i) for i in memory]
        return ids, np.asarray([v["vector"] for v in memory.values()], dtype=np.float32)
