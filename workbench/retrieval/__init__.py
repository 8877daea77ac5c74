"""First-stage retrieval beside dense vector search: a BM25 index per collection and rank fusion.

`BM25Indexes` keeps one index per collection in the workbench's data folder, updates it when the workbench
ingests, and rebuilds it from the store when it is missing, when its size differs from the store's, or, checked
each time an index is read from disk, when any chunk's content hash differs from the store's (a store changed
behind the index's back, as a `kill -9` in the middle of a changed-text re-ingest leaves it).
"""

from __future__ import annotations

import hashlib
import shutil
import threading
from pathlib import Path

from workbench.config import Settings
from workbench.errors import StoreError
from workbench.retrieval.bm25 import BM25Index, tokenize
from workbench.retrieval.fusion import fuse
from workbench.stores.base import Collection
from workbench.types import Chunk

__all__ = ["BM25Index", "BM25Indexes", "fuse", "tokenize"]


def _same_texts(index: BM25Index, collection: Collection) -> bool:
    """Whether every indexed chunk still has, in the store, the content hash the index holds for it."""
    indexed = index.hashes()
    stored = collection.content_hashes(list(indexed))
    return all(stored.get(chunk_id, "missing") == digest for chunk_id, digest in indexed.items())


class BM25Indexes:
    """The BM25 index of each collection, created once per process, kept in step with its store."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._indexes: dict[str, BM25Index] = {}
        self._lock = threading.Lock()
        self._read_during_ingest: set[str] = set()  # checked against the store's texts when the ingest settles

    def folder(self, name: str, collection: Collection) -> Path:
        """<data_dir>/bm25/<store>-<hash of its location>/<collection>."""
        place = hashlib.blake2b(f"{collection.store}:{collection.location}".encode(), digest_size=6).hexdigest()
        return Path(self.settings.data_dir) / "bm25" / f"{collection.store}-{place}" / name

    def _index(self, name: str, collection: Collection) -> BM25Index:
        with self._lock:
            index = self._indexes.get(name)
            folder = self.folder(name, collection)
            if index is None or index.folder != folder:
                index = BM25Index(folder, k1=self.settings.bm25_k1, b=self.settings.bm25_b)
                self._indexes[name] = index
            return index

    def get(self, name: str, collection: Collection) -> BM25Index:
        """The collection's index, loaded, and rebuilt from the store when missing or out of step with it."""
        index = self._index(name, collection)
        changed_on_disk = index.exists() and index.path.stat().st_mtime != index.loaded_mtime
        read_now = (index.loaded_mtime is None or changed_on_disk) and index.exists() and index.load()
        if len(index) != collection.count() or (read_now and not _same_texts(index, collection)):
            self.rebuild(name, collection)
        return index

    def rebuild(self, name: str, collection: Collection) -> BM25Index:
        """Read every chunk from the store, index them, save."""
        index = self._index(name, collection)
        try:
            chunks = collection.all_chunks()
        except StoreError as exc:
            raise StoreError(
                f"BM25 needs to read every chunk of '{name}', and the store cannot list them: {exc}"
            ) from exc
        index.replace_all(chunks)
        index.save()
        return index

    def updated(self, name: str, collection: Collection, upserted: list[Chunk], deleted: list[str]) -> None:
        """What an ingest wrote; call `settle` when the ingest ends."""
        index = self._index(name, collection)
        if index.loaded_mtime is None and index.exists():
            index.load()
            self._read_during_ingest.add(name)
        index.update(upserted, deleted)

    def settle(self, name: str, collection: Collection) -> None:
        """After an ingest: save the index, or rebuild it when it does not cover the whole store, or, when this
        ingest read it from disk, when any chunk's text differs from the store's (a resumed ingest skips the
        chunks a killed one wrote, so the index it read never heard of their new texts)."""
        index = self._index(name, collection)
        read = name in self._read_during_ingest
        self._read_during_ingest.discard(name)
        if len(index) != collection.count() or (read and not _same_texts(index, collection)):
            self.rebuild(name, collection)
        else:
            index.save()

    def drop(self, name: str, collection: Collection | None = None) -> None:
        """Forget a deleted collection's index (and its files)."""
        with self._lock:
            index = self._indexes.pop(name, None)
        folder = index.folder if index else (self.folder(name, collection) if collection else None)
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
