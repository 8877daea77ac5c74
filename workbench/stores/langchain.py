"""Any LangChain `VectorStore` as a workbench collection.

A LangChain store embeds with its own embedding function, so the engine hands it the query text and skips
its own embed stage; scores come from `similarity_search_with_relevance_scores` (higher is better).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from workbench.errors import StoreError
from workbench.stores.base import CONTENT_HASH_KEY, Collection, clean_metadata
from workbench.types import Chunk, CollectionInfo, Hit, Metadata


class LangChainCollection(Collection):
    """Wraps a LangChain VectorStore (Chroma, Qdrant, PGVector, InMemoryVectorStore, ...)."""

    store = "langchain"
    embeds_queries = True
    embeds_documents = True

    def __init__(self, vector_store: Any, name: str | None = None, embedding_model: str | None = None) -> None:
        self.vector_store = vector_store
        self.name = name or type(vector_store).__name__
        self.location = type(vector_store).__name__
        embeddings = getattr(vector_store, "embeddings", None)
        self._embedding_model = embedding_model or (
            f"langchain:{type(embeddings).__name__}" if embeddings is not None else None
        )

    def count(self) -> int:
        inner = getattr(self.vector_store, "store", None)
        if isinstance(inner, dict):
            return len(inner)
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
        if type(self.vector_store).__name__ == "InMemoryVectorStore":
            return lambda doc: all(doc.metadata.get(k) == v for k, v in filters.items())
        return dict(filters)

    def search(self, vector: np.ndarray, k: int, filters: Metadata | None = None, text: str = "") -> list[Hit]:
        kwargs = {"filter": self._filter(filters)} if filters else {}
        try:
            try:
                pairs = self.vector_store.similarity_search_with_relevance_scores(text, k=k, **kwargs)
            except NotImplementedError:
                # Stores without a relevance function (InMemoryVectorStore) return cosine similarity here.
                pairs = self.vector_store.similarity_search_with_score(text, k=k, **kwargs)
        except Exception as exc:
            raise StoreError(f"LangChain store {self.location} search failed: {exc}") from exc
        hits = []
        for rank, (doc, score) in enumerate(pairs):
            doc_id = getattr(doc, "id", None) or doc.metadata.get("id") or f"{self.name}:{rank}"
            hits.append(Hit(id=str(doc_id), text=doc.page_content, metadata=dict(doc.metadata), score=float(score)))
        return hits

    def upsert(self, chunks: Sequence[Chunk], vectors: np.ndarray) -> None:
        if not chunks:
            return
        try:
            self.vector_store.add_texts(
                [c.text for c in chunks],
                metadatas=[clean_metadata(c.metadata) for c in chunks],
                ids=[c.id for c in chunks],
            )
        except Exception as exc:
            raise StoreError(f"Writing to LangChain store {self.location} failed: {exc}") from exc

    def content_hashes(self, ids: Sequence[str]) -> dict[str, str | None]:
        if not ids:
            return {}
        try:
            docs = self.vector_store.get_by_ids(list(ids))
        except NotImplementedError:
            return {}
        return {str(d.id): d.metadata.get(CONTENT_HASH_KEY) for d in docs}

    def browse(self, offset: int = 0, limit: int = 20) -> list[Chunk]:
        inner = getattr(self.vector_store, "store", None)
        if isinstance(inner, dict):
            items = list(inner.items())[offset : offset + limit]
            return [Chunk(id=str(i), text=v.get("text", ""), metadata=dict(v.get("metadata") or {})) for i, v in items]
        raise StoreError(f"{self.location} offers no way to list its documents; search it instead.")
