"""Ingestion: documents to chunks with stable ids, then batched embed + upsert with progress.

Chunk ids are `<document id>::<chunk index>`; each chunk also records a hash of its text. Before a batch is
embedded, the store is asked which of its ids it already holds with the same hash: those are skipped. So
re-ingesting the same files writes nothing new, a changed chunk is re-embedded in place, and an ingest
interrupted part-way resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from workbench.embeddings import Embedder
from workbench.errors import CollectionNotFoundError, IngestError, InputError
from workbench.loaders import Document, load_path
from workbench.stores.base import CONTENT_HASH_KEY
from workbench.stores.registry import StoreRegistry
from workbench.types import Chunk, IngestReport

ProgressCallback = Callable[[int, int], None]
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[])")


def _units(text: str) -> list[str]:
    """Paragraphs, and sentences within long paragraphs: the pieces a chunk is packed from."""
    units: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        paragraph = " ".join(paragraph.split())
        if paragraph:
            units.extend(_SENTENCE_END.split(paragraph))
    return units


def _hard_split(unit: str, size: int, overlap: int) -> list[str]:
    step = max(size - overlap, 1)
    return [unit[i : i + size] for i in range(0, max(len(unit) - overlap, 1), step)]


def split_text(text: str, chunk_size: int, chunk_overlap: int = 0) -> list[str]:
    """Pack sentences into chunks of at most `chunk_size` characters, each starting with up to
    `chunk_overlap` characters of the previous chunk's closing sentences."""
    if chunk_size < 1:
        raise InputError(f"chunk_size must be at least 1; got {chunk_size}.")
    if not 0 <= chunk_overlap < chunk_size:
        raise InputError(f"chunk_overlap must be at least 0 and below chunk_size ({chunk_size}); got {chunk_overlap}.")
    pieces: list[str] = []
    for unit in _units(text):
        pieces.extend(_hard_split(unit, chunk_size, chunk_overlap) if len(unit) > chunk_size else [unit])
    chunks: list[str] = []
    current: list[str] = []
    for piece in pieces:
        if current and len(" ".join([*current, piece])) > chunk_size:
            chunks.append(" ".join(current))
            carried: list[str] = []
            for previous in reversed(current):
                if (
                    len(" ".join([previous, *carried, piece])) > chunk_size
                    or len(" ".join([previous, *carried])) > chunk_overlap
                ):
                    break
                carried.insert(0, previous)
            current = carried
        current.append(piece)
    if current:
        chunks.append(" ".join(current))
    return chunks


def content_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


def chunk_documents(
    documents: Sequence[Document], chunk_size: int | None = 1000, chunk_overlap: int = 100
) -> list[Chunk]:
    """Split documents into chunks with stable ids. `chunk_size=None` keeps every document whole, and so do
    documents marked not chunkable (BEIR passages, which are final retrieval units)."""
    chunks: list[Chunk] = []
    for document in documents:
        if chunk_size is None or not document.chunkable:
            texts = [" ".join(document.text.split())]
        else:
            texts = split_text(document.text, chunk_size, chunk_overlap)
        for index, text in enumerate(texts):
            metadata = {
                **document.metadata,
                "document_id": document.id,
                "chunk_index": index,
                CONTENT_HASH_KEY: content_hash(text),
            }
            chunks.append(Chunk(id=f"{document.id}::{index}", text=text, metadata=metadata))
    return chunks


def ingest_chunks(
    chunks: Sequence[Chunk],
    collection_name: str,
    *,
    registry: StoreRegistry,
    embedder: Embedder,
    batch_size: int = 64,
    progress: ProgressCallback | None = None,
) -> tuple[int, int, int]:
    """Embed and upsert chunks in batches, skipping those already stored unchanged.

    Returns (added, updated, unchanged).
    """
    try:
        existing = registry.get(collection_name)
    except CollectionNotFoundError:
        existing = None
    if existing is not None:
        recorded = existing.embedding_model()
        if recorded and recorded != embedder.model_id:
            raise IngestError(
                f"Collection '{collection_name}' was built with embedding model '{recorded}', not "
                f"'{embedder.model_id}'. Ingest into a new collection, or set WORKBENCH_EMBEDDING_MODEL={recorded}."
            )
        collection = existing
    else:
        collection = registry.create(collection_name, embedding_model=embedder.model_id, dimension=embedder.dimension)
    embeds_itself = getattr(collection, "embeds_documents", False)
    added = updated = unchanged = 0
    total = len(chunks)
    if progress:
        progress(0, total)
    for start in range(0, total, batch_size):
        batch = list(chunks[start : start + batch_size])
        stored = collection.content_hashes([c.id for c in batch])
        todo = [c for c in batch if stored.get(c.id, "missing") != c.metadata[CONTENT_HASH_KEY]]
        unchanged += len(batch) - len(todo)
        if todo:
            vectors = None if embeds_itself else embedder.embed_documents([c.text for c in todo])
            collection.upsert(todo, vectors)  # type: ignore[arg-type]
            for c in todo:
                if c.id in stored:
                    updated += 1
                else:
                    added += 1
        if progress:
            progress(min(start + batch_size, total), total)
    return added, updated, unchanged


def ingest_path(
    path: str | Path,
    collection_name: str,
    *,
    registry: StoreRegistry,
    embedder: Embedder,
    chunk_size: int | None = 1000,
    chunk_overlap: int = 100,
    batch_size: int = 64,
    progress: ProgressCallback | None = None,
) -> IngestReport:
    """Load, chunk, embed and store everything at `path` into `collection_name`."""
    started = time.perf_counter()
    documents = load_path(path)
    if not documents:
        raise IngestError(f"Nothing to ingest at {path}: the files hold no text.")
    chunks = chunk_documents(documents, chunk_size, chunk_overlap)
    added, updated, unchanged = ingest_chunks(
        chunks,
        collection_name,
        registry=registry,
        embedder=embedder,
        batch_size=batch_size,
        progress=progress,
    )
    sources = {d.metadata.get("source", d.id) for d in documents}
    return IngestReport(
        collection=collection_name,
        store=registry.config(collection_name).kind,
        files=len(sources),
        documents=len(documents),
        chunks=len(chunks),
        added=added,
        updated=updated,
        unchanged=unchanged,
        seconds=round(time.perf_counter() - started, 3),
    )
