"""The caches in front of the cross-encoder: query–document scores (TTL and size bounded, single-flight) and
documents' token ids (size bounded), both keyed by a hash of the text so a changed document is new."""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

from cachetools import LRUCache, TTLCache

from workbench.rerankers.scores.score_store import ScoreStore

ScoreKey = tuple[str, str, str]
log = logging.getLogger("workbench.rerankers")


def text_hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).hexdigest()


class ScoreCache:
    """Query–document scores kept for `ttl` seconds, at most `max_size` entries; safe across threads.

    Keys are (model, query, hash of the document text). Lookups are single-flight: when two searches need the
    same pair at once, one scores it and the other waits for that score instead of computing it again.
    A max_size of 0 turns the cache off (and single-flight with it).
    """

    def __init__(
        self,
        ttl: float = 3600,
        max_size: int = 10000,
        timer: Callable[[], float] = time.monotonic,
        store: ScoreStore | None = None,
    ) -> None:
        """`timer` is the clock entries age by (seconds; a test's own clock instead of waiting). `store` keeps scores
        across processes (`score_store`): asked for the pairs memory lacks, given every score computed, for the
        rerankers that name a fingerprint (`persist`)."""
        self.ttl = ttl
        self.store = store
        self.stored_hits = 0
        self.max_size = max_size
        self._cache: TTLCache[ScoreKey, float] | None = (
            TTLCache(maxsize=max_size, ttl=ttl, timer=timer) if max_size > 0 else None
        )
        self._pending: dict[ScoreKey, Future[float]] = {}
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(model_id: str, query: str, text: str) -> ScoreKey:
        return model_id, query, text_hash(text)

    def get_many(self, keys: Sequence[ScoreKey]) -> list[float | None]:
        """Cached scores (None where missing); counts hits and misses."""
        with self._lock:
            found = [self._cache.get(k) if self._cache is not None else None for k in keys]
            hit_count = sum(v is not None for v in found)
            self.hits += hit_count
            self.misses += len(keys) - hit_count
        return found

    def put_many(self, items: dict[ScoreKey, float]) -> None:
        if self._cache is None:
            return
        with self._lock:
            for k, v in items.items():
                self._cache[k] = v

    def keep(self, persist: str | None, keys: Sequence[ScoreKey], scores: Sequence[float]) -> None:
        """Scores computed outside `resolve` (a timed run) kept in memory and in the store."""
        self.put_many(dict(zip(keys, scores, strict=True)))
        self._persist(persist, keys, list(range(len(keys))), scores)

    def _persist(self, persist: str | None, keys: Sequence[ScoreKey], at: list[int], scores: Sequence[float]) -> None:
        """Scores kept in the store; a store that cannot be written (a full disk, a locked file) costs only the
        keeping, never the search: said once in the log."""
        if self.store is None or not persist or not at:
            return
        try:
            self.store.put_many(
                persist, {(text_hash(keys[i][1]), keys[i][2]): s for i, s in zip(at, scores, strict=True)}
            )
        except Exception as exc:  # the scores are computed and returned all the same
            self._give_up_store(exc)

    def _stored(self, persist: str | None, keys: Sequence[ScoreKey], todo: list[int]) -> dict[int, float]:
        """The kept scores of the pairs at `todo` (none without a store or a fingerprint)."""
        if self.store is None or not persist or not todo:
            return {}
        unusable = getattr(self.store, "unusable", 0)
        try:
            kept = self.store.get_many(persist, [(text_hash(keys[i][1]), keys[i][2]) for i in todo])
        except Exception as exc:  # a store that cannot be read: the pairs are scored instead
            self._give_up_store(exc)
            return {}
        if getattr(self.store, "unusable", 0) > unusable:
            _say_once(
                "unusable",
                f"{self.store.unusable - unusable} kept pair scores in the score store at {self.store.location} "
                "are not finite numbers (written there by something else): those pairs are scored again.",
            )
        found = {i: float(score) for i, score in zip(todo, kept, strict=True) if score is not None}
        with self._lock:
            self.stored_hits += len(found)
            self.hits += len(found)
            self.misses -= len(found)
        return found

    def resolve(
        self, keys: Sequence[ScoreKey], compute: Callable[[list[int]], list[float]], persist: str | None = None
    ) -> tuple[list[float], int]:
        """Scores for every key: from the cache, from a computation already running for the same pair, from the
        store (`persist`: the reranker's fingerprint there), or from `compute(indices)` for the rest. Returns the
        scores and how many were found without computing."""
        if self._cache is None:
            with self._lock:
                self.misses += len(keys)
            return list(compute(list(range(len(keys))))), 0
        scores: list[float | None] = [None] * len(keys)
        mine: dict[ScoreKey, Future[float]] = {}
        waiting: dict[int, Future[float]] = {}
        with self._lock:
            for i, k in enumerate(keys):
                cached = self._cache.get(k)
                if cached is not None:
                    scores[i] = cached
                elif k in self._pending:
                    waiting[i] = self._pending[k]
                elif k in mine:
                    waiting[i] = mine[k]
                else:
                    mine[k] = self._pending[k] = Future()
            reused = sum(s is not None for s in scores) + len(waiting)
            self.hits += reused
            self.misses += len(keys) - reused
        todo = [i for i, k in enumerate(keys) if scores[i] is None and i not in waiting and k in mine]
        todo = list(dict.fromkeys(todo))
        try:
            stored = self._stored(persist, keys, todo)
            todo = [i for i in todo if i not in stored]
            fresh = compute(todo) if todo else []
            self._persist(persist, keys, todo, fresh)
        except BaseException as exc:
            with self._lock:
                for k, future in mine.items():
                    self._pending.pop(k, None)
                    future.set_exception(exc)
            raise
        with self._lock:
            for i, score in [*zip(todo, fresh, strict=True), *stored.items()]:
                scores[i] = score
                self._cache[keys[i]] = score
                future = mine.get(keys[i])
                if future is not None and not future.done():
                    future.set_result(score)
                self._pending.pop(keys[i], None)
        for i, future in waiting.items():
            scores[i] = future.result()
        return [float(s) for s in scores], reused + len(stored)  # type: ignore[arg-type]

    def clear(self) -> None:
        with self._lock:
            if self._cache is not None:
                self._cache.clear()
            self.hits = self.misses = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache) if self._cache is not None else 0

    def _give_up_store(self, exc: Exception) -> None:
        """A store that failed once (locked, damaged, gone) is not asked again by this cache: every later search
        would wait on it. Said once in the log."""
        self.store = None
        _say_once(
            "trouble",
            f"The score store cannot be used ({' '.join(str(exc).split())[:300]}): scores are computed and kept in "
            "memory only from now on; `workbench cache clear` empties or removes it.",
        )


