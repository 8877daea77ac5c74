"""Rerankers: a protocol, the sentence-transformers cross-encoder, and the query–document score cache."""

from __future__ import annotations

import hashlib
import threading
from typing import Protocol, runtime_checkable

from cachetools import TTLCache

from workbench.config import Settings
from workbench.models import load_cross_encoder, resolve_model


class ScoreCache:
    """Query–document scores kept for `ttl` seconds, at most `max_size` entries; safe across threads.

    Keys are (model, query, hash of the document text), so a changed document is scored afresh.
    A max_size of 0 turns the cache off.
    """

    def __init__(self, ttl: float = 3600, max_size: int = 10000) -> None:
        self.ttl = ttl
        self.max_size = max_size
        self._cache: TTLCache[tuple[str, str, str], float] | None = (
            TTLCache(maxsize=max_size, ttl=ttl) if max_size > 0 else None
        )
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(model_id: str, query: str, text: str) -> tuple[str, str, str]:
        return model_id, query, hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()

    def get_many(self, keys: list[tuple[str, str, str]]) -> list[float | None]:
        if self._cache is None:
            self.misses += len(keys)
            return [None] * len(keys)
        with self._lock:
            found = [self._cache.get(k) for k in keys]
        hit_count = sum(v is not None for v in found)
        self.hits += hit_count
        self.misses += len(keys) - hit_count
        return found

    def put_many(self, items: dict[tuple[str, str, str], float]) -> None:
        if self._cache is None:
            return
        with self._lock:
            for k, v in items.items():
                self._cache[k] = v

    def clear(self) -> None:
        with self._lock:
            if self._cache is not None:
                self._cache.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._cache) if self._cache is not None else 0


@runtime_checkable
class Reranker(Protocol):
    """Scores (query, document) pairs; higher is more relevant."""

    model_id: str
    backend: str

    def score(self, query: str, texts: list[str], use_cache: bool = True) -> tuple[list[float], int]:
        """Scores for each text, and how many of them came from the cache."""
        ...


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder, batched with length-aware padding, behind the score cache."""

    def __init__(self, model_id: str, settings: Settings, cache: ScoreCache | None = None) -> None:
        self.model_id = model_id
        self.path = resolve_model(model_id, settings, setting="RERANKER_MODEL")
        self.batch_size = settings.reranker_batch_size
        self.max_length = settings.reranker_max_length
        self._model = load_cross_encoder(self.path, settings.reranker_device, settings.reranker_max_length)
        self.cache = cache if cache is not None else ScoreCache(settings.cache_ttl, settings.cache_max_size)
        self.model_calls = 0

    @property
    def device(self) -> str:
        return str(self._model.device)

    @property
    def backend(self) -> str:
        """What scores the pairs, as shown beside results: '<backend>:<device>'."""
        return f"torch:{self.device}"

    def predict(self, query: str, texts: list[str]) -> list[float]:
        """Score every text with the model, no cache. Pairs are sorted by length so batches pad little."""
        if not texts:
            return []
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
        pairs = [(query, texts[i]) for i in order]
        raw = self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False, convert_to_numpy=True)
        self.model_calls += 1
        scores = [0.0] * len(texts)
        for position, index in enumerate(order):
            scores[index] = float(raw[position])
        return scores

    def score(self, query: str, texts: list[str], use_cache: bool = True) -> tuple[list[float], int]:
        if not use_cache:
            return self.predict(query, texts), 0
        keys = [ScoreCache.key(self.model_id, query, t) for t in texts]
        cached = self.cache.get_many(keys)
        missing = [i for i, v in enumerate(cached) if v is None]
        if missing:
            fresh = self.predict(query, [texts[i] for i in missing])
            self.cache.put_many({keys[i]: s for i, s in zip(missing, fresh, strict=True)})
            for i, s in zip(missing, fresh, strict=True):
                cached[i] = s
        return [float(v) for v in cached if v is not None], len(texts) - len(missing)
