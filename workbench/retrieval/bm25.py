"""A BM25 index per collection (bm25s), kept beside the store and in step with it.

The index keeps each chunk's tokens, text, metadata and content hash in `<folder>/index.json`; the bm25s
matrix is rebuilt from the stored tokens when loaded (a second or less for tens of thousands of chunks),
so an update re-tokenizes only the chunks that changed. Tokens: lower-cased words of two or more
characters, English stop words removed, Snowball English stemming (as Anserini's defaults); scoring is
Lucene's BM25 with k1 = 0.9, b = 0.4 (Anserini's defaults) unless set otherwise.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from workbench.stores.base import CONTENT_HASH_KEY, clean_metadata
from workbench.types import Chunk, Hit, Metadata

FORMAT = 1


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    """Lower-cased, stop-word-free, stemmed tokens of each text."""
    import bm25s
    import Stemmer

    if not texts:
        return []
    return bm25s.tokenize(list(texts), stopwords="en", stemmer=_stemmer(Stemmer), return_ids=False, show_progress=False)


_stemmers: dict[int, Any] = {}


def _stemmer(module: Any) -> Any:
    # PyStemmer objects are not thread-safe: one per thread.
    ident = threading.get_ident()
    if ident not in _stemmers:
        _stemmers[ident] = module.Stemmer("english")
    return _stemmers[ident].stemWords


class BM25Index:
    """BM25 over one collection's chunks; `search` returns Hits scored by BM25 (higher is better)."""

    def __init__(self, folder: str | Path, *, k1: float = 0.9, b: float = 0.4) -> None:
        self.folder = Path(folder)
        self.k1, self.b = k1, b
        self._entries: dict[str, dict[str, Any]] = {}
        self._retriever: Any = None
        self._ids: list[str] = []
        self._lock = threading.RLock()
        self.loaded_mtime: float | None = None

    # Contents ---------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._entries)

    def hashes(self) -> dict[str, str | None]:
        """Each indexed chunk's content hash, by chunk id."""
        with self._lock:
            return {chunk_id: entry.get("hash") for chunk_id, entry in self._entries.items()}

    @property
    def path(self) -> Path:
        return self.folder / "index.json"

    def exists(self) -> bool:
        return self.path.is_file()

    def load(self) -> bool:
        """Read the saved index; False when there is none (or it is unreadable, and so must be rebuilt)."""
        with self._lock:
            try:
                data = json.loads(self.path.read_text(encoding="utf-8"))
                if data.get("format") != FORMAT or (data.get("k1"), data.get("b")) != (self.k1, self.b):
                    return False
                self._entries = data["entries"]
                self.loaded_mtime = self.path.stat().st_mtime
            except (OSError, ValueError, KeyError, TypeError):
                return False
            self._retriever = None
            return True

    def save(self) -> None:
        """Write the index atomically (a reader never sees half a file)."""
        with self._lock:
            self.folder.mkdir(parents=True, exist_ok=True)
            payload = json.dumps({"format": FORMAT, "k1": self.k1, "b": self.b, "entries": self._entries})
            handle, temp = tempfile.mkstemp(dir=self.folder, suffix=".tmp")
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                out.write(payload)
            os.replace(temp, self.path)
            self.loaded_mtime = self.path.stat().st_mtime

    def replace_all(self, chunks: Iterable[Chunk]) -> None:
        """Index exactly these chunks (a rebuild)."""
        with self._lock:
            self._entries = {}
            self.update(list(chunks), [])

    def update(self, upserted: Sequence[Chunk], deleted: Sequence[str]) -> None:
        """Add or replace chunks and drop deleted ids; only changed chunks are tokenized."""
        with self._lock:
            for chunk_id in deleted:
                self._entries.pop(chunk_id, None)
            fresh = [
                c
                for c in upserted
                if self._entries.get(c.id, {}).get("hash") != c.metadata.get(CONTENT_HASH_KEY)
                or c.id not in self._entries
            ]
            for chunk, tokens in zip(fresh, tokenize([c.text for c in fresh]), strict=True):
                self._entries[chunk.id] = {
                    "text": chunk.text,
                    "metadata": clean_metadata(chunk.metadata),
                    "hash": chunk.metadata.get(CONTENT_HASH_KEY),
                    "tokens": tokens,
                }
            if fresh or deleted:
                self._retriever = None

    def content_hashes(self) -> dict[str, str | None]:
        with self._lock:
            return {i: e.get("hash") for i, e in self._entries.items()}

    # Search -----------------------------------------------------------------------------------------------
    def _ready(self) -> Any:
        import bm25s

        with self._lock:
            if self._retriever is None:
                # by id, not by arrival: equal scores fall the same way however the collection was ingested
                self._ids = sorted(self._entries)
                retriever = bm25s.BM25(k1=self.k1, b=self.b, method="lucene")
                tokens = [self._entries[i]["tokens"] or ["\x00empty"] for i in self._ids]
                if tokens:
                    retriever.index(tokens, show_progress=False)
                self._retriever = retriever
            return self._retriever

    def search(self, query: str, k: int, filters: Metadata | None = None) -> list[Hit]:
        """The k chunks with the highest BM25 score for `query` (only chunks that share a term with it)."""
        with self._lock:
            retriever = self._ready()
            ids = list(self._ids)
            if not ids:
                return []
            mask = None
            if filters:
                mask = np.array(
                    [
                        all(self._entries[i]["metadata"].get(key) == value for key, value in filters.items())
                        for i in ids
                    ],
                    dtype=np.float32,
                )
                if not mask.any():
                    return []
            tokens = tokenize([query])
            if not tokens or not tokens[0]:
                return []
            found, scores = retriever.retrieve(
                tokens, k=min(k, len(ids)), show_progress=False, weight_mask=mask, n_threads=1
            )
            hits = []
            for index, score in zip(found[0], scores[0], strict=True):
                if score <= 0 or (mask is not None and not mask[index]):
                    continue
                entry = self._entries[ids[int(index)]]
                hits.append(
                    Hit(id=ids[int(index)], text=entry["text"], metadata=dict(entry["metadata"]), score=float(score))
                )
            return hits