_said: set[str] = set()


def _say_once(topic: str, words: str) -> None:
    """A warning about the score store, said once per process and topic."""
    if topic not in _said:
        _said.add(topic)
        log.warning(words)


def cached_scores(
    cache: ScoreCache,
    model_id: str,
    query: str,
    texts: list[str],
    predict: Callable[[str, list[str], float | None], list[float]],
    use_cache: bool = True,
    deadline: float | None = None,
    persist: str | None = None,
) -> tuple[list[float], int]:
    """A reranker's `score`: each text's score from `cache` (keyed by model, query and text; and from its store
    under the fingerprint `persist`), or from `predict(query, texts, deadline)` for the rest; and how many came
    from the caches. `use_cache=False` scores every text (a timed run measures the model's real work) and keeps the
    scores for the searches after it."""
    keys = [ScoreCache.key(model_id, query, t) for t in texts]
    if not use_cache:
        scores = predict(query, texts, deadline)
        cache.keep(persist, keys, scores)
        return scores, 0
    return cache.resolve(keys, lambda indices: predict(query, [texts[i] for i in indices], deadline), persist)


class TokenCache:
    """Documents' token ids (whatever the tokenizing function returns for a text), by tokenizer and text hash,
    at most `max_size` entries. Documents do not change between queries, so each is tokenized once."""

    def __init__(self, max_size: int = 50_000) -> None:
        self._cache: LRUCache[tuple[str, str], Any] | None = LRUCache(maxsize=max_size) if max_size > 0 else None
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get_many(
        self, tokenizer_id: str, texts: Sequence[str], tokenize: Callable[[list[str]], list[Any]]
    ) -> list[Any]:
        keys = [(tokenizer_id, text_hash(t)) for t in texts]
        with self._lock:
            found = [self._cache.get(k) if self._cache is not None else None for k in keys]
        missing = [i for i, ids in enumerate(found) if ids is None]
        if missing:
            fresh = tokenize([texts[i] for i in missing])
            with self._lock:
                for i, ids in zip(missing, fresh, strict=True):
                    found[i] = ids
                    if self._cache is not None:
                        self._cache[keys[i]] = ids
        with self._lock:
            self.hits += len(texts) - len(missing)
            self.misses += len(missing)
        return found  # type: ignore[return-value]

    def __len__(self) -> int:
        with self._lock:
            return len(self._cache) if self._cache is not None else 0
